import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';
import type { Config } from '../../lib/config.js';

export interface AccessClaims {
  userId: string;
  companyId: number;
  sessionId: string;
}

/** The claims of a verified access token, with when it expires (Unix seconds). */
export interface VerifiedAccess extends AccessClaims {
  expiresAt: number;
}

/**
 * How far ahead of this process's clock another gateway's clock may be: a token it issued
 * a moment ago is not refused as issued in the future.
 */
const CLOCK_SKEW_SECONDS = 60;

/**
 * Session JWTs. HS256 only (the allow-list refuses `none` and every other algorithm),
 * issuer and audience pinned, and `typ: "access"` so no other token we sign can pass as one.
 * A token lives at most ACCESS_TOKEN_TTL_SECONDS (`exp - iat`, `iat` not in the future),
 * whoever signed it: one minted with the real key for ten years is refused all the same.
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
  async verify(token: string): Promise<VerifiedAccess | null> {
    try {
      const now = this.#now();
      const { payload } = await jwtVerify(token, this.#key, {
        algorithms: ['HS256'],
        issuer: this.#config.jwtIssuer,
        audience: this.#config.jwtAudience,
        currentDate: new Date(now),
        requiredClaims: ['exp', 'iat', 'sub', 'sid'],
      });
      if (payload.typ !== 'access' || typeof payload.companyId !== 'number' || typeof payload.sid !== 'string') return null;
      // jose has checked that both are numbers.
      const { iat, exp } = payload as { iat: number; exp: number };
      if (exp - iat > this.#config.accessTokenTtlSeconds || iat > now / 1000 + CLOCK_SKEW_SECONDS) return null;
      return { userId: payload.sub!, companyId: payload.companyId, sessionId: payload.sid, expiresAt: exp };
    } catch (err) {
      if (err instanceof joseErrors.JOSEError) return null;
      throw err;
    }
  }
}
