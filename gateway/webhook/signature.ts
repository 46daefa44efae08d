import { createHmac, timingSafeEqual, type Hmac } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { AppError } from '../../lib/errors.js';

/**
 * Webhook signatures (interface.md § Authentication 5): HMAC-SHA256 over the exact raw body
 * bytes, keyed with the webhook secret as the user copied it, lowercase hex, sent as
 * `sha256=<hex>` in `x-webhook-signature` or `x-hub-signature-256`.
 *
 * The body is hashed while it streams in (so a body can be refused as too large only after
 * its signature was checked, without buffering it); both digests are compared as bytes with
 * crypto.timingSafeEqual. After a rotation the previous secret verifies until its deadline,
 * judged by an injectable clock. Nothing here throws: the result says why it failed, one of
 * SIGNATURE_FAILURES, which the API answers as 401 INVALID_SIGNATURE (signatureRefused).
 */
export const SIGNATURE_HEADERS = ['x-webhook-signature', 'x-hub-signature-256'] as const;

export interface WebhookSecrets {
  /** The secret's bytes as used for the HMAC key (the hex string, UTF-8). */
  current: Buffer;
  previous: Buffer | null;
  /** Epoch ms until which `previous` verifies. */
  previousValidUntil: number;
}

/** Why a signature is refused, with what a user is told about it (the 401's message, the integration's lastSignatureFailure). */
export const SIGNATURE_FAILURES = {
  missing_signature: 'the webhook had no signature header (x-webhook-signature or x-hub-signature-256)',
  malformed_signature: 'the signature header is not sha256=<64 hex digits>',
  mismatch: "the signature does not match the integration's webhook secret (set the secret the helpdesk issued with PATCH {webhookSecret})",
} as const;

export type SignatureFailure = keyof typeof SIGNATURE_FAILURES;

export type VerifyResult = { ok: true } | { ok: false; error: SignatureFailure };

/** The API's answer to a refused signature. */
export function signatureRefused(reason: SignatureFailure): AppError {
  return new AppError('INVALID_SIGNATURE', `Invalid webhook signature: ${SIGNATURE_FAILURES[reason]}.`);
}

const DIGEST_BYTES = 32;
/** A signature header's value: the hex digest, `sha256=` before it or not. */
export const SIGNATURE_RE = /^(?:sha256=)?([0-9a-fA-F]{64})$/;

/** The digest a header carries (`sha256=` stripped, hex decoded), or null when it is not one. */
export function parseSignature(value: string): Buffer | null {
  const m = SIGNATURE_RE.exec(value.trim());
  return m ? Buffer.from(m[1]!, 'hex') : null;
}

/** `sha256=<hex>` for a body: what a sender puts in the header. */
export function signBody(secret: string | Buffer, body: string | Uint8Array): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** Hashes one request body with every secret that is live; verify() once the body is complete. */
export class BodySignature {
  readonly #hmacs: Hmac[];

  constructor(keys: Buffer[]) {
    this.#hmacs = keys.map((k) => createHmac('sha256', k));
  }

  update(chunk: Uint8Array): void {
    for (const h of this.#hmacs) h.update(chunk);
  }

  verify(headers: IncomingHttpHeaders): VerifyResult {
    try {
      const claimed: Buffer[] = [];
      let present = false;
      for (const name of SIGNATURE_HEADERS) {
        const raw = headers[name];
        if (raw === undefined) continue;
        present = true;
        for (const v of Array.isArray(raw) ? raw : [raw]) {
          const digest = parseSignature(v);
          if (digest) claimed.push(digest);
        }
      }
      if (!present) return { ok: false, error: 'missing_signature' };
      if (claimed.length === 0) return { ok: false, error: 'malformed_signature' };
      const expected = this.#hmacs.map((h) => h.digest());
      let ok = false;
      for (const e of expected) {
        for (const c of claimed) {
          if (e.length === DIGEST_BYTES && c.length === DIGEST_BYTES && timingSafeEqual(e, c)) ok = true;
        }
      }
      return ok ? { ok: true } : { ok: false, error: 'mismatch' };
    } catch {
      return { ok: false, error: 'mismatch' };
    }
  }
}

export class SignatureVerifier {
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** The secrets that verify at this moment: the current one, and the previous one within its grace period. */
  liveKeys(secrets: WebhookSecrets): Buffer[] {
    return secrets.previous && this.#now() < secrets.previousValidUntil ? [secrets.current, secrets.previous] : [secrets.current];
  }

  /** Starts hashing a body that streams in. */
  begin(secrets: WebhookSecrets): BodySignature {
    return new BodySignature(this.liveKeys(secrets));
  }

  /** One-shot check of a complete body. */
  verify(secrets: WebhookSecrets, body: Uint8Array, headers: IncomingHttpHeaders): VerifyResult {
    const sig = this.begin(secrets);
    sig.update(body);
    return sig.verify(headers);
  }
}
