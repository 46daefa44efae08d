import { createServer, type IncomingMessage } from 'node:http';
import type { Test } from 'tap';
import { listenLocal, readBody } from './local-server.js';

/**
 * A local OpenAI-compatible chat-completions server for tests (node:http). Records every
 * request (headers, JSON body, whether the client gave up on it) and answers
 * `POST /v1/chat/completions` with what `respond` returns for that request.
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
}

export interface ModelAnswer {
  status?: number;
  content?: string | null;
  toolCalls?: { name: string; arguments?: string }[];
  /** `null`: the response has no usage field. */
  usage?: { prompt_tokens: number; completion_tokens: number } | null;
  delayMs?: number;
  headers?: Record<string, string>;
  /** The model name the server reports (default: the requested one). */
  model?: string;
}

export interface OpenAiStub {
  /** Base URL to configure as the agent's `model.baseUrl` (ends in /v1). */
  baseUrl: string;
  requests: ModelRequest[];
  respond: (fn: (req: ModelRequest) => ModelAnswer) => void;
  /** The text of the last user message of a request. */
  lastUserText: (req: ModelRequest) => string;
  waitFor: (predicate: (requests: ModelRequest[]) => boolean, timeoutMs?: number) => Promise<void>;
  close: () => Promise<void>;
}

export const DEFAULT_USAGE = { prompt_tokens: 1234, completion_tokens: 567 };

export async function startOpenAiStub(t: Test | null): Promise<OpenAiStub> {
  const requests: ModelRequest[] = [];
  let responder: (req: ModelRequest) => ModelAnswer = () => ({ content: 'Hello from the model.' });
  let nextId = 1;

  const server = createServer(async (req, res) => {
    const body = await readBody(req);
    const rec: ModelRequest = { path: new URL(req.url ?? '/', 'http://stub').pathname, headers: req.headers, body, at: Date.now(), aborted: false, answered: false };
    requests.push(rec);
    res.on('close', () => {
      if (!res.writableFinished) rec.aborted = true;
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
    res.writeHead(status, { 'content-type': 'application/json', ...a.headers });
    if (status !== 200) {
      res.end(JSON.stringify({ error: { message: `stub error ${status}`, type: 'server_error' } }));
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
    waitFor: async (predicate, timeoutMs = 10_000) => {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(requests)) {
        if (Date.now() > deadline) throw new Error(`openai stub: condition not met within ${timeoutMs} ms (${requests.length} requests recorded)`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    close,
  };
}
