import type { NextFunction, Request, Response } from 'express';
import type { Orm } from '../../lib/db.js';
import { AppError } from '../../lib/errors.js';
import { sha256Hex } from '../../lib/secrets.js';
import { tenantScope, type TenantScope } from '../../lib/tenancy.js';
import { ApiTokenSchema } from '../../schema/entities.js';
import type { AccessTokens } from './access-tokens.js';
import { isApiToken } from './opaque-tokens.js';
import type { Role } from '../http/route-docs.js';
import type { Sessions } from './sessions.js';

export type Principal =
  /** `expiresAt`: when its access token expires (Unix seconds); `role`: the user's, read with the session on every request. */
  | { kind: 'session'; userId: string; companyId: number; sessionId: string; expiresAt: number; role: Role }
  /**
   * A company API token acts as an admin, for `createdBy`, who made it (null only for a token
   * whose maker is gone, which is revoked with them: gateway/auth/team-lock.ts).
   */
  | { kind: 'api_token'; apiTokenId: number; companyId: number; role: 'admin'; createdBy: string | null };

declare module 'express-serve-static-core' {
  interface Request {
    principal?: Principal;
    tenant?: TenantScope;
    requestId?: string;
  }
}

/** last_used_at is advisory; writing it at most once a minute keeps token auth read-only. */
const LAST_USED_RESOLUTION_MS = 60_000;

export interface Authenticator {
  /** Any credential: session JWT or company API token. */
  any: (req: Request, res: Response, next: NextFunction) => Promise<void>;
  /** Session JWT only (API-token management, /api/auth/me, logout). */
  session: (req: Request, res: Response, next: NextFunction) => Promise<void>;
}

/** The token of an `Authorization: Bearer <token>` header, or null. */
export function bearerOf(req: Request): string | null {
  const header = req.headers.authorization;
  if (!header) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? m[1]! : null;
}

export function createAuthenticator(orm: Orm, tokens: AccessTokens, sessions: Sessions, now: () => number = Date.now): Authenticator {
  async function resolve(bearer: string): Promise<Principal | null> {
    if (isApiToken(bearer)) {
      const em = orm.em.fork();
      const row = await em.findOne(ApiTokenSchema, { tokenHash: sha256Hex(bearer), revokedAt: null }, { filters: false });
      if (!row) return null;
      if (!row.lastUsedAt || now() - row.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
        void em.nativeUpdate(ApiTokenSchema, { id: row.id }, { lastUsedAt: new Date(now()) }, { filters: false }).catch(() => {});
      }
      return { kind: 'api_token', apiTokenId: row.id, companyId: row.companyId, role: 'admin', createdBy: row.createdBy };
    }
    const claims = await tokens.verify(bearer);
    const role = claims ? await sessions.roleOfLive(claims) : null;
    if (!claims || !role) return null;
    return { kind: 'session', ...claims, role };
  }

  const make = (sessionOnly: boolean) => async (req: Request, _res: Response, next: NextFunction) => {
    const bearer = bearerOf(req);
    if (!bearer) throw new AppError('UNAUTHORIZED');
    const principal = await resolve(bearer);
    if (!principal) throw new AppError('UNAUTHORIZED', 'The Bearer token is invalid, expired or revoked.');
    if (sessionOnly && principal.kind !== 'session') {
      throw new AppError('UNAUTHORIZED', 'This route needs a session token from /api/auth/login; company API tokens are not accepted here.');
    }
    req.principal = principal;
    req.tenant = tenantScope(orm, principal.companyId);
    next();
  };
  return { any: make(false), session: make(true) };
}
