import type { Quotas } from '../../lib/config.js';
import { notFound } from '../../lib/errors.js';
import { holdQuota } from '../../lib/quotas.js';
import { ApiTokenSchema, type ApiToken } from '../../schema/entities.js';
import { newApiToken } from '../auth/opaque-tokens.js';
import { actingUser, underTeamLock } from '../auth/team-lock.js';
import { sha256Hex } from '../../lib/secrets.js';
import { BAD_PAGE, examplePage, PAGE_QUERY, pageOf } from '../http/pagination.js';
import { assertRole, defineRoute, type Route } from '../http/route.js';
import { EXAMPLE_TIME, ID, nullable, object, STRING, TIMESTAMP, UUID } from '../http/schemas.js';
import { bodyValidator, idParam, idPathParam } from '../http/validate.js';
import { EXAMPLE_USER_ID } from './auth.js';

const createBody = bodyValidator<{ name: string }>({
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string', minLength: 1, maxLength: 100, pattern: '\\S' } },
});

const view = (t: ApiToken) => ({
  id: t.id,
  name: t.name,
  prefix: t.prefix,
  createdBy: t.createdBy,
  createdAt: t.createdAt.toISOString(),
  lastUsedAt: t.lastUsedAt ? t.lastUsedAt.toISOString() : null,
});

const TOKEN_PROPERTIES = {
  id: ID,
  name: STRING,
  prefix: { type: 'string', description: 'The first characters of the token, to recognise it.' },
  createdBy: { ...UUID, description: 'The user who made it (GET /api/users names them). It lives while they stay on the team with their role: removing them, or lowering their role, revokes it.' },
  createdAt: TIMESTAMP,
  lastUsedAt: nullable(TIMESTAMP),
};
const API_TOKEN = object(TOKEN_PROPERTIES, { title: 'ApiToken' });
const EXAMPLE_TOKEN = { id: 1, name: 'CI', prefix: 'mas_AbCdEfGh', createdBy: EXAMPLE_USER_ID, createdAt: EXAMPLE_TIME, lastUsedAt: null };

/** Company API tokens; managing them needs a session, using them does not. At most `quotas.apiTokens` live at once. */
export function apiTokenRoutes(quotas: Pick<Quotas, 'apiTokens'>): readonly Route[] {
  return [
    defineRoute({
      method: 'POST', path: '/', operationId: 'createApiToken', tag: 'API tokens', access: 'session',
      summary: 'Create a company API token (the token is shown in this answer only)',
      description: "It acts as an admin of the company, and is its maker's: removing them, or lowering their role, revokes it (its requests answer 401, its event streams end).",
      body: { validators: [createBody], example: { name: 'CI' } },
      responses: {
        201: {
          description: 'The token, with its secret `token` (stored only as a hash).',
          schema: object({ apiToken: object({ ...TOKEN_PROPERTIES, token: { type: 'string', pattern: '^mas_' } }) }),
          example: { apiToken: { ...EXAMPLE_TOKEN, token: 'mas_AbCdEfGhIjKlMnOpQrStUvWxYz012345' } },
        },
      },
      errors: { VALIDATION_ERROR: 'no name, or one over 100 characters', QUOTA_EXCEEDED: 'the company has QUOTA_API_TOKENS live tokens (50 by default); revoke one first' },
      handler: async ({ req, res, body: { name } }) => {
        const { em, companyId } = req.tenant!;
        const { token, prefix } = newApiToken();
        // Under the team lock: a maker being removed or demoted at this moment makes it first (and
        // it is revoked with the rest of theirs) or is refused, with the role they have then.
        const row = await underTeamLock(em, req.principal!, async (tx, p) => {
          assertRole(p.role, 'admin', 'Making an API token');
          // Revoked tokens are kept (their rows name who moved a lead) but count no more.
          await holdQuota(tx, { companyId, field: 'apiTokens', limit: quotas.apiTokens, entity: ApiTokenSchema, where: { revokedAt: null } });
          const made = tx.create(ApiTokenSchema, {
            companyId, name: name.trim(), prefix, tokenHash: sha256Hex(token), createdBy: actingUser(p), createdAt: new Date(), lastUsedAt: null, revokedAt: null,
          } as never);
          await tx.flush();
          return made;
        });
        res.status(201).json({ apiToken: { ...view(row), token } });
      },
    }),
    defineRoute({
      method: 'GET', path: '/', operationId: 'listApiTokens', tag: 'API tokens', access: 'session',
      summary: "The company's live API tokens (without their secrets), oldest first, paged",
      query: PAGE_QUERY,
      responses: { 200: { description: 'A page of the tokens not revoked.', schema: pageOf('apiTokens', API_TOKEN), example: examplePage('apiTokens', EXAMPLE_TOKEN) } },
      errors: { VALIDATION_ERROR: BAD_PAGE },
      handler: async ({ req, res, query: page }) => {
        const [rows, total] = await req.tenant!.em.findAndCount(ApiTokenSchema, { revokedAt: null }, { orderBy: { id: 'asc' }, ...page });
        res.json({ apiTokens: rows.map(view), total, ...page });
      },
    }),
    defineRoute({
      method: 'DELETE', path: '/:id', operationId: 'revokeApiToken', tag: 'API tokens', access: 'session',
      summary: 'Revoke an API token (it answers 401 from now on)',
      params: [idPathParam('API token')],
      responses: { 204: { description: 'Revoked.' } },
      errors: { NOT_FOUND: 'no such live token' },
      handler: async ({ req, res }) => {
        const id = idParam(req.params.id, 'API token');
        const n = await req.tenant!.em.nativeUpdate(ApiTokenSchema, { id, revokedAt: null }, { revokedAt: new Date() });
        if (n === 0) throw notFound('API token');
        res.status(204).end();
      },
    }),
  ];
}
