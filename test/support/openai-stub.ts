import { createServer, type IncomingMessage } from 'node:http';
import type { Test } from 'tap';
import { listenLocal, readBody, waitForRequests } from './local-server.js';

/**
 * A local OpenAI-compatible chat-completions server for tests (node:http). Records every
 * request (headers, JSON body, whether the client gave up on it, what else was in flight
 * when it arrived, when it was answered) and answers `POST /v1/chat/completions` with what
 * `respond` returns for that request: an answer after `delayMs`, or an error status, e.g.
 * `{ status: 429, retryAfter: 1 }` (a rate limit with `Retry-After: 1`) or
 * `{ status: 503, retryAfter: 2 }`, or `{ status: 429, errorCode: 'insufficient_quota' }`.
 *
 * A request with `stream: true` is answered as OpenAI streams: Server-Sent Events of
 * `chat.completion.chunk`s (`data: {...}`, then `data: [DONE]`), the content in pieces
 * (`chunks`, default: the content cut into STREAM_PIECES), tool calls in pieces by index, usage
 * in a last chunk with empty `choices` when `stream_options.include_usage` asks for it; the
 * first piece after `delayMs`, the next ones `chunkDelayMs` apart (default 100 ms: about a
 * second for a whole answer, a model's pace). `stallAfter` pieces, the stream goes silent for
 * `stallMs`; `padding` bytes of SSE comments go out with each piece (an oversized stream).
 */
export interface ModelRequest {
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
  at: number;
  /** The client closed the connection before the answer was sent (cancelled or timed out). */
  aborted: boolean;
  /** An answer was sent. */
  answered: boolean;
  /** When the answer was sent (Date.now()). */
  answeredAt: number | null;
  /** The status answered (200 for a completion). */
  status: number | null;
  /** The answer was streamed (the request asked `stream: true`). */
  streamed: boolean;
  /** Requests of the same API key already in flight when this one arrived. */
  inflightOfKeyAtArrival: number;
}

export interface ModelAnswer {
  status?: number;
  content?: string | null;
  toolCalls?: { name: string; arguments?: string }[];
  /** `null`: the response has no usage field. */
  usage?: { prompt_tokens: number; completion_tokens: number } | null;
  delayMs?: number;
  headers?: Record<string, string>;
  /** Sent as `Retry-After` (seconds, or an HTTP date). */
  retryAfter?: number | string;
  /** The error body's `code` (OpenAI's: `rate_limit_exceeded`, `insufficient_quota`, …). */
  errorCode?: string;
  /** The model name the server reports (default: the requested one). */
  model?: string;
  /** Streamed: the content's pieces (default: cut into STREAM_PIECES). */
  chunks?: string[];
  /** Streamed: the pause between two pieces. */
  chunkDelayMs?: number;
  /** Streamed: after this many pieces the stream is silent for `stallMs`. */
  stallAfter?: number;
  stallMs?: number;
  /** Streamed: bytes of SSE comment sent with every piece. */
  padding?: number;
}

/** Pieces a streamed answer's content is cut into by default. */
export const STREAM_PIECES = 10;
export const DEFAULT_CHUNK_DELAY_MS = 100;

/** `text` cut into about `n` pieces at word boundaries (their concatenation is `text`). */
export function pieces(text: string, n = STREAM_PIECES): string[] {
  const words = text.match(/\S+\s*/g) ?? [text];
  const per = Math.max(1, Math.ceil(words.length / n));
  const out: string[] = [];
  for (let i = 0; i < words.length; i += per) out.push(words.slice(i, i + per).join(''));
  return out;
}

export interface OpenAiStub {
  /** Base URL to configure as the agent's `model.baseUrl` (ends in /v1). */
  baseUrl: string;
  requests: ModelRequest[];
  respond: (fn: (req: ModelRequest) => ModelAnswer) => void;
  /** The text of the last user message of a request. */
  lastUserText: (req: ModelRequest) => string;
  /** The most requests in flight at once so far (all keys, or one API key). */
  peakInflight: (apiKey?: string) => number;
  waitFor: (predicate: (requests: ModelRequest[]) => boolean, timeoutMs?: number) => Promise<void>;
  close: () => Promise<void>;
}

export const DEFAULT_USAGE = { prompt_tokens: 1234, completion_tokens: 567 };

export async function startOpenAiStub(t: Test | null): Promise<OpenAiStub> {
  const requests: ModelRequest[] = [];
  let responder: (req: ModelRequest) => ModelAnswer = () => ({ content: 'Hello from the model.' });
  let nextId = 1;
  const inflight = new Map<string, number>();
  const peaks = new Map<string, number>();
  const keyOf = (headers: IncomingMessage['headers']) => String(headers.authorization ?? '').replace(/^Bearer /, '');
  const count = (key: string, by: number) => {
    for (const k of [key, '*']) {
      const n = (inflight.get(k) ?? 0) + by;
      inflight.set(k, n);
      if (n > (peaks.get(k) ?? 0)) peaks.set(k, n);
    }
  };

  const server = createServer(async (req, res) => {
    const body = await readBody(req);
    const key = keyOf(req.headers);
    const rec: ModelRequest = {
      path: new URL(req.url ?? '/', 'http://stub').pathname, headers: req.headers, body, at: Date.now(), aborted: false, answered: false, answeredAt: null, status: null, streamed: false,
      inflightOfKeyAtArrival: inflight.get(key) ?? 0,
    };
    requests.push(rec);
    count(key, 1);
    let counted = true;
    const done = () => {
      if (counted) count(key, -1);
      counted = false;
    };
    res.on('close', () => {
      if (!res.writableFinished) rec.aborted = true;
      done();
    });
    if (req.method !== 'POST' || rec.path !== '/v1/chat/completions') {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'not found' } }));
      return;
    }
    const a = responder(rec);
    if (a.delayMs) await new Promise((r) => setTimeout(r, a.delayMs));
    if (res.destroyed) return;
    const status = a.status ?? 200;
    // Counted out before the answer leaves: a client that sends its next request on receipt never finds this one still in flight.
    done();
    rec.status = status;
    rec.answeredAt = Date.now();
    res.writeHead(status, { 'content-type': status === 200 && body?.stream === true ? 'text/event-stream' : 'application/json', ...(a.retryAfter !== undefined ? { 'retry-after': String(a.retryAfter) } : {}), ...a.headers });
    if (status === 200 && body?.stream === true) {
      rec.streamed = true;
      await streamAnswer(res, a, body, `chatcmpl-${nextId++}`);
    } else if (status !== 200) {
      res.end(JSON.stringify({ error: { message: `stub error ${status}`, type: status === 429 ? 'rate_limit_error' : 'server_error', code: a.errorCode ?? null } }));
    } else {
      const toolCalls = a.toolCalls?.map((c, i) => ({ id: `call_${i}`, type: 'function', function: { name: c.name, arguments: c.arguments ?? '{}' } }));
      res.end(
        JSON.stringify({
          id: `chatcmpl-${nextId++}`,
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: a.model ?? body?.model ?? 'unknown',
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: a.content === undefined ? null : a.content, ...(toolCalls ? { tool_calls: toolCalls } : {}) },
              finish_reason: toolCalls ? 'tool_calls' : 'stop',
            },
          ],
          ...(a.usage === null ? {} : { usage: { ...(a.usage ?? DEFAULT_USAGE), total_tokens: (a.usage ?? DEFAULT_USAGE).prompt_tokens + (a.usage ?? DEFAULT_USAGE).completion_tokens } }),
        }),
      );
    }
    rec.answered = true;
  });
  const { url, close } = await listenLocal(server, t);
  return {
    baseUrl: `${url}/v1`,
    requests,
    respond: (fn) => {
      responder = fn;
    },
    lastUserText: (req) => {
      const msgs = (req.body?.messages ?? []) as { role: string; content: string }[];
      return [...msgs].reverse().find((m) => m.role === 'user')?.content ?? '';
    },
    peakInflight: (apiKey) => peaks.get(apiKey ?? '*') ?? 0,
    waitFor: (predicate, timeoutMs = 10_000) => waitForRequests('openai stub', requests, predicate, timeoutMs),
    close,
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One answer as OpenAI streams it (see the module comment); stops early when the client goes away. */
async function streamAnswer(res: import('node:http').ServerResponse, a: ModelAnswer, body: any, id: string): Promise<void> {
  const base = { id, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: a.model ?? body?.model ?? 'unknown' };
  const events: object[] = [{ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] }];
  const content = a.content ?? '';
  for (const piece of a.chunks ?? (content ? pieces(content) : [])) events.push({ ...base, choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] });
  for (const [index, call] of (a.toolCalls ?? []).entries()) {
    events.push({ ...base, choices: [{ index: 0, delta: { tool_calls: [{ index, id: `call_${index}`, type: 'function', function: { name: call.name, arguments: '' } }] }, finish_reason: null }] });
    for (const part of pieces(call.arguments ?? '{}', 3)) events.push({ ...base, choices: [{ index: 0, delta: { tool_calls: [{ index, function: { arguments: part } }] }, finish_reason: null }] });
  }
  events.push({ ...base, choices: [{ index: 0, delta: {}, finish_reason: a.toolCalls?.length ? 'tool_calls' : 'stop' }] });
  const usage = a.usage === null ? null : (a.usage ?? DEFAULT_USAGE);
  if (body?.stream_options?.include_usage && usage) events.push({ ...base, choices: [], usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } });
  const padding = a.padding ? `: ${'x'.repeat(a.padding)}\n\n` : '';
  for (const [n, event] of events.entries()) {
    if (res.destroyed) return;
    if (n > 1) await sleep(a.chunkDelayMs ?? DEFAULT_CHUNK_DELAY_MS);
    if (a.stallAfter !== undefined && n === a.stallAfter + 1) await sleep(a.stallMs ?? 0);
    if (res.destroyed) return;
    res.write(`${padding}data: ${JSON.stringify(event)}\n\n`);
  }
  res.end('data: [DONE]\n\n');
}
