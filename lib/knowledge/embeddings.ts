import type { AddressGuard } from '../address-guard.js';
import { outboundErrorIn, statusFailure, type OutboundError } from '../outbound-errors.js';
import { outboundRequest, parseJsonBody } from '../outbound-http.js';

/**
 * A client of an OpenAI-compatible embeddings server (`POST {baseUrl}/embeddings`, `{model,
 * input: [...]}` → `{data: [{index, embedding}]}`): texts go in batches of BATCH_SIZE, each
 * call through lib/outbound-http.ts with a deadline, a body cap and the tenant's address
 * guard; failures that are not permanent (lib/outbound-errors.ts: timeouts, network errors,
 * 408 / 409 / 429 / 5xx) are retried a few times. Vectors come back unit-length
 * (cosine = dot product). Failures are EmbeddingError with a message fit for a document's
 * `error` (never the server's own text).
 */
export const BATCH_SIZE = 64;
export const EMBEDDING_DEADLINE_MS = 30_000;
export const MAX_EMBEDDING_ANSWER_BYTES = 16 * 1024 * 1024;
/** Characters of one input (about 2,000 tokens): a chunk is far shorter. */
export const MAX_INPUT_CHARS = 8000;
const RETRIES = 2;

export interface EmbeddingModel {
  baseUrl: string;
  model: string;
  apiKey: string | null;
  guard: AddressGuard | null;
}

export class EmbeddingError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'EmbeddingError';
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function normalise(v: number[]): number[] {
  let n = 0;
  for (const x of v) n += x * x;
  n = Math.sqrt(n);
  return n > 0 ? v.map((x) => x / n) : v;
}

async function embedBatch(m: EmbeddingModel, input: string[], signal?: AbortSignal): Promise<number[][]> {
  const url = `${m.baseUrl.replace(/\/+$/, '')}/embeddings`;
  let last: unknown;
  for (let attempt = 0; attempt <= RETRIES; attempt++) {
    if (attempt > 0) await sleep(250 * 2 ** attempt);
    let res;
    try {
      res = await outboundRequest({
        method: 'POST',
        url,
        headers: { 'content-type': 'application/json', accept: 'application/json', ...(m.apiKey ? { authorization: `Bearer ${m.apiKey}` } : {}) },
        body: Buffer.from(JSON.stringify({ model: m.model, input })),
        timeoutMs: EMBEDDING_DEADLINE_MS,
        maxBodyBytes: MAX_EMBEDDING_ANSWER_BYTES,
        guard: m.guard,
        signal,
      });
    } catch (err) {
      last = err;
      const failure = outboundErrorIn(err);
      if (failure?.permanent) throw new EmbeddingError(unusable(failure), { cause: err });
      continue;
    }
    if (res.status !== 200) {
      const failure = statusFailure(`the embedding server answered HTTP ${res.status}`, res.status, res.headers['retry-after']);
      last = new EmbeddingError(failure.message, { cause: failure });
      if (failure.permanent) throw last;
      continue;
    }
    const body = parseJsonBody(res.body) as { data?: { index?: number; embedding?: unknown }[] } | undefined;
    const data = body?.data;
    if (!Array.isArray(data) || data.length !== input.length) throw new EmbeddingError('the embedding server answered with something else than one vector per input');
    const out: number[][] = new Array(input.length);
    data.forEach((d, i) => {
      const at = typeof d.index === 'number' ? d.index : i;
      const v = d.embedding;
      if (!Array.isArray(v) || v.length === 0 || v.length > 8192 || !v.every((x) => typeof x === 'number' && Number.isFinite(x)) || at < 0 || at >= input.length) {
        throw new EmbeddingError('the embedding server answered with an invalid vector');
      }
      out[at] = normalise(v as number[]);
    });
    if (out.some((v) => !v) || out.some((v) => v.length !== out[0]!.length)) throw new EmbeddingError('the embedding server answered with vectors of different lengths');
    return out;
  }
  if (last instanceof EmbeddingError) throw last;
  const code = outboundErrorIn(last)?.code;
  throw new EmbeddingError(code === 'TIMEOUT' ? `the embedding server did not answer within ${EMBEDDING_DEADLINE_MS / 1000} s` : 'the embedding server could not be reached', { cause: last });
}

/** Why the embedding server cannot be used (a permanent failure), in words for the document's `error`. */
function unusable(failure: OutboundError): string {
  if (failure.code === 'BLOCKED_ADDRESS') return 'the embedding server address is private, loopback or link-local';
  return `the embedding server could not be used (${failure.code.toLowerCase().replace(/_/g, ' ')})`;
}

/** Unit vectors of `texts`, in order; `onBatch` is told how many are done after each batch. */
export async function embedTexts(m: EmbeddingModel, texts: string[], options: { signal?: AbortSignal; onBatch?: (done: number) => Promise<void> | void } = {}): Promise<number[][]> {
  const out: number[][] = [];
  for (let i = 0; i < texts.length; i += BATCH_SIZE) {
    out.push(...(await embedBatch(m, texts.slice(i, i + BATCH_SIZE).map((t) => t.slice(0, MAX_INPUT_CHARS) || ' '), options.signal)));
    await options.onBatch?.(out.length);
  }
  return out;
}
