import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { Test } from 'tap';
import { listenLocal, readBody } from './local-server.js';

/**
 * A deterministic stand-in for an OpenAI-compatible embeddings server
 * (`POST /v1/embeddings {model, input}` → `{data:[{index, embedding}]}`). A text's vector is
 * the sum of its words' vectors, each word hashed to a pseudo-random unit vector of DIMS
 * dimensions, after mapping each word through `concepts` (word → concept name; words of one
 * concept share a vector, which is how the stand-in plays "meaning": "parcel" can be close to
 * "delivery" without sharing a letter). Records the requests; `fail(status)` makes it refuse.
 */
export const DIMS = 64;

function unitVector(seed: string): number[] {
  const out: number[] = [];
  let block = 0;
  while (out.length < DIMS) {
    const h = createHash('sha256').update(`${seed}:${block++}`).digest();
    for (let i = 0; i + 1 < h.length && out.length < DIMS; i += 2) out.push(h.readInt16BE(i) / 32768);
  }
  const n = Math.hypot(...out);
  return out.map((x) => x / n);
}

export function embedText(text: string, concepts: Record<string, string> = {}): number[] {
  const v = new Array<number>(DIMS).fill(0);
  for (const raw of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    const w = concepts[raw] ?? raw;
    unitVector(w).forEach((x, i) => (v[i]! += x));
  }
  return v;
}

export interface EmbeddingsStub {
  baseUrl: string;
  requests: { headers: Record<string, unknown>; body: any }[];
  fail: (status: number | null) => void;
  close: () => Promise<void>;
}

export async function startEmbeddingsStub(t: Test | null, concepts: Record<string, string> = {}): Promise<EmbeddingsStub> {
  const requests: EmbeddingsStub['requests'] = [];
  let failing: number | null = null;
  const server = createServer(async (req, res) => {
    const body = await readBody(req);
    requests.push({ headers: req.headers, body });
    if (req.method !== 'POST' || req.url !== '/v1/embeddings') {
      res.writeHead(404).end();
      return;
    }
    if (failing !== null) {
      res.writeHead(failing, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'stub refuses' } }));
      return;
    }
    const input: string[] = Array.isArray(body?.input) ? body.input : [body?.input];
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ object: 'list', model: body?.model, data: input.map((t, index) => ({ object: 'embedding', index, embedding: embedText(String(t), concepts) })), usage: { prompt_tokens: 1, total_tokens: 1 } }));
  });
  const { url, close } = await listenLocal(server, t);
  return { baseUrl: `${url}/v1`, requests, fail: (s) => (failing = s), close };
}
