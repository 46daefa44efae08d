import OpenAI from 'openai';
import type { ChatMessage } from './prompt.js';

/**
 * One call to an OpenAI-compatible chat-completions server (OpenAI, Ollama, vLLM,
 * llama.cpp ...), through the official `openai` package: a deadline per attempt, bounded
 * retries (the package retries 408/409/429/5xx and connection errors with backoff), and
 * cancellation through an AbortSignal when a human takes the conversation over.
 */
export const DEFAULT_MODEL_TIMEOUT_MS = 20_000;
export const DEFAULT_MODEL_MAX_RETRIES = 2;

/** The tool a model calls to hand the conversation to a human (the handoff convention). */
export const HANDOFF_TOOL = 'handoff_to_human';

export interface ModelCall {
  baseUrl: string;
  apiKey: string | null;
  model: string;
  messages: ChatMessage[];
  timeoutMs?: number;
  maxRetries?: number;
  signal?: AbortSignal;
}

export interface ModelResult {
  kind: 'reply' | 'handoff';
  text: string | null;
  inputTokens: number;
  outputTokens: number;
  /** The model the server says answered (falls back to the requested one). */
  model: string;
}

export async function callChatModel(call: ModelCall): Promise<ModelResult> {
  const client = new OpenAI({
    baseURL: call.baseUrl,
    // Self-hosted servers often need no key; the package insists on a string.
    apiKey: call.apiKey ?? 'not-needed',
    timeout: call.timeoutMs ?? DEFAULT_MODEL_TIMEOUT_MS,
    maxRetries: call.maxRetries ?? DEFAULT_MODEL_MAX_RETRIES,
  });
  const completion = await client.chat.completions.create(
    {
      model: call.model,
      messages: call.messages,
      tools: [
        {
          type: 'function',
          function: {
            name: HANDOFF_TOOL,
            description: 'Hand the conversation to a human colleague: the customer asked for a person, or the answer is not in the knowledge provided.',
            parameters: { type: 'object', properties: { reason: { type: 'string' } } },
          },
        },
      ],
    },
    { signal: call.signal },
  );
  const choice = completion.choices[0];
  const usage = { inputTokens: completion.usage?.prompt_tokens ?? 0, outputTokens: completion.usage?.completion_tokens ?? 0, model: completion.model || call.model };
  const askedForHuman = choice?.message.tool_calls?.some((c) => c.type === 'function' && c.function.name === HANDOFF_TOOL) ?? false;
  const text = choice?.message.content?.trim() || null;
  if (askedForHuman || !text) return { kind: 'handoff', text: null, ...usage };
  return { kind: 'reply', text, ...usage };
}
