import type { Config } from '../../lib/config.js';
import type { Orm, SqlPool } from '../../lib/db.js';
import { expiringLookups } from '../../lib/expiring-lookups.js';
import { answerDecision } from '../../lib/agents/decision.js';
import { agentProfile, builtinAnswer, handoff, modelAnswer, type AgentProfile, type AnswerDeps } from '../../lib/agents/answer.js';
import { DEFAULT_ANSWER_LENGTH, wantsHuman } from '../../lib/agents/builtin.js';
import { ModelCallCancelled, type ModelCall } from '../../lib/agents/openai-model.js';
import { directAdmission, type CreditAdmission } from '../../lib/credit.js';
import type { McpConnections } from '../../lib/agents/tools/mcp-client.js';
import { loadAgentTools, type AgentTools } from '../../lib/agents/tools/toolbox.js';
import { DEFAULT_HISTORY_TOKEN_BUDGET } from '../../lib/agents/prompt.js';
import { loadBaseInfo, type KnowledgeBaseInfo } from '../../lib/knowledge/retrieve.js';
import { bestKnowledgeMatches, type AnswerCandidates, type Question } from '../../lib/knowledge/search.js';
import { answerEvidence, type AnswerEvidence } from '../../lib/knowledge/answer-evidence.js';
import { VectorIndex } from '../../lib/knowledge/vectors.js';
import type { Logger } from '../../lib/logger.js';
import type { SecretBox } from '../../lib/secrets.js';
import { tenantScope } from '../../lib/tenancy.js';
import type { AgentOutput } from '../../schema/conversation.js';
import { AgentSchema } from '../../schema/entities.js';
import { Batcher } from '../../lib/batcher.js';
import { query } from '../../lib/db.js';
import { recentMessages } from '../tables/messages.js';
import { NO_BEHAVIOUR, type AgentInputForRunner, type AgentRunner, type AnswerPath, type AnswerRoute } from './types.js';

/**
 * The agent runner of the worker: picks the provider per agent; the answer itself is
 * lib/agents/answer.ts (shared with the gateway's evaluations).
 *
 * - `builtin`: answers from the knowledge base (lib/agents/builtin.ts), no model, no cost.
 *   One cached config lookup per answer; the knowledge lookups of answers asked at the same
 *   time share one statement (lib/knowledge/search.ts bestKnowledgeMatches), and the best
 *   chunk of a question already asked is remembered per content version. A base with an
 *   embedding model needs a call to its embedding server: such an agent is asked outside the
 *   message transaction (`answerPath` is `call`), like a model agent.
 * - `openai`: any OpenAI-compatible chat-completions server (lib/agents/openai-model.ts).
 *   Before the call: a customer asking for a person is handed off (no call, no cost); a
 *   company whose balance is ≤ 0 is handed off with reason `no_credit` (no call); a
 *   company past its own or the agent's daily spend cap is handed off with `spend_cap`. The
 *   prompt (lib/agents/prompt.ts) carries the system prompt, the relevant knowledge
 *   passages and the recent history. The call's estimated cost is reserved first (waiting
 *   for the company's other calls in flight if they hold the credit it needs; `no_credit`
 *   when nothing does). A call that fails after its retries or times out hands off with
 *   `model_failed` and no usage (costs nothing). A successful call returns its `usage`
 *   (priced by pricing.ts, the agent's `model.pricing` winning) and keeps its reservation;
 *   the host settles both when, and only when, it commits the answer (and releases the
 *   reservation of an answer it discards). A call cancelled through `input.signal` throws.
 *   The company's own tools (its actions and the tools of its connected MCP servers) are
 *   loaded with the config, by one more statement (a built-in agent costs none), and offered
 *   to the model (lib/agents/answer.ts, lib/agents/tools/toolbox.ts); MCP tools are called
 *   through the worker's `mcp` connections.
 *
 * Nothing relevant in the knowledge base: the agent's `onNoAnswer` (answer.ts). Every
 * handoff carries the agent's `handoffMessage`, which the host sends to the customer (once:
 * after a handoff, until a person acts, the agent is asked with `handedOver` and the options
 * of its last `clarify` reply, and only its replies go out). Agent
 * configs and integrations' agents are cached until a change notice drops them
 * (actors/agents/change-notices.ts: the gateway announces every change before it answers,
 * so the next customer message sees it), or for `cacheTtlMs` at most. Every
 * answer of a configured agent carries the version of the config that gave it
 * (`agentVersion`, lib/agents/versions.ts), which its message records.
 */
export interface AgentRunnerOptions {
  /** How long a cached config lives without a notice (default DEFAULT_CONFIG_TTL_MS). */
  cacheTtlMs?: number;
  cacheMaxEntries?: number;
  /** Built-in answers' length in characters (default 600). */
  maxAnswerLength?: number;
  /** Per-attempt deadline, retries, overall deadline and slow-down budget of a model call (the budget defaults to the config's MODEL_RETRY_BUDGET_MS). */
  model?: Pick<ModelCall, 'timeoutMs' | 'maxRetries' | 'totalTimeoutMs' | 'retryBudgetMs'>;
  /** Knowledge passages put in a model agent's prompt, whatever its `knowledgePassages` says (tests). */
  knowledgePassages?: number;
  /** Token budget of the conversation history in the prompt (default 2000, estimated). */
  historyTokenBudget?: number;
  /** Stored messages read for the history, at most (default 50). */
  historyMaxMessages?: number;
  /** Questions whose answer evidence is kept for built-in answers (default DEFAULT_MATCH_CACHE_ENTRIES; 0: none). */
  matchCacheEntries?: number;
  now?: () => number;
}

/**
 * A safety net only: every change made through the API is announced (change-notices.ts) and
 * drops the entry at once; this bounds what no notice covers (a row changed by hand in SQL).
 * Was 5 s while it was the only way an edit reached the workers.
 */
export const DEFAULT_CONFIG_TTL_MS = 60_000;

/** What a change notice drops from the runner's caches (actors/agents/change-notices.ts). */
export interface AgentCaches {
  /** The company's agent configs and its integrations' agents. */
  forgetCompany: (companyId: number) => void;
  /** The integration's agent. */
  forgetIntegration: (integrationId: number) => void;
  /** Everything (a notice may have been missed). */
  forgetAll: () => void;
}

/** Up to six passages (their texts) and their evidence per entry: a few kB each. */
export const DEFAULT_MATCH_CACHE_ENTRIES = 5_000;

export interface AgentRunnerDeps {
  orm: Orm;
  sql: SqlPool;
  secrets: SecretBox;
  /** Which addresses a tenant's model and embedding servers may have (lib/address-guard.ts). */
  config: Pick<Config, 'allowPrivateUrls' | 'helpdeskGlobalUrl' | 'helpdeskEuropeUrl'> & Partial<Pick<Config, 'model'>>;
  logger?: Logger;
  /** How model calls get their credit (the worker's actors/credit-gate.ts, which the host tells when reservations settle); default: reserved at once, refused when short. */
  credit?: CreditAdmission;
  /** Chunk vectors held in memory (one per process). */
  vectors?: VectorIndex;
  /** Told of every model call's duration and outcome (the worker's metrics). */
  observeModelCall?: ModelCall['onSettled'];
  /** The worker's MCP clients (none: MCP tools are answered that they cannot be called). */
  mcp?: McpConnections;
  /**
   * Where the tool-call ledger is written (default `sql`): the worker's pool whose commits do
   * not wait for the disk. A row is lost only if PostgreSQL itself crashes within a fraction
   * of a second of its commit, and then the answer is lost with it; a crash of ours loses none.
   */
  ledgerSql?: SqlPool;
}

interface AgentConfig {
  profile: AgentProfile;
  base: KnowledgeBaseInfo | null;
  /** A model agent's own tools (null: a built-in agent). */
  tools: AgentTools | null;
}

/** How an agent answers (actors/agents/types.ts AnswerPath): from its provider, never from what happens to be cached. */
function pathOf(config: AgentConfig | null): AnswerPath {
  if (config === null) return { kind: 'local' };
  if (config.profile.provider === 'openai') return { kind: 'call', maxConcurrency: config.profile.maxConcurrency };
  return config.base?.embedding ? { kind: 'call', maxConcurrency: null } : { kind: 'local' };
}

const askedForHuman = (config: AgentConfig, question: string) =>
  answerDecision('asked_for_human', { knowledgeBaseId: config.base?.id ?? null, question, threshold: config.profile.relevanceThreshold });

export function createAgentRunner(deps: AgentRunnerDeps, options: AgentRunnerOptions = {}): AgentRunner & AgentCaches {
  const { orm, sql, secrets, logger } = deps;
  const ttl = options.cacheTtlMs ?? DEFAULT_CONFIG_TTL_MS;
  const maxEntries = options.cacheMaxEntries ?? 10_000;
  const maxLength = options.maxAnswerLength ?? DEFAULT_ANSWER_LENGTH;
  const historyBudget = options.historyTokenBudget ?? DEFAULT_HISTORY_TOKEN_BUDGET;
  const historyMax = options.historyMaxMessages ?? 50;
  const matchCacheEntries = options.matchCacheEntries ?? DEFAULT_MATCH_CACHE_ENTRIES;
  const now = options.now ?? Date.now;
  const answerDeps: AnswerDeps = { sql, vectors: deps.vectors ?? new VectorIndex(), secrets, urls: deps.config, logger };
  const modelDeps = { ...answerDeps, credit: deps.credit ?? directAdmission(sql) };
  const modelOptions = { ...(deps.config.model ? { retryBudgetMs: deps.config.model.retryBudgetMs } : {}), ...options.model, onSettled: deps.observeModelCall };
  const configs = expiringLookups<string, AgentConfig | null>(ttl, maxEntries, now);
  function configOf(companyId: number, agentId: number): Promise<AgentConfig | null> {
    return configs(`${companyId}:${agentId}`, async () => {
      const { em } = tenantScope(orm, companyId);
      const a = await em.findOne(AgentSchema, { id: agentId }, { populate: ['modelApiKeySealed'] });
      if (!a) return null;
      const profile = agentProfile(a);
      const [base, tools] = await Promise.all([
        a.knowledgeBaseId === null ? null : loadBaseInfo(sql, secrets, deps.config, companyId, a.knowledgeBaseId),
        profile.provider === 'openai' ? loadAgentTools(sql, companyId, agentId) : null,
      ]);
      return { profile, base, tools };
    });
  }

  // An integration's agent, kept by `${companyId}:${integrationId}` so a company's notice drops it too (a deleted agent).
  const agents = expiringLookups<string, number | null>(ttl, maxEntries, now);
  function agentOf(companyId: number, integrationId: number): Promise<number | null> {
    return agents(`${companyId}:${integrationId}`, async () => {
      const rows = await query<{ agent_id: number | null }>(sql, 'integration_agent', 'select agent_id from integrations where id = $1', [integrationId]);
      return rows[0]?.agent_id ?? null;
    });
  }

  // Questions asked while a lookup runs go together in the next one (one statement for many).
  const lookups = new Batcher<Question, AnswerCandidates | null>((questions) => bestKnowledgeMatches(sql, questions));
  // Customers ask the same things ("when are you open?"): the evidence of a question, as written
  // (its capitals name places and people: lib/knowledge/confidence.ts), is kept per base and
  // content version, so an edit of the base is seen as soon as the agent's config is reloaded.
  const evidences = new Map<string, AnswerEvidence>();
  const evidenceOf = async (q: Question, version: string, base: KnowledgeBaseInfo): Promise<AnswerEvidence> => {
    const key = `${q.knowledgeBaseId}:${version}:${q.query.replace(/\s+/g, ' ').trim()}`;
    const hit = evidences.get(key);
    if (hit) {
      evidences.delete(key);
      evidences.set(key, hit);
      return hit;
    }
    const evidence = await answerEvidence(answerDeps, base, q.query, await lookups.submit(q));
    if (matchCacheEntries > 0) {
      if (evidences.size >= matchCacheEntries) evidences.delete(evidences.keys().next().value!);
      evidences.set(key, evidence);
    }
    return evidence;
  };

  async function model(input: AgentInputForRunner, config: AgentConfig): Promise<AgentOutput> {
    const history = input.firstMessage ? [] : await recentMessages(sql, input.conversationId, input.messageId, historyMax);
    const { output } = await modelAnswer(modelDeps, config.profile, config.base, input.text, {
      history: history.map((h) => ({ role: h.role as 'customer' | 'agent' | 'operator' | 'system', text: h.text })),
      messageId: input.messageId,
      signal: input.signal,
      slot: input.slot,
      onDelta: input.onDelta,
      ...(config.tools ? { tools: { tools: config.tools, mcp: deps.mcp ?? null, conversationId: input.conversationId, ledger: deps.ledgerSql ?? sql } } : {}),
      ...(options.knowledgePassages !== undefined ? { passages: options.knowledgePassages } : {}),
      historyTokenBudget: historyBudget,
      model: modelOptions,
      ...(input.handedOver ? { handedOver: true } : {}),
    });
    // The reservation is the answered message's: the host settles or releases it by that id.
    return output;
  }

  async function answerWith(input: AgentInputForRunner, config: AgentConfig): Promise<AgentOutput> {
    // The customer asks for a person: no model call, no cost.
    if (wantsHuman(input.text)) return handoff(config.profile, 'asked_for_human', { decision: askedForHuman(config, input.text) });
    if (input.signal?.aborted) throw new ModelCallCancelled();
    if (config.profile.provider === 'openai') return model(input, config);
    const version = config.base?.contentVersion ?? '0';
    return builtinAnswer(answerDeps, config.profile, config.base, input.text, {
      evidence: (q) => evidenceOf(q, version, config.base!),
      maxLength,
      signal: input.signal,
      // The options it offered last (the customer may pick one) and whether it handed over (then only what it can answer goes out).
      ...(input.options?.length ? { choices: input.options } : {}),
      ...(input.handedOver ? { handedOver: true } : {}),
    });
  }

  const ofCompany = (companyId: number) => {
    const prefix = `${companyId}:`;
    return (key: string) => key.startsWith(prefix);
  };
  return {
    forgetCompany: (companyId) => {
      configs.forget(ofCompany(companyId));
      agents.forget(ofCompany(companyId));
    },
    forgetIntegration: (integrationId) => {
      const suffix = `:${integrationId}`;
      agents.forget((key) => key.endsWith(suffix));
    },
    forgetAll: () => {
      configs.forget();
      agents.forget();
    },
    async routeOf(companyId, integrationId): Promise<AnswerRoute> {
      const agentId = await agentOf(companyId, integrationId);
      const config = agentId === null ? null : await configOf(companyId, agentId);
      return { agentId, path: pathOf(config), behaviour: config ? { debounceMs: config.profile.debounceMs, hours: config.profile.hours, version: config.profile.version } : NO_BEHAVIOUR };
    },
    async answer(input): Promise<AgentOutput> {
      if (input.agentId === null) return wantsHuman(input.text) ? handoff(null, 'asked_for_human') : handoff(null, 'no_answer');
      const config = await configOf(input.companyId, input.agentId);
      if (!config) return handoff(null, wantsHuman(input.text) ? 'asked_for_human' : 'no_answer');
      // The answer records the version of the settings that gave it: the cached config's.
      return { ...(await answerWith(input, config)), agentVersion: config.profile.version };
    },
  };
}
