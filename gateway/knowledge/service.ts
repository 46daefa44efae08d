import type { Config } from '../../lib/config.js';
import { query, type SqlPool } from '../../lib/db.js';
import { AppError, notFound } from '../../lib/errors.js';
import { AUTO_LANGUAGE } from '../../lib/knowledge/language.js';
import { indexSynonyms, removeChunks, type Exec } from '../../lib/knowledge/store.js';
import { holdQuota, quotaExceeded, withinQuota, type QuotaCheck } from '../../lib/quotas.js';
import type { SecretBox } from '../../lib/secrets.js';
import type { TenantScope } from '../../lib/tenancy.js';
import { KnowledgeBaseSchema, KnowledgeDocumentSchema, type DocumentSource, type DocumentStatus, type KnowledgeBase, type KnowledgeDocument } from '../../schema/entities.js';
import { assertTenantUrl, invalidField } from '../http/validate.js';
import type { KnowledgeIngestor } from './ingestor.js';

/**
 * Knowledge bases and their documents as a company changes them: a base's language,
 * embedding model and synonyms (indexed in the same transaction), documents queued for the
 * ingestor within their quota, re-indexing, retries and deletions. Requests are parsed and
 * answered by gateway/routes/knowledge.ts; nothing here knows of HTTP.
 */
export interface EmbeddingInput {
  baseUrl: string;
  name: string;
  apiKey?: string | null;
}

export interface BaseInput {
  name?: string;
  language?: string;
  embedding?: EmbeddingInput | null;
  synonyms?: string[][];
}

/** A document to add: its content is read in the background, from `raw` or (a page) from its URL. */
export interface NewDocument {
  title: string;
  source: DocumentSource;
  raw: Buffer | null;
}

export interface ChunkRow {
  id: number;
  position: number;
  heading: string;
  content: string;
  words: number;
  embedded: boolean;
}

export interface KnowledgeServiceDeps {
  config: Pick<Config, 'quotas' | 'allowPrivateUrls' | 'helpdeskGlobalUrl' | 'helpdeskEuropeUrl'>;
  sql: SqlPool;
  secrets: SecretBox;
  ingestor: KnowledgeIngestor;
}

/**
 * Groups as stored: entries trimmed, repeats in a group dropped (a group left with one entry
 * means nothing); more than the company's quota of groups per base is refused.
 */
function synonymGroups(groups: string[][], limit: number): string[][] {
  const stored = groups.map((g) => [...new Set(g.map((e) => e.trim().replace(/\s+/g, ' ')))]).filter((g) => g.length >= 2);
  if (stored.length > limit) throw quotaExceeded('synonyms', limit);
  return stored;
}

export class KnowledgeService {
  readonly #deps: KnowledgeServiceDeps;

  constructor(deps: KnowledgeServiceDeps) {
    this.#deps = deps;
  }

  /** The company's base `id` with its sealed embedding key; 404 when it has none such. */
  async loadBase(tenant: TenantScope, id: number): Promise<KnowledgeBase> {
    const kb = await tenant.em.findOne(KnowledgeBaseSchema, { id }, { populate: ['embeddingApiKeySealed'] });
    if (!kb) throw notFound('Knowledge base');
    return kb;
  }

  /** Document `id` of the base; 404 when the base holds none such. */
  async loadDocument(tenant: TenantScope, kb: KnowledgeBase, id: number, withContent = false): Promise<KnowledgeDocument> {
    const doc = await tenant.em.findOne(KnowledgeDocumentSchema, { id, knowledgeBaseId: kb.id }, withContent ? { populate: ['content'] } : {});
    if (!doc) throw notFound('Document');
    return doc;
  }

  /** A new base, within the company's quota of bases, its synonyms indexed. */
  async createBase(tenant: TenantScope, input: BaseInput & { name: string }): Promise<KnowledgeBase> {
    const { quotas } = this.#deps.config;
    await this.#checkLanguage(input.language);
    const now = new Date();
    const kb = tenant.em.create(KnowledgeBaseSchema, {
      companyId: tenant.companyId, name: input.name.trim(), language: input.language ?? AUTO_LANGUAGE, embeddingBaseUrl: null, embeddingModel: null,
      embeddingApiKeySealed: null, embeddingDimensions: null, chunkCount: 0, contentVersion: '0', synonyms: synonymGroups(input.synonyms ?? [], quotas.synonymGroupsPerBase), createdAt: now, updatedAt: now,
    });
    await this.#applyEmbedding(kb, input.embedding);
    const quota = { companyId: tenant.companyId, field: 'knowledgeBases', limit: quotas.knowledgeBases, entity: KnowledgeBaseSchema };
    await this.#saveBase(tenant, kb, kb.synonyms.length > 0, quota);
    return kb;
  }

  /** Applies the fields sent; a new language or embedding model indexes every document again, in the background. */
  async updateBase(tenant: TenantScope, kb: KnowledgeBase, input: BaseInput): Promise<void> {
    await this.#checkLanguage(input.language);
    if (input.name !== undefined) kb.name = input.name.trim();
    let again = await this.#applyEmbedding(kb, input.embedding);
    let synonymsChanged = false;
    if (input.language !== undefined && input.language !== kb.language) {
      kb.language = input.language;
      again = true;
      synonymsChanged = kb.synonyms.length > 0;
    }
    if (input.synonyms !== undefined) {
      kb.synonyms = synonymGroups(input.synonyms, this.#deps.config.quotas.synonymGroupsPerBase);
      synonymsChanged = true;
    }
    kb.updatedAt = new Date();
    await this.#saveBase(tenant, kb, synonymsChanged);
    if (again) await this.#reindex(tenant, kb);
  }

  /**
   * The new document, `processing`, queued for the ingestor (gateway/knowledge/ingestor.ts),
   * within the base's quota of documents. Nothing of its content is read here: every
   * document, whatever it holds, is read in a worker thread, so the answer comes at once.
   */
  async addDocument(tenant: TenantScope, kb: KnowledgeBase, d: NewDocument): Promise<KnowledgeDocument> {
    const quota = { companyId: tenant.companyId, field: 'documents', limit: this.#deps.config.quotas.documentsPerBase, entity: KnowledgeDocumentSchema, where: { knowledgeBaseId: kb.id } };
    const [row] = await withinQuota(tenant.em, quota, () =>
      tenant.em.execute<{ id: number }[]>(
        `insert into knowledge_documents (company_id, knowledge_base_id, title, content, format, source, status, progress, raw, attempts, lease_until)
         values (?, ?, ?, null, ?, ?::jsonb, 'processing', 0, ?, 0, null) returning id`,
        [tenant.companyId, kb.id, d.title, d.source.type === 'url' ? 'markdown' : d.source.type, JSON.stringify(d.source), d.raw],
      ),
    );
    this.#deps.ingestor.enqueue(row!.id, tenant.companyId);
    const doc = await tenant.em.fork().findOne(KnowledgeDocumentSchema, { id: row!.id });
    if (!doc) throw notFound('Document');
    return doc;
  }

  /** A failed document processing again (requeueFailed): the document as it is now, `processing`. */
  async retryDocument(tenant: TenantScope, kb: KnowledgeBase, documentId: number): Promise<KnowledgeDocument> {
    await this.#requeueFailed(tenant, kb, documentId);
    const doc = await tenant.em.fork().findOne(KnowledgeDocumentSchema, { id: documentId });
    // Queued after the view is read, so the answer shows the retry's start, not a run already under way.
    this.#deps.ingestor.enqueue(documentId, tenant.companyId);
    if (!doc) throw notFound('Document');
    return doc;
  }

  /** The document with its chunks and their terms, in one transaction. */
  async deleteDocument(tenant: TenantScope, kb: KnowledgeBase, doc: KnowledgeDocument): Promise<void> {
    await tenant.em.fork().transactional(async (em) => {
      const exec: Exec = (s, p) => em.execute(s, p as unknown[]);
      await removeChunks(exec, { companyId: tenant.companyId, knowledgeBaseId: kb.id, documentId: doc.id });
      await exec('delete from knowledge_documents where id = ? and company_id = ?', [doc.id, tenant.companyId]);
    });
  }

  /** A page of the document's chunks by position, and how many it has. */
  async listChunks(tenant: TenantScope, doc: KnowledgeDocument, page: { limit: number; offset: number }): Promise<{ chunks: ChunkRow[]; total: number }> {
    const rows = await query<{ id: string; position: number; heading: string; content: string; words: number; embedded: boolean; total: string }>(
      this.#deps.sql,
      'kb_chunks_list',
      `select id, position, heading, content, words, embedding is not null as embedded, count(*) over () as total
       from knowledge_chunks where document_id = $1 and company_id = $2 order by position limit $3 offset $4`,
      [doc.id, tenant.companyId, page.limit, page.offset],
    );
    const total = rows.length ? Number(rows[0]!.total) : page.offset > 0 ? doc.chunkCount : 0;
    return { chunks: rows.map((r) => ({ id: Number(r.id), position: r.position, heading: r.heading, content: r.content, words: r.words, embedded: r.embedded })), total };
  }

  /** `auto` (each document's language detected), or a text-search configuration the database has. */
  async #checkLanguage(language: string | undefined): Promise<void> {
    if (language === undefined || language === AUTO_LANGUAGE) return;
    const found = await query(this.#deps.sql, 'kb_language', `select 1 from pg_ts_config where cfgname = $1`, [language]);
    if (!found.length) throw invalidField('language', `must be ${AUTO_LANGUAGE} or a text-search configuration of this database (e.g. english, russian, german, simple)`);
  }

  /** Applies an embedding model change; true when the base's chunks must be embedded again. */
  async #applyEmbedding(kb: KnowledgeBase, input: EmbeddingInput | null | undefined): Promise<boolean> {
    if (input === undefined) return false;
    if (input === null) {
      const had = kb.embeddingBaseUrl !== null;
      Object.assign(kb, { embeddingBaseUrl: null, embeddingModel: null, embeddingApiKeySealed: null, embeddingDimensions: null });
      return had;
    }
    if (input.baseUrl !== kb.embeddingBaseUrl) {
      await assertTenantUrl(this.#deps.config, 'embedding.baseUrl', input.baseUrl);
      // A stolen API token must not steer the stored key to a listener of its choice.
      if (kb.embeddingApiKeySealed !== null && input.apiKey === undefined) {
        throw invalidField('embedding.apiKey', 'is required when embedding.baseUrl changes (the stored key is never sent to a new address)');
      }
    }
    const changed = input.baseUrl !== kb.embeddingBaseUrl || input.name !== kb.embeddingModel;
    kb.embeddingBaseUrl = input.baseUrl;
    kb.embeddingModel = input.name;
    if (input.apiKey !== undefined) kb.embeddingApiKeySealed = input.apiKey === null ? null : this.#deps.secrets.seal(input.apiKey);
    if (changed) kb.embeddingDimensions = null;
    return changed;
  }

  /** Writes the base's row and, when its synonyms or its language changed, their index, in one transaction (a new base: within its quota). */
  async #saveBase(tenant: TenantScope, kb: KnowledgeBase, indexTheSynonyms: boolean, quota?: QuotaCheck<KnowledgeBase>): Promise<void> {
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
  async #reindex(tenant: TenantScope, kb: KnowledgeBase): Promise<void> {
    const rows = await query<{ id: number }>(
      this.#deps.sql,
      'kb_reindex',
      `update knowledge_documents set status = 'processing', progress = 0, error = null, attempts = 0, lease_until = null, updated_at = now()
       where knowledge_base_id = $1 and company_id = $2 and content is not null returning id`,
      [kb.id, tenant.companyId],
    );
    for (const r of rows) this.#deps.ingestor.enqueue(r.id, tenant.companyId);
  }

  /**
   * A failed document back to `processing` with a fresh count of leases (a retry is a new
   * start, not one more interruption), read again from what it kept (gateway/knowledge/ingestor.ts):
   * a page is fetched anew, as what failed is usually mended on the page; an upload whose text
   * was not extracted yet is read from its stored bytes; anything else is indexed from its
   * content. One statement, so of two retries at once only one goes through. Left without a
   * lease, the document is the sweep's should this process die before the ingestor takes it.
   */
  async #requeueFailed(tenant: TenantScope, kb: KnowledgeBase, documentId: number): Promise<void> {
    const [found] = await query<{ status: DocumentStatus; requeued: boolean }>(
      this.#deps.sql,
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
}
