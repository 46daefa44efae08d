import type { Test } from 'tap';
import { startOpenAiStub, type ModelRequest, type OpenAiStub } from './openai-stub.js';
import type { ApiClient } from './service.js';

/**
 * "An agent that repeats the question": a stand-in model server (openai-stub.ts) whose every
 * completion is `echo: <the customer's last message>`, so a test can tell which message a reply
 * answers. The agent it makes is a real model agent (provider `openai`): the worker answers
 * through its real agent runner, trust rules included (a customer asking for a person is
 * handed off before any call; a reply promising what no tool did is withheld).
 *
 * `answer(text)` replaces the echo for the messages it returns a text for (a very long reply, say).
 * `delayMs(text)` is the model's thinking time before its answer (none by default: give it
 * only where a test is about timing). A streamed answer (webchat) comes in its pieces without
 * pauses between them. The model name is not on the price list: its calls cost nothing, so
 * a test's figures (credit, analytics) are those of a company without model spend.
 */
export interface RepeatingModel extends OpenAiStub {
  /** A model agent answering through this server (POST /api/agents); its id. */
  createAgent: (api: ApiClient, token: string) => Promise<number>;
  /** The requests that asked the model about `text` (the customer's last message). */
  askedAbout: (text: string) => ModelRequest[];
}

const REPEATING_MODEL_NAME = 'repeater-1';

export async function startRepeatingModel(t: Test, options: { delayMs?: (text: string) => number; answer?: (text: string) => string | undefined } = {}): Promise<RepeatingModel> {
  const stub = await startOpenAiStub(t);
  stub.respond((req) => {
    const text = stub.lastUserText(req);
    return { content: options.answer?.(text) ?? `echo: ${text}`, delayMs: options.delayMs?.(text) ?? 0, chunkDelayMs: 0 };
  });
  return {
    ...stub,
    createAgent: async (api, token) => {
      const res = await api('POST', '/api/agents', {
        token,
        body: { name: 'Repeater', model: { provider: 'openai', name: REPEATING_MODEL_NAME, baseUrl: stub.baseUrl, apiKey: 'sk-repeater' } },
      });
      if (res.status !== 201) throw new Error(`POST /api/agents: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body.agent.id as number;
    },
    askedAbout: (text) => stub.requests.filter((r) => stub.lastUserText(r) === text),
  };
}
