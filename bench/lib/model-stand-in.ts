import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { onCleanup } from './env.js';

/**
 * An OpenAI-compatible chat-completions stand-in in the bench process: every
 * `POST /v1/chat/completions` is answered after `latencyMs` (a real model takes 0.5–3 s) with
 * a short reply and fixed token usage. Counts the requests, those in flight now and the
 * most in flight at once (the model calls the worker keeps under way).
 *
 * With `callTool` (the actions section), it behaves like a model using a company's tool: a
 * request that offers that tool and holds no tool result yet is answered with one call of it
 * (`finish_reason: "tool_calls"`); a request whose messages hold a `role: "tool"` message is
 * answered with text built from that result. A request not offering the tool gets the
 * short reply, as without `callTool`.
 */
export interface ModelStandIn {
  /** The agents' `model.baseUrl`. */
  baseUrl: string;
  setLatency: (ms: number) => void;
  /** Call this tool when it is offered (null: never call a tool, the default). */
  callTool: (tool: StandInTool | null) => void;
  requests: () => number;
  /** Answers that were a call of the `callTool` tool. */
  toolCalls: () => number;
  /** Requests whose messages held a tool result (the turn after a call). */
  toolResults: () => number;
  /** Sees each request as it arrives (performance.now()), with what it is answered. */
  onRequest: (fn: ((request: ChatRequest, answer: AnswerKind, at: number) => void) | null) => void;
  inflight: () => number;
  peak: () => number;
  reset: () => void;
  close: () => Promise<void>;
}

export const STAND_IN_USAGE = { prompt_tokens: 200, completion_tokens: 30 };

export interface StandInTool {
  name: string;
  /** The call's arguments, from the request (e.g. an order number in the question); `n` counts the calls made so far. */
  args: (request: ChatRequest, n: number) => Record<string, unknown>;
  /** The text answered once the messages hold the tool's result (its `content`, a JSON string). */
  answer: (result: string) => string;
}

const SHORT_REPLY = 'Thanks for your message: we open at 9 am and deliver within 2 days.';

/** `text`: the short reply (no tool offered); `call`: a call of the tool; `result`: text from the tool's result. */
export type AnswerKind = 'text' | 'call' | 'result';

export interface ChatRequest {
  model?: string;
  messages?: { role?: string; content?: unknown }[];
  tools?: { type?: string; function?: { name?: string } }[];
}

/** The assistant message for one request: the short reply, or (with a tool) a call of it, or text from its result. */
function assistantMessage(body: ChatRequest, tool: StandInTool | null, calls: () => number): { message: Record<string, unknown>; finish: string; kind: AnswerKind } {
  if (tool) {
    const result = [...(body.messages ?? [])].reverse().find((m) => m.role === 'tool');
    if (result) return { message: { role: 'assistant', content: tool.answer(typeof result.content === 'string' ? result.content : JSON.stringify(result.content ?? null)) }, finish: 'stop', kind: 'result' };
    if (body.tools?.some((t) => t.function?.name === tool.name)) {
      const call = { id: 'call_0', type: 'function', function: { name: tool.name, arguments: JSON.stringify(tool.args(body, calls())) } };
      return { message: { role: 'assistant', content: null, tool_calls: [call] }, finish: 'tool_calls', kind: 'call' };
    }
  }
  return { message: { role: 'assistant', content: SHORT_REPLY }, finish: 'stop', kind: 'text' };
}

export async function startModelStandIn(): Promise<ModelStandIn> {
  let latencyMs = 1000;
  let requests = 0;
  let inflight = 0;
  let peak = 0;
  let nextId = 1;
  let tool: StandInTool | null = null;
  let toolCalls = 0;
  let toolResults = 0;
  let listener: ((request: ChatRequest, answer: AnswerKind, at: number) => void) | null = null;
  const server: Server = createServer((req, res) => {
    const at = performance.now();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
        return;
      }
      requests++;
      inflight++;
      if (inflight > peak) peak = inflight;
      let request: ChatRequest = {};
      try {
        request = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as ChatRequest | null) ?? {};
      } catch {
        /* answered anyway */
      }
      const model = request.model ?? 'unknown';
      const { message, finish, kind } = assistantMessage(request, tool, () => toolCalls);
      if (kind === 'call') toolCalls++;
      if (kind === 'result') toolResults++;
      listener?.(request, kind, at);
      const answer = () => {
        inflight--;
        const body = JSON.stringify({
          id: `chatcmpl-${nextId++}`, object: 'chat.completion', created: Math.floor(Date.now() / 1000), model,
          choices: [{ index: 0, message, finish_reason: finish }],
          usage: { ...STAND_IN_USAGE, total_tokens: STAND_IN_USAGE.prompt_tokens + STAND_IN_USAGE.completion_tokens },
        });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
      };
      if (latencyMs > 0) setTimeout(answer, latencyMs);
      else answer();
    });
  });
  server.keepAliveTimeout = 60_000;
  server.maxConnections = 100_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', 4096, resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = onCleanup('model stand-in', () => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  return {
    baseUrl: `${url}/v1`,
    setLatency: (ms) => {
      latencyMs = ms;
    },
    callTool: (t) => {
      tool = t;
    },
    requests: () => requests,
    toolCalls: () => toolCalls,
    toolResults: () => toolResults,
    onRequest: (fn) => {
      listener = fn;
    },
    inflight: () => inflight,
    peak: () => peak,
    reset: () => {
      requests = 0;
      toolCalls = 0;
      toolResults = 0;
      peak = inflight;
    },
    close,
  };
}
