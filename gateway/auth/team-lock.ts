import type { EntityManager } from '../../lib/db.js';
import { AppError } from '../../lib/errors.js';
import { ApiTokenSchema, UserInvitationSchema, UserSchema } from '../../schema/entities.js';
import type { Principal } from './authenticate.js';

/**
 * The second key of the advisory lock that serialises a company's team changes (role changes,
 * removals) with what acts with a teammate's role (making an API token, sending an
 * invitation). Of two owners demoting or removing each other at once, the second sees the
 * first's result and is refused as the last owner; a token made, or an invitation sent, by
 * someone being removed or demoted is either made first (and revoked with the rest of theirs)
 * or refused, never left behind.
 */
export const TEAM_LOCK = 19_003;

const REVOKED = 'The Bearer token is invalid, expired or revoked.';

/**
 * The caller as they are now (inside the team lock): a session's user with their role of this
 * moment, an API token still live with its maker. A user removed or a token revoked by a
 * change that held the lock just before: 401, as their next request would be.
 */
async function callerNow(tx: EntityManager, p: Principal): Promise<Principal> {
  if (p.kind === 'session') {
    const self = await tx.findOne(UserSchema, { id: p.userId, companyId: p.companyId });
    if (!self) throw new AppError('UNAUTHORIZED', REVOKED);
    return { ...p, role: self.role };
  }
  const token = await tx.findOne(ApiTokenSchema, { id: p.apiTokenId, companyId: p.companyId, revokedAt: null });
  if (!token) throw new AppError('UNAUTHORIZED', REVOKED);
  return { ...p, createdBy: token.createdBy };
}

/**
 * Runs `work` in a transaction on the tenant-scoped `em` holding the company's team lock, with
 * the caller as they are under it: a caller demoted (or removed) by a change that held the
 * lock just before acts with what they have now, not with the role their request was let in with.
 */
export async function underTeamLock<T>(em: EntityManager, principal: Principal, work: (tx: EntityManager, caller: Principal) => Promise<T>): Promise<T> {
  return em.transactional(async (tx) => {
    await tx.execute('select pg_advisory_xact_lock(?, ?)', [TEAM_LOCK, principal.companyId]);
    return work(tx, await callerNow(tx, principal));
  });
}

/** Whom a caller acts for: a session's user, or the teammate who made the API token. */
export const actingUser = (p: Principal): string | null => (p.kind === 'session' ? p.userId : p.createdBy);

/**
 * Revokes what `userId` made that acts with their role: their live API tokens and the
 * invitations they sent that are still open (deleted, as a revoked invitation is). Called
 * under the team lock, in the transaction that removes them or lowers their role: an
 * acceptance of one of those invitations at the same moment waits for its row and then finds
 * it gone (404), and the tokens' event streams end at the credential watch's next check.
 * Before the user's row goes: api_tokens.created_by is set null with it.
 */
export async function revokeWhatTheyMade(tx: EntityManager, companyId: number, userId: string, now: Date): Promise<void> {
  await tx.nativeUpdate(ApiTokenSchema, { companyId, createdBy: userId, revokedAt: null }, { revokedAt: now });
  await tx.nativeDelete(UserInvitationSchema, { companyId, createdBy: userId, acceptedAt: null });
}
