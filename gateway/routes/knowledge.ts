import type { Request, RequestHandler } from 'express';
import type { Config } from '../../lib/config.js';
import type { SqlPool } from '../../lib/db.js';
import { AppError, notFound } from '../../lib/errors.js';
import { MAX_SYNONYM_LENGTH, MAX_SYNONYMS_PER_GROUP } from '../../lib/knowledge/search.js';
import { loadBaseInfo, searchKnowledge } from '../../lib/knowledge/retrieve.js';
import type { VectorIndex } from '../../lib/knowledge/vectors.js';
import type { Logger } from '../../lib/logger.js';
import { PerKeyLimit } from '../../lib/per-key-limit.js';
import type { SecretBox } from '../../lib/secrets.js';
import { storable } from '../../lib/text.js';
import { KnowledgeBaseSchema, KnowledgeDocumentSchema, type KnowledgeDocument } from '../../schema/entities.js';
import { deleteById } from '../http/delete-by-id.js';
import { jsonBody } from '../http/json-body.js';
import { BAD_PAGE, DEFAULT_LIST_LIMIT, examplePage, PAGE_QUERY, pageOf } from '../http/pagination.js';
import { defineRoute, type Route } from '../http/route.js';
import { arrayOf, nullable, object, STRING } from '../http/schemas.js';
import { assertTenantUrl, idParam, invalidField } from '../http/validate.js';
import { formatOf, type DocumentFormat } from '../knowledge/extract.js';
import type { KnowledgeIngestor } from '../knowledge/ingestor.js';
import type { AgentChanges } from '../lib/agent-changes.js';
import { KnowledgeService } from '../knowledge/service.js';
import { readUpload, UPLOAD_FORM_SCHEMA } from '../knowledge/upload.js';
import {
  BAD_BASE,
  BASE_ID,
  CHUNK,
  createBaseBody,
  DOCUMENT,
  DOCUMENT_BODIES,
  DOCUMENT_ID,
  DOCUMENT_PROPERTIES,
  documentView,
  EXAMPLE_BASE,
  EXAMPLE_CHUNK,
  EXAMPLE_DOCUMENT,
  KNOWLEDGE_BASE,
  knowledgeBaseView,
  MAX_DOCUMENT_BYTES,
  MAX_UPLOAD_BYTES,
  NO_BASE,
  NO_DOCUMENT,
  ONE_BASE,
  patchBaseBody,
  SEARCH_QUERY,
  SEARCH_RESULT,
  searchResultView,
  textDocumentBody,
  TOO_MANY_SYNONYMS,
  urlDocumentBody,
} from './knowledge-schemas.js';

/** A search refused because the company has SEARCH_MAX_PER_COMPANY running may be tried again after this long. */
export const SEARCH_RETRY_AFTER_SECONDS = 1;

/**
 * The API-wide JSON limit is 1 MB; a document of up to MAX_DOCUMENT_BYTES plus its JSON
 * escaping (newlines, quotes) needs a little more, and a base's synonyms as many groups as
 * its quota allows of the longest terms (2 bytes a character: Latin and Cyrillic text; 4.9 MB
 * for the default 2000 groups). gateway/app.ts mounts this on /api/knowledge-bases ahead of
 * the API-wide parser, which then skips the parsed body.
 */
export function knowledgeBodyParser(config: Pick<Config, 'quotas'>): RequestHandler {
  const documents = jsonBody('2mb');
  const synonymBytes = config.quotas.synonymGroupsPerBase * MAX_SYNONYMS_PER_GROUP * (2 * MAX_SYNONYM_LENGTH + 3);
  const bases = jsonBody(Math.max(2 * 1024 * 1024, synonymBytes + 64 * 1024));
  return (req, res, next) => (/^\/[^/]+\/?$|^\/?$/.test(req.path) ? bases : documents)(req, res, next);
}

export interface KnowledgeRouteDeps {
  config: Config;
  sql: SqlPool;
  secrets: SecretBox;
  vectors: VectorIndex;
  ingestor: KnowledgeIngestor;
  logger: Logger;
  /** A change to a base (its synonyms, its documents) is announced to the workers before the answer. */
  changes: AgentChanges;
}

/** `/api/knowledge-bases`: bases, their documents and search; every route needs a company credential. */
export function knowledgeRoutes(deps: KnowledgeRouteDeps): readonly Route[] {
  const { config, sql, secrets } = deps;
  const knowledge = new KnowledgeService(deps);
  const base = (req: Request) => knowledge.loadBase(req.tenant!, idParam(req.params.id, 'Knowledge base'));
  const baseAndDocument = async (req: Request, withContent = false) => {
    const kb = await base(req);
    return { kb, doc: await knowledge.loadDocument(req.tenant!, kb, idParam(req.params.docId, 'Document'), withContent) };
  };
  /**
   * A company's searches at once, in this process (SEARCH_MAX_PER_COMPANY): one more is refused
   * at once (429, Retry-After) rather than queued. A search takes milliseconds, so only a script
   * meets the limit, and a queue would only hold its requests in memory longer.
   */
  const searches = new PerKeyLimit(config.searchMaxPerCompany);

  return [
    defineRoute({
      method: 'GET', path: '/', operationId: 'listKnowledgeBases', tag: 'Knowledge', access: 'any',
      summary: "The company's knowledge bases, oldest first, paged",
      query: PAGE_QUERY,
      responses: { 200: { description: 'A page of knowledge bases.', schema: pageOf('knowledgeBases', KNOWLEDGE_BASE), example: examplePage('knowledgeBases', EXAMPLE_BASE) } },
      errors: { VALIDATION_ERROR: BAD_PAGE },
      handler: async ({ req, res, query: page }) => {
        const [bases, total] = await req.tenant!.em.findAndCount(KnowledgeBaseSchema, {}, { orderBy: { id: 'asc' }, populate: ['embeddingApiKeySealed'], ...page });
        res.json({ knowledgeBases: bases.map(knowledgeBaseView), total, ...page });
      },
    }),
    defineRoute({
      method: 'POST', path: '/', operationId: 'createKnowledgeBase', tag: 'Knowledge', access: 'any',
      summary: 'Create a knowledge base (its search language; optionally an OpenAI-compatible embedding model)',
      body: { validators: [createBaseBody], example: { name: 'Help centre', language: 'english' } },
      responses: { 201: { description: 'The new knowledge base.', ...ONE_BASE } },
      errors: { VALIDATION_ERROR: BAD_BASE, QUOTA_EXCEEDED: `the company has QUOTA_KNOWLEDGE_BASES knowledge bases (100 by default), or ${TOO_MANY_SYNONYMS}` },
      handler: async ({ req, res, body }) => {
        const created = await knowledge.createBase(req.tenant!, body);
        await deps.changes.announce(req.tenant!.companyId);
        res.status(201).json({ knowledgeBase: knowledgeBaseView(created) });
      },
    }),
    defineRoute({
      method: 'GET', path: '/:id', operationId: 'getKnowledgeBase', tag: 'Knowledge', access: 'any',
      summary: 'One knowledge base',
      params: [BASE_ID],
      responses: { 200: { description: 'The knowledge base.', ...ONE_BASE } },
      errors: { NOT_FOUND: NO_BASE },
      load: base,
      handler: ({ res, loaded: kb }) => {
        res.json({ knowledgeBase: knowledgeBaseView(kb) });
      },
    }),
    defineRoute({
      method: 'PATCH', path: '/:id', operationId: 'updateKnowledgeBase', tag: 'Knowledge', access: 'any',
      summary: 'Change a knowledge base (a new language or embedding model re-indexes every document in the background; synonyms apply at once)',
      params: [BASE_ID],
      body: { validators: [patchBaseBody], example: { name: 'Help centre (EN)', synonyms: [['esim', 'embedded sim', 'digital sim']] } },
      responses: { 200: { description: 'The knowledge base as it is now.', ...ONE_BASE } },
      errors: { NOT_FOUND: NO_BASE, VALIDATION_ERROR: BAD_BASE, QUOTA_EXCEEDED: TOO_MANY_SYNONYMS },
      load: base,
      handler: async ({ req, res, loaded: kb, body }) => {
        await knowledge.updateBase(req.tenant!, kb, body);
        await deps.changes.announce(req.tenant!.companyId);
        res.json({ knowledgeBase: knowledgeBaseView(kb) });
      },
    }),
    /** Its documents, chunks and terms go with it (on delete cascade); agents that used it keep working without one. */
    defineRoute({
      method: 'DELETE', path: '/:id', operationId: 'deleteKnowledgeBase', tag: 'Knowledge', access: 'any',
      summary: 'Delete a knowledge base with its documents and chunks',
      params: [BASE_ID],
      responses: { 204: { description: 'Deleted.' } },
      errors: { NOT_FOUND: NO_BASE },
      handler: async ({ req, res }) => {
        await deleteById(req.tenant!, KnowledgeBaseSchema, req.params.id, 'Knowledge base');
        await deps.changes.announce(req.tenant!.companyId);
        res.status(204).end();
      },
    }),
    defineRoute({
      method: 'POST', path: '/:id/documents', operationId: 'addDocument', tag: 'Knowledge', access: 'any',
      summary: 'Add a document: JSON text, a page by URL, or a file upload (multipart)',
      description: 'Always answers at once with the document `processing`: it is read, chunked and embedded in the background (worker threads, round-robin between companies), then `ready`, or `failed` with the reason in `error` (no text to index, an unreadable file, a page that does not answer, over INGEST_TIMEOUT_MS or INGEST_MEMORY_MB).',
      params: [BASE_ID],
      body: {
        validators: DOCUMENT_BODIES,
        example: { title: 'Opening hours', content: '# Opening hours\n\nWe open at nine, Monday to Saturday.', format: 'markdown' },
        alsoAccepts: { 'multipart/form-data': UPLOAD_FORM_SCHEMA },
        // A file upload is read by the handler, as it streams in.
        choose: (req) => {
          if (req.is('multipart/form-data')) return null;
          if (req.body && typeof req.body === 'object' && 'url' in req.body) return urlDocumentBody;
          if (!req.is('application/json') && !req.is('application/*+json')) throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'Send JSON {title, content} or {url}, or multipart/form-data with a file.');
          return textDocumentBody;
        },
      },
      responses: { 201: { description: 'The new document.', schema: object({ document: DOCUMENT }), example: { document: EXAMPLE_DOCUMENT } } },
      errors: {
        NOT_FOUND: NO_BASE,
        VALIDATION_ERROR: 'a bad field, no or an empty file, two files, a bad or private URL',
        PAYLOAD_TOO_LARGE: `content over ${MAX_DOCUMENT_BYTES} bytes or a file over ${MAX_UPLOAD_BYTES / 1024 / 1024} MiB`,
        UNSUPPORTED_MEDIA_TYPE: 'a body neither JSON nor multipart, or a file type other than .txt, .md, .html, .pdf',
        QUOTA_EXCEEDED: 'the knowledge base holds QUOTA_DOCUMENTS_PER_BASE documents (10000 by default); delete one first',
      },
      load: base,
      handler: async ({ req, res, loaded: kb, body }) => {
        const tenant = req.tenant!;
        let doc: KnowledgeDocument;
        if (req.is('multipart/form-data')) {
          const declared = Number(req.headers['content-length']);
          if (declared > MAX_UPLOAD_BYTES + 64 * 1024) throw new AppError('PAYLOAD_TOO_LARGE', `The file is larger than ${MAX_UPLOAD_BYTES / 1024 / 1024} MiB.`);
          const upload = await readUpload(req, MAX_UPLOAD_BYTES);
          const format = formatOf(upload.filename, null) ?? (upload.bytes.subarray(0, 5).toString('latin1') === '%PDF-' ? 'pdf' : null);
          if (!format) throw new AppError('UNSUPPORTED_MEDIA_TYPE', `Unsupported file type${/\.[^.]+$/.test(upload.filename) ? ` ${/\.[^.]+$/.exec(upload.filename)![0]}` : ''}: upload a .txt, .md, .html or .pdf file.`);
          const title = storable(upload.title ?? upload.filename.replace(/\.[^.]+$/, '').trim());
          doc = await knowledge.addDocument(tenant, kb, { title: title || 'Untitled', source: { type: format, filename: storable(upload.filename), bytes: upload.bytes.length }, raw: upload.bytes });
        } else if ('url' in body) {
          await assertTenantUrl(config, 'url', body.url);
          doc = await knowledge.addDocument(tenant, kb, { title: body.title?.trim() ?? body.url, source: { type: 'url', url: body.url }, raw: null });
        } else {
          const raw = Buffer.from(body.content, 'utf8');
          if (raw.length > MAX_DOCUMENT_BYTES) throw invalidField('content', `must be at most ${MAX_DOCUMENT_BYTES} bytes (UTF-8)`);
          // Stored as sent, read like an upload of its format: a text without anything to index fails in the background.
          const format: DocumentFormat = body.format ?? 'markdown';
          doc = await knowledge.addDocument(tenant, kb, { title: body.title.trim(), source: { type: format, bytes: raw.length }, raw });
        }
        res.status(201).json({ document: documentView(doc) });
      },
    }),
    defineRoute({
      method: 'GET', path: '/:id/documents', operationId: 'listDocuments', tag: 'Knowledge', access: 'any',
      summary: 'The documents of a knowledge base, paged',
      params: [BASE_ID],
      query: PAGE_QUERY,
      responses: { 200: { description: 'A page of documents.', schema: pageOf('documents', DOCUMENT), example: examplePage('documents', EXAMPLE_DOCUMENT) } },
      errors: { NOT_FOUND: NO_BASE, VALIDATION_ERROR: BAD_PAGE },
      load: base,
      handler: async ({ req, res, loaded: kb, query: { limit, offset } }) => {
        const [docs, total] = await req.tenant!.em.findAndCount(KnowledgeDocumentSchema, { knowledgeBaseId: kb.id }, { orderBy: { id: 'asc' }, limit, offset });
        res.json({ documents: docs.map(documentView), total, limit, offset });
      },
    }),
    defineRoute({
      method: 'GET', path: '/:id/documents/:docId', operationId: 'getDocument', tag: 'Knowledge', access: 'any',
      summary: 'One document with its extracted content (null until extracted)',
      params: [BASE_ID, DOCUMENT_ID],
      responses: {
        200: {
          description: 'The document.',
          schema: object({ document: object({ ...DOCUMENT_PROPERTIES, content: nullable(STRING) }) }),
          example: { document: { ...EXAMPLE_DOCUMENT, content: '# Kettle manual\n\n## Descaling\n\nDescale the kettle once a month with citric acid.' } },
        },
      },
      errors: { NOT_FOUND: NO_DOCUMENT },
      load: (req) => baseAndDocument(req, true),
      handler: ({ res, loaded: { doc } }) => {
        res.json({ document: { ...documentView(doc), content: doc.content } });
      },
    }),
    /** 200 rather than 202, like the other actions: the answer is the document as it is now, `processing`. */
    defineRoute({
      method: 'POST', path: '/:id/documents/:docId/retry', operationId: 'retryDocument', tag: 'Knowledge', access: 'any',
      summary: 'Process a failed document again: a page is fetched again, an upload read from its stored file, text indexed from its content',
      description: 'For a document that failed because of its base or its source (the embedding server was down, the page answered 404), once that is mended. Answers at once with the document `processing` (progress 0, no error, its interruptions counted afresh); it moves to `ready` or `failed` in the background.',
      params: [BASE_ID, DOCUMENT_ID],
      responses: {
        200: { description: 'The document, processing again.', schema: object({ document: DOCUMENT }), example: { document: { ...EXAMPLE_DOCUMENT, status: 'processing', progress: 0, chunks: 0 } } },
      },
      errors: { NOT_FOUND: NO_DOCUMENT, CONFLICT: 'the document is not failed (it is ready, or processing already), or its uploaded file is no longer stored' },
      load: base,
      handler: async ({ req, res, loaded: kb }) => {
        res.json({ document: documentView(await knowledge.retryDocument(req.tenant!, kb, idParam(req.params.docId, 'Document'))) });
      },
    }),
    defineRoute({
      method: 'GET', path: '/:id/documents/:docId/chunks', operationId: 'listChunks', tag: 'Knowledge', access: 'any',
      summary: 'The chunks of a document, by position, paged',
      params: [BASE_ID, DOCUMENT_ID],
      query: PAGE_QUERY,
      responses: { 200: { description: 'A page of chunks.', schema: pageOf('chunks', CHUNK), example: { chunks: [EXAMPLE_CHUNK], total: 12, limit: DEFAULT_LIST_LIMIT, offset: 0 } } },
      errors: { NOT_FOUND: NO_DOCUMENT, VALIDATION_ERROR: BAD_PAGE },
      load: (req) => baseAndDocument(req),
      handler: async ({ req, res, loaded: { doc }, query: page }) => {
        res.json({ ...(await knowledge.listChunks(req.tenant!, doc, page)), ...page });
      },
    }),
    defineRoute({
      method: 'DELETE', path: '/:id/documents/:docId', operationId: 'deleteDocument', tag: 'Knowledge', access: 'any',
      summary: 'Delete a document and its chunks',
      params: [BASE_ID, DOCUMENT_ID],
      responses: { 204: { description: 'Deleted.' } },
      errors: { NOT_FOUND: NO_DOCUMENT },
      load: (req) => baseAndDocument(req),
      handler: async ({ req, res, loaded: { kb, doc } }) => {
        await knowledge.deleteDocument(req.tenant!, kb, doc);
        await deps.changes.announce(req.tenant!.companyId);
        res.status(204).end();
      },
    }),
    defineRoute({
      method: 'GET', path: '/:id/search', operationId: 'searchKnowledgeBase', tag: 'Knowledge', access: 'any',
      summary: 'Search a knowledge base: full text, trigram and (with an embedding model) vectors, fused by reciprocal rank',
      // The question is read once a search slot is held and the base found (429, then 404, before 400).
      params: [BASE_ID, ...SEARCH_QUERY.params],
      responses: {
        200: {
          description: 'The results, best first.',
          schema: object({ results: arrayOf(SEARCH_RESULT) }),
          example: { results: [{ documentId: 7, chunkId: 31, title: 'Kettle manual', heading: 'Kettle manual › Descaling', snippet: 'Descale the kettle once a month…', score: 0.032522, relevance: 1, confidence: 0.86, matchedBy: ['fulltext'] }] },
        },
      },
      errors: { NOT_FOUND: NO_BASE, VALIDATION_ERROR: 'no q, q too long, or a bad limit', RATE_LIMITED: 'the company has SEARCH_MAX_PER_COMPANY searches running in this process (4 by default)' },
      handler: async ({ req, res }) => {
        const tenant = req.tenant!;
        const release = searches.take(tenant.companyId);
        if (!release) {
          throw new AppError('RATE_LIMITED', `This company already has ${searches.max} searches running; retry in a moment.`, { headers: { 'Retry-After': String(SEARCH_RETRY_AFTER_SECONDS) } });
        }
        try {
          const found = await loadBaseInfo(sql, secrets, config, tenant.companyId, idParam(req.params.id, 'Knowledge base'), deps.logger);
          if (!found) throw notFound('Knowledge base');
          const { q, limit } = SEARCH_QUERY.parse(req.query as Record<string, unknown>);
          const results = await searchKnowledge({ sql, vectors: deps.vectors, logger: deps.logger }, found, q, { limit });
          res.json({ results: results.map(searchResultView) });
        } finally {
          release();
        }
      },
    }),
  ];
}
