import OpenAI from 'openai';
import type { AddressGuard } from '../address-guard.js';
import { DEFAULT_MODEL_RETRY_BUDGET_MS } from '../config.js';
import { storable } from '../text.js';
import { inSpan, SpanKind, tracingEnabled } from '../tracing.js';
import { MAX_MODEL_ANSWER_BYTES, modelServer, type ModelServer } from './model-servers.js';
import { readChatStream } from './model-stream.js';
import { MAX_RETRY_AFTER_MS, OutboundError, outboundErrorIn, retryAfterMs } from '../outbound-errors.js';
import { estimateTokens, type ChatMessage, type ChatToolCall } from './prompt.js';
import { NO_SLOT, type CallSlot } from './slots.js';
import type { ToolCallRecord } from '../../schema/conversation.js';

/**
 * One call to an OpenAI-compatible chat-completions server (OpenAI, Ollama, vLLM,
 * llama.cpp ...), through the official `openai` package and the server's shared client
 * (lib/agents/model-servers.ts: keep-alive connections, the server's pace):
 * - a deadline per attempt (`timeoutMs`) and bounded retries (`maxRetries`) of attempts that
 *   failed (408, 409, 5xx, connection errors, timeouts), after the server's Retry-After or an
 *   exponential backoff, all within an overall deadline (`totalTimeoutMs`);
 * - a server asking us to slow down (429, or 503 with Retry-After) is a pace, not a failure:
 *   the server's calls pause for its Retry-After (model-servers.ts) and this one is retried
 *   until `retryBudgetMs` after it began (MODEL_RETRY_BUDGET_MS); so are calls that find the
 *   server slowed down. A 429 saying the account has no quota left fails at once;
 * - while it waits (a slowed server, a backoff) the call gives its slot back (`slot`), so
 *   other companies' calls run meanwhile;
 * - cancellation through `signal` (a human took the conversation over): the HTTP request is
 *   aborted and the call rejects at once with ModelCallCancelled, even while it waits;
 * - a bounded answer (MAX_MODEL_ANSWER_BYTES) and, for a tenant's own server, public
 *   addresses only (`guard`; lib/outbound-http.ts, lib/address-guard.ts);
 * - with `onDelta` (webchat) the answer is streamed (`stream: true`, usage in its last chunk,
 *   lib/agents/model-stream.ts) and its text handed over piece by piece as it arrives; the
 *   same bounds apply to the whole stream, `timeoutMs` also to the silence between chunks.
 *   Pieces are a preview: after an attempt that handed some over fails, the retries hand
 *   over nothing (the stored reply is the whole answer, whichever attempt gave it).
 * Any other failure rejects with ModelCallFailed; its message names the status, never the
 * server's own text (it is shown to operators in the transition log).
 *
 * One call is one model turn. The company's own tools (`tools`, lib/agents/tools/toolbox.ts)
 * are offered after the built-in ones; the calls of them the model asks for come back in
 * `toolCalls` with the assistant message to append before their results, and the caller
 * makes them and asks again (lib/agents/answer.ts modelAnswer).
 */
export const DEFAULT_MODEL_TIMEOUT_MS = 20_000;
export const DEFAULT_MODEL_MAX_RETRIES = 2;
export const DEFAULT_MODEL_TOTAL_TIMEOUT_MS = 45_000;
export { MAX_MODEL_ANSWER_BYTES };
/** Token counts a server may report; anything else (negative, fractional, absurd) is not believed. */
export const MAX_REPORTED_TOKENS = 100_000_000;
/** Backoff of a slow-down without Retry-After: 1 s, doubling, at most 30 s. */
const SLOW_DOWN_BACKOFF_MS = { first: 1_000, max: 30_000 };
/** Backoff of a failed attempt without Retry-After (the `openai` package's): 0.5 s, doubling, at most 8 s. */
const FAILURE_BACKOFF_MS = { first: 500, max: 8_000 };

/** The tool a model calls to hand the conversation to a human (the handoff convention). */
export const HANDOFF_TOOL = 'handoff_to_human';
/** The tool a model calls to end the conversation (after its last words, if any). */
export const CLOSE_TOOL = 'close_conversation';
/** The tool a model calls to move the customer's lead to a stage of the sales pipeline. */
export const LEAD_STAGE_TOOL = 'set_lead_stage';
/** The service's own tools: a company's tool may not take one of their names. */
export const BUILT_IN_TOOLS: ReadonlySet<string> = new Set([HANDOFF_TOOL, CLOSE_TOOL, LEAD_STAGE_TOOL]);

export interface ModelCall {
  baseUrl: string;
  apiKey: string | null;
  model: string;
  messages: ChatMessage[];
  timeoutMs?: number;
  maxRetries?: number;
  totalTimeoutMs?: number;
  /** How long a server asking us to slow down is retried (default MODEL_RETRY_BUDGET_MS's). */
  retryBudgetMs?: number;
  signal?: AbortSignal;
  /** Addresses the call may connect to; null: any (ALLOW_PRIVATE_URLS). */
  guard?: AddressGuard | null;
  /** The call's place among the calls in flight, given back while it waits. */
  slot?: CallSlot;
  /** Told how long the call took (retries and waits included) and how it ended: the worker's model-call histogram. */
  onSettled?: (seconds: number, outcome: ModelCallOutcome) => void;
  /** Streams the answer: each piece of its text, as it arrives (see above). */
  onDelta?: (text: string) => void;
  /** The company's tools offered besides the built-in ones (none: only those). */
  tools?: readonly ToolDefinition[];
}

/** A function tool as a chat-completions request offers it. */
export interface ToolDefinition {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** A call of a company tool the model asked for: `arguments` is the model's JSON text. */
export interface ModelToolCall {
  id: string;
  name: string;
  arguments: string;
}

export type ModelCallOutcome = 'reply' | 'handoff' | 'close' | 'failed' | 'cancelled';

export interface ModelResult {
  /** `close`: the model called close_conversation (`text` is its last words, if any). */
  kind: 'reply' | 'handoff' | 'close';
  text: string | null;
  /** Why the model handed off: the tool's `reason` argument, or 'empty answer'. */
  handoffReason?: string;
  /** Why the model closed the conversation: the tool's `reason` argument, or the tool's name. */
  closeReason?: string;
  /** The stage the model moved the customer's lead to (set_lead_stage). */
  leadStage?: string;
  inputTokens: number;
  outputTokens: number;
  /** False when the server reported no usage and the token counts are estimates. */
  usageReported: boolean;
  /** The model the server says answered (falls back to the requested one). */
  model: string;
  /**
   * Only when company tools were offered: the calls of them (or of names not offered) the
   * model asked for, and its message asking for them, to append before their results. With
   * a handoff or close in the same turn, those still end the answer.
   */
  toolCalls?: { calls: ModelToolCall[]; message: ChatMessage };
}

/** The conversation was taken over: the call was aborted on purpose. */
export class ModelCallCancelled extends Error {
  /** The company tools the answer had called before it was cancelled: they happened, and are logged. */
  toolCalls: ToolCallRecord[] = [];
  constructor() {
    super('model call cancelled: a human took the conversation over');
    this.name = 'ModelCallCancelled';
  }
}

/** The model did not answer (error status, network error or timeout) after its retries. */
export class ModelCallFailed extends Error {
  readonly status: number | null;
  constructor(message: string, status: number | null, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ModelCallFailed';
    this.status = status;
  }
}

const TOOL_DEFINITIONS = [
  {
    type: 'function' as const,
    function: {
      name: HANDOFF_TOOL,
      description: 'Hand the conversation to a human colleague: the customer asked for a person, or the answer is not in the knowledge provided.',
      parameters: { type: 'object', properties: { reason: { type: 'string' } } },
    },
  },
  {
    type: 'function' as const,
    function: {
      name: CLOSE_TOOL,
      description: 'End the conversation: the customer has what they needed and said goodbye. Say your last words in the message content.',
      parameters: { type: 'object', properties: {} },
    },
  },
  {
    type: 'function' as const,
    function: {
      name: LEAD_STAGE_TOOL,
      description: "Move the customer's lead to a stage of the sales pipeline (its name, e.g. \"Qualified\"), when the conversation shows they reached it.",
      parameters: { type: 'object', properties: { stage: { type: 'string' } }, required: ['stage'] },
    },
  },
];

/** Rejects as soon as `signal` aborts, whatever `promise` is doing. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

const sleep = (ms: number, signal: AbortSignal) => untilAborted(new Promise<void>((r) => setTimeout(r, ms).unref?.()), signal);

/** The overall deadline of a call, which a slowed server extends to the retry budget. */
class Deadline {
  readonly #controller = new AbortController();
  #timer: NodeJS.Timeout;
  #at: number;
  constructor(ms: number) {
    this.#at = Date.now() + ms;
    this.#timer = setTimeout(() => this.#controller.abort(new Error('deadline')), ms);
  }
  get signal(): AbortSignal {
    return this.#controller.signal;
  }
  get passed(): boolean {
    return this.#controller.signal.aborted;
  }
  extendTo(at: number): void {
    if (at <= this.#at || this.passed) return;
    this.#at = at;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#controller.abort(new Error('deadline')), at - Date.now());
  }
  clear(): void {
    clearTimeout(this.#timer);
  }
}

/** The wait a model server asks for: `retry-after-ms` (OpenAI's), else `Retry-After`. */
function retryAfterOf(headers: Headers | undefined): number | null {
  const ms = Number.parseFloat(headers?.get('retry-after-ms') ?? '');
  if (Number.isFinite(ms) && ms >= 0) return Math.min(ms, MAX_RETRY_AFTER_MS);
  return retryAfterMs(headers?.get('retry-after') ?? undefined);
}

const backoff = (n: number, b: { first: number; max: number }) => Math.min(b.max, b.first * 2 ** n) * (1 - Math.random() * 0.25);

/** A failed attempt as an OutboundError: the `openai` package's errors judged like every other outbound call's. */
function attemptFailure(err: unknown): OutboundError {
  if (err instanceof OpenAI.APIError && typeof err.status === 'number') {
    // Waiting brings no quota back: a refusal, not a pace.
    if (err.status === 429 && err.code === 'insufficient_quota') return new OutboundError('REFUSED', 'HTTP 429: the model account has no quota left', { status: 429, cause: err });
    return new OutboundError('HTTP_STATUS', `HTTP ${err.status}`, { status: err.status, retryAfterMs: retryAfterOf(err.headers), cause: err });
  }
  return outboundErrorIn(err) ?? new OutboundError(err instanceof OpenAI.APIConnectionTimeoutError ? 'TIMEOUT' : 'NETWORK', 'the model server could not be reached', { cause: err });
}

/** What a failed attempt means for the call. */
type Verdict = { kind: 'slow_down'; status: number; waitMs: number | undefined } | { kind: 'retry'; waitMs: number | undefined } | { kind: 'fail' };

/** A server asking us to slow down (429, or 503 with Retry-After) sets a pace; other failures that are not permanent are retried. */
function verdictOf(failure: OutboundError): Verdict {
  if (failure.permanent) return { kind: 'fail' };
  const waitMs = failure.retryAfterMs ?? undefined;
  if (failure.status === 429 || (failure.status === 503 && waitMs !== undefined)) return { kind: 'slow_down', status: failure.status, waitMs };
  return { kind: 'retry', waitMs };
}

/** One model answer (retries, pacing and all) as one span of the conversation's trace. */
export function callChatModel(call: ModelCall): Promise<ModelResult> {
  if (!tracingEnabled()) return timedAsk(call);
  const attributes = { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': call.model, 'server.address': hostOf(call.baseUrl) };
  return inSpan('model call', { kind: SpanKind.CLIENT, attributes }, async (span) => {
    const result = await timedAsk(call);
    span?.setAttributes({ 'gen_ai.response.model': result.model, 'gen_ai.usage.input_tokens': result.inputTokens, 'gen_ai.usage.output_tokens': result.outputTokens, 'mas.answer_kind': result.kind });
    return result;
  });
}

async function timedAsk(call: ModelCall): Promise<ModelResult> {
  const settled = call.onSettled;
  if (!settled) return askModel(call);
  const start = performance.now();
  const took = () => (performance.now() - start) / 1000;
  try {
    const result = await askModel(call);
    settled(took(), result.kind);
    return result;
  } catch (err) {
    settled(took(), err instanceof ModelCallCancelled ? 'cancelled' : 'failed');
    throw err;
  }
}

const hostOf = (url: string): string => {
  try {
    return new URL(url).host;
  } catch {
    return '';
  }
};

async function askModel(call: ModelCall): Promise<ModelResult> {
  if (call.signal?.aborted) throw new ModelCallCancelled();
  const server = modelServer(call.baseUrl, call.apiKey, call.guard ?? null);
  const slot = call.slot ?? NO_SLOT;
  const started = Date.now();
  const totalMs = call.totalTimeoutMs ?? DEFAULT_MODEL_TOTAL_TIMEOUT_MS;
  const attemptMs = call.timeoutMs ?? DEFAULT_MODEL_TIMEOUT_MS;
  const maxRetries = call.maxRetries ?? DEFAULT_MODEL_MAX_RETRIES;
  const budgetEnd = started + (call.retryBudgetMs ?? DEFAULT_MODEL_RETRY_BUDGET_MS);
  const deadline = new Deadline(totalMs);
  const signal = call.signal ? AbortSignal.any([call.signal, deadline.signal]) : deadline.signal;
  const body = { model: call.model, messages: call.messages as OpenAI.Chat.Completions.ChatCompletionMessageParam[], tools: call.tools?.length ? [...TOOL_DEFINITIONS, ...call.tools] : TOOL_DEFINITIONS };
  let failures = 0;
  let slowDowns = 0;
  /** The call met a slowed-down server: its deadline is the retry budget. */
  let slowed = false;
  let completion: OpenAI.Chat.Completions.ChatCompletion;
  let handedOver = false;
  let previewing = true;
  const onDelta = call.onDelta;
  /** Streamed while the server takes it: one that refuses a streamed request is asked without. */
  let streaming = Boolean(onDelta);
  const preview = (text: string) => {
    if (!previewing || !onDelta) return;
    handedOver = true;
    onDelta(text);
  };
  const stopped = (err: unknown): Error => {
    if (call.signal?.aborted) return new ModelCallCancelled();
    if (deadline.passed) {
      const why = slowed ? `the model server was still slowed down after ${budgetEnd - started} ms` : `the model did not answer within ${totalMs} ms`;
      return new ModelCallFailed(why, null, { cause: err });
    }
    return err instanceof Error ? err : new Error(String(err));
  };
  try {
    for (;;) {
      if (!server.tryEnter()) {
        // The server is slowed down (by this call's or other calls' answers): its pace, not a failure.
        slowed = true;
        deadline.extendTo(budgetEnd + attemptMs);
        try {
          await slot.away(() => server.enter(signal));
        } catch (err) {
          throw stopped(err);
        }
      }
      try {
        const request = streaming ? streamedAttempt(server, body, signal, attemptMs, preview) : server.client.chat.completions.create(body, { signal, timeout: attemptMs, maxRetries: 0 });
        // Keep a rejection that loses the race from surfacing as unhandled.
        request.catch(() => {});
        completion = await untilAborted(request, signal);
        server.leave('ok');
        break;
      } catch (err) {
        if (handedOver) previewing = false;
        const failure = attemptFailure(err);
        const verdict = call.signal?.aborted || deadline.passed ? ({ kind: 'fail' } as const) : verdictOf(failure);
        // The server refused the request itself (400 / 422): perhaps only its streaming.
        if (streaming && !handedOver && verdict.kind === 'fail' && (failure.status === 400 || failure.status === 422)) {
          // Some OpenAI-compatible servers know neither `stream` nor `stream_options`: the whole answer, in one piece.
          server.leave('failed');
          streaming = false;
          continue;
        }
        if (verdict.kind === 'slow_down') {
          const wait = verdict.waitMs ?? backoff(slowDowns, SLOW_DOWN_BACKOFF_MS);
          slowDowns++;
          server.leave('slow_down', wait);
          if (Date.now() + wait > budgetEnd) {
            throw new ModelCallFailed(`the model server asked to slow down (HTTP ${verdict.status}) for longer than ${budgetEnd - started} ms`, verdict.status, { cause: err });
          }
          slowed = true;
          deadline.extendTo(budgetEnd + attemptMs);
          continue;
        }
        server.leave('failed');
        if (call.signal?.aborted || deadline.passed) throw stopped(err);
        if (verdict.kind === 'retry' && failures < maxRetries) {
          const wait = verdict.waitMs ?? backoff(failures, FAILURE_BACKOFF_MS);
          failures++;
          try {
            await slot.away(() => sleep(wait, signal));
          } catch (stop) {
            throw stopped(stop);
          }
          continue;
        }
        const why = failure.status !== null ? failure.message : connectionFailure(failure);
        throw new ModelCallFailed(`model call failed (${why})`, failure.status, { cause: err });
      }
    }
  } finally {
    deadline.clear();
  }

  const choice = completion.choices?.[0];
  const text = typeof choice?.message?.content === 'string' ? storable(choice.message.content).trim() : '';
  const calls = (choice?.message?.tool_calls ?? []).filter((c) => c.type === 'function');
  const called = (name: string) => calls.find((c) => c.function.name === name);
  const reportedIn = completion.usage?.prompt_tokens;
  const reportedOut = completion.usage?.completion_tokens ?? 0;
  const usageReported = isTokenCount(reportedIn) && isTokenCount(reportedOut);
  // A server that reports no (believable) usage is charged by an estimate, never silently for free.
  const inputTokens = usageReported ? reportedIn : call.messages.reduce((n, m) => n + estimateTokens(textOf(m)), 0);
  const outputTokens = usageReported ? reportedOut : text ? estimateTokens(text) : 0;
  const companyCalls = call.tools?.length ? calls.filter((c) => !BUILT_IN_TOOLS.has(c.function.name)) : [];
  const toolCalls = companyCalls.length ? { toolCalls: askedFor(calls, companyCalls, text) } : {};
  const base = { inputTokens, outputTokens, usageReported, model: completion.model || call.model, ...toolCalls };
  const stageCall = called(LEAD_STAGE_TOOL);
  const leadStage = stageCall ? toolArgument(stageCall, 'stage') : null;
  const extras = leadStage ? { leadStage } : {};
  const handoffCall = called(HANDOFF_TOOL);
  if (handoffCall) return { kind: 'handoff', text: null, handoffReason: toolArgument(handoffCall, 'reason') ?? HANDOFF_TOOL, ...extras, ...base };
  const closeCall = called(CLOSE_TOOL);
  if (closeCall) return { kind: 'close', text: text || null, closeReason: toolArgument(closeCall, 'reason') ?? CLOSE_TOOL, ...extras, ...base };
  // The model is not done: its answer comes in a later turn, after the calls.
  if (companyCalls.length) return { kind: 'reply', text, ...extras, ...base };
  // A lead moved without a word: nothing to send, not a failure to answer.
  if (!text && leadStage) return { kind: 'reply', text: '', ...extras, ...base };
  if (!text) return { kind: 'handoff', text: null, handoffReason: 'empty answer', ...base };
  return { kind: 'reply', text, ...extras, ...base };
}

/** A message's text as counted for an estimate of its tokens (a tool call's name and arguments count too). */
function textOf(m: ChatMessage): string {
  if (m.role !== 'assistant') return m.content;
  return (m.content ?? '') + (m.tool_calls ?? []).map((c) => c.function.name + c.function.arguments).join('');
}

type FunctionCall = { id: string; function: { name: string; arguments: string } };

/**
 * The company tool calls of a turn and the assistant message to append before their results:
 * it carries every call of the turn (a set_lead_stage among them too, which the caller answers),
 * each with an id (a server that gave none gets one).
 */
function askedFor(all: FunctionCall[], company: FunctionCall[], text: string): { calls: ModelToolCall[]; message: ChatMessage } {
  const ids = new Map(all.map((c, i) => [c, c.id || `call_${i}`]));
  const toolCalls: ChatToolCall[] = all.map((c) => ({ id: ids.get(c)!, type: 'function', function: { name: c.function.name, arguments: c.function.arguments ?? '' } }));
  return {
    calls: company.map((c) => ({ id: ids.get(c)!, name: c.function.name, arguments: c.function.arguments ?? '' })),
    message: { role: 'assistant', content: text || null, tool_calls: toolCalls },
  };
}

/** One streamed attempt: the completion read back from its chunks (model-stream.ts). */
async function streamedAttempt(server: ModelServer, body: OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming, signal: AbortSignal, attemptMs: number, onDelta: (text: string) => void): Promise<OpenAI.Chat.Completions.ChatCompletion> {
  const attempt = new AbortController();
  let stalled: OutboundError | null = null;
  try {
    const stream = await server.client.chat.completions.create(
      { ...body, stream: true, stream_options: { include_usage: true } },
      { signal: AbortSignal.any([signal, attempt.signal]), timeout: attemptMs, maxRetries: 0 },
    );
    const stall = (err: OutboundError) => {
      stalled = err;
      attempt.abort(err);
    };
    const completion = await readChatStream(stream, { onDelta, maxChars: MAX_MODEL_ANSWER_BYTES, idleMs: attemptMs, stall });
    // The package ends an aborted stream quietly, as if the answer were complete.
    if (stalled) throw stalled;
    signal.throwIfAborted();
    return completion;
  } catch (err) {
    throw stalled ?? err;
  }
}

function isTokenCount(n: unknown): n is number {
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 && n <= MAX_REPORTED_TOKENS;
}

/** Why no HTTP answer came back, in our words. */
function connectionFailure(failure: OutboundError): string {
  switch (failure.code) {
    case 'BLOCKED_ADDRESS':
      return 'refused: the model server address is private, loopback or link-local';
    case 'BODY_TOO_LARGE':
      return `the answer was larger than ${MAX_MODEL_ANSWER_BYTES} bytes`;
    case 'TOO_MANY_REDIRECTS':
      return 'too many redirects';
    case 'TIMEOUT':
      return 'timed out';
    default:
      return 'the model server could not be reached';
  }
}

/** A tool call's string argument (trimmed, at most 500 characters), or null. */
function toolArgument(call: { type: string }, name: string): string | null {
  try {
    const args = JSON.parse((call as unknown as { function: { arguments?: string } }).function.arguments || '{}') as Record<string, unknown>;
    const value = args[name];
    return typeof value === 'string' && value.trim() ? value.trim().slice(0, 500) : null;
  } catch {
    return null;
  }
}
