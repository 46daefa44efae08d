import type { Config } from '../../lib/config.js';
import { query, type SqlPool } from '../../lib/db.js';
import type { Orm } from '../../lib/db.js';
import type { Logger } from '../../lib/logger.js';
import type { SecretBox } from '../../lib/secrets.js';
import type { AgentChanges } from '../lib/agent-changes.js';
import { embedTexts, EmbeddingError } from '../../lib/knowledge/embeddings.js';
import { embeddingModelOf } from '../../lib/knowledge/retrieve.js';
import { chunkEmbeddingText, localIndexing } from '../../lib/knowledge/indexing.js';
import { removeChunks, replaceChunks, type Exec } from '../../lib/knowledge/store.js';
import { Deadline } from './deadline.js';
import { ExtractionError, type DocumentFormat } from './extract.js';
import { FairQueue } from './fair-queue.js';
import { fetchPage, PAGE_DEADLINE_MS } from './page.js';
import { ParsePool, type ParseJob } from './parse-pool.js';

/**
 * Turns documents into chunks, in the gateway process (it owns the HTTP routes), off the
 * request path and off its event loop: a document is read (parsed, cleaned, chunked) in a
 * thread of the ParsePool (parse-pool.ts), pages are fetched through the guarded client
 * (page.ts), chunks embedded by the base's embedding server.
 *
 * Fair between companies (contract.md § No tenant slows another down): documents wait in a
 * queue per company, taken round-robin, at most `maxPerCompany` of a company at a time
 * (INGEST_MAX_PER_COMPANY) and `concurrency` in all. A page being fetched or chunks being
 * embedded hold no thread (I/O with deadlines of their own); reading holds one of
 * INGEST_THREADS, again round-robin. A document's work has a deadline (INGEST_TIMEOUT_MS,
 * its clock stopped while it waits for a thread) and the thread a memory budget
 * (INGEST_MEMORY_MB); over either the document fails with the reason.
 *
 * A document waiting or being processed has `status = 'processing'`. The process working on
 * it holds a lease (`lease_until`, renewed with every progress update); `attempts` counts the
 * leases taken. Crash behaviour: a process that dies mid-way leaves an expired lease, and
 * every gateway sweeps for those at start and every `sweepMs` (a few of each company's at a
 * time): the document is **resumed** from its start (the original bytes stay in `raw` until
 * their text is extracted; a page is fetched again). A document whose leases ran out
 * `maxAttempts` times (say a PDF that kills the process every time) is **failed** with that
 * reason instead of being tried forever. A document's result (chunks, counters, status) is
 * written in one transaction. A failed document keeps what it was read from (`raw` or
 * `content`), so a retry (`POST …/documents/:docId/retry`) can process it again with a
 * fresh count of leases.
 *
 * What can go wrong with the input (no text, an unreadable PDF, a page that times out, an
 * embedding server that refuses, the deadline, the memory budget) fails the document at once
 * with the reason in `error`; an unexpected failure (the database away) releases the lease
 * for a later attempt.
 */
export interface IngestorDeps {
  orm: Orm;
  sql: SqlPool;
  secrets: SecretBox;
  config: Pick<Config, 'allowPrivateUrls' | 'helpdeskGlobalUrl' | 'helpdeskEuropeUrl' | 'ingest'>;
  logger: Logger;
  /** Told when a document is ready or failed: the base's content version moved (its chunks changed), so the workers reload it. */
  changes?: AgentChanges;
}

export interface IngestorOptions {
  /** Documents processed at once, all companies together (fetching, reading, embedding). */
  concurrency?: number;
  leaseMs?: number;
  sweepMs?: number;
  maxAttempts?: number;
  /** Deadline of a page fetch (default PAGE_DEADLINE_MS, and never past the document's own). */
  pageDeadlineMs?: number;
}

export const DEFAULT_INGEST_CONCURRENCY = 16;
export const DEFAULT_LEASE_MS = 60_000;
export const DEFAULT_SWEEP_MS = 30_000;
export const DEFAULT_MAX_ATTEMPTS = 3;
/** A document making more chunks than this is refused (split it). */
export const MAX_CHUNKS_PER_DOCUMENT = 5000;
/** The sweep takes at most this many waiting documents of each company at a time. */
const SWEEP_PER_COMPANY = 10;
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
  readonly #maxPerCompany: number;
  readonly #leaseMs: number;
  readonly #sweepMs: number;
  readonly #maxAttempts: number;
  readonly #pageDeadlineMs: number;
  readonly #pool: ParsePool;
  readonly #waiting = new FairQueue<number, number>();
  readonly #queued = new Set<number>();
  readonly #runningPerCompany = new Map<number, number>();
  readonly #controller = new AbortController();
  #running = 0;
  #timer: NodeJS.Timeout | null = null;
  #idle: (() => void)[] = [];

  constructor(deps: IngestorDeps, options: IngestorOptions = {}) {
    this.#deps = deps;
    this.#concurrency = options.concurrency ?? DEFAULT_INGEST_CONCURRENCY;
    this.#maxPerCompany = deps.config.ingest.maxPerCompany;
    this.#leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.#sweepMs = options.sweepMs ?? DEFAULT_SWEEP_MS;
    this.#maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    this.#pageDeadlineMs = options.pageDeadlineMs ?? PAGE_DEADLINE_MS;
    this.#pool = new ParsePool({ threads: deps.config.ingest.threads, memoryMb: deps.config.ingest.memoryMb, logger: deps.logger });
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
   * Stops taking work and aborts the running jobs (page fetches, reader threads, embedding
   * calls); waits for them at most CLOSE_WAIT_MS. An unfinished document keeps its lease,
   * which expires, and the next process resumes it.
   */
  async close(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#controller.abort();
    this.#waiting.clear();
    if (this.#running > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([new Promise<void>((r) => this.#idle.push(r)), new Promise<void>((r) => (timer = setTimeout(r, CLOSE_WAIT_MS)))]);
      clearTimeout(timer);
    }
    await this.#pool.close();
  }

  /** Resolves when nothing is queued or running (tests). */
  idle(): Promise<void> {
    if (this.#running === 0 && this.#waiting.size === 0) return Promise.resolve();
    return new Promise((r) => this.#idle.push(r));
  }

  /** Queues the documents waiting without a live lease (after a crash, or queued by another process), a few of each company. */
  async sweep(): Promise<number> {
    const rows = await query<{ id: number; company_id: number }>(
      this.#deps.sql,
      'kb_ingest_sweep',
      `select id, company_id from (
         select id, company_id, row_number() over (partition by company_id order by id) as turn from knowledge_documents
         where status = 'processing' and (lease_until is null or lease_until < now())
       ) waiting where turn <= $1 order by turn, id limit 100`,
      [SWEEP_PER_COMPANY],
    );
    for (const r of rows) this.enqueue(r.id, r.company_id);
    return rows.length;
  }

  enqueue(documentId: number, companyId: number): void {
    if (this.#controller.signal.aborted || this.#queued.has(documentId)) return;
    this.#queued.add(documentId);
    this.#waiting.push(companyId, documentId);
    this.#pump();
  }

  #pump(): void {
    while (this.#running < this.#concurrency) {
      const next = this.#waiting.take((company) => (this.#runningPerCompany.get(company) ?? 0) < this.#maxPerCompany);
      if (!next) break;
      const { key: company, item: id } = next;
      this.#running++;
      this.#runningPerCompany.set(company, (this.#runningPerCompany.get(company) ?? 0) + 1);
      void this.#claimAndProcess(id).finally(() => {
        this.#queued.delete(id);
        this.#running--;
        const left = this.#runningPerCompany.get(company)! - 1;
        if (left > 0) this.#runningPerCompany.set(company, left);
        else this.#runningPerCompany.delete(company);
        this.#pump();
        if (this.#running === 0 && this.#waiting.size === 0) for (const r of this.#idle.splice(0)) r();
      });
    }
  }

  async #claimAndProcess(documentId: number): Promise<void> {
    try {
      const doc = await this.#claim(documentId);
      if (doc) await this.#process(doc);
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
    await this.#deps.changes?.announce(doc.company_id);
  }

  /** The document's text (read now when it has none yet), its chunks and their local vectors (`vectorsFor`: its title), read in a thread of the pool. */
  async #read(doc: DocRow, deadline: Deadline, signal: AbortSignal, vectorsFor: string | undefined) {
    let job: ParseJob;
    if (doc.content !== null) job = { kind: 'chunk', content: doc.content, format: doc.format };
    else if (doc.raw) job = { kind: 'extract', format: (doc.source.type === 'url' ? 'html' : doc.source.type) as DocumentFormat, bytes: doc.raw };
    else if (doc.source.type === 'url' && doc.source.url) {
      const page = await fetchPage(this.#deps.config, doc.source.url, { signal, deadlineMs: Math.max(1, Math.min(this.#pageDeadlineMs, deadline.remaining())) });
      await this.#progress(doc, 15);
      job = { kind: 'extract', format: page.format, bytes: page.bytes, contentType: page.contentType };
    } else throw new ExtractionError('the document has nothing to read');
    return this.#pool.run(doc.company_id, vectorsFor === undefined ? job : { ...job, vectorsFor }, { signal, deadline });
  }

  /** Processes a document whose lease this process holds (see the class comment). */
  async #process(doc: DocRow): Promise<void> {
    const log = this.#deps.logger.child({ documentId: doc.id, knowledgeBaseId: doc.knowledge_base_id });
    const closing = this.#controller.signal;
    const deadline = new Deadline(this.#deps.config.ingest.timeoutMs);
    // The lease is renewed while the document waits for a thread or is read: a live process keeps it.
    const lost = new AbortController();
    const heartbeat = setInterval(() => {
      this.#renew(doc).then((held) => held || lost.abort(new LeaseLost()), () => {});
    }, Math.max(100, this.#leaseMs / 3));
    heartbeat.unref();
    const signal = AbortSignal.any([closing, deadline.signal, lost.signal]);
    try {
      await this.#progress(doc, 5);
      const [kb] = await query<{ language: string; embedding_base_url: string | null; embedding_model: string | null; embedding_api_key_sealed: string | null }>(
        this.#deps.sql,
        'kb_ingest_base',
        `select language, embedding_base_url, embedding_model, embedding_api_key_sealed from knowledge_bases where id = $1 and company_id = $2`,
        [doc.knowledge_base_id, doc.company_id],
      );
      if (!kb) throw new LeaseLost();
      // A base without an embedding server gets the local model's vectors, made in the parse thread (titled as below).
      const ownTitle = doc.title.trim() && doc.title !== doc.source.url ? doc.title : '';
      const { extracted, chunks, vectors } = await this.#read(doc, deadline, signal, kb.embedding_base_url === null ? ownTitle : undefined);
      let title = doc.title;
      if (extracted) {
        // A page added without a title is named by the page (it was shown under its address meanwhile).
        if (!title.trim() || title === doc.source.url) title = extracted.title ?? (title.trim() || 'Untitled');
        await query(
          this.#deps.sql,
          'kb_ingest_extracted',
          `update knowledge_documents set content = $3, format = $4, title = $5, raw = null, updated_at = now() where id = $1 and company_id = $2 and status = 'processing'`,
          [doc.id, doc.company_id, extracted.content, extracted.contentFormat, title.slice(0, 500)],
        );
      }
      await this.#progress(doc, 25);
      if (chunks.length === 0) throw new ExtractionError('the document has no text to index');
      if (chunks.length > MAX_CHUNKS_PER_DOCUMENT) throw new ExtractionError(`the document makes more than ${MAX_CHUNKS_PER_DOCUMENT} chunks; split it into several documents`);

      let embeddings: number[][] | null = null;
      let model;
      try {
        model = embeddingModelOf(kb, this.#deps.secrets, this.#deps.config);
      } catch {
        throw new EmbeddingError('the embedding API key cannot be opened (SECRETS_KEY changed?); set it again');
      }
      const local = await localIndexing({ language: kb.language, hasEmbeddingServer: model !== null }, title, chunks.map((c) => c.text).join('\n'), chunks, vectors);
      if (model) {
        const texts = chunks.map((c) => chunkEmbeddingText(title, c));
        embeddings = await embedTexts(model, texts, { signal, onBatch: (done) => this.#progress(doc, 30 + (60 * done) / texts.length) });
        await this.#setDimensions(doc, embeddings[0]?.length ?? null);
      }
      await this.#progress(doc, 92);
      await this.#deps.orm.em.fork().transactional(async (em) => {
        const exec: Exec = (sql, params) => em.execute(sql, params as unknown[]);
        const [live] = await exec(`select id from knowledge_documents where id = ? and company_id = ? and status = 'processing' for update`, [doc.id, doc.company_id]);
        if (!live) throw new LeaseLost();
        await replaceChunks(exec, { companyId: doc.company_id, knowledgeBaseId: doc.knowledge_base_id, documentId: doc.id }, title, chunks, { ...local, embeddings });
        await exec(
          `update knowledge_documents set status = 'ready', progress = 100, error = null, chunk_count = ?, raw = null, lease_until = null, updated_at = now()
           where id = ? and company_id = ?`,
          [chunks.length, doc.id, doc.company_id],
        );
      });
      await this.#deps.changes?.announce(doc.company_id);
      log.info({ chunks: chunks.length, embedded: embeddings !== null }, 'knowledge: document ready');
    } catch (err) {
      if (err instanceof LeaseLost || closing.aborted || lost.signal.aborted) {
        log.info('knowledge: document processing stopped (deleted, taken over or shutting down)');
        return;
      }
      // Past the deadline, whatever failed first (an aborted fetch, an embedding call) failed because of it.
      const reason = deadline.expired ? (deadline.signal.reason as Error) : err;
      if (reason instanceof ExtractionError || reason instanceof EmbeddingError) {
        log.info({ reason: reason.message }, 'knowledge: document failed');
        await this.#fail(doc, reason.message).catch((e: unknown) => log.warn({ err: e }, 'knowledge: could not record the failure'));
        return;
      }
      log.error({ err }, 'knowledge: document processing failed unexpectedly; it will be tried again');
      // Released for a later attempt (the sweep takes it up again; attempts are counted).
      await query(this.#deps.sql, 'kb_ingest_release', `update knowledge_documents set lease_until = now() + interval '5 seconds' where id = $1 and company_id = $2 and status = 'processing'`, [doc.id, doc.company_id]).catch(() => {});
    } finally {
      clearInterval(heartbeat);
      deadline.clear();
    }
  }

  /** Extends the document's lease; false when it is gone or no longer processing (deleted meanwhile). */
  async #renew(doc: DocRow): Promise<boolean> {
    const rows = await query(
      this.#deps.sql,
      'kb_ingest_renew',
      `update knowledge_documents set lease_until = now() + ($3::int * interval '1 millisecond') where id = $1 and company_id = $2 and status = 'processing' returning id`,
      [doc.id, doc.company_id, this.#leaseMs],
    );
    return rows.length > 0;
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
