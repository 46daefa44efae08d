import express, { Router, type RequestHandler } from 'express';
import { AppError, notFound } from '../../lib/errors.js';
import { MAX_SEARCH_LIMIT, searchKnowledge } from '../../lib/knowledge.js';
import type { TenantScope } from '../../lib/tenancy.js';
import { KnowledgeBaseSchema, KnowledgeDocumentSchema, type KnowledgeBase, type KnowledgeDocument } from '../../schema/entities.js';
import type { Authenticator } from '../auth/authenticate.js';
import { bodyValidator, idParam } from '../http/validate.js';

/** A document's content may be up to this many UTF-8 bytes. */
export const MAX_DOCUMENT_BYTES = 1_000_000;
export const MAX_QUERY_LENGTH = 1000;

/**
 * The API-wide JSON limit is 1 MB; a document of up to MAX_DOCUMENT_BYTES plus its JSON
 * escaping (newlines, quotes) needs a little more. gateway/app.ts mounts this on
 * /api/knowledge-bases ahead of the API-wide parser, which then skips the parsed body.
 */
export const knowledgeBodyParser: RequestHandler = express.json({ limit: '2mb', type: ['application/json', 'application/*+json'] });

const nameProperty = { type: 'string', minLength: 1, maxLength: 200, pattern: '\\S' };
const createBaseBody = bodyValidator<{ name: string }>({ type: 'object', additionalProperties: false, required: ['name'], properties: { name: nameProperty } });
const patchBaseBody = bodyValidator<{ name?: string }>({ type: 'object', additionalProperties: false, properties: { name: nameProperty } });
const createDocumentBody = bodyValidator<{ title: string; content: string }>({
  type: 'object',
  additionalProperties: false,
  required: ['title', 'content'],
  properties: {
    title: { type: 'string', minLength: 1, maxLength: 500, pattern: '\\S' },
    content: { type: 'string', minLength: 1, maxLength: MAX_DOCUMENT_BYTES, pattern: '\\S' },
  },
});

export const knowledgeBaseView = (kb: KnowledgeBase) => ({ id: kb.id, name: kb.name, createdAt: kb.createdAt.toISOString() });
export const documentView = (d: KnowledgeDocument) => ({ id: d.id, title: d.title, content: d.content, createdAt: d.createdAt.toISOString() });

function contentError(message: string): AppError {
  return new AppError('VALIDATION_ERROR', `Invalid content: ${message}.`, { details: [{ field: 'content', message }] });
}

function queryParams(query: Record<string, unknown>): { q: string; limit: number | undefined } {
  const details = [];
  const q = query.q;
  if (typeof q !== 'string' || !q.trim()) details.push({ field: 'q', message: 'is required' });
  else if (q.length > MAX_QUERY_LENGTH) details.push({ field: 'q', message: `must be at most ${MAX_QUERY_LENGTH} characters` });
  let limit: number | undefined;
  if (query.limit !== undefined) {
    const raw = query.limit;
    limit = typeof raw === 'string' && /^\d{1,3}$/.test(raw) ? Number(raw) : NaN;
    if (!(limit >= 1 && limit <= MAX_SEARCH_LIMIT)) details.push({ field: 'limit', message: `must be an integer from 1 to ${MAX_SEARCH_LIMIT}` });
  }
  if (details.length) throw new AppError('VALIDATION_ERROR', `Invalid ${details.map((d) => d.field).join(', ')}.`, { details });
  return { q: q as string, limit };
}

/** PostgreSQL refuses a tsvector over 1 MB (a huge document of mostly distinct words). */
const isTsvectorTooLong = (err: unknown) => (err as { code?: string }).code === '54000' || /too long for tsvector/i.test(String((err as Error)?.message));

export function knowledgeRoutes(auth: Authenticator): Router {
  const router = Router();
  router.use(auth.any);

  const loadBase = async (tenant: TenantScope, rawId: unknown) => {
    const kb = await tenant.em.findOne(KnowledgeBaseSchema, { id: idParam(rawId, 'Knowledge base') });
    if (!kb) throw notFound('Knowledge base');
    return kb;
  };

  router.get('/', async (req, res) => {
    const bases = await req.tenant!.em.find(KnowledgeBaseSchema, {}, { orderBy: { id: 'asc' } });
    res.json({ knowledgeBases: bases.map(knowledgeBaseView) });
  });

  router.post('/', async (req, res) => {
    const body = createBaseBody(req.body);
    const tenant = req.tenant!;
    const kb = tenant.em.create(KnowledgeBaseSchema, { companyId: tenant.companyId, name: body.name.trim(), createdAt: new Date() });
    await tenant.em.flush();
    res.status(201).json({ knowledgeBase: knowledgeBaseView(kb) });
  });

  router.get('/:id', async (req, res) => {
    res.json({ knowledgeBase: knowledgeBaseView(await loadBase(req.tenant!, req.params.id)) });
  });

  router.patch('/:id', async (req, res) => {
    const tenant = req.tenant!;
    const kb = await loadBase(tenant, req.params.id);
    const body = patchBaseBody(req.body);
    if (body.name !== undefined) kb.name = body.name.trim();
    await tenant.em.flush();
    res.json({ knowledgeBase: knowledgeBaseView(kb) });
  });

  /** Its documents go with it (on delete cascade); agents that used it keep working without one. */
  router.delete('/:id', async (req, res) => {
    const n = await req.tenant!.em.nativeDelete(KnowledgeBaseSchema, { id: idParam(req.params.id, 'Knowledge base') });
    if (n === 0) throw notFound('Knowledge base');
    res.status(204).end();
  });

  router.post('/:id/documents', async (req, res) => {
    const tenant = req.tenant!;
    const kb = await loadBase(tenant, req.params.id);
    const body = createDocumentBody(req.body);
    if (Buffer.byteLength(body.content, 'utf8') > MAX_DOCUMENT_BYTES) throw contentError(`must be at most ${MAX_DOCUMENT_BYTES} bytes (UTF-8)`);
    const doc = tenant.em.create(KnowledgeDocumentSchema, {
      companyId: tenant.companyId, knowledgeBaseId: kb.id, title: body.title.trim(), content: body.content, createdAt: new Date(),
    });
    try {
      await tenant.em.flush();
    } catch (err) {
      if (isTsvectorTooLong(err)) throw contentError('has too many distinct words to index; split it into several documents');
      throw err;
    }
    res.status(201).json({ document: documentView(doc) });
  });

  router.get('/:id/documents', async (req, res) => {
    const tenant = req.tenant!;
    const kb = await loadBase(tenant, req.params.id);
    const docs = await tenant.em.find(KnowledgeDocumentSchema, { knowledgeBaseId: kb.id }, { orderBy: { id: 'asc' } });
    res.json({ documents: docs.map(documentView) });
  });

  router.get('/:id/documents/:docId', async (req, res) => {
    const tenant = req.tenant!;
    const kb = await loadBase(tenant, req.params.id);
    const doc = await tenant.em.findOne(KnowledgeDocumentSchema, { id: idParam(req.params.docId, 'Document'), knowledgeBaseId: kb.id });
    if (!doc) throw notFound('Document');
    res.json({ document: documentView(doc) });
  });

  router.delete('/:id/documents/:docId', async (req, res) => {
    const tenant = req.tenant!;
    const kb = await loadBase(tenant, req.params.id);
    const n = await tenant.em.nativeDelete(KnowledgeDocumentSchema, { id: idParam(req.params.docId, 'Document'), knowledgeBaseId: kb.id });
    if (n === 0) throw notFound('Document');
    res.status(204).end();
  });

  router.get('/:id/search', async (req, res) => {
    const tenant = req.tenant!;
    const kb = await loadBase(tenant, req.params.id);
    const { q, limit } = queryParams(req.query as Record<string, unknown>);
    const results = await searchKnowledge(tenant.em, { companyId: tenant.companyId, knowledgeBaseId: kb.id, query: q, limit });
    res.json({ results });
  });

  return router;
}
