import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';
import type { Config } from '../../lib/config.js';

export interface AccessClaims {
  userId: string;
  companyId: number;
  sessionId: string;
}

/**
 * Session JWTs. HS256 only (the allow-list refuses `none` and every other algorithm),
 * issuer and audience pinned, and `typ: "access"` so no other token we sign can pass as one.
 */
export class AccessTokens {
  readonly #key: Uint8Array;
  readonly #config: Config;
  readonly #now: () => number;

  constructor(config: Config, now: () => number = Date.now) {
    this.#key = new TextEncoder().encode(config.jwtSecret);
    this.#config = config;
    this.#now = now;
  }

  async issue(claims: AccessClaims): Promise<{ token: string; expiresAt: number }> {
    const iat = Math.floor(this.#now() / 1000);
    const expiresAt = iat + this.#config.accessTokenTtlSeconds;
    const token = await new SignJWT({ companyId: claims.companyId, sid: claims.sessionId, typ: 'access' })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(claims.userId)
      .setIssuer(this.#config.jwtIssuer)
      .setAudience(this.#config.jwtAudience)
      .setIssuedAt(iat)
      .setExpirationTime(expiresAt)
      .sign(this.#key);
    return { token, expiresAt };
  }

  /** Returns the claims, or null for any token that is not a valid, current access token. */
  async verify(token: string): Promise<AccessClaims | null> {
    try {
      const { payload } = await jwtVerify(token, this.#key, {
        algorithms: ['HS256'],
        issuer: this.#config.jwtIssuer,
        audience: this.#config.jwtAudience,
        currentDate: new Date(this.#now()),
        requiredClaims: ['exp', 'sub', 'sid'],
      });
      if (payload.typ !== 'access' || typeof payload.companyId !== 'number' || typeof payload.sid !== 'string') return null;
      return { userId: payload.sub!, companyId: payload.companyId, sessionId: payload.sid };
    } catch (err) {
      if (err instanceof joseErrors.JOSEError) return null;
      throw err;
    }
  }
}
