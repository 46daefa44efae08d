import OpenAI from 'openai';
import { estimateTokens, type ChatMessage } from './prompt.js';

/**
 * One call to an OpenAI-compatible chat-completions server (OpenAI, Ollama, vLLM,
 * llama.cpp ...), through the official `openai` package:
 * - a deadline per attempt (`timeoutMs`) and bounded retries (`maxRetries`; the package
 *   retries 408/409/429/5xx and connection errors with backoff, honouring Retry-After),
 * - an overall deadline for the whole call, retries included (`totalTimeoutMs`),
 * - cancellation through `signal` (a human took the conversation over): the HTTP request is
 *   aborted and the call rejects at once with ModelCallCancelled, even mid-backoff.
 * Any other failure rejects with ModelCallFailed (after the retries).
 */
export const DEFAULT_MODEL_TIMEOUT_MS = 20_000;
export const DEFAULT_MODEL_MAX_RETRIES = 2;
export const DEFAULT_MODEL_TOTAL_TIMEOUT_MS = 45_000;

/** The tool a model calls to hand the conversation to a human (the handoff convention). */
export const HANDOFF_TOOL = 'handoff_to_human';

export interface ModelCall {
  baseUrl: string;
  apiKey: string | null;
  model: string;
  messages: ChatMessage[];
  timeoutMs?: number;
  maxRetries?: number;
  totalTimeoutMs?: number;
  signal?: AbortSignal;
}

export interface ModelResult {
  kind: 'reply' | 'handoff';
  text: string | null;
  /** Why the model handed off: the tool's `reason` argument, or 'empty answer'. */
  handoffReason?: string;
  inputTokens: number;
  outputTokens: number;
  /** False when the server reported no usage and the token counts are estimates. */
  usageReported: boolean;
  /** The model the server says answered (falls back to the requested one). */
  model: string;
}

/** The conversation was taken over: the call was aborted on purpose. */
export class ModelCallCancelled extends Error {
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

const HANDOFF_TOOL_DEFINITION = {
  type: 'function' as const,
  function: {
    name: HANDOFF_TOOL,
    description: 'Hand the conversation to a human colleague: the customer asked for a person, or the answer is not in the knowledge provided.',
    parameters: { type: 'object', properties: { reason: { type: 'string' } } },
  },
};

/** Rejects as soon as `signal` aborts, whatever `promise` is doing (the package sleeps between retries without watching it). */
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

export async function callChatModel(call: ModelCall): Promise<ModelResult> {
  if (call.signal?.aborted) throw new ModelCallCancelled();
  const deadline = AbortSignal.timeout(call.totalTimeoutMs ?? DEFAULT_MODEL_TOTAL_TIMEOUT_MS);
  const signal = call.signal ? AbortSignal.any([call.signal, deadline]) : deadline;
  const client = new OpenAI({
    baseURL: call.baseUrl,
    // Self-hosted servers often need no key; the package insists on a string.
    apiKey: call.apiKey ?? 'not-needed',
    // Never pick these up from the environment: the server is the agent's, not ours.
    organization: null,
    project: null,
    timeout: call.timeoutMs ?? DEFAULT_MODEL_TIMEOUT_MS,
    maxRetries: call.maxRetries ?? DEFAULT_MODEL_MAX_RETRIES,
    logLevel: 'off',
  });
  let completion: OpenAI.Chat.Completions.ChatCompletion;
  try {
    const request = client.chat.completions.create({ model: call.model, messages: call.messages, tools: [HANDOFF_TOOL_DEFINITION] }, { signal });
    // Keep a rejection that loses the race from surfacing as unhandled.
    request.catch(() => {});
    completion = await untilAborted(request, signal);
  } catch (err) {
    if (call.signal?.aborted) throw new ModelCallCancelled();
    if (deadline.aborted) throw new ModelCallFailed(`the model did not answer within ${call.totalTimeoutMs ?? DEFAULT_MODEL_TOTAL_TIMEOUT_MS} ms`, null, { cause: err });
    const status = err instanceof OpenAI.APIError && typeof err.status === 'number' ? err.status : null;
    throw new ModelCallFailed(`model call failed${status !== null ? ` (HTTP ${status})` : ''}: ${(err as Error).message}`, status, { cause: err });
  }

  const choice = completion.choices?.[0];
  const text = typeof choice?.message?.content === 'string' ? choice.message.content.trim() : '';
  const toolCall = choice?.message?.tool_calls?.find((c) => c.type === 'function' && c.function.name === HANDOFF_TOOL);
  const usageReported = typeof completion.usage?.prompt_tokens === 'number';
  // A server that reports no usage is charged by an estimate, never silently for free.
  const inputTokens = usageReported ? completion.usage!.prompt_tokens : call.messages.reduce((n, m) => n + estimateTokens(m.content), 0);
  const outputTokens = usageReported ? (completion.usage!.completion_tokens ?? 0) : text ? estimateTokens(text) : 0;
  const base = { inputTokens, outputTokens, usageReported, model: completion.model || call.model };
  if (toolCall) return { kind: 'handoff', text: null, handoffReason: toolReason(toolCall), ...base };
  if (!text) return { kind: 'handoff', text: null, handoffReason: 'empty answer', ...base };
  return { kind: 'reply', text, ...base };
}

function toolReason(call: { type: string }): string {
  try {
    const args = JSON.parse((call as unknown as { function: { arguments?: string } }).function.arguments || '{}') as { reason?: unknown };
    return typeof args.reason === 'string' && args.reason.trim() ? args.reason.trim().slice(0, 500) : HANDOFF_TOOL;
  } catch {
    return HANDOFF_TOOL;
  }
}
