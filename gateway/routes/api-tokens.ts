import { Router } from 'express';
import { notFound } from '../../lib/errors.js';
import { ApiTokenSchema, type ApiToken } from '../../schema/entities.js';
import type { Authenticator } from '../auth/authenticate.js';
import { newApiToken } from '../auth/opaque-tokens.js';
import { sha256Hex } from '../../lib/secrets.js';
import { bodyValidator, idParam } from '../http/validate.js';

const createBody = bodyValidator<{ name: string }>({
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string', minLength: 1, maxLength: 100, pattern: '\\S' } },
});

const view = (t: ApiToken) => ({
  id: t.id,
  name: t.name,
  prefix: t.prefix,
  createdAt: t.createdAt.toISOString(),
  lastUsedAt: t.lastUsedAt ? t.lastUsedAt.toISOString() : null,
});

/** Company API tokens; managing them needs a session, using them does not. */
export function apiTokenRoutes(auth: Authenticator): Router {
  const router = Router();
  router.use(auth.session);

  router.post('/', async (req, res) => {
    const { name } = createBody(req.body);
    const { em, companyId } = req.tenant!;
    const { token, prefix } = newApiToken();
    const p = req.principal!;
    const row = em.create(ApiTokenSchema, {
      companyId, name: name.trim(), prefix, tokenHash: sha256Hex(token),
      createdBy: p.kind === 'session' ? p.userId : null, createdAt: new Date(), lastUsedAt: null, revokedAt: null,
    } as never);
    await em.flush();
    res.status(201).json({ apiToken: { ...view(row), token } });
  });

  router.get('/', async (req, res) => {
    const rows = await req.tenant!.em.find(ApiTokenSchema, { revokedAt: null }, { orderBy: { id: 'asc' } });
    res.json({ apiTokens: rows.map(view) });
  });

  router.delete('/:id', async (req, res) => {
    const id = idParam(req.params.id, 'API token');
    const n = await req.tenant!.em.nativeUpdate(ApiTokenSchema, { id, revokedAt: null }, { revokedAt: new Date() });
    if (n === 0) throw notFound('API token');
    res.status(204).end();
  });
  return router;
}
