import { createHmac } from 'node:crypto';
import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';
import type { Config } from '../../lib/config.js';

/**
 * Webchat visitor tokens: who a widget visitor is, across reloads and reconnects.
 *
 * An HS256 JWT `{typ:"visitor", iid:<integrationId>, sub:<visitorId>}` with its own
 * audience, signed with a key *derived* from JWT_SECRET (HMAC-SHA256 of a fixed label), not
 * with JWT_SECRET itself. So a visitor token never verifies as an API access token (wrong
 * key, wrong `typ`, wrong audience) and an access token never verifies as a visitor token.
 * A token names one integration: presented to another integration's socket it is refused.
 * Every `welcome` hands out a freshly signed token, so an active visitor never expires.
 */
export const VISITOR_TOKEN_AUDIENCE = 'mas-webchat';
export const DEFAULT_VISITOR_TOKEN_TTL_SECONDS = 180 * 24 * 3600;
const KEY_LABEL = 'mas/webchat-visitor-token/v1';
const VISITOR_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export interface VisitorClaims {
  visitorId: string;
  integrationId: number;
}

export class VisitorTokens {
  readonly #key: Uint8Array;
  readonly #issuer: string;
  readonly #ttlSeconds: number;
  readonly #now: () => number;

  constructor(config: Pick<Config, 'jwtSecret' | 'jwtIssuer'>, options: { now?: () => number; ttlSeconds?: number } = {}) {
    this.#key = new Uint8Array(createHmac('sha256', config.jwtSecret).update(KEY_LABEL).digest());
    this.#issuer = config.jwtIssuer;
    this.#ttlSeconds = options.ttlSeconds ?? DEFAULT_VISITOR_TOKEN_TTL_SECONDS;
    this.#now = options.now ?? Date.now;
  }

  async issue(claims: VisitorClaims): Promise<string> {
    const iat = Math.floor(this.#now() / 1000);
    return new SignJWT({ typ: 'visitor', iid: claims.integrationId })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(claims.visitorId)
      .setIssuer(this.#issuer)
      .setAudience(VISITOR_TOKEN_AUDIENCE)
      .setIssuedAt(iat)
      .setExpirationTime(iat + this.#ttlSeconds)
      .sign(this.#key);
  }

  /** The visitor, or null for anything that is not a valid, current token of this integration. */
  async verify(token: string, integrationId: number): Promise<VisitorClaims | null> {
    try {
      const { payload } = await jwtVerify(token, this.#key, {
        algorithms: ['HS256'],
        issuer: this.#issuer,
        audience: VISITOR_TOKEN_AUDIENCE,
        currentDate: new Date(this.#now()),
        requiredClaims: ['exp', 'sub'],
      });
      if (payload.typ !== 'visitor' || payload.iid !== integrationId || typeof payload.sub !== 'string' || !VISITOR_ID.test(payload.sub)) return null;
      return { visitorId: payload.sub, integrationId };
    } catch (err) {
      if (err instanceof joseErrors.JOSEError || err instanceof TypeError) return null;
      throw err;
    }
  }
}
