import { createHmac, timingSafeEqual } from 'node:crypto';
import type { CustomerContact } from '../../schema/envelope.js';
import type { WebhookSecrets } from '../webhook/signature.js';
import type { IdentityClaim } from './frames.js';

/**
 * The host page's identity of a visitor (`MAS.identify({id, name, email, hash})`), checked
 * like Intercom's identity verification: the page's server computes `hash` = hex
 * HMAC-SHA256 of `id` keyed with the integration's webhook secret, which the visitor never
 * sees, so a visitor cannot claim another customer's id. A secret in its rotation grace
 * period still verifies (as for webhooks).
 */
export function identityVerifies(claim: IdentityClaim, secrets: WebhookSecrets, now: number): boolean {
  const given = Buffer.from(claim.hash, 'hex');
  const keys = secrets.previous && now < secrets.previousValidUntil ? [secrets.current, secrets.previous] : [secrets.current];
  let ok = false;
  // Every key is tried (no early exit): how long it takes says nothing about which one matched.
  for (const key of keys) {
    const expected = createHmac('sha256', key).update(claim.id, 'utf8').digest();
    if (given.length === expected.length && timingSafeEqual(given, expected)) ok = true;
  }
  return ok;
}

/**
 * What a visitor's message says of them (schema/envelope.ts): the verified identity, else
 * the pre-chat form's answers (unverified, `customer`), else nothing.
 */
export function visitorContact(verified: IdentityClaim | null, typed: { name: string | null; email: string | null } | null): CustomerContact | undefined {
  if (verified) return { name: verified.name, email: verified.email, phone: null, source: 'verified', verifiedId: verified.id };
  if (typed) return { name: typed.name, email: typed.email, phone: null, source: 'customer' };
  return undefined;
}
