import type { Orm, SqlPool } from '../../lib/db.js';
import { bestKnowledgeMatches, searchKnowledge, type BestKnowledgeMatch, type SearchKnowledgeOptions } from '../../lib/knowledge.js';
import { Batcher } from '../batcher.js';
import type { Logger } from '../../lib/logger.js';
import type { SecretBox } from '../../lib/secrets.js';
import { tenantScope } from '../../lib/tenancy.js';
import type { AgentOutput, HandoffReason } from '../../schema/conversation.js';
import { AgentSchema, type ModelPricing } from '../../schema/entities.js';
import { isCompanyInCredit, recentMessages } from '../store.js';
import { composeAnswer, DEFAULT_ANSWER_LENGTH, wantsHuman } from './builtin.js';
import { callChatModel, ModelCallCancelled, type ModelCall } from './openai-model.js';
import { costUsd, pricingFor } from './pricing.js';
import { buildPrompt, DEFAULT_HISTORY_TOKEN_BUDGET } from './prompt.js';
import type { AgentInputForRunner, AgentRunner } from './types.js';

/**
 * The agent runner of the worker: picks the provider per agent.
 *
 * - `builtin`: answers from the knowledge base (actors/agents/builtin.ts), no model, no
 *   cost. One cached config lookup per answer; the knowledge lookups of answers asked at
 *   the same time share one statement (lib/knowledge.ts bestKnowledgeMatches).
 * - `openai`: any OpenAI-compatible chat-completions server (actors/agents/openai-model.ts).
 *   Before the call: a customer asking for a person is handed off (no call, no cost); a
 *   company whose balance is ≤ 0 is handed off with reason `no_credit` (no call). The
 *   prompt (actors/agents/prompt.ts) carries the system prompt, the top knowledge passages
 *   and the recent history. A call that fails after its retries or times out hands off with
 *   `model_failed` and no usage (costs nothing). A successful call returns its `usage`
 *   (priced by pricing.ts, the agent's `model.pricing` winning); the host debits it when,
 *   and only when, it commits the answer. A call cancelled through `input.signal` throws.
 *
 * Every handoff carries the agent's `handoffMessage`, which the host sends to the customer.
 * Agent configs are cached for `cacheTtlMs` (default 5 s): an edit takes effect within it.
 */
export interface AgentRunnerOptions {
  cacheTtlMs?: number;
  cacheMaxEntries?: number;
  /** Built-in answers' length in characters (default 600). */
  maxAnswerLength?: number;
  /** Per-attempt deadline, retries and overall deadline of a model call. */
  model?: Pick<ModelCall, 'timeoutMs' | 'maxRetries' | 'totalTimeoutMs'>;
  /** Knowledge passages put in the prompt (default 3). */
  knowledgePassages?: number;
  /** Token budget of the conversation history in the prompt (default 2000, estimated). */
  historyTokenBudget?: number;
  /** Stored messages read for the history, at most (default 50). */
  historyMaxMessages?: number;
  now?: () => number;
}

export interface AgentRunnerDeps {
  orm: Orm;
  sql: SqlPool;
  secrets: SecretBox;
  logger?: Logger;
}

interface AgentConfig {
  provider: 'builtin' | 'openai';
  knowledgeBaseId: number | null;
  systemPrompt: string;
  modelName: string | null;
  baseUrl: string | null;
  apiKeySealed: string | null;
  pricing: ModelPricing | null;
  /** undefined: the host's default notice. */
  handoffMessage: string | undefined;
}

export function createAgentRunner(deps: AgentRunnerDeps, options: AgentRunnerOptions = {}): AgentRunner {
  const { orm, sql, secrets, logger } = deps;
  const ttl = options.cacheTtlMs ?? 5_000;
  const maxEntries = options.cacheMaxEntries ?? 10_000;
  const maxLength = options.maxAnswerLength ?? DEFAULT_ANSWER_LENGTH;
  const passages = options.knowledgePassages ?? 3;
  const historyBudget = options.historyTokenBudget ?? DEFAULT_HISTORY_TOKEN_BUDGET;
  const historyMax = options.historyMaxMessages ?? 50;
  const now = options.now ?? Date.now;
  const cache = new Map<string, { config: AgentConfig | null; expires: number }>();
  const loading = new Map<string, Promise<AgentConfig | null>>();
  // Only used for raw queries (its identity map stays empty), so one fork serves every answer.
  const rawEm = orm.em.fork();

  async function configOf(companyId: number, agentId: number): Promise<AgentConfig | null> {
    const key = `${companyId}:${agentId}`;
    const hit = cache.get(key);
    if (hit && hit.expires > now()) return hit.config;
    let pending = loading.get(key);
    if (!pending) {
      pending = (async () => {
        const { em } = tenantScope(orm, companyId);
        const a = await em.findOne(AgentSchema, { id: agentId }, { populate: ['modelApiKeySealed'] });
        const config: AgentConfig | null = a && {
          provider: a.modelProvider === 'openai' ? 'openai' : 'builtin',
          knowledgeBaseId: a.knowledgeBaseId,
          systemPrompt: a.systemPrompt,
          modelName: a.modelName,
          baseUrl: a.modelBaseUrl,
          apiKeySealed: a.modelApiKeySealed,
          pricing: a.modelPricing,
          handoffMessage: a.handoffMessage ?? undefined,
        };
        cache.delete(key);
        if (cache.size >= maxEntries) cache.delete(cache.keys().next().value!);
        cache.set(key, { config, expires: now() + ttl });
        return config;
      })().finally(() => loading.delete(key));
      loading.set(key, pending);
    }
    return pending;
  }

  const handoff = (config: AgentConfig | null, reason: HandoffReason, extra: Partial<Extract<AgentOutput, { kind: 'handoff' }>> = {}): AgentOutput => ({
    kind: 'handoff',
    reason,
    ...(config?.handoffMessage ? { text: config.handoffMessage } : {}),
    ...extra,
  });

  // Questions asked while a lookup runs go together in the next one (one statement for many).
  const lookups = new Batcher<Omit<SearchKnowledgeOptions, 'limit'>, BestKnowledgeMatch | null>((questions) => bestKnowledgeMatches(sql, questions));

  async function builtin(input: AgentInputForRunner, config: AgentConfig): Promise<AgentOutput> {
    if (config.knowledgeBaseId === null) return handoff(config, 'no_answer');
    const match = await lookups.submit({ companyId: input.companyId, knowledgeBaseId: config.knowledgeBaseId, query: input.text });
    const text = match && composeAnswer(input.text, match, maxLength);
    return text ? { kind: 'reply', text } : handoff(config, 'no_answer');
  }

  async function model(input: AgentInputForRunner, config: AgentConfig): Promise<AgentOutput> {
    const log = logger?.child({ conversationId: input.conversationId, messageId: input.messageId, agentId: input.agentId });
    if (!config.modelName || !config.baseUrl) {
      log?.warn('agent: provider openai without model name or base URL; handing off');
      return handoff(config, 'model_failed', { detail: 'model not configured' });
    }
    let apiKey: string | null = null;
    try {
      apiKey = config.apiKeySealed ? secrets.open(config.apiKeySealed) : null;
    } catch (err) {
      log?.error({ err }, 'agent: the model API key cannot be opened (SECRETS_KEY rotated away?); handing off');
      return handoff(config, 'model_failed', { detail: 'model API key unreadable' });
    }
    if (!(await isCompanyInCredit(sql, input.companyId))) return handoff(config, 'no_credit');

    const [found, history] = await Promise.all([
      config.knowledgeBaseId !== null && passages > 0
        ? searchKnowledge(rawEm, { companyId: input.companyId, knowledgeBaseId: config.knowledgeBaseId, query: input.text, limit: passages })
        : Promise.resolve([]),
      recentMessages(sql, input.conversationId, input.messageId, historyMax),
    ]);
    const messages = buildPrompt({
      systemPrompt: config.systemPrompt,
      passages: found.map((p) => ({ title: p.title, snippet: p.snippet })),
      history: history.map((h) => ({ role: h.role as 'customer' | 'agent' | 'operator' | 'system', text: h.text })),
      message: input.text,
      historyTokenBudget: historyBudget,
    });

    let result;
    try {
      result = await callChatModel({ baseUrl: config.baseUrl, apiKey, model: config.modelName, messages, signal: input.signal, ...options.model });
    } catch (err) {
      if (err instanceof ModelCallCancelled) throw err;
      log?.warn({ err: (err as Error).message }, 'agent: the model failed after its retries; handing off (no charge)');
      return handoff(config, 'model_failed', { detail: (err as Error).message.slice(0, 500) });
    }
    // Priced and recorded under the configured model name (the agent's choice, what
    // `model.pricing` overrides); the server's own name may carry a snapshot date.
    const usage = {
      model: config.modelName,
      inputTokens: result.inputTokens,
      outputTokens: result.outputTokens,
      costUsd: costUsd(result.inputTokens, result.outputTokens, pricingFor(config.modelName, config.pricing)),
    };
    if (!result.usageReported) log?.warn({ usage }, 'agent: the model server reported no token usage; charging an estimate');
    if (result.kind === 'reply' && result.text) return { kind: 'reply', text: result.text, usage };
    // The model asked for a human: its tokens were spent, so they are charged.
    return handoff(config, 'no_answer', { usage, ...(result.handoffReason ? { detail: result.handoffReason } : {}) });
  }

  return {
    answersLocally(companyId, agentId): boolean {
      if (agentId === null) return true;
      const hit = cache.get(`${companyId}:${agentId}`);
      return hit !== undefined && hit.expires > now() && (hit.config === null || hit.config.provider === 'builtin');
    },
    async answer(input): Promise<AgentOutput> {
      if (input.agentId === null) return wantsHuman(input.text) ? handoff(null, 'asked_for_human') : handoff(null, 'no_answer');
      const config = await configOf(input.companyId, input.agentId);
      if (!config) return handoff(null, wantsHuman(input.text) ? 'asked_for_human' : 'no_answer');
      // The customer asks for a person: no model call, no cost.
      if (wantsHuman(input.text)) return handoff(config, 'asked_for_human');
      if (input.signal?.aborted) throw new ModelCallCancelled();
      return config.provider === 'openai' ? model(input, config) : builtin(input, config);
    },
  };
}
