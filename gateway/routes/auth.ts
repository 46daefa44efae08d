import type { Orm } from '../../lib/db.js';
import type { Logger } from '../../lib/logger.js';
import type { Config } from '../../lib/config.js';
import { AppError } from '../../lib/errors.js';
import { sqlState } from '../../lib/pg-errors.js';
import { CompanySchema, UserSchema } from '../../schema/entities.js';
import { acceptInvitation, normaliseEmail } from '../auth/invitations.js';
import { hashPassword, verifyPassword } from '../auth/passwords.js';
import type { Sessions } from '../auth/sessions.js';
import { LoginLimits } from '../auth/login-limits.js';
import { createAccount } from '../auth/signup.js';
import { RateLimiter } from '../http/rate-limit.js';
import { defineRoute, type Route } from '../http/route.js';
import { BOOLEAN, EXAMPLE_TIME, ID, object, STRING, TIMESTAMP, UUID } from '../http/schemas.js';
import { bodyValidator, type BodyValidator } from '../http/validate.js';
import { ACCEPTED, acceptBody, DISPLAY_NAME, EXAMPLE_ACCEPTED, EXAMPLE_INVITATION_TOKEN, ROLE, trimmedName } from './user-schemas.js';

const registerBody = bodyValidator<{ email: string; password: string; companyName: string }>({
  type: 'object',
  required: ['email', 'password', 'companyName'],
  properties: {
    email: { type: 'string', format: 'email', maxLength: 254 },
    password: { type: 'string', minLength: 8, maxLength: 1024 },
    companyName: { type: 'string', minLength: 1, maxLength: 200, pattern: '\\S' },
  },
});

const loginBody = bodyValidator<{ email: string; password: string }>({
  type: 'object',
  required: ['email', 'password'],
  properties: { email: { type: 'string', minLength: 1, maxLength: 254 }, password: { type: 'string', minLength: 1, maxLength: 1024 } },
});

const refreshTokenBody = bodyValidator<{ refresh_token: string }>({
  type: 'object',
  required: ['refresh_token'],
  properties: { refresh_token: { type: 'string', minLength: 1, maxLength: 512 } },
});
/** A refresh without a good refresh_token fails like one with a bad token: REFRESH_FAILED, not VALIDATION_ERROR. */
const refreshBody: BodyValidator<{ refresh_token: string }> = Object.assign(
  (body: unknown) => {
    try {
      return refreshTokenBody(body);
    } catch {
      throw new AppError('REFRESH_FAILED', 'A refresh_token is required.');
    }
  },
  { schema: refreshTokenBody.schema },
);

/** A database error's SQLSTATE (`23505`: the email is taken), else the error's class name: never its message. */
const errorCodeOf = (err: unknown): string => sqlState(err) ?? (err instanceof Error ? err.name : 'unknown');

const SESSION = object(
  { access_token: { type: 'string', description: 'JWT, sent as `Authorization: Bearer …`' }, refresh_token: STRING, expires_at: { type: 'integer', description: 'When the access token expires (Unix seconds).' } },
  { title: 'Session' },
);
const EMAIL = { type: 'string', format: 'email' };
const COMPANY = { id: ID, companyId: UUID, companyName: STRING };
export const EXAMPLE_USER_ID = '6f1c2d4e-8a3b-4c5d-9e0f-1a2b3c4d5e6f';
const EXAMPLE_COMPANY = { id: 1, companyId: 'a7e9c1b3-5d2f-4e6a-8b0c-9d1e2f3a4b5c', companyName: 'Acme' };
const EXAMPLE_SESSION = { access_token: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIuLi4ifQ.c2lnbmF0dXJl', refresh_token: 'rt_9f86d081884c7d659a2feaa0c55ad015', expires_at: 1772359200 };
const RATE_LIMITED_LOGIN = 'too many failed logins for this email or from this address (10 per email, 300 per IP in 15 minutes), even with the right password';

/** `/api/auth`: sign-up and sessions are public; logout and the current user need a session. */
export function authRoutes(deps: { orm: Orm; config: Config; logger: Logger; sessions: Sessions; now?: () => number }): readonly Route[] {
  const { orm, config, logger, sessions } = deps;
  const limits = config.rateLimits;
  const loginLimits = new LoginLimits({ orm, rules: { perEmail: limits.loginPerEmail, perIp: limits.loginPerIp }, logger, now: deps.now });
  const registerPerIp = new RateLimiter(limits.registerPerIp, deps.now);
  const refreshPerIp = new RateLimiter(limits.refreshPerIp, deps.now);
  // Accepting makes a user as registering does: the same rule, counted apart.
  const acceptPerIp = new RateLimiter(limits.registerPerIp, deps.now);
  const now = deps.now ?? Date.now;
  return [
    defineRoute({
      method: 'POST', path: '/register', operationId: 'register', tag: 'Accounts', access: 'public',
      summary: 'Create an account: a user, its company (5.00 USD of credit, the Sales pipeline)',
      body: { validators: [registerBody], example: { email: 'ann@example.com', password: 'correct horse', companyName: 'Acme' } },
      responses: {
        201: {
          description: 'The user and the company.',
          schema: object({ user: object({ id: UUID, email: EMAIL }), company: object(COMPANY) }),
          example: { user: { id: EXAMPLE_USER_ID, email: 'ann@example.com' }, company: EXAMPLE_COMPANY },
        },
      },
      errors: { VALIDATION_ERROR: 'a bad email, a password under 8 characters, no companyName', RATE_LIMITED: 'too many registrations from this address', USER_CREATION_FAILED: 'the account could not be created (the email may already exist)' },
      // Every attempt counts, a bad one too.
      load: (req) => registerPerIp.hit(req.ip ?? 'unknown'),
      handler: async ({ res, body }) => {
        const passwordHash = await hashPassword(body.password);
        let created;
        try {
          created = await createAccount(orm, { email: normaliseEmail(body.email), passwordHash, companyName: body.companyName.trim() });
        } catch (err) {
          // The driver's message quotes the SQL and its parameters (email, password hash): log the code alone.
          logger.info({ code: errorCodeOf(err) }, 'registration failed');
          throw new AppError('USER_CREATION_FAILED', undefined, { cause: err });
        }
        const { user, company } = created;
        res.status(201).json({
          user: { id: user.id, email: user.email },
          company: { id: company.id, companyId: company.publicId, companyName: company.name },
        });
      },
    }),
    defineRoute({
      method: 'POST', path: '/login', operationId: 'login', tag: 'Accounts', access: 'public',
      summary: 'Log in: a session (access and refresh token)',
      body: { validators: [loginBody], example: { email: 'ann@example.com', password: 'correct horse' } },
      responses: {
        200: {
          description: 'A new session.',
          schema: object({ session: SESSION, user: object({ id: UUID, email: EMAIL, companyId: ID }) }),
          example: { session: EXAMPLE_SESSION, user: { id: EXAMPLE_USER_ID, email: 'ann@example.com', companyId: 1 } },
        },
      },
      errors: { VALIDATION_ERROR: 'email or password missing', INVALID_CREDENTIALS: 'wrong email or password', RATE_LIMITED: RATE_LIMITED_LOGIN },
      handler: async ({ req, res, body }) => {
        const email = normaliseEmail(body.email);
        // Counted as a failure until the password proves right (429 when the email or IP is locked out).
        const attempt = await loginLimits.begin(email, req.ip ?? 'unknown');
        const em = orm.em.fork();
        const user = await em.findOne(UserSchema, { email }, { populate: ['passwordHash'] });
        const ok = await verifyPassword(user?.passwordHash ?? null, body.password);
        if (!user || !ok) throw new AppError('INVALID_CREDENTIALS');
        await attempt.succeeded();
        const session = await sessions.start(user.id, user.companyId);
        res.json({ session, user: { id: user.id, email: user.email, companyId: user.companyId } });
      },
    }),
    defineRoute({
      method: 'POST', path: '/refresh', operationId: 'refreshSession', tag: 'Accounts', access: 'public',
      summary: 'Exchange a refresh token for a new session (the refresh token is single use)',
      body: { validators: [refreshBody], example: { refresh_token: EXAMPLE_SESSION.refresh_token } },
      responses: { 200: { description: 'The new session.', schema: object({ session: SESSION }), example: { session: EXAMPLE_SESSION } } },
      errors: { REFRESH_FAILED: 'no refresh_token, or one invalid, expired or already used (reusing one revokes its session)', RATE_LIMITED: 'too many refreshes from this address' },
      load: (req) => refreshPerIp.hit(req.ip ?? 'unknown'),
      handler: async ({ res, body }) => {
        res.json({ session: await sessions.refresh(body.refresh_token) });
      },
    }),
    defineRoute({
      method: 'POST', path: '/accept-invitation', operationId: 'acceptInvitation', tag: 'Accounts', access: 'public',
      summary: 'Join a company by an invitation: the invited user, with the password chosen here',
      description: 'The token comes from the invitation\'s link (`POST /api/users/invitations`); it is good once, for 7 days. Then log in with `POST /api/auth/login`.',
      body: { validators: [acceptBody], example: { token: EXAMPLE_INVITATION_TOKEN, password: 'correct horse', displayName: 'Bo' } },
      responses: { 201: { description: 'The new user and their company.', schema: ACCEPTED, example: EXAMPLE_ACCEPTED } },
      errors: {
        VALIDATION_ERROR: 'no token, a password under 8 characters, a blank or too long displayName',
        NOT_FOUND: 'the token is unknown, used, revoked (by hand, or with its sender\'s removal or lowered role) or expired',
        CONFLICT: 'the email got a user meanwhile',
        RATE_LIMITED: 'too many attempts from this address (the registration rule)',
      },
      // Every attempt counts, a bad token too: tokens cannot be tried in bulk.
      load: (req) => acceptPerIp.hit(req.ip ?? 'unknown'),
      handler: async ({ res, body }) => {
        const passwordHash = await hashPassword(body.password);
        const { user, company } = await acceptInvitation(orm, { token: body.token, passwordHash, displayName: trimmedName(body.displayName), now: new Date(now()) });
        res.status(201).json({
          user: { id: user.id, email: user.email, role: user.role, displayName: user.displayName },
          company: { id: company.id, companyId: company.publicId, companyName: company.name },
        });
      },
    }),
    defineRoute({
      method: 'POST', path: '/logout', operationId: 'logout', tag: 'Accounts', access: 'session',
      summary: "Revoke the caller's session (its access and refresh tokens stop working)",
      responses: { 204: { description: 'Revoked.' } },
      handler: async ({ req, res }) => {
        const p = req.principal!;
        if (p.kind === 'session') await sessions.revoke(p.sessionId, 'logout');
        res.status(204).end();
      },
    }),
    defineRoute({
      method: 'GET', path: '/me', operationId: 'getCurrentUser', tag: 'Accounts', access: 'session',
      summary: 'The current user and company',
      responses: {
        200: {
          description: 'The user and the company.',
          schema: object({
            user: object({ id: UUID, email: EMAIL, companyId: ID, isSuperadmin: BOOLEAN, role: ROLE, displayName: DISPLAY_NAME }),
            company: object({ ...COMPANY, createdAt: TIMESTAMP }),
          }),
          example: { user: { id: EXAMPLE_USER_ID, email: 'ann@example.com', companyId: 1, isSuperadmin: false, role: 'owner', displayName: 'Ann' }, company: { ...EXAMPLE_COMPANY, createdAt: EXAMPLE_TIME } },
        },
      },
      handler: async ({ req, res }) => {
        const p = req.principal!;
        if (p.kind !== 'session') throw new AppError('UNAUTHORIZED');
        const em = orm.em.fork();
        const user = await em.findOne(UserSchema, { id: p.userId });
        const company = await em.findOne(CompanySchema, { id: p.companyId });
        if (!user || !company) throw new AppError('UNAUTHORIZED');
        res.json({
          user: { id: user.id, email: user.email, companyId: user.companyId, isSuperadmin: user.isSuperadmin, role: user.role, displayName: user.displayName },
          company: { id: company.id, companyId: company.publicId, companyName: company.name, createdAt: company.createdAt.toISOString() },
        });
      },
    }),
  ];
}
