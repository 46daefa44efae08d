import type OpenAI from 'openai';
import { OutboundError } from '../outbound-errors.js';

type Chunk = OpenAI.Chat.Completions.ChatCompletionChunk;
type Completion = OpenAI.Chat.Completions.ChatCompletion;

/**
 * A streamed chat completion (`stream: true`) read back into the completion a non-streamed
 * call returns, so everything after the call (tool calls, usage, the empty-answer rule) is the
 * same code whichever way the answer came:
 * - content pieces are concatenated, and each is given to `onDelta` as it arrives;
 * - tool calls arrive in pieces keyed by `index` (the first piece carries the id and name,
 *   later ones more of the arguments): joined by index;
 * - usage comes in the last chunk (`stream_options.include_usage`), with empty `choices`.
 * Bounds: the HTTP body is capped by the model server's fetch (lib/outbound-http.ts, as for a
 * whole answer); the text kept here is capped at `maxChars` too (BODY_TOO_LARGE), and a
 * stream that sends nothing for `idleMs` is cut off (TIMEOUT) through `stall`; one that ends
 * without a `finish_reason` was cut short (NETWORK, retried like a dropped connection).
 */
export interface StreamReadOptions {
  onDelta: (text: string) => void;
  maxChars: number;
  idleMs: number;
  /** Called when the stream has been silent for `idleMs`: the caller aborts the request. */
  stall: (err: OutboundError) => void;
}

interface ToolCallParts {
  id: string;
  name: string;
  arguments: string;
}

export async function readChatStream(chunks: AsyncIterable<Chunk>, o: StreamReadOptions): Promise<Completion> {
  let content = '';
  let sawContent = false;
  let size = 0;
  const tools = new Map<number, ToolCallParts>();
  let usage: Completion['usage'];
  let model = '';
  let id = '';
  let finish: Completion['choices'][number]['finish_reason'] | null = null;
  let idle: NodeJS.Timeout | undefined;
  const watch = () => {
    clearTimeout(idle);
    idle = setTimeout(() => o.stall(new OutboundError('TIMEOUT', `the model stream was silent for ${o.idleMs} ms`)), o.idleMs);
  };
  const grow = (n: number) => {
    size += n;
    if (size > o.maxChars) throw new OutboundError('BODY_TOO_LARGE', `the streamed answer is larger than ${o.maxChars} characters`);
  };
  watch();
  try {
    for await (const chunk of chunks) {
      watch();
      id ||= chunk.id ?? '';
      model ||= chunk.model ?? '';
      if (chunk.usage) usage = chunk.usage;
      const choice = chunk.choices?.[0];
      if (!choice) continue;
      if (choice.finish_reason) finish = choice.finish_reason;
      const delta = choice.delta;
      if (typeof delta?.content === 'string' && delta.content) {
        grow(delta.content.length);
        content += delta.content;
        sawContent = true;
        o.onDelta(delta.content);
      }
      for (const part of delta?.tool_calls ?? []) {
        const call = tools.get(part.index) ?? { id: '', name: '', arguments: '' };
        tools.set(part.index, call);
        if (part.id) call.id = part.id;
        if (part.function?.name) {
          grow(part.function.name.length);
          call.name += part.function.name;
        }
        if (part.function?.arguments) {
          grow(part.function.arguments.length);
          call.arguments += part.function.arguments;
        }
      }
    }
  } finally {
    clearTimeout(idle);
  }
  // A stream cut short without an error (the connection closed cleanly mid-answer) is no answer.
  if (finish === null) throw new OutboundError('NETWORK', 'the model stream ended before the answer did');
  const toolCalls = [...tools.entries()]
    .sort(([a], [b]) => a - b)
    .map(([, c]) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } }));
  return {
    id,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: sawContent ? content : null, refusal: null, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) },
        finish_reason: finish,
        logprobs: null,
      },
    ],
    ...(usage ? { usage } : {}),
  };
}
