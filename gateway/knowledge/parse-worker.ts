import { parentPort } from 'node:worker_threads';
import { chunkContent, type Chunk } from '../../lib/knowledge/chunker.js';
import { chunkEmbeddingText } from '../../lib/knowledge/indexing.js';
import { localModel } from '../../lib/knowledge/local-model.js';
import { ExtractionError, extractDocument, type Extracted } from './extract.js';
import { warmUpPdfReader } from './pdf.js';
import type { ParseJob, WorkerAnswer } from './parse-pool.js';

/**
 * A thread of the ingestion pool (parse-pool.ts): reads one document at a time, its original
 * (text, markdown, HTML, PDF) to its structured text and chunks, or its stored text to
 * chunks, and posts the result back. Runs under the pool's deadline and memory limits; the
 * pool ends the thread when it is over them.
 */
parentPort!.on('message', (message: { id: number; job: ParseJob; budgetBytes: number }) => {
  void run(message.job, message.budgetBytes)
    .catch((err: unknown): WorkerAnswer => ({ ok: false, reason: err instanceof ExtractionError ? 'extraction' : 'internal', message: err instanceof Error ? err.message : String(err) }))
    .then((answer) => parentPort!.postMessage({ id: message.id, ...answer }));
});

// PDF.js (some 50 MB of heap) loaded before the first job: loading the reader is no document's time.
await warmUpPdfReader();
parentPort!.postMessage({ ready: true });

async function run(job: ParseJob, budgetBytes: number): Promise<WorkerAnswer> {
  if (job.kind === 'chunk') return withVectors(job, null, chunkContent(job.content, job.format));
  const bytes = Buffer.from(job.bytes.buffer, job.bytes.byteOffset, job.bytes.byteLength);
  const extracted = await extractDocument({ format: job.format, bytes, contentType: job.contentType, budgetBytes });
  return withVectors(job, extracted, chunkContent(extracted.content, extracted.contentFormat));
}

/** The chunks' local vectors, made here rather than on the gateway's event loop (a millisecond a chunk). */
async function withVectors(job: ParseJob, extracted: Extracted | null, chunks: Chunk[]): Promise<WorkerAnswer> {
  if (job.vectorsFor === undefined || !(await localModel.load())) return { ok: true, extracted, chunks, vectors: null };
  const title = job.vectorsFor || extracted?.title || '';
  return { ok: true, extracted, chunks, vectors: chunks.map((c) => localModel.embed(chunkEmbeddingText(title, c))) };
}
