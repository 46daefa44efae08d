import { randomBytes, randomUUID } from 'node:crypto';
import type { EntityManager, Orm } from '../../lib/db.js';
import { AppError } from '../../lib/errors.js';
import { holdQuota, quotaExceeded } from '../../lib/quotas.js';
import { conflictOnUnique } from '../http/errors.js';
import { sha256Hex } from '../../lib/secrets.js';
import { CompanySchema, UserInvitationSchema, UserSchema, type Company, type User, type UserInvitation, type UserRole } from '../../schema/entities.js';

/**
 * Invitations to join a company (contract.md § A team works the conversations): an opaque
 * token shown once (in the answer that creates it, inside a link), stored as its SHA-256 like
 * refresh tokens, good for 7 days and once. No mail is sent: whoever invites passes the link on.
 */
const INVITATION_TTL_MS = 7 * 24 * 60 * 60 * 1000;

const newInvitationToken = (): string => 'inv_' + randomBytes(32).toString('base64url');

/** The dashboard's page that accepts it (the token is base64url: nothing to escape). */
export const invitationUrl = (publicBaseUrl: string, token: string): string => `${publicBaseUrl}/#/accept?token=${token}`;

/** Emails are compared as register stores them. */
export const normaliseEmail = (email: string): string => email.trim().toLowerCase();

const ACCEPT_FAILED = 'Invitation not found or expired.';
const EMAIL_TAKEN = 'A user with this email exists already.';

/** Whether any company has a user of this (normalised) email: emails are unique across companies. */
async function emailTaken(em: EntityManager, email: string): Promise<boolean> {
  return (await em.count(UserSchema, { email })) > 0;
}

export interface NewInvitation {
  companyId: number;
  email: string;
  role: UserRole;
  displayName: string | null;
  /** The user who invites: for a company API token, its maker (their removal or demotion revokes it). */
  createdBy: string | null;
  now: Date;
  /** The company's users quota: users and open invitations together. */
  limit: number;
}

/**
 * Stores an invitation through the tenant-scoped `tx`, inside its transaction (the team lock
 * held: gateway/auth/team-lock.ts); answers it with its token. An email that has a user
 * answers 409 CONFLICT. An open invitation of the same email is replaced (its link stops
 * working), so one person holds one live link and one place of the quota.
 */
export async function createInvitation(tx: EntityManager, input: NewInvitation): Promise<{ invitation: UserInvitation; token: string }> {
  if (await emailTaken(tx, input.email)) throw new AppError('CONFLICT', EMAIL_TAKEN);
  const token = newInvitationToken();
  // The quota lock serialises this with every other invitation of the company; accepting one
  // turns an open invitation into a user, which leaves the sum as it was.
  await holdQuota(tx, { companyId: input.companyId, field: 'users', limit: input.limit, entity: UserSchema, where: { companyId: input.companyId } });
  await tx.nativeDelete(UserInvitationSchema, { email: input.email, acceptedAt: null });
  const users = await tx.count(UserSchema, { companyId: input.companyId });
  const open = await tx.count(UserInvitationSchema, { acceptedAt: null, expiresAt: { $gt: input.now } });
  if (users + open >= input.limit) throw quotaExceeded('users', input.limit);
  const invitation = tx.create(UserInvitationSchema, {
    companyId: input.companyId, email: input.email, role: input.role, displayName: input.displayName, tokenHash: sha256Hex(token),
    createdBy: input.createdBy, createdAt: input.now, expiresAt: new Date(input.now.getTime() + INVITATION_TTL_MS), acceptedAt: null,
  } as never);
  await tx.flush();
  return { invitation, token };
}

interface ClaimedRow {
  company_id: number;
  email: string;
  role: UserRole;
  display_name: string | null;
}

/**
 * Makes the invitation's user, with its role and display name (or `displayName`), in one
 * transaction with marking it accepted. The mark is conditional on the invitation being open,
 * so of two uses of one token, even at the same moment, the second finds none: 404 NOT_FOUND,
 * like a bad, revoked or expired token. So does a use at the same moment as its sender's
 * removal or demotion, which deletes the row in its transaction: the update waits for it and
 * then finds nothing (gateway/auth/team-lock.ts revokeWhatTheyMade). An email that got a user
 * meanwhile: 409 CONFLICT (the invitation stays open, and cannot succeed).
 */
export async function acceptInvitation(orm: Orm, input: { token: string; passwordHash: string; displayName: string | null; now: Date }): Promise<{ user: User; company: Company }> {
  return conflictOnUnique(EMAIL_TAKEN, () =>
    orm.em.fork().transactional(async (tx) => {
      const [claimed] = await tx.execute<ClaimedRow[]>(
        `update user_invitations set accepted_at = ? where token_hash = ? and accepted_at is null and expires_at > ?
         returning company_id, email, role, display_name`,
        [input.now, sha256Hex(input.token), input.now],
      );
      if (!claimed) throw new AppError('NOT_FOUND', ACCEPT_FAILED);
      const user = tx.create(UserSchema, {
        id: randomUUID(), email: claimed.email, passwordHash: input.passwordHash, companyId: claimed.company_id, role: claimed.role,
        displayName: input.displayName ?? claimed.display_name, isSuperadmin: false, createdAt: input.now,
      });
      await tx.flush();
      const company = await tx.findOneOrFail(CompanySchema, { id: claimed.company_id });
      return { user, company };
    }),
  );
}
