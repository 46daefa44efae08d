import type { Quotas } from '../../lib/config.js';
import type { EntityManager } from '../../lib/db.js';
import { notFound } from '../../lib/errors.js';
import { withinQuota } from '../../lib/quotas.js';
import { CannedReplySchema, type CannedReply } from '../../schema/entities.js';
import { deleteById } from '../http/delete-by-id.js';
import { examplePage, PAGE_PARAMS, pageOf, pageParams, type Page } from '../http/pagination.js';
import { conflictOnUnique } from '../http/errors.js';
import { defineRoute, type QueryParams, type Route } from '../http/route.js';
import { EXAMPLE_TIME, ID, object, STRING, TIMESTAMP } from '../http/schemas.js';
import { bodyValidator, idParam, idPathParam, invalidField } from '../http/validate.js';

/**
 * `/api/canned-replies`: texts an operator inserts by their shortcut (`/` in the conversation
 * view). Every user reads them; admins write them. A shortcut is one word, unique in the company.
 */

const Q_MAX = 200;
const SHORTCUT = { type: 'string', minLength: 1, maxLength: 32, pattern: '^[\\p{L}\\p{N}_-]+$', description: 'Letters, digits, `_` and `-` (no spaces, no leading `/`).' } as const;
const TEXT = { type: 'string', minLength: 1, maxLength: 4096, pattern: '\\S' } as const;

const createBody = bodyValidator<{ shortcut: string; text: string }>({
  type: 'object',
  additionalProperties: false,
  required: ['shortcut', 'text'],
  properties: { shortcut: SHORTCUT, text: TEXT },
});

const patchBody = bodyValidator<{ shortcut?: string; text?: string }>({
  type: 'object',
  additionalProperties: false,
  properties: { shortcut: SHORTCUT, text: TEXT },
});

const view = (r: CannedReply) => ({ id: r.id, shortcut: r.shortcut, text: r.text, createdAt: r.createdAt.toISOString(), updatedAt: r.updatedAt.toISOString() });

const CANNED_REPLY = object({ id: ID, shortcut: STRING, text: STRING, createdAt: TIMESTAMP, updatedAt: TIMESTAMP }, { title: 'CannedReply' });
const EXAMPLE = { id: 1, shortcut: 'hours', text: 'We are open 9:00–18:00, Monday to Saturday.', createdAt: EXAMPLE_TIME, updatedAt: EXAMPLE_TIME };
const ONE = { schema: object({ cannedReply: CANNED_REPLY }), example: { cannedReply: EXAMPLE } };
const TAKEN = 'the company already has a canned reply with this shortcut';

/** `q` as a LIKE pattern that matches it anywhere, its wildcards taken literally. */
const containing = (q: string): string => `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

const LIST_QUERY: QueryParams<{ q?: string } & Page> = {
  params: [{ name: 'q', in: 'query', description: 'Only those whose shortcut or text contains this (case ignored).', schema: { type: 'string', maxLength: Q_MAX } }, ...PAGE_PARAMS],
  parse: (query) => {
    const { q } = query;
    if (q !== undefined && (typeof q !== 'string' || q.length > Q_MAX)) throw invalidField('q', `must be one text of at most ${Q_MAX} characters`);
    return { q: q?.trim() || undefined, ...pageParams(query) };
  },
};

const storing = <T>(write: () => Promise<T>): Promise<T> => conflictOnUnique('A canned reply with this shortcut exists already.', write);

async function load(em: EntityManager, rawId: unknown): Promise<CannedReply> {
  const row = await em.findOne(CannedReplySchema, { id: idParam(rawId, 'Canned reply') });
  if (!row) throw notFound('Canned reply');
  return row;
}

export function cannedReplyRoutes(quotas: Pick<Quotas, 'cannedReplies'>): readonly Route[] {
  const ID_PARAM = idPathParam('canned reply');
  return [
    defineRoute({
      method: 'GET', path: '/', operationId: 'listCannedReplies', tag: 'Canned replies', access: 'any',
      summary: "The company's canned replies by shortcut, searched and paged (any role)",
      query: LIST_QUERY,
      responses: { 200: { description: 'A page of canned replies.', schema: pageOf('cannedReplies', CANNED_REPLY), example: examplePage('cannedReplies', EXAMPLE) } },
      errors: { VALIDATION_ERROR: `q over ${Q_MAX} characters or given twice, a bad limit or offset` },
      handler: async ({ req, res, query: { q, limit, offset } }) => {
        const where = q ? { $or: [{ shortcut: { $ilike: containing(q) } }, { text: { $ilike: containing(q) } }] } : {};
        const [rows, total] = await req.tenant!.em.findAndCount(CannedReplySchema, where, { orderBy: { shortcut: 'asc', id: 'asc' }, limit, offset });
        res.json({ cannedReplies: rows.map(view), total, limit, offset });
      },
    }),
    defineRoute({
      method: 'POST', path: '/', operationId: 'createCannedReply', tag: 'Canned replies', access: 'any', role: 'admin',
      summary: 'Create a canned reply',
      body: { validators: [createBody], example: { shortcut: EXAMPLE.shortcut, text: EXAMPLE.text } },
      responses: { 201: { description: 'The canned reply.', ...ONE } },
      errors: {
        VALIDATION_ERROR: 'a shortcut that is not 1–32 letters, digits, _ or -, a blank text or one over 4096 characters',
        CONFLICT: TAKEN,
        QUOTA_EXCEEDED: 'the company has QUOTA_CANNED_REPLIES (1000 by default)',
      },
      handler: async ({ req, res, body }) => {
        const { em, companyId } = req.tenant!;
        const p = req.principal!;
        const now = new Date();
        const row = em.create(CannedReplySchema, { companyId, shortcut: body.shortcut, text: body.text, createdBy: p.kind === 'session' ? p.userId : null, createdAt: now, updatedAt: now } as never);
        await storing(() => withinQuota(em, { companyId, field: 'cannedReplies', limit: quotas.cannedReplies, entity: CannedReplySchema }, () => em.flush()));
        res.status(201).json({ cannedReply: view(row) });
      },
    }),
    defineRoute({
      method: 'PATCH', path: '/:id', operationId: 'updateCannedReply', tag: 'Canned replies', access: 'any', role: 'admin',
      summary: "Change a canned reply's shortcut or text",
      params: [ID_PARAM],
      body: { validators: [patchBody], example: { text: 'We are open 9:00–20:00, Monday to Saturday.' } },
      responses: { 200: { description: 'The canned reply as changed.', ...ONE } },
      errors: { NOT_FOUND: 'no such canned reply', VALIDATION_ERROR: 'a bad shortcut or text', CONFLICT: TAKEN },
      load: (req) => load(req.tenant!.em, req.params.id),
      handler: async ({ req, res, loaded: row, body }) => {
        if (body.shortcut !== undefined) row.shortcut = body.shortcut;
        if (body.text !== undefined) row.text = body.text;
        if (body.shortcut !== undefined || body.text !== undefined) row.updatedAt = new Date();
        await storing(() => req.tenant!.em.flush());
        res.json({ cannedReply: view(row) });
      },
    }),
    defineRoute({
      method: 'DELETE', path: '/:id', operationId: 'deleteCannedReply', tag: 'Canned replies', access: 'any', role: 'admin',
      summary: 'Delete a canned reply',
      params: [ID_PARAM],
      responses: { 204: { description: 'Deleted.' } },
      errors: { NOT_FOUND: 'no such canned reply' },
      handler: async ({ req, res }) => {
        await deleteById(req.tenant!, CannedReplySchema, req.params.id, 'Canned reply');
        res.status(204).end();
      },
    }),
  ];
}
