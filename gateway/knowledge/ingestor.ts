import type { Config } from '../../lib/config.js';
import { query, type SqlPool } from '../../lib/db.js';
import type { Orm } from '../../lib/db.js';
import type { Logger } from '../../lib/logger.js';
import type { SecretBox } from '../../lib/secrets.js';
import { chunkContent, headingPath } from '../../lib/knowledge/chunker.js';
import { embedTexts, EmbeddingError } from '../../lib/knowledge/embeddings.js';
import { embeddingModelOf } from '../../lib/knowledge/retrieve.js';
import { removeChunks, replaceChunks, type Exec } from '../../lib/knowledge/store.js';
import { ExtractionError, extractDocument, type DocumentFormat } from './extract.js';
import { fetchPage } from './page.js';

/**
 * Turns documents into chunks, in the gateway process (it owns the HTTP routes), off the
 * request path: a bounded number of jobs at a time (`concurrency`), PDFs read in a worker
 * thread (pdf.ts), pages fetched through the guarded client (page.ts).
 *
 * A document waiting or being processed has `status = 'processing'`. The process working on
 * it holds a lease (`lease_until`, renewed with every progress update); `attempts` counts the
 * leases taken. Crash behaviour: a process that dies mid-way leaves an expired lease, and
 * every gateway sweeps for those at start and every `sweepMs`: the document is **resumed**
 * from its start (the original bytes stay in `raw` until their text is extracted; a page is
 * fetched again). A document whose leases ran out `maxAttempts` times (say a PDF that kills
 * the process every time) is **failed** with that reason instead of being tried forever. A
 * document's result (chunks, counters, status) is written in one transaction. A failed
 * document keeps what it was read from (`raw` or `content`), so a retry
 * (`POST …/documents/:docId/retry`) can process it again with a fresh count of leases.
 *
 * What can go wrong with the input (no text, an unreadable PDF, a page that times out, an
 * embedding server that refuses) fails the document at once with the reason in `error`; an
 * unexpected failure (the database away) releases the lease for a later attempt.
 */
export interface IngestorDeps {
  orm: Orm;
  sql: SqlPool;
  secrets: SecretBox;
  config: Pick<Config, 'allowPrivateUrls' | 'helpdeskGlobalUrl' | 'helpdeskEuropeUrl'>;
  logger: Logger;
}

export interface IngestorOptions {
  concurrency?: number;
  leaseMs?: number;
  sweepMs?: number;
  maxAttempts?: number;
  /** Deadline of a page fetch (default PAGE_DEADLINE_MS). */
  pageDeadlineMs?: number;
}

export const DEFAULT_INGEST_CONCURRENCY = 2;
export const DEFAULT_LEASE_MS = 60_000;
export const DEFAULT_SWEEP_MS = 30_000;
export const DEFAULT_MAX_ATTEMPTS = 3;
/** A document making more chunks than this is refused (split it). */
export const MAX_CHUNKS_PER_DOCUMENT = 5000;
const CLOSE_WAIT_MS = 2000;

interface DocRow {
  id: number;
  company_id: number;
  knowledge_base_id: number;
  title: string;
  format: string;
  source: { type: string; url?: string; filename?: string };
  content: string | null;
  raw: Buffer | null;
  attempts: number;
}

class LeaseLost extends Error {}

export class KnowledgeIngestor {
  readonly #deps: IngestorDeps;
  readonly #concurrency: number;
  readonly #leaseMs: number;
  readonly #sweepMs: number;
  readonly #maxAttempts: number;
  readonly #pageDeadlineMs: number | undefined;
  readonly #queue: number[] = [];
  readonly #queued = new Set<number>();
  readonly #controller = new AbortController();
  #running = 0;
  #timer: NodeJS.Timeout | null = null;
  #idle: (() => void)[] = [];

  constructor(deps: IngestorDeps, options: IngestorOptions = {}) {
    this.#deps = deps;
    this.#concurrency = options.concurrency ?? DEFAULT_INGEST_CONCURRENCY;
    this.#leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.#sweepMs = options.sweepMs ?? DEFAULT_SWEEP_MS;
    this.#maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    this.#pageDeadlineMs = options.pageDeadlineMs;
  }

  /** Sweeps for documents nobody is working on now, then every sweepMs. */
  start(): void {
    const tick = () => {
      void this.sweep().catch((err: unknown) => this.#deps.logger.warn({ err }, 'knowledge: sweep for waiting documents failed'));
    };
    tick();
    this.#timer = setInterval(tick, this.#sweepMs);
    this.#timer.unref();
  }

  /**
   * Stops taking work and aborts the running jobs (page fetches, PDF readers, embedding
   * calls); waits for them at most CLOSE_WAIT_MS. An unfinished document keeps its lease,
   * which expires, and the next process resumes it.
   */
  async close(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#controller.abort();
    this.#queue.length = 0;
    if (this.#running === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([new Promise<void>((r) => this.#idle.push(r)), new Promise<void>((r) => (timer = setTimeout(r, CLOSE_WAIT_MS)))]);
    clearTimeout(timer);
  }

  /** Resolves when nothing is queued or running (tests). */
  idle(): Promise<void> {
    if (this.#running === 0 && this.#queue.length === 0) return Promise.resolve();
    return new Promise((r) => this.#idle.push(r));
  }

  /** Queues the documents waiting without a live lease (after a crash, or queued by another process). */
  async sweep(): Promise<number> {
    const rows = await query<{ id: number }>(
      this.#deps.sql,
      'kb_ingest_sweep',
      `select id from knowledge_documents where status = 'processing' and (lease_until is null or lease_until < now()) order by id limit 100`,
    );
    for (const r of rows) this.enqueue(r.id);
    return rows.length;
  }

  enqueue(documentId: number): void {
    if (this.#controller.signal.aborted || this.#queued.has(documentId)) return;
    this.#queued.add(documentId);
    this.#queue.push(documentId);
    this.#pump();
  }

  #pump(): void {
    while (this.#running < this.#concurrency && this.#queue.length > 0) {
      const id = this.#queue.shift()!;
      this.#running++;
      void this.#claimAndProcess(id).finally(() => {
        this.#queued.delete(id);
        this.#running--;
        this.#pump();
        if (this.#running === 0 && this.#queue.length === 0) for (const r of this.#idle.splice(0)) r();
      });
    }
  }

  async #claimAndProcess(documentId: number): Promise<void> {
    try {
      const doc = await this.#claim(documentId);
      if (doc) await this.process(doc);
    } catch (err) {
      this.#deps.logger.warn({ err, documentId }, 'knowledge: could not claim a document');
    }
  }

  /** Takes the document's lease; null when another process holds it, or it is not waiting. Fails it past maxAttempts. */
  async #claim(documentId: number): Promise<DocRow | null> {
    const [doc] = await query<DocRow>(
      this.#deps.sql,
      'kb_ingest_claim',
      `update knowledge_documents set lease_until = now() + ($2::int * interval '1 millisecond'), attempts = attempts + 1, updated_at = now()
       where id = $1 and status = 'processing' and (lease_until is null or lease_until < now())
       returning id, company_id, knowledge_base_id, title, format, source, content, raw, attempts`,
      [documentId, this.#leaseMs],
    );
    if (!doc) return null;
    if (doc.attempts > this.#maxAttempts) {
      await this.#fail(doc, `processing was interrupted ${this.#maxAttempts} times; retry the document, or split it`);
      return null;
    }
    return doc;
  }

  /**
   * Claims a document created with its lease already held (the route's own small documents)
   * and processes it now, in the caller's time.
   */
  async processNow(documentId: number): Promise<void> {
    const [doc] = await query<DocRow>(
      this.#deps.sql,
      'kb_ingest_load',
      `select id, company_id, knowledge_base_id, title, format, source, content, raw, attempts from knowledge_documents where id = $1 and status = 'processing'`,
      [documentId],
    );
    if (doc) await this.process(doc);
  }

  /** Renews the lease and records progress; throws LeaseLost when the document is gone or no longer ours to finish. */
  async #progress(doc: DocRow, progress: number): Promise<void> {
    const rows = await query(
      this.#deps.sql,
      'kb_ingest_progress',
      `update knowledge_documents set progress = greatest(progress, $3), lease_until = now() + ($4::int * interval '1 millisecond'), updated_at = now()
       where id = $1 and company_id = $2 and status = 'processing' returning id`,
      [doc.id, doc.company_id, Math.min(99, Math.round(progress)), this.#leaseMs],
    );
    if (rows.length === 0) throw new LeaseLost();
    if (this.#controller.signal.aborted) throw new LeaseLost();
  }

  async #fail(doc: DocRow, reason: string): Promise<void> {
    await this.#deps.orm.em.fork().transactional(async (em) => {
      const exec: Exec = (sql, params) => em.execute(sql, params as unknown[]);
      await removeChunks(exec, { companyId: doc.company_id, knowledgeBaseId: doc.knowledge_base_id, documentId: doc.id });
      await exec(
        `update knowledge_documents set status = 'failed', error = ?, lease_until = null, chunk_count = 0, updated_at = now()
         where id = ? and company_id = ?`,
        [reason.slice(0, 500), doc.id, doc.company_id],
      );
    });
  }

  /** Processes a document whose lease this process holds (see the class comment). */
  async process(doc: DocRow): Promise<void> {
    const log = this.#deps.logger.child({ documentId: doc.id, knowledgeBaseId: doc.knowledge_base_id });
    const signal = this.#controller.signal;
    try {
      let content = doc.content;
      let format = doc.format;
      let title = doc.title;
      if (content === null) {
        await this.#progress(doc, 5);
        let extracted;
        if (doc.raw) {
          extracted = await extractDocument({ format: (doc.source.type === 'url' ? 'html' : doc.source.type) as DocumentFormat, bytes: doc.raw, signal });
        } else if (doc.source.type === 'url' && doc.source.url) {
          const page = await fetchPage(this.#deps.config, doc.source.url, { signal, deadlineMs: this.#pageDeadlineMs });
          await this.#progress(doc, 15);
          extracted = await extractDocument({ format: page.format, bytes: page.bytes, contentType: page.contentType, signal });
        } else {
          throw new ExtractionError('the document has nothing to read');
        }
        content = extracted.content;
        format = extracted.contentFormat;
        // A page added without a title is named by the page (it was shown under its address meanwhile).
        if (!title.trim() || title === doc.source.url) title = extracted.title ?? (title.trim() || 'Untitled');
        await query(
          this.#deps.sql,
          'kb_ingest_extracted',
          `update knowledge_documents set content = $3, format = $4, title = $5, raw = null, updated_at = now() where id = $1 and company_id = $2 and status = 'processing'`,
          [doc.id, doc.company_id, content, format, title.slice(0, 500)],
        );
      }
      await this.#progress(doc, 25);
      const chunks = chunkContent(content, format);
      if (chunks.length === 0) throw new ExtractionError('the document has no text to index');
      if (chunks.length > MAX_CHUNKS_PER_DOCUMENT) throw new ExtractionError(`the document makes more than ${MAX_CHUNKS_PER_DOCUMENT} chunks; split it into several documents`);

      const [kb] = await query<{ embedding_base_url: string | null; embedding_model: string | null; embedding_api_key_sealed: string | null }>(
        this.#deps.sql,
        'kb_ingest_base',
        `select embedding_base_url, embedding_model, embedding_api_key_sealed from knowledge_bases where id = $1 and company_id = $2`,
        [doc.knowledge_base_id, doc.company_id],
      );
      if (!kb) throw new LeaseLost();
      let embeddings: number[][] | null = null;
      let model;
      try {
        model = embeddingModelOf(kb, this.#deps.secrets, this.#deps.config);
      } catch {
        throw new EmbeddingError('the embedding API key cannot be opened (SECRETS_KEY changed?); set it again');
      }
      if (model) {
        const texts = chunks.map((c) => [title, headingPath(c.headings), c.text].filter(Boolean).join('\n'));
        embeddings = await embedTexts(model, texts, { signal, onBatch: (done) => this.#progress(doc, 30 + (60 * done) / texts.length) });
        await this.#setDimensions(doc, embeddings[0]?.length ?? null);
      }
      await this.#progress(doc, 92);
      await this.#deps.orm.em.fork().transactional(async (em) => {
        const exec: Exec = (sql, params) => em.execute(sql, params as unknown[]);
        const [live] = await exec(`select id from knowledge_documents where id = ? and company_id = ? and status = 'processing' for update`, [doc.id, doc.company_id]);
        if (!live) throw new LeaseLost();
        await replaceChunks(exec, { companyId: doc.company_id, knowledgeBaseId: doc.knowledge_base_id, documentId: doc.id }, title, chunks, embeddings);
        await exec(
          `update knowledge_documents set status = 'ready', progress = 100, error = null, chunk_count = ?, raw = null, lease_until = null, updated_at = now()
           where id = ? and company_id = ?`,
          [chunks.length, doc.id, doc.company_id],
        );
      });
      log.info({ chunks: chunks.length, embedded: embeddings !== null }, 'knowledge: document ready');
    } catch (err) {
      if (err instanceof LeaseLost || signal.aborted) {
        log.info('knowledge: document processing stopped (deleted, taken over or shutting down)');
        return;
      }
      if (err instanceof ExtractionError || err instanceof EmbeddingError) {
        log.info({ reason: err.message }, 'knowledge: document failed');
        await this.#fail(doc, err.message).catch((e: unknown) => log.warn({ err: e }, 'knowledge: could not record the failure'));
        return;
      }
      log.error({ err }, 'knowledge: document processing failed unexpectedly; it will be tried again');
      // Released for a later attempt (the sweep takes it up again; attempts are counted).
      await query(this.#deps.sql, 'kb_ingest_release', `update knowledge_documents set lease_until = now() + interval '5 seconds' where id = $1 and company_id = $2 and status = 'processing'`, [doc.id, doc.company_id]).catch(() => {});
    }
  }

  async #setDimensions(doc: DocRow, dims: number | null): Promise<void> {
    if (dims === null) return;
    const rows = await query<{ embedding_dimensions: number | null }>(
      this.#deps.sql,
      'kb_ingest_dims',
      `update knowledge_bases set embedding_dimensions = coalesce(embedding_dimensions, $3) where id = $1 and company_id = $2 returning embedding_dimensions`,
      [doc.knowledge_base_id, doc.company_id, dims],
    );
    const known = rows[0]?.embedding_dimensions;
    if (known !== undefined && known !== null && known !== dims) {
      throw new EmbeddingError(`the embedding server answered ${dims} dimensions where this knowledge base has ${known}`);
    }
  }
}
