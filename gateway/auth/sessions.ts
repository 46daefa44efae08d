import { randomUUID } from 'node:crypto';
import type { Config } from '../../lib/config.js';
import type { Orm } from '../../lib/db.js';
import { AppError } from '../../lib/errors.js';
import { sha256Hex } from '../../lib/secrets.js';
import { AuthSessionSchema, RefreshTokenSchema } from '../../schema/entities.js';
import type { AccessClaims, AccessTokens } from './access-tokens.js';
import type { Role } from '../http/route-docs.js';
import { newRefreshToken } from './opaque-tokens.js';

/** Session and user ids are UUIDs; anything else cannot name a row (and must not reach a uuid column). */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A positive PostgreSQL `integer`. */
const isRowId = (n: number) => Number.isInteger(n) && n > 0 && n <= 2_147_483_647;

export interface SessionTokens {
  access_token: string;
  refresh_token: string;
  expires_at: number;
}

/**
 * Login sessions: one auth_sessions row per login, a chain of single-use refresh tokens
 * stored as SHA-256 hashes. Presenting a token that was already rotated means it leaked
 * (or two clients share it): the whole session is revoked.
 */
export class Sessions {
  readonly #orm: Orm;
  readonly #config: Config;
  readonly #tokens: AccessTokens;
  readonly #now: () => number;

  constructor(orm: Orm, config: Config, tokens: AccessTokens, now: () => number = Date.now) {
    this.#orm = orm;
    this.#config = config;
    this.#tokens = tokens;
    this.#now = now;
  }

  #refreshExpiry(): Date {
    return new Date(this.#now() + this.#config.refreshTokenTtlSeconds * 1000);
  }

  async start(userId: string, companyId: number): Promise<SessionTokens> {
    const em = this.#orm.em.fork();
    const sessionId = randomUUID();
    const refresh = newRefreshToken();
    await em.transactional(async (tx) => {
      tx.create(AuthSessionSchema, { id: sessionId, userId, companyId, createdAt: new Date(this.#now()), expiresAt: this.#refreshExpiry(), revokedAt: null, revokedReason: null });
      await tx.flush();
      tx.create(RefreshTokenSchema, { sessionId, tokenHash: sha256Hex(refresh), createdAt: new Date(this.#now()), expiresAt: this.#refreshExpiry(), usedAt: null } as never);
    });
    const access = await this.#tokens.issue({ userId, companyId, sessionId });
    return { access_token: access.token, refresh_token: refresh, expires_at: access.expiresAt };
  }

  /** Exchanges a refresh token for a new session pair; throws 401 REFRESH_FAILED otherwise. */
  async refresh(refreshToken: string): Promise<SessionTokens> {
    const fail = () => new AppError('REFRESH_FAILED');
    const em = this.#orm.em.fork();
    const row = await em.findOne(RefreshTokenSchema, { tokenHash: sha256Hex(refreshToken) });
    if (!row) throw fail();
    const session = await em.findOne(AuthSessionSchema, { id: row.sessionId });
    if (!session || session.revokedAt) throw fail();
    const now = new Date(this.#now());
    // Single use, decided by the database so two concurrent refreshes cannot both win.
    const claimed = await em.nativeUpdate(RefreshTokenSchema, { id: row.id, usedAt: null }, { usedAt: now });
    if (claimed === 0) {
      await this.revoke(session.id, 'refresh_token_reuse');
      throw fail();
    }
    if (row.expiresAt.getTime() <= now.getTime()) throw fail();

    const next = newRefreshToken();
    await em.transactional(async (tx) => {
      tx.create(RefreshTokenSchema, { sessionId: session.id, tokenHash: sha256Hex(next), createdAt: now, expiresAt: this.#refreshExpiry(), usedAt: null } as never);
      await tx.nativeUpdate(AuthSessionSchema, { id: session.id }, { expiresAt: this.#refreshExpiry() });
    });
    const access = await this.#tokens.issue({ userId: session.userId, companyId: session.companyId, sessionId: session.id });
    return { access_token: access.token, refresh_token: next, expires_at: access.expiresAt };
  }

  async revoke(sessionId: string, reason: string): Promise<void> {
    const em = this.#orm.em.fork();
    await em.nativeUpdate(AuthSessionSchema, { id: sessionId, revokedAt: null }, { revokedAt: new Date(this.#now()), revokedReason: reason });
  }

  /**
   * Of these sessions, the ones still live: not revoked (logout, reuse), not expired, and
   * still there (removing a user removes their sessions). For streams that re-check the
   * session they were opened with (its user and company were checked then, by roleOfLive).
   */
  async liveOf(sessionIds: readonly string[]): Promise<Set<string>> {
    const ids = sessionIds.filter((id) => UUID.test(id));
    if (ids.length === 0) return new Set();
    const rows = await this.#orm.em.fork().find(
      AuthSessionSchema,
      { id: { $in: ids }, revokedAt: null, expiresAt: { $gt: new Date(this.#now()) } },
      { fields: ['id'] },
    );
    return new Set(rows.map((row) => row.id));
  }

  /**
   * The user's role when the access token's session exists, belongs to the token's user AND
   * company (the user still of that company), has not expired and has not been revoked (logout,
   * reuse, the user removed); else null. A token pairing a real session with another user or
   * company is not honoured, however it was signed. The role is read here, on every request,
   * so a changed role holds at once.
   */
  async roleOfLive(claims: AccessClaims): Promise<Role | null> {
    if (!UUID.test(claims.sessionId) || !UUID.test(claims.userId) || !isRowId(claims.companyId)) return null;
    const rows = await this.#orm.em.fork().getConnection().execute<{ role: Role }[]>(
      `select u.role from auth_sessions s join users u on u.id = s.user_id and u.company_id = s.company_id
       where s.id = ? and s.user_id = ? and s.company_id = ? and s.revoked_at is null and s.expires_at > ?`,
      [claims.sessionId, claims.userId, claims.companyId, new Date(this.#now())],
    );
    return rows[0]?.role ?? null;
  }
}
