import type { Request } from 'express';
import type { Config } from '../../lib/config.js';
import type { EntityManager } from '../../lib/db.js';
import { AppError, notFound } from '../../lib/errors.js';
import { UserInvitationSchema, UserSchema, type User, type UserRole } from '../../schema/entities.js';
import type { Principal } from '../auth/authenticate.js';
import { createInvitation, invitationUrl, normaliseEmail } from '../auth/invitations.js';
import { actingUser, revokeWhatTheyMade, underTeamLock } from '../auth/team-lock.js';
import type { TeamColumns } from '../conversations/team-columns.js';
import { deleteById } from '../http/delete-by-id.js';
import { BAD_PAGE, examplePage, PAGE_QUERY, pageOf } from '../http/pagination.js';
import { ROLE_RANK, type ParamDoc } from '../http/route-docs.js';
import { assertRole, defineRoute, type Route } from '../http/route.js';
import { object, UUID } from '../http/schemas.js';
import { idPathParam, isUuid } from '../http/validate.js';
import {
  EXAMPLE_INVITATION,
  EXAMPLE_INVITATION_TOKEN,
  EXAMPLE_TEAM_USER,
  INVITATION,
  invitationBody,
  invitationView,
  NEW_INVITATION,
  patchUserBody,
  trimmedName,
  USER,
  userView,
} from './user-schemas.js';

/**
 * `/api/users`: the company's team (contract.md § A team works the conversations). Every user
 * sees the team; admins invite, change and remove users, owners alone make, unmake, change or
 * remove owners, and a company always keeps one owner. A user may rename themselves.
 */
export interface UserRouteDeps {
  config: Pick<Config, 'publicBaseUrl' | 'quotas'>;
  /** A removed user's conversations are unassigned through it, so open inboxes hear of it. */
  team: TeamColumns;
  now?: () => number;
}

const USER_ID: ParamDoc = { name: 'id', in: 'path', description: "The user's id.", schema: UUID, example: EXAMPLE_TEAM_USER.id };
const INVITATION_ID = idPathParam('invitation');
const ONE_USER = { schema: object({ user: USER }), example: { user: EXAMPLE_TEAM_USER } };
const LAST_OWNER = 'The company must keep an owner: make another user an owner first.';
const ROLE_NEEDS_SESSION = "Changing a role needs an owner's or admin's session (log in); company API tokens change no role.";

/** A user id of the path: anything but a UUID names no user (404). */
function userIdParam(value: unknown): string {
  if (isUuid(value)) return value.toLowerCase();
  throw notFound('User');
}

/** Runs `work` under the company's team lock (gateway/auth/team-lock.ts) with the user of the path as they are under it. */
async function withTeamUser<T>(req: Request, userId: string, work: (em: EntityManager, user: User, caller: Principal) => Promise<T>): Promise<T> {
  const { em, companyId } = req.tenant!;
  return underTeamLock(em, req.principal!, async (tx, caller) => {
    const user = await tx.findOne(UserSchema, { id: userId, companyId });
    if (!user) throw notFound('User');
    return work(tx, user, caller);
  });
}

/** 409 when `user` is the company's only owner (inside the team lock). */
async function assertNotLastOwner(em: EntityManager, user: User): Promise<void> {
  if (user.role !== 'owner') return;
  const owners = await em.count(UserSchema, { companyId: user.companyId, role: 'owner' });
  if (owners <= 1) throw new AppError('CONFLICT', LAST_OWNER);
}

export function userRoutes({ config, team, now = Date.now }: UserRouteDeps): readonly Route[] {
  return [
    defineRoute({
      method: 'GET', path: '/', operationId: 'listUsers', tag: 'Team', access: 'any',
      summary: "The company's users, oldest first, paged (any role)",
      query: PAGE_QUERY,
      responses: { 200: { description: 'A page of users.', schema: pageOf('users', USER), example: examplePage('users', EXAMPLE_TEAM_USER) } },
      errors: { VALIDATION_ERROR: BAD_PAGE },
      handler: async ({ req, res, query: page }) => {
        const { em, companyId } = req.tenant!;
        const [rows, total] = await em.findAndCount(UserSchema, { companyId }, { orderBy: { createdAt: 'asc', id: 'asc' }, ...page });
        res.json({ users: rows.map(userView), total, ...page });
      },
    }),
    defineRoute({
      method: 'PATCH', path: '/:id', operationId: 'updateUser', tag: 'Team', access: 'any', role: 'operator',
      summary: "Change a user's role or display name",
      description: "Anyone may change their own displayName; changing another user needs an admin, and making, unmaking or changing an owner needs an owner. A role changes only with an owner's or admin's session (never a company API token), and nobody raises their own. A role takes effect on the user's next request; lowering it (owner to admin included) revokes the API tokens they made and the invitations they sent that are still open.",
      params: [USER_ID],
      body: { validators: [patchUserBody], example: { role: 'admin', displayName: 'Bo' } },
      responses: { 200: { description: 'The user as changed.', ...ONE_USER } },
      errors: {
        NOT_FOUND: 'no such user in the company',
        VALIDATION_ERROR: 'an unknown role, a blank or too long displayName',
        FORBIDDEN: 'an operator changing another user or a role, an admin changing an owner or making one, a company API token changing a role, anyone raising their own',
        CONFLICT: 'the last owner would stop being one',
      },
      load: (req) => userIdParam(req.params.id),
      handler: async ({ req, res, loaded: id, body }) => {
        const user = await withTeamUser(req, id, async (em, user, p) => {
          const self = p.kind === 'session' && p.userId === user.id;
          const newRole: UserRole | undefined = body.role !== undefined && body.role !== user.role ? body.role : undefined;
          if (newRole && p.kind !== 'session') throw new AppError('FORBIDDEN', ROLE_NEEDS_SESSION);
          if (self && newRole && ROLE_RANK[newRole] > ROLE_RANK[user.role]) throw new AppError('FORBIDDEN', 'Nobody raises their own role: another owner or admin does.');
          if (!self || newRole) assertRole(p.role, 'admin', self ? 'Changing a role' : 'Changing another user');
          if ((user.role === 'owner' && !self) || newRole === 'owner' || (newRole && user.role === 'owner')) assertRole(p.role, 'owner', 'Making, unmaking or changing an owner');
          if (newRole) await assertNotLastOwner(em, user);
          // What they made acted with the role they had: it goes with it (contract.md § Tools that cannot be turned against us).
          if (newRole && ROLE_RANK[newRole] < ROLE_RANK[user.role]) await revokeWhatTheyMade(em, user.companyId, user.id, new Date(now()));
          if (newRole) user.role = newRole;
          if (body.displayName !== undefined) user.displayName = trimmedName(body.displayName);
          await em.flush();
          return user;
        });
        res.json({ user: userView(user) });
      },
    }),
    defineRoute({
      method: 'DELETE', path: '/:id', operationId: 'removeUser', tag: 'Team', access: 'any', role: 'admin',
      summary: 'Remove a user: every session of theirs ends at once, with the API tokens they made and the invitations they sent; their conversations become unassigned',
      description: 'Their requests, and those of the API tokens they made, answer 401 from this moment; the event streams of either end within 5 s. The invitations they sent that are still open are revoked (their links answer 404), even one being accepted at the same moment.',
      params: [USER_ID],
      responses: { 204: { description: 'Removed.' } },
      errors: { NOT_FOUND: 'no such user in the company', FORBIDDEN: 'below admin, or an admin removing an owner', CONFLICT: 'the last owner' },
      load: (req) => userIdParam(req.params.id),
      handler: async ({ req, res, loaded: id }) => {
        await withTeamUser(req, id, async (em, user, p) => {
          assertRole(p.role, 'admin', 'Removing a user');
          if (user.role === 'owner') assertRole(p.role, 'owner', 'Removing an owner');
          await assertNotLastOwner(em, user);
          await team.unassignAllOf(user.companyId, user.id);
          await revokeWhatTheyMade(em, user.companyId, user.id, new Date(now()));
          // Their sessions go with them (auth_sessions cascade): the next request of any of them
          // finds none (gateway/auth/sessions.ts roleOfLive), an open stream at its next check.
          await em.nativeDelete(UserSchema, { id: user.id, companyId: user.companyId });
        });
        res.status(204).end();
      },
    }),
    defineRoute({
      method: 'POST', path: '/invitations', operationId: 'inviteUser', tag: 'Team', access: 'any', role: 'admin',
      summary: 'Invite someone to the company (the link is shown in this answer only)',
      description: "No mail is sent: pass the `url` on. It is good once, for 7 days; the invitee picks a password with `POST /api/auth/accept-invitation`. An open invitation of the same email is replaced. Users and open invitations count against QUOTA_USERS together. It is its sender's (a company API token's is its maker's): removing them, or lowering their role, revokes it.",
      body: { validators: [invitationBody], example: { email: 'bo@example.com', role: 'operator', displayName: 'Bo' } },
      responses: {
        201: {
          description: 'The invitation with its token and link.',
          schema: object({ invitation: NEW_INVITATION }),
          example: { invitation: { ...EXAMPLE_INVITATION, token: EXAMPLE_INVITATION_TOKEN, url: `https://app.example.com/#/accept?token=${EXAMPLE_INVITATION_TOKEN}` } },
        },
      },
      errors: {
        VALIDATION_ERROR: 'a bad email or role, a blank or too long displayName',
        FORBIDDEN: 'below admin, or an admin inviting an owner',
        CONFLICT: 'the email already has a user',
        QUOTA_EXCEEDED: 'users and open invitations together reach QUOTA_USERS (200 by default)',
      },
      handler: async ({ req, res, body }) => {
        const { em, companyId } = req.tenant!;
        // Under the team lock: a sender being removed or demoted at this moment sends it first
        // (and it is revoked with the rest of theirs) or is refused, with the role they have then.
        const { invitation, token } = await underTeamLock(em, req.principal!, (tx, p) => {
          assertRole(p.role, 'admin', 'Inviting someone');
          if (body.role === 'owner') assertRole(p.role, 'owner', 'Inviting an owner');
          return createInvitation(tx, {
            companyId, email: normaliseEmail(body.email), role: body.role, displayName: trimmedName(body.displayName),
            createdBy: actingUser(p), now: new Date(now()), limit: config.quotas.users,
          });
        });
        res.status(201).json({ invitation: { ...invitationView(invitation), token, url: invitationUrl(config.publicBaseUrl, token) } });
      },
    }),
    defineRoute({
      method: 'GET', path: '/invitations', operationId: 'listInvitations', tag: 'Team', access: 'any', role: 'admin',
      summary: 'The open invitations (neither accepted nor expired), newest first, paged; without their tokens',
      query: PAGE_QUERY,
      responses: { 200: { description: 'A page of invitations.', schema: pageOf('invitations', INVITATION), example: examplePage('invitations', EXAMPLE_INVITATION) } },
      errors: { VALIDATION_ERROR: BAD_PAGE },
      handler: async ({ req, res, query: page }) => {
        const where = { acceptedAt: null, expiresAt: { $gt: new Date(now()) } };
        const [rows, total] = await req.tenant!.em.findAndCount(UserInvitationSchema, where, { orderBy: { createdAt: 'desc', id: 'desc' }, ...page });
        res.json({ invitations: rows.map(invitationView), total, ...page });
      },
    }),
    defineRoute({
      method: 'DELETE', path: '/invitations/:id', operationId: 'revokeInvitation', tag: 'Team', access: 'any', role: 'admin',
      summary: 'Revoke an invitation not yet accepted (its link stops working)',
      params: [INVITATION_ID],
      responses: { 204: { description: 'Revoked.' } },
      errors: { NOT_FOUND: 'no such invitation, or one already accepted' },
      handler: async ({ req, res }) => {
        await deleteById(req.tenant!, UserInvitationSchema, req.params.id, 'Invitation', { acceptedAt: null });
        res.status(204).end();
      },
    }),
  ];
}
