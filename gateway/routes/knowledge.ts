import express, { type Request, type RequestHandler } from 'express';
import type { Config } from '../../lib/config.js';
import { query, type SqlPool } from '../../lib/db.js';
import { AppError, notFound } from '../../lib/errors.js';
import { DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT, MAX_SYNONYM_LENGTH, MAX_SYNONYMS_PER_GROUP } from '../../lib/knowledge/search.js';
import { loadBaseInfo, searchKnowledge } from '../../lib/knowledge/retrieve.js';
import { indexSynonyms, removeChunks, type Exec } from '../../lib/knowledge/store.js';
import type { VectorIndex } from '../../lib/knowledge/vectors.js';
import type { Logger } from '../../lib/logger.js';
import type { SecretBox } from '../../lib/secrets.js';
import type { TenantScope } from '../../lib/tenancy.js';
import { holdQuota, quotaExceeded, withinQuota, type QuotaCheck } from '../../lib/quotas.js';
import { PerKeyLimit } from '../../lib/per-key-limit.js';
import { storable } from '../../lib/text.js';
import { KnowledgeBaseSchema, KnowledgeDocumentSchema, type DocumentSource, type DocumentStatus, type KnowledgeBase, type KnowledgeDocument } from '../../schema/entities.js';
import { BAD_PAGE, DEFAULT_LIST_LIMIT, examplePage, PAGE_QUERY, pageOf } from '../http/pagination.js';
import { defineRoute, type QueryParams, type Route } from '../http/route.js';
import { arrayOf, BIG_ID, BOOLEAN, COUNT, EXAMPLE_TIME, ID, nullable, object, STRING, TIMESTAMP } from '../http/schemas.js';
import { assertTenantUrl, bodyValidator, idParam, idPathParam, type BodyValidator } from '../http/validate.js';
import { formatOf, type DocumentFormat } from '../knowledge/extract.js';
import type { KnowledgeIngestor } from '../knowledge/ingestor.js';
import { readUpload, UPLOAD_FORM_SCHEMA } from '../knowledge/upload.js';

/** A JSON document's content may be up to this many UTF-8 bytes. */
export const MAX_DOCUMENT_BYTES = 1_000_000;
/** An uploaded file may be up to this many bytes. */
export const MAX_UPLOAD_BYTES = 10 * 1024 * 1024;
export const MAX_QUERY_LENGTH = 1000;
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
  const json = ['application/json', 'application/*+json'];
  const documents = express.json({ limit: '2mb', type: json });
  const synonymBytes = config.quotas.synonymGroupsPerBase * MAX_SYNONYMS_PER_GROUP * (2 * MAX_SYNONYM_LENGTH + 3);
  const bases = express.json({ limit: Math.max(2 * 1024 * 1024, synonymBytes + 64 * 1024), type: json });
  return (req, res, next) => (/^\/[^/]+\/?$|^\/?$/.test(req.path) ? bases : documents)(req, res, next);
}

const nameProperty = { type: 'string', minLength: 1, maxLength: 200, pattern: '\\S' };
const embeddingProperty = {
  type: ['object', 'null'],
  additionalProperties: false,
  required: ['baseUrl', 'name'],
  properties: {
    baseUrl: { type: 'string', format: 'uri', pattern: '^https?://', maxLength: 2000 },
    name: { type: 'string', minLength: 1, maxLength: 200 },
    apiKey: { type: ['string', 'null'], minLength: 1, maxLength: 4096 },
  },
};
const languageProperty = { type: 'string', minLength: 1, maxLength: 63, pattern: '^[A-Za-z_][A-Za-z0-9_.]*$' };
/** How many groups a base holds is its company's quota (QUOTA_SYNONYM_GROUPS_PER_BASE, 403 past it); a group's size and its terms' length are refused with 400. */
const synonymsProperty = {
  type: 'array',
  description: `The base's own synonym groups, beside the built-in ones: in each, ${MAX_SYNONYMS_PER_GROUP} words or short phrases at most (of up to ${MAX_SYNONYM_LENGTH} characters) a customer may use for the same thing. Replaces the groups before. At most QUOTA_SYNONYM_GROUPS_PER_BASE groups (2000 by default).`,
  items: { type: 'array', minItems: 2, maxItems: MAX_SYNONYMS_PER_GROUP, items: { type: 'string', minLength: 1, maxLength: MAX_SYNONYM_LENGTH, pattern: '\\S' } },
};

interface EmbeddingInput {
  baseUrl: string;
  name: string;
  apiKey?: string | null;
}
interface BaseInput {
  name?: string;
  language?: string;
  embedding?: EmbeddingInput | null;
  synonyms?: string[][];
}

const createBaseBody = bodyValidator<BaseInput & { name: string }>({
  title: 'KnowledgeBaseCreate',
  type: 'object', additionalProperties: false, required: ['name'], properties: { name: nameProperty, language: languageProperty, embedding: embeddingProperty, synonyms: synonymsProperty },
});
const patchBaseBody = bodyValidator<BaseInput>({
  title: 'KnowledgeBasePatch',
  type: 'object', additionalProperties: false, properties: { name: nameProperty, language: languageProperty, embedding: embeddingProperty, synonyms: synonymsProperty },
});
type TextDocumentInput = { title: string; content: string; format?: 'text' | 'markdown' | 'html' };
type PageDocumentInput = { url: string; title?: string };
const textDocumentBody = bodyValidator<TextDocumentInput>({
  title: 'TextDocument',
  type: 'object',
  additionalProperties: false,
  required: ['title', 'content'],
  properties: {
    title: { type: 'string', minLength: 1, maxLength: 500, pattern: '\\S' },
    content: { type: 'string', minLength: 1, maxLength: MAX_DOCUMENT_BYTES, pattern: '\\S', description: 'U+0000 and unpaired surrogates are removed (any other string holding one is refused).' },
    format: { type: 'string', enum: ['text', 'markdown', 'html'] },
  },
}, { cleaned: ['content'] });
const urlDocumentBody = bodyValidator<PageDocumentInput>({
  title: 'PageDocument',
  type: 'object',
  additionalProperties: false,
  required: ['url'],
  properties: {
    url: { type: 'string', format: 'uri', pattern: '^https?://', maxLength: 2000 },
    title: { type: 'string', minLength: 1, maxLength: 500, pattern: '\\S' },
  },
});

export const knowledgeBaseView = (kb: KnowledgeBase) => ({
  id: kb.id,
  name: kb.name,
  language: kb.language,
  embedding: kb.embeddingBaseUrl
    ? { baseUrl: kb.embeddingBaseUrl, name: kb.embeddingModel, hasApiKey: kb.embeddingApiKeySealed !== null, dimensions: kb.embeddingDimensions }
    : null,
  synonyms: kb.synonyms,
  chunks: kb.chunkCount,
  createdAt: kb.createdAt.toISOString(),
  updatedAt: kb.updatedAt.toISOString(),
});

/**
 * Groups as stored: entries trimmed, repeats in a group dropped (a group left with one entry
 * means nothing); more than the company's quota of groups per base is refused.
 */
function synonymGroups(groups: string[][], limit: number): string[][] {
  const stored = groups.map((g) => [...new Set(g.map((e) => e.trim().replace(/\s+/g, ' ')))]).filter((g) => g.length >= 2);
  if (stored.length > limit) throw quotaExceeded('synonyms', limit);
  return stored;
}

export const documentView = (d: KnowledgeDocument) => ({
  id: d.id,
  title: d.title,
  source: d.source,
  status: d.status,
  progress: d.progress,
  error: d.error,
  chunks: d.chunkCount,
  createdAt: d.createdAt.toISOString(),
  updatedAt: d.updatedAt.toISOString(),
});

const invalid = (field: string, message: string) => new AppError('VALIDATION_ERROR', `Invalid ${field}: ${message}.`, { details: [{ field, message }] });

/** `q` and `limit` of a search. */
const SEARCH_QUERY: QueryParams<{ q: string; limit: number | undefined }> = {
  params: [
    { name: 'q', in: 'query', required: true, description: 'The question.', schema: { type: 'string', minLength: 1, maxLength: MAX_QUERY_LENGTH }, example: 'how do I descale the kettle' },
    { name: 'limit', in: 'query', description: `Results (1–${MAX_SEARCH_LIMIT}, default ${DEFAULT_SEARCH_LIMIT}).`, schema: { type: 'integer', minimum: 1, maximum: MAX_SEARCH_LIMIT, default: DEFAULT_SEARCH_LIMIT } },
  ],
  parse: (q) => {
    const details = [];
    if (typeof q.q !== 'string' || !q.q.trim()) details.push({ field: 'q', message: 'is required' });
    else if (q.q.length > MAX_QUERY_LENGTH) details.push({ field: 'q', message: `must be at most ${MAX_QUERY_LENGTH} characters` });
    let limit: number | undefined;
    if (q.limit !== undefined) {
      limit = typeof q.limit === 'string' && /^\d{1,3}$/.test(q.limit) ? Number(q.limit) : NaN;
      if (!(limit >= 1 && limit <= MAX_SEARCH_LIMIT)) details.push({ field: 'limit', message: `must be an integer from 1 to ${MAX_SEARCH_LIMIT}` });
    }
    if (details.length) throw new AppError('VALIDATION_ERROR', `Invalid ${details.map((d) => d.field).join(', ')}.`, { details });
    return { q: q.q as string, limit };
  },
};

export interface KnowledgeRouteDeps {
  config: Config;
  sql: SqlPool;
  secrets: SecretBox;
  vectors: VectorIndex;
  ingestor: KnowledgeIngestor;
  logger: Logger;
}

const KNOWLEDGE_BASE = object(
  {
    id: ID,
    name: STRING,
    language: { type: 'string', description: 'A PostgreSQL text-search configuration (simple, english, russian, …).' },
    embedding: nullable(object({ baseUrl: STRING, name: STRING, hasApiKey: BOOLEAN, dimensions: nullable(COUNT) })),
    synonyms: { ...arrayOf(arrayOf(STRING)), description: "The base's own synonym groups (the built-in English and Russian ones always apply too)." },
    chunks: COUNT,
    createdAt: TIMESTAMP,
    updatedAt: TIMESTAMP,
  },
  { title: 'KnowledgeBase' },
);
const DOCUMENT_PROPERTIES = {
  id: ID,
  title: STRING,
  source: object(
    { type: { type: 'string', enum: ['text', 'markdown', 'html', 'pdf', 'url'] }, filename: STRING, url: STRING, bytes: { ...COUNT, description: 'Size of the original.' } },
    { title: 'DocumentSource', optional: ['filename', 'url', 'bytes'] },
  ),
  status: { type: 'string', enum: ['processing', 'ready', 'failed'] },
  progress: { type: 'integer', minimum: 0, maximum: 100 },
  error: { ...nullable(STRING), description: 'Why it failed.' },
  chunks: COUNT,
  createdAt: TIMESTAMP,
  updatedAt: TIMESTAMP,
};
const DOCUMENT = object(DOCUMENT_PROPERTIES, { title: 'Document' });
const CHUNK = object({ id: BIG_ID, position: COUNT, heading: STRING, content: STRING, words: COUNT, embedded: BOOLEAN }, { title: 'Chunk' });
const SEARCH_RESULT = object(
  {
    documentId: ID,
    chunkId: BIG_ID,
    title: STRING,
    heading: STRING,
    snippet: STRING,
    score: { type: 'number', description: 'Reciprocal-rank score: higher is better, comparable within one search only.' },
    relevance: { type: 'number', minimum: 0, maximum: 1, description: "The share of the question's words known to the base that the chunk holds." },
    confidence: { type: 'number', minimum: 0, maximum: 1, description: "How well the chunk answers the question (the question's meaningful words it covers, weighted by rarity and where they match; words the base never uses count against it): what an agent's relevanceThreshold is compared with." },
    matchedBy: arrayOf({ type: 'string', enum: ['fulltext', 'trigram', 'vector'] }),
  },
  { title: 'SearchResult' },
);
const EXAMPLE_BASE = { id: 1, name: 'Help centre', language: 'english', embedding: null, synonyms: [['esim', 'embedded sim', 'digital sim']], chunks: 12, createdAt: EXAMPLE_TIME, updatedAt: EXAMPLE_TIME };
const EXAMPLE_DOCUMENT = { id: 7, title: 'Kettle manual', source: { type: 'pdf', filename: 'manual.pdf', bytes: 48213 }, status: 'ready', progress: 100, error: null, chunks: 12, createdAt: EXAMPLE_TIME, updatedAt: EXAMPLE_TIME };
const EXAMPLE_CHUNK = { id: 31, position: 0, heading: 'Kettle manual › Descaling', content: 'Descale the kettle once a month with citric acid.', words: 9, embedded: false };
const ONE_BASE = { schema: object({ knowledgeBase: KNOWLEDGE_BASE }), example: { knowledgeBase: EXAMPLE_BASE } };
const BASE_ID = idPathParam('knowledge base');
const DOCUMENT_ID = idPathParam('document', 'docId');
const NO_BASE = 'no such knowledge base';
const NO_DOCUMENT = 'no such knowledge base or document';
const BAD_BASE = `a bad field (a synonym group of more than ${MAX_SYNONYMS_PER_GROUP} terms, a term over ${MAX_SYNONYM_LENGTH} characters), a language the database does not have, an embedding baseUrl at a private address, or a new embedding baseUrl without its apiKey`;
const TOO_MANY_SYNONYMS = 'more synonym groups than QUOTA_SYNONYM_GROUPS_PER_BASE (2000 by default; `details: [{field: "synonyms", message: "limit N"}]`)';

export function knowledgeRoutes(deps: KnowledgeRouteDeps): readonly Route[] {
  const { config, sql, secrets, ingestor } = deps;
  const loadBase = async (tenant: TenantScope, rawId: unknown) => {
    const kb = await tenant.em.findOne(KnowledgeBaseSchema, { id: idParam(rawId, 'Knowledge base') }, { populate: ['embeddingApiKeySealed'] });
    if (!kb) throw notFound('Knowledge base');
    return kb;
  };
  const loadDocument = async (tenant: TenantScope, kb: KnowledgeBase, rawId: unknown, withContent = false) => {
    const doc = await tenant.em.findOne(KnowledgeDocumentSchema, { id: idParam(rawId, 'Document'), knowledgeBaseId: kb.id }, withContent ? { populate: ['content'] } : {});
    if (!doc) throw notFound('Document');
    return doc;
  };

  async function checkLanguage(language: string | undefined): Promise<void> {
    if (language === undefined) return;
    const found = await query(sql, 'kb_language', `select 1 from pg_ts_config where cfgname = $1`, [language]);
    if (!found.length) throw invalid('language', 'is not a text-search configuration of this database (e.g. simple, english, russian, german)');
  }

  /** Applies an embedding model change; true when the base's chunks must be embedded again. */
  async function applyEmbedding(kb: KnowledgeBase, input: EmbeddingInput | null | undefined): Promise<boolean> {
    if (input === undefined) return false;
    if (input === null) {
      const had = kb.embeddingBaseUrl !== null;
      Object.assign(kb, { embeddingBaseUrl: null, embeddingModel: null, embeddingApiKeySealed: null, embeddingDimensions: null });
      return had;
    }
    if (input.baseUrl !== kb.embeddingBaseUrl) {
      await assertTenantUrl(config, 'embedding.baseUrl', input.baseUrl);
      // A stolen API token must not steer the stored key to a listener of its choice.
      if (kb.embeddingApiKeySealed !== null && input.apiKey === undefined) {
        throw invalid('embedding.apiKey', 'is required when embedding.baseUrl changes (the stored key is never sent to a new address)');
      }
    }
    const changed = input.baseUrl !== kb.embeddingBaseUrl || input.name !== kb.embeddingModel;
    kb.embeddingBaseUrl = input.baseUrl;
    kb.embeddingModel = input.name;
    if (input.apiKey !== undefined) kb.embeddingApiKeySealed = input.apiKey === null ? null : secrets.seal(input.apiKey);
    if (changed) kb.embeddingDimensions = null;
    return changed;
  }

  /** Writes the base's row and, when its synonyms or its language changed, their index, in one transaction (a new base: within its quota). */
  async function saveBase(tenant: TenantScope, kb: KnowledgeBase, indexTheSynonyms: boolean, quota?: QuotaCheck<KnowledgeBase>): Promise<void> {
    if (!indexTheSynonyms && !quota) return tenant.em.flush();
    // begin/commit on the request's own manager: a new base is in its unit of work, not in a fork's.
    const em = tenant.em;
    await em.begin();
    try {
      if (quota) await holdQuota(em, quota);
      await em.flush();
      if (indexTheSynonyms) await indexSynonyms((s, p) => em.execute(s, p as unknown[]), { companyId: tenant.companyId, knowledgeBaseId: kb.id });
      await em.commit();
    } catch (err) {
      await em.rollback();
      throw err;
    }
  }

  /** Every document with content is indexed again (a new language or embedding model), in the background. */
  async function reindex(tenant: TenantScope, kb: KnowledgeBase): Promise<void> {
    const rows = await query<{ id: number }>(
      sql,
      'kb_reindex',
      `update knowledge_documents set status = 'processing', progress = 0, error = null, attempts = 0, lease_until = null, updated_at = now()
       where knowledge_base_id = $1 and company_id = $2 and content is not null returning id`,
      [kb.id, tenant.companyId],
    );
    for (const r of rows) ingestor.enqueue(r.id, tenant.companyId);
  }

  /**
   * A failed document back to `processing` with a fresh count of leases (a retry is a new
   * start, not one more interruption), read again from what it kept (gateway/knowledge/ingestor.ts):
   * a page is fetched anew, as what failed is usually mended on the page; an upload whose text
   * was not extracted yet is read from its stored bytes; anything else is indexed from its
   * content. One statement, so of two retries at once only one goes through. Left without a
   * lease, the document is the sweep's should this process die before the ingestor takes it.
   */
  async function requeueFailed(tenant: TenantScope, kb: KnowledgeBase, documentId: number): Promise<void> {
    const [found] = await query<{ status: DocumentStatus; requeued: boolean }>(
      sql,
      'kb_document_retry',
      `with found as (
         select id, status, raw is not null or content is not null or source->>'type' = 'url' as readable
         from knowledge_documents where id = $1 and knowledge_base_id = $2 and company_id = $3 for update
       ), requeued as (
         update knowledge_documents d set status = 'processing', progress = 0, error = null, attempts = 0, lease_until = null,
           content = case when d.source->>'type' = 'url' then null else d.content end, updated_at = now()
         from found where d.id = found.id and found.status = 'failed' and found.readable returning d.id
       )
       select status, exists (select 1 from requeued) as requeued from found`,
      [documentId, kb.id, tenant.companyId],
    );
    if (!found) throw notFound('Document');
    if (found.requeued) return;
    if (found.status !== 'failed') throw new AppError('CONFLICT', `The document is ${found.status}: only a failed document can be retried.`);
    // Failed, yet nothing to read again: an upload that failed before failed documents kept their file.
    throw new AppError('CONFLICT', 'The uploaded file of this document is no longer stored: delete the document and upload the file again.');
  }

  /**
   * The new document, `processing`, queued for the ingestor (gateway/knowledge/ingestor.ts),
   * within the base's quota of documents. Nothing of its content is read here: every
   * document, whatever it holds, is read in a worker thread, so the answer comes at once.
   */
  async function addDocument(req: Request, kb: KnowledgeBase, d: { title: string; source: DocumentSource; raw: Buffer | null }): Promise<KnowledgeDocument> {
    const tenant = req.tenant!;
    const quota = { companyId: tenant.companyId, field: 'documents', limit: config.quotas.documentsPerBase, entity: KnowledgeDocumentSchema, where: { knowledgeBaseId: kb.id } };
    const [row] = await withinQuota(tenant.em, quota, () =>
      tenant.em.execute<{ id: number }[]>(
        `insert into knowledge_documents (company_id, knowledge_base_id, title, content, format, source, status, progress, raw, attempts, lease_until)
         values (?, ?, ?, null, ?, ?::jsonb, 'processing', 0, ?, 0, null) returning id`,
        [tenant.companyId, kb.id, d.title, d.source.type === 'url' ? 'markdown' : d.source.type, JSON.stringify(d.source), d.raw],
      ),
    );
    ingestor.enqueue(row!.id, tenant.companyId);
    const doc = await tenant.em.fork().findOne(KnowledgeDocumentSchema, { id: row!.id });
    if (!doc) throw notFound('Document');
    return doc;
  }

  /**
   * A company's searches at once, in this process (SEARCH_MAX_PER_COMPANY): one more is refused
   * at once (429, Retry-After) rather than queued. A search takes milliseconds, so only a script
   * meets the limit, and a queue would only hold its requests in memory longer.
   */
  const searches = new PerKeyLimit(config.searchMaxPerCompany);
  const base = (req: Request) => loadBase(req.tenant!, req.params.id);
  const baseAndDocument = async (req: Request, withContent = false) => {
    const kb = await loadBase(req.tenant!, req.params.id);
    return { kb, doc: await loadDocument(req.tenant!, kb, req.params.docId, withContent) };
  };

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
        const tenant = req.tenant!;
        await checkLanguage(body.language);
        const now = new Date();
        const kb = tenant.em.create(KnowledgeBaseSchema, {
          companyId: tenant.companyId, name: body.name.trim(), language: body.language ?? 'simple', embeddingBaseUrl: null, embeddingModel: null,
          embeddingApiKeySealed: null, embeddingDimensions: null, chunkCount: 0, contentVersion: '0', synonyms: synonymGroups(body.synonyms ?? [], config.quotas.synonymGroupsPerBase), createdAt: now, updatedAt: now,
        });
        await applyEmbedding(kb, body.embedding);
        const quota = { companyId: tenant.companyId, field: 'knowledgeBases', limit: config.quotas.knowledgeBases, entity: KnowledgeBaseSchema };
        await saveBase(tenant, kb, kb.synonyms.length > 0, quota);
        res.status(201).json({ knowledgeBase: knowledgeBaseView(kb) });
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
        const tenant = req.tenant!;
        await checkLanguage(body.language);
        if (body.name !== undefined) kb.name = body.name.trim();
        let again = await applyEmbedding(kb, body.embedding);
        let synonymsChanged = false;
        if (body.language !== undefined && body.language !== kb.language) {
          kb.language = body.language;
          again = true;
          synonymsChanged = kb.synonyms.length > 0;
        }
        if (body.synonyms !== undefined) {
          kb.synonyms = synonymGroups(body.synonyms, config.quotas.synonymGroupsPerBase);
          synonymsChanged = true;
        }
        kb.updatedAt = new Date();
        await saveBase(tenant, kb, synonymsChanged);
        if (again) await reindex(tenant, kb);
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
        const n = await req.tenant!.em.nativeDelete(KnowledgeBaseSchema, { id: idParam(req.params.id, 'Knowledge base') });
        if (n === 0) throw notFound('Knowledge base');
        res.status(204).end();
      },
    }),
    defineRoute({
      method: 'POST', path: '/:id/documents', operationId: 'addDocument', tag: 'Knowledge', access: 'any',
      summary: 'Add a document: JSON text, a page by URL, or a file upload (multipart)',
      description: 'Always answers at once with the document `processing`: it is read, chunked and embedded in the background (worker threads, round-robin between companies), then `ready`, or `failed` with the reason in `error` (no text to index, an unreadable file, a page that does not answer, over INGEST_TIMEOUT_MS or INGEST_MEMORY_MB).',
      params: [BASE_ID],
      body: {
        validators: [textDocumentBody, urlDocumentBody] as BodyValidator<TextDocumentInput | PageDocumentInput>[],
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
        let doc: KnowledgeDocument;
        if (req.is('multipart/form-data')) {
          const declared = Number(req.headers['content-length']);
          if (declared > MAX_UPLOAD_BYTES + 64 * 1024) throw new AppError('PAYLOAD_TOO_LARGE', `The file is larger than ${MAX_UPLOAD_BYTES / 1024 / 1024} MiB.`);
          const upload = await readUpload(req, MAX_UPLOAD_BYTES);
          const format = formatOf(upload.filename, null) ?? (upload.bytes.subarray(0, 5).toString('latin1') === '%PDF-' ? 'pdf' : null);
          if (!format) throw new AppError('UNSUPPORTED_MEDIA_TYPE', `Unsupported file type${/\.[^.]+$/.test(upload.filename) ? ` ${/\.[^.]+$/.exec(upload.filename)![0]}` : ''}: upload a .txt, .md, .html or .pdf file.`);
          const title = storable(upload.title ?? upload.filename.replace(/\.[^.]+$/, '').trim());
          doc = await addDocument(req, kb, { title: title || 'Untitled', source: { type: format, filename: storable(upload.filename), bytes: upload.bytes.length }, raw: upload.bytes });
        } else if ('url' in body) {
          await assertTenantUrl(config, 'url', body.url);
          doc = await addDocument(req, kb, { title: body.title?.trim() ?? body.url, source: { type: 'url', url: body.url }, raw: null });
        } else {
          const raw = Buffer.from(body.content, 'utf8');
          if (raw.length > MAX_DOCUMENT_BYTES) throw invalid('content', `must be at most ${MAX_DOCUMENT_BYTES} bytes (UTF-8)`);
          // Stored as sent, read like an upload of its format: a text without anything to index fails in the background.
          const format: DocumentFormat = body.format ?? 'markdown';
          doc = await addDocument(req, kb, { title: body.title.trim(), source: { type: format, bytes: raw.length }, raw });
        }
        res.status(201).json({ document: documentView(doc) });
      },
    }),
    defineRoute({
      method: 'GET', path: '/:id/documents', operationId: 'listDocuments', tag: 'Knowledge', access: 'any',
      summary: 'The documents of a knowledge base, paged',
      params: [BASE_ID],
      query: PAGE_QUERY,
      responses: { 200: { description: 'A page of documents.', schema: pageOf('documents', DOCUMENT), example: { documents: [EXAMPLE_DOCUMENT], total: 1, limit: DEFAULT_LIST_LIMIT, offset: 0 } } },
      errors: { NOT_FOUND: NO_BASE, VALIDATION_ERROR: 'a bad limit or offset' },
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
        const tenant = req.tenant!;
        const documentId = idParam(req.params.docId, 'Document');
        await requeueFailed(tenant, kb, documentId);
        const doc = await tenant.em.fork().findOne(KnowledgeDocumentSchema, { id: documentId });
        // Queued after the view is read, so the answer shows the retry's start, not a run already under way.
        ingestor.enqueue(documentId, tenant.companyId);
        if (!doc) throw notFound('Document');
        res.json({ document: documentView(doc) });
      },
    }),
    defineRoute({
      method: 'GET', path: '/:id/documents/:docId/chunks', operationId: 'listChunks', tag: 'Knowledge', access: 'any',
      summary: 'The chunks of a document, by position, paged',
      params: [BASE_ID, DOCUMENT_ID],
      query: PAGE_QUERY,
      responses: { 200: { description: 'A page of chunks.', schema: pageOf('chunks', CHUNK), example: { chunks: [EXAMPLE_CHUNK], total: 12, limit: DEFAULT_LIST_LIMIT, offset: 0 } } },
      errors: { NOT_FOUND: NO_DOCUMENT, VALIDATION_ERROR: 'a bad limit or offset' },
      load: (req) => baseAndDocument(req),
      handler: async ({ req, res, loaded: { doc }, query: { limit, offset } }) => {
        const tenant = req.tenant!;
        const rows = await query<{ id: string; position: number; heading: string; content: string; words: number; embedded: boolean; total: string }>(
          sql,
          'kb_chunks_list',
          `select id, position, heading, content, words, embedding is not null as embedded, count(*) over () as total
           from knowledge_chunks where document_id = $1 and company_id = $2 order by position limit $3 offset $4`,
          [doc.id, tenant.companyId, limit, offset],
        );
        const total = rows.length ? Number(rows[0]!.total) : offset > 0 ? doc.chunkCount : 0;
        res.json({
          chunks: rows.map((r) => ({ id: Number(r.id), position: r.position, heading: r.heading, content: r.content, words: r.words, embedded: r.embedded })),
          total, limit, offset,
        });
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
        const tenant = req.tenant!;
        await tenant.em.fork().transactional(async (em) => {
          const exec: Exec = (s, p) => em.execute(s, p as unknown[]);
          await removeChunks(exec, { companyId: tenant.companyId, knowledgeBaseId: kb.id, documentId: doc.id });
          await exec('delete from knowledge_documents where id = ? and company_id = ?', [doc.id, tenant.companyId]);
        });
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
          const base = await loadBaseInfo(sql, secrets, config, tenant.companyId, idParam(req.params.id, 'Knowledge base'), deps.logger);
          if (!base) throw notFound('Knowledge base');
          const { q, limit } = SEARCH_QUERY.parse(req.query as Record<string, unknown>);
          const results = await searchKnowledge({ sql, vectors: deps.vectors, logger: deps.logger }, base, q, { limit });
          res.json({ results: results.map((r) => ({ documentId: r.documentId, chunkId: r.chunkId, title: r.title, heading: r.heading, snippet: r.snippet, score: r.score, relevance: r.relevance, confidence: r.confidence, matchedBy: r.matchedBy })) });
        } finally {
          release();
        }
      },
    }),
  ];
}
