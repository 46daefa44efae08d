import { Router } from 'express';
import type { Orm } from '../../lib/db.js';
import type { Logger } from '../../lib/logger.js';
import type { Config } from '../../lib/config.js';
import { AppError } from '../../lib/errors.js';
import { CompanySchema, UserSchema } from '../../schema/entities.js';
import type { Authenticator } from '../auth/authenticate.js';
import { hashPassword, verifyPassword } from '../auth/passwords.js';
import type { Sessions } from '../auth/sessions.js';
import { createAccount } from '../auth/signup.js';
import { RateLimiter } from '../http/rate-limit.js';
import { bodyValidator } from '../http/validate.js';

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

const refreshBody = bodyValidator<{ refresh_token: string }>({
  type: 'object',
  required: ['refresh_token'],
  properties: { refresh_token: { type: 'string', minLength: 1, maxLength: 512 } },
});

const normaliseEmail = (email: string) => email.trim().toLowerCase();

export function authRoutes(deps: { orm: Orm; config: Config; logger: Logger; sessions: Sessions; auth: Authenticator; now?: () => number }): Router {
  const { orm, config, logger, sessions, auth } = deps;
  const limits = config.rateLimits;
  const loginPerEmail = new RateLimiter(limits.loginPerEmail, deps.now);
  const loginPerIp = new RateLimiter(limits.loginPerIp, deps.now);
  const registerPerIp = new RateLimiter(limits.registerPerIp, deps.now);
  const refreshPerIp = new RateLimiter(limits.refreshPerIp, deps.now);
  const router = Router();

  router.post('/register', async (req, res) => {
    registerPerIp.hit(req.ip ?? 'unknown');
    const body = registerBody(req.body);
    const passwordHash = await hashPassword(body.password);
    let created;
    try {
      created = await createAccount(orm, { email: normaliseEmail(body.email), passwordHash, companyName: body.companyName.trim() });
    } catch (err) {
      logger.info({ err: (err as Error).message }, 'registration failed');
      throw new AppError('USER_CREATION_FAILED', undefined, { cause: err });
    }
    const { user, company } = created;
    res.status(201).json({
      user: { id: user.id, email: user.email },
      company: { id: company.id, companyId: company.publicId, companyName: company.name },
    });
  });

  router.post('/login', async (req, res) => {
    loginPerIp.hit(req.ip ?? 'unknown');
    const body = loginBody(req.body);
    const email = normaliseEmail(body.email);
    loginPerEmail.hit(email);
    const em = orm.em.fork();
    const user = await em.findOne(UserSchema, { email }, { populate: ['passwordHash'] });
    const ok = await verifyPassword(user?.passwordHash ?? null, body.password);
    if (!user || !ok) throw new AppError('INVALID_CREDENTIALS');
    const session = await sessions.start(user.id, user.companyId);
    res.json({ session, user: { id: user.id, email: user.email, companyId: user.companyId } });
  });

  router.post('/refresh', async (req, res) => {
    refreshPerIp.hit(req.ip ?? 'unknown');
    let token: string;
    try {
      token = refreshBody(req.body).refresh_token;
    } catch {
      throw new AppError('REFRESH_FAILED', 'A refresh_token is required.');
    }
    res.json({ session: await sessions.refresh(token) });
  });

  router.post('/logout', auth.session, async (req, res) => {
    const p = req.principal!;
    if (p.kind === 'session') await sessions.revoke(p.sessionId, 'logout');
    res.status(204).end();
  });

  router.get('/me', auth.session, async (req, res) => {
    const p = req.principal!;
    if (p.kind !== 'session') throw new AppError('UNAUTHORIZED');
    const em = orm.em.fork();
    const user = await em.findOne(UserSchema, { id: p.userId });
    const company = await em.findOne(CompanySchema, { id: p.companyId });
    if (!user || !company) throw new AppError('UNAUTHORIZED');
    res.json({
      user: { id: user.id, email: user.email, companyId: user.companyId, isSuperadmin: user.isSuperadmin },
      company: { id: company.id, companyId: company.publicId, companyName: company.name, createdAt: company.createdAt.toISOString() },
    });
  });

  return router;
}
