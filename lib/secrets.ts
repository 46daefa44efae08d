import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * Secrets at rest (webhook secrets, helpdesk tokens, model keys): AES-256-GCM.
 * Format `v1.<keyId>.<iv>.<tag>.<ciphertext>` (base64url), keyId = first 8 hex chars of
 * sha256(key), so a value names the key that sealed it and keys can be rotated: put the
 * new key first in SECRETS_KEY, keep the old ones after it until everything is resealed.
 */
export class SecretBox {
  readonly #keys: { id: string; key: Buffer }[];

  constructor(keys: readonly Buffer[]) {
    if (keys.length === 0) throw new Error('SecretBox needs at least one key');
    this.#keys = keys.map((key) => ({ id: createHash('sha256').update(key).digest('hex').slice(0, 8), key }));
  }

  seal(plain: string): string {
    const { id, key } = this.#keys[0]!;
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return ['v1', id, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join('.');
  }

  open(sealed: string): string {
    const [version, id, iv, tag, body] = sealed.split('.');
    if (version !== 'v1' || !id || !iv || !tag || body === undefined) throw new Error('not a sealed secret');
    const entry = this.#keys.find((k) => k.id === id);
    if (!entry) throw new Error(`secret sealed with unknown key ${id}`);
    const decipher = createDecipheriv('aes-256-gcm', entry.key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
  }

  /** True when the value was sealed with an older key and should be resealed. */
  isStale(sealed: string): boolean {
    return sealed.split('.')[1] !== this.#keys[0]!.id;
  }
}

export const sha256Hex = (value: string): string => createHash('sha256').update(value).digest('hex');
