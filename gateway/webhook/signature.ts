import { createHmac, timingSafeEqual, type Hmac } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { WebhookProof } from '../../lib/channels/types.js';
import { AppError } from '../../lib/errors.js';

/**
 * Webhook proofs (lib/channels/types.ts WebhookProof), checked against the integration's
 * webhook secret:
 * - `signature` (interface.md § Authentication 5): HMAC-SHA256 over the exact raw body bytes,
 *   keyed with the secret as the user copied it, lowercase hex, sent as `sha256=<hex>` in one
 *   of the headers the channel names (the helpdesk: `x-webhook-signature` or
 *   `x-hub-signature-256`; WhatsApp: `x-hub-signature-256` only). The body is hashed while it
 *   streams in (so a body can be refused as too large only after its signature was checked,
 *   without buffering it); both digests are compared as bytes with crypto.timingSafeEqual.
 * - `secret_header` (Telegram's `X-Telegram-Bot-Api-Secret-Token`): the header's value is the
 *   secret itself, compared as bytes in constant time (a value of another length is a
 *   mismatch; only the length can be learnt).
 * After a rotation the previous secret verifies until its deadline, judged by an injectable
 * clock. Nothing here throws: the result says why it failed, one of SIGNATURE_FAILURES, which
 * the API answers as 401 INVALID_SIGNATURE (signatureRefused).
 */

/** The helpdesk's signature headers (either one): the proof when none is named. */
export const SIGNATURE_HEADERS = ['x-webhook-signature', 'x-hub-signature-256'] as const;
const HELPDESK_PROOF: WebhookProof = { kind: 'signature', headers: SIGNATURE_HEADERS };

export interface WebhookSecrets {
  /** The secret's bytes as used for the HMAC key (the hex string, UTF-8). */
  current: Buffer;
  previous: Buffer | null;
  /** Epoch ms until which `previous` verifies. */
  previousValidUntil: number;
}

/**
 * Why a webhook's proof is refused, in words that fit every channel: what the integration's
 * lastSignatureFailure says (gateway/webhook/activity.ts). The 401 names the channel's own
 * header (signatureRefused with its proof).
 */
export const SIGNATURE_FAILURES = {
  missing_signature: 'the webhook had no signature header (nor the secret-token header its channel sends)',
  malformed_signature: 'the signature header is not sha256=<64 hex digits>',
  mismatch: "the signature (or secret token) does not match the integration's webhook secret",
} as const;

export type SignatureFailure = keyof typeof SIGNATURE_FAILURES;

export type VerifyResult = { ok: true } | { ok: false; error: SignatureFailure };

/** The words of a refusal for a proof: its headers named. */
function refusalText(reason: SignatureFailure, proof: WebhookProof): string {
  if (proof.kind === 'secret_header') {
    return reason === 'missing_signature'
      ? `the webhook had no secret-token header (${proof.header})`
      : `the ${proof.header} header does not match the integration's secret token`;
  }
  if (reason === 'missing_signature') return `the webhook had no signature header (${proof.headers.join(' or ')})`;
  if (reason === 'mismatch') return "the signature does not match the integration's webhook secret (sha256= + hex HMAC-SHA256 of the exact raw body, keyed with it)";
  return SIGNATURE_FAILURES[reason];
}

/** The API's answer to a refused proof (the helpdesk's signature headers when no proof is given). */
export function signatureRefused(reason: SignatureFailure, proof: WebhookProof = HELPDESK_PROOF): AppError {
  return new AppError('INVALID_SIGNATURE', `Invalid webhook signature: ${refusalText(reason, proof)}.`);
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

/** A proof being checked on one request: fed the body as it streams in, judged once it is complete. */
export interface BodyProof {
  update(chunk: Uint8Array): void;
  verify(headers: IncomingHttpHeaders): VerifyResult;
}

/** Hashes one request body with every secret that is live; verify() once the body is complete. */
export class BodySignature implements BodyProof {
  readonly #hmacs: Hmac[];
  readonly #headers: readonly string[];

  /** `headers`: where the signature may be (lowercase names); the helpdesk's two by default. */
  constructor(keys: Buffer[], headers: readonly string[] = SIGNATURE_HEADERS) {
    this.#hmacs = keys.map((k) => createHmac('sha256', k));
    this.#headers = headers;
  }

  update(chunk: Uint8Array): void {
    for (const h of this.#hmacs) h.update(chunk);
  }

  verify(headers: IncomingHttpHeaders): VerifyResult {
    try {
      const claimed: Buffer[] = [];
      let present = false;
      for (const name of this.#headers) {
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

/** The secret itself in a header (Telegram): the body plays no part. */
export class SecretHeader implements BodyProof {
  readonly #keys: Buffer[];
  readonly #header: string;

  /** `header`: its lowercase name. */
  constructor(keys: Buffer[], header: string) {
    this.#keys = keys;
    this.#header = header;
  }

  update(): void {}

  verify(headers: IncomingHttpHeaders): VerifyResult {
    try {
      const raw = headers[this.#header];
      if (raw === undefined) return { ok: false, error: 'missing_signature' };
      let ok = false;
      for (const v of Array.isArray(raw) ? raw : [raw]) {
        const given = Buffer.from(v, 'utf8');
        // Every live key is compared (no early exit); a value of another length is a mismatch.
        for (const k of this.#keys) if (k.length > 0 && given.length === k.length && timingSafeEqual(given, k)) ok = true;
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

  /** Starts checking a body that streams in, by the channel's proof (the helpdesk's signature when none is given). */
  begin(secrets: WebhookSecrets, proof: WebhookProof = HELPDESK_PROOF): BodyProof {
    const keys = this.liveKeys(secrets);
    return proof.kind === 'signature' ? new BodySignature(keys, proof.headers) : new SecretHeader(keys, proof.header);
  }

  /** One-shot check of a complete body. */
  verify(secrets: WebhookSecrets, body: Uint8Array, headers: IncomingHttpHeaders, proof?: WebhookProof): VerifyResult {
    const sig = this.begin(secrets, proof);
    sig.update(body);
    return sig.verify(headers);
  }
}
