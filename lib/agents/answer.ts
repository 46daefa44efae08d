import { guardForUrl } from '../address-guard.js';
import type { Config } from '../config.js';
import { DEFAULT_HANDOFF_TEXT } from '../conversations.js';
import { directAdmission, releaseReservations, type CreditAdmission } from '../credit.js';
import { DEFAULT_MODEL_RETRY_BUDGET_MS } from '../config.js';
import type { SqlClient, SqlPool } from '../db.js';
import { formatUsd } from '../money.js';
import { searchKnowledge, type KnowledgeBaseInfo, type SearchHit } from '../knowledge/retrieve.js';
import type { VectorIndex } from '../knowledge/vectors.js';
import type { Logger } from '../logger.js';
import type { SecretBox } from '../secrets.js';
import type { AgentOutput, AnswerDecision, HandoffReason, ReplySource } from '../../schema/conversation.js';
import type { Agent, ModelPricing } from '../../schema/entities.js';
import { builtinAnswer } from './builtin-answer.js';
import { wantsHuman } from './builtin.js';
import { answerDecision, answeringPassage, decisionPassage, smallTalkOf } from './decision.js';
import type { BusinessHours } from './hours.js';
import { callChatModel, DEFAULT_MODEL_TIMEOUT_MS, DEFAULT_MODEL_TOTAL_TIMEOUT_MS, ModelCallCancelled, type ModelCall, type ModelResult } from './openai-model.js';
import { costUsd, pricingFor, reservationUsd } from './pricing.js';
import { NO_SLOT, type CallSlot } from './slots.js';
import { buildPrompt, DEFAULT_HISTORY_TOKEN_BUDGET, type ChatMessage, type HistoryMessage } from './prompt.js';
import { promisedAction } from './promises.js';
import { MAX_TOOL_TIMEOUT_MS } from './tools/action-request.js';
import type { McpConnections } from './tools/mcp-client.js';
import { MAX_TOOL_CALLS_PER_ANSWER, Toolbox, type AgentTools } from './tools/toolbox.js';

/**
 * An agent's answer path, shared by the worker (actors/agents/runner.ts, for customers) and
 * the gateway (gateway/routes/evaluations.ts, for "Test agent"), so an evaluation answers
 * exactly as a customer would be answered.
 *
 * No guessing: a passage counts only when it reaches the agent's `relevanceThreshold`
 * (lib/knowledge/search.ts defines relevance). The built-in agent with no such passage
 * follows `onNoAnswer`: `handoff` (default) tells the customer the fallback text followed by
 * the handoff notice and pauses the conversation for a human; `fallback` only sends the
 * fallback text (the bot stays on). A model agent is still asked (greetings and small talk
 * need no knowledge), with only the relevant passages in its prompt, told when there are
 * none that it must hand over rather than state facts; when it hands over (the
 * `handoff_to_human` tool), `fallback` answers the fallback text instead.
 *
 * Sources: a built-in reply cites the chunk it quotes; a model reply cites the passages that
 * were in its prompt.
 */
export const DEFAULT_FALLBACK_TEXT = "Sorry, I don't have an answer to that.";
/** Chosen on the trust bench's development set (bench/sections/trust.ts): see lib/knowledge/confidence.ts. */
export const DEFAULT_RELEVANCE_THRESHOLD = 0.35;
/** Passages a model agent gets by default (`agent.knowledgePassages`). */
export const DEFAULT_PASSAGES = 5;
/**
 * A model agent's passages need only this confidence: retrieval is for recall, the model
 * decides whether they answer (contract.md § Answers that find what the help centre says);
 * the agent's relevanceThreshold is the built-in agent's bar.
 */
export const MODEL_PASSAGE_FLOOR = 0.1;

/** What answering needs to know of an agent. */
export interface AgentProfile {
  agentId: number;
  companyId: number;
  provider: 'builtin' | 'openai';
  knowledgeBaseId: number | null;
  systemPrompt: string;
  modelName: string | null;
  baseUrl: string | null;
  apiKeySealed: string | null;
  pricing: ModelPricing | null;
  /** The agent's own cap on its model calls in flight (per worker); null: none. */
  maxConcurrency: number | null;
  /** undefined: the default notice. */
  handoffMessage: string | undefined;
  onNoAnswer: 'handoff' | 'fallback';
  fallbackMessage: string | null;
  relevanceThreshold: number;
  /** The reply to a greeting; null: the default in the customer's language. */
  greeting: string | null;
  /** The reply to a message not about this business (`out_of_scope`); null: a default polite line in the customer's language. */
  outOfScopeText: string | null;
  /** How many of the best passages a model agent is given, with their confidence (0–20). */
  knowledgePassages: number;
  /** Customer messages within this many ms of each other are answered once, together (0: off). */
  debounceMs: number;
  /** Business hours; null: always open. */
  hours: BusinessHours | null;
  /** The agent's version these settings are (lib/agents/versions.ts): every answer records it. */
  version: number;
}

/** The profile of an agent entity (its sealed key populated). */
export function agentProfile(a: Agent): AgentProfile {
  return {
    agentId: a.id,
    companyId: a.companyId,
    provider: a.modelProvider === 'openai' ? 'openai' : 'builtin',
    knowledgeBaseId: a.knowledgeBaseId,
    systemPrompt: a.systemPrompt,
    modelName: a.modelName,
    baseUrl: a.modelBaseUrl,
    apiKeySealed: a.modelApiKeySealed,
    pricing: a.modelPricing,
    maxConcurrency: a.modelMaxConcurrency ?? null,
    handoffMessage: a.handoffMessage ?? undefined,
    onNoAnswer: a.onNoAnswer === 'fallback' ? 'fallback' : 'handoff',
    fallbackMessage: a.fallbackMessage,
    relevanceThreshold: a.relevanceThreshold ?? DEFAULT_RELEVANCE_THRESHOLD,
    greeting: a.greeting ?? null,
    outOfScopeText: a.outOfScopeText ?? null,
    knowledgePassages: a.knowledgePassages ?? DEFAULT_PASSAGES,
    debounceMs: a.debounceMs ?? 0,
    hours: a.hours ?? null,
    version: a.version ?? 1,
  };
}

export function handoff(agent: AgentProfile | null, reason: HandoffReason, extra: Partial<Extract<AgentOutput, { kind: 'handoff' }>> = {}): AgentOutput {
  return { kind: 'handoff', reason, ...(agent?.handoffMessage ? { text: agent.handoffMessage } : {}), ...extra };
}

/** What the agent does when nothing relevant is known (see the module comment). */
export function noAnswer(agent: AgentProfile | null, extra: Partial<Extract<AgentOutput, { kind: 'handoff' }>> = {}): AgentOutput {
  const fallback = agent?.fallbackMessage ?? DEFAULT_FALLBACK_TEXT;
  if (agent?.onNoAnswer === 'fallback') return { kind: 'reply', text: fallback, sources: [], ...(extra.decision ? { decision: extra.decision } : {}) };
  return { kind: 'handoff', reason: 'no_answer', text: `${fallback} ${agent?.handoffMessage ?? DEFAULT_HANDOFF_TEXT}`, ...extra };
}

export const sourceOf = (m: { documentId: number; chunkId: number; title: string }): ReplySource => ({ documentId: m.documentId, chunkId: m.chunkId, title: m.title });

export interface AnswerDeps {
  sql: SqlClient;
  vectors: VectorIndex;
  secrets: SecretBox;
  urls: Pick<Config, 'allowPrivateUrls' | 'helpdeskGlobalUrl' | 'helpdeskEuropeUrl'>;
  logger?: Logger;
}

export { builtinAnswer, builtinReply, smallTalkAnswer } from './builtin-answer.js';

/** What a model agent's answer needs besides: how its call gets its credit (the worker's waits for the company's calls in flight). */
export type ModelAnswerDeps = AnswerDeps & { credit: CreditAdmission };

export interface ModelAnswerOptions {
  history: HistoryMessage[];
  /** The customer message answered (its credit reservation is keyed by it); null: an evaluation. */
  messageId: string | null;
  signal?: AbortSignal;
  /** The call's place among the calls in flight (given back while it waits). */
  slot?: CallSlot;
  /** Knowledge passages put in the prompt (default 3). */
  passages?: number;
  historyTokenBudget?: number;
  model?: Pick<ModelCall, 'timeoutMs' | 'maxRetries' | 'totalTimeoutMs' | 'retryBudgetMs' | 'onSettled'>;
  /** Streams the model's answer: each piece of its text as it arrives (a preview for webchat; the output stays the whole answer). */
  onDelta?: (text: string) => void;
  /** The company's tools the agent is offered (lib/agents/tools/toolbox.ts); none: only the built-in ones. */
  tools?: AnswerTools;
  /** The agent handed the conversation over and no person acted yet (schema/conversation.ts AgentInput). */
  handedOver?: boolean;
}

export interface AnswerTools {
  tools: AgentTools;
  /** The process's MCP clients (null: MCP tools cannot be called). */
  mcp: McpConnections | null;
  /** The conversation answered (null: an evaluation or a replay). */
  conversationId: number | null;
  /** The conversation whose customer the company's tools are called for (default: the one answered; a replay: the one answered again). */
  caller?: { conversationId: number } | null;
  /** A replay: the customer message answered again (its answer's recorded tool calls stand in for tools that change data). */
  recordedFor?: string;
  /** Where the tool-call ledger is written (default: the answer's pool); the worker's commits that need not wait for the disk. */
  ledger?: SqlClient;
}

/** Model turns of one answer at most: one per company tool call, and the answer after the last. */
const MAX_TURNS = MAX_TOOL_CALLS_PER_ANSWER + 1;

export interface ModelAnswer {
  output: AgentOutput;
  /**
   * The credit reservation an answer with `usage` still holds: settled when the answer is
   * committed (lib/credit.ts settleAnswers, or chargeModelUsage for an evaluation), or
   * released when it is discarded. null when there is none (no call was made, or it failed:
   * released already).
   */
  reservationId: string | null;
}

/** Opened model keys of the profiles in use (a profile is cached by the runner for a few seconds; opening costs an AES-GCM decryption per call). */
const openedKeys = new WeakMap<AgentProfile, string | null>();

function openedKey(secrets: SecretBox, agent: AgentProfile): string | null {
  if (openedKeys.has(agent)) return openedKeys.get(agent)!;
  const key = agent.apiKeySealed ? secrets.open(agent.apiKeySealed) : null;
  openedKeys.set(agent, key);
  return key;
}

/** A reservation outlives its call by this much before the workers' sweep may release it. */
const RESERVATION_MARGIN_MS = 60_000;

/**
 * A model agent's answer (a customer asking for a person is the caller's check): the
 * passages (and the no-answer rule), the prompt; the call's estimated cost reserved
 * (lib/credit.ts): no call at a balance ≤ 0 or one that does not cover it (`no_credit`; the
 * worker's actors/credit-gate.ts first waits for the company's calls in flight to settle) or
 * past a daily spend cap (`spend_cap`); then the call. A successful call carries its `usage`
 * (priced) and keeps its reservation for the caller to settle; a failed one releases it and
 * hands off with `model_failed`, costing nothing. A call cancelled through `signal` releases
 * it and throws.
 *
 * With company tools (`o.tools`) an answer may take several model turns: the calls the model
 * asks for are made (lib/agents/tools/toolbox.ts: the limit, the ledger, fairness,
 * cancellation), their results appended as `tool` messages, and the model asked again, until
 * it answers (offered no company tool once the limit is reached). The answer's usage is the
 * sum of its turns', under the one reservation made for the first; its `toolCalls` are the
 * calls' records, and the calls that succeeded ground what the reply says they did.
 */
export async function modelAnswer(deps: ModelAnswerDeps, agent: AgentProfile, base: KnowledgeBaseInfo | null, question: string, o: ModelAnswerOptions): Promise<ModelAnswer> {
  // Fields added only when something is logged (a child logger per call would cost every call).
  const log = (level: 'info' | 'warn' | 'error', fields: object, msg: string) => deps.logger?.[level]({ agentId: agent.agentId, ...(o.messageId ? { messageId: o.messageId } : {}), ...fields }, msg);
  const none = (output: AgentOutput): ModelAnswer => ({ output, reservationId: null });
  if (!agent.modelName || !agent.baseUrl) {
    log('warn', {}, 'agent: provider openai without model name or base URL; handing off');
    return none(handoff(agent, 'model_failed', { detail: 'model not configured' }));
  }
  let apiKey: string | null = null;
  try {
    apiKey = openedKey(deps.secrets, agent);
  } catch (err) {
    log('error', { err }, 'agent: the model API key cannot be opened (SECRETS_KEY rotated away?); handing off');
    return none(handoff(agent, 'model_failed', { detail: 'model API key unreadable' }));
  }
  const passages = o.passages ?? agent.knowledgePassages;
  // Small talk needs no knowledge; a greeting before a question is not searched for.
  const talk = smallTalkOf(question);
  const asked = talk.kind ? talk.question : question;
  let hits: SearchHit[] = [];
  if (base && passages > 0 && asked) {
    hits = await searchKnowledge({ sql: deps.sql, vectors: deps.vectors, logger: deps.logger }, base, asked, { limit: Math.max(passages, 1), signal: o.signal });
  }
  // The best passages above a low floor go to the model, with how sure search is of each.
  const found = hits.filter((h) => h.confidence >= MODEL_PASSAGE_FLOOR).slice(0, passages);
  const bestHit = answeringPassage(hits);
  const decide = (kind: AnswerDecision['kind']) =>
    answerDecision(talk.kind && !asked ? talk.kind : kind, { knowledgeBaseId: base?.id ?? null, question: asked || question, threshold: agent.relevanceThreshold, best: bestHit && decisionPassage(bestHit) });
  const tools = o.tools && o.tools.tools.size > 0 ? o.tools : null;
  const messages = buildPrompt({
    systemPrompt: agent.systemPrompt,
    passages: found.map((p) => ({ title: `${p.heading ? `${p.title} › ${p.heading}` : p.title} (match ${Math.round(p.confidence * 100)} %)`, snippet: p.content })),
    hasKnowledgeBase: base !== null,
    hasTools: tools !== null,
    history: o.history,
    message: question,
    historyTokenBudget: o.historyTokenBudget ?? DEFAULT_HISTORY_TOKEN_BUDGET,
  });

  const pricing = pricingFor(agent.modelName, agent.pricing);
  const budgetMs = o.model?.retryBudgetMs ?? DEFAULT_MODEL_RETRY_BUDGET_MS;
  // The longest a call may take, retries and a slowed server included.
  const callMs = Math.max(o.model?.totalTimeoutMs ?? DEFAULT_MODEL_TOTAL_TIMEOUT_MS, budgetMs + (o.model?.timeoutMs ?? DEFAULT_MODEL_TIMEOUT_MS));
  // An answer with tools takes up to MAX_TURNS calls, and its tool calls between them.
  const answerMs = tools ? MAX_TURNS * callMs + MAX_TOOL_CALLS_PER_ANSWER * MAX_TOOL_TIMEOUT_MS : callMs;
  const request = { companyId: agent.companyId, agentId: agent.agentId, messageId: o.messageId, amountUsd: reservationUsd(messages, pricing), ttlMs: answerMs + RESERVATION_MARGIN_MS };
  const slot = o.slot ?? NO_SLOT;
  const reservation = await deps.credit.reserve(request, { deadlineMs: budgetMs, signal: o.signal, away: (wait) => slot.away(wait) });
  if (o.signal?.aborted) {
    if (reservation.ok) await release(deps, agent.companyId, reservation.reservationId);
    throw new ModelCallCancelled();
  }
  if (!reservation.ok) {
    if (reservation.reason !== 'balance') {
      const whose = reservation.reason === 'company_cap' ? 'company' : 'agent';
      return none(handoff(agent, 'spend_cap', { detail: `the ${whose}'s daily model spend cap is reached` }));
    }
    if (Number(reservation.availableUsd) + Number(reservation.reservedUsd) <= 0) return none(handoff(agent, 'no_credit'));
    log('info', { estimateUsd: request.amountUsd, availableUsd: reservation.availableUsd }, 'agent: the credit left does not cover the call; handing off');
    return none(handoff(agent, 'no_credit', { detail: `the credit left (${formatUsd(reservation.availableUsd)} USD) does not cover the call's estimated cost (${formatUsd(request.amountUsd)} USD)` }));
  }

  const toolbox = tools
    ? new Toolbox(
        tools.tools,
        { sql: tools.ledger ?? deps.sql, secrets: deps.secrets, guardFor: (url) => guardForUrl(deps.urls, url), mcp: tools.mcp, logger: deps.logger },
        {
          companyId: agent.companyId, agentId: agent.agentId, conversationId: tools.conversationId, messageId: o.messageId, recordedFor: tools.recordedFor,
          caller: tools.caller ?? (tools.conversationId === null ? null : { conversationId: tools.conversationId }), signal: o.signal, slot,
        },
      )
    : null;
  const called = () => (toolbox?.records.length ? { toolCalls: toolbox.records } : {});
  const turns: ModelResult[] = [];
  let result: ModelResult | undefined;
  /** The calls are being made: a failure now is the ledger's, not the model's. */
  let calling = false;
  try {
    const chat: ChatMessage[] = [...messages];
    for (;;) {
      result = await callChatModel({
        baseUrl: agent.baseUrl, apiKey, model: agent.modelName, messages: chat, signal: o.signal, slot, guard: guardForUrl(deps.urls, agent.baseUrl), onDelta: o.onDelta,
        ...(toolbox ? { tools: toolbox.offered } : {}), ...o.model,
      });
      turns.push(result);
      if (!result.toolCalls || !toolbox || turns.length >= MAX_TURNS) break;
      calling = true;
      chat.push(result.toolCalls.message, ...(await toolResults(toolbox, result.toolCalls)));
      calling = false;
      // A handoff or close asked for with the calls still ends the answer.
      if (result.kind !== 'reply') break;
    }
  } catch (err) {
    await release(deps, agent.companyId, reservation.reservationId);
    if (err instanceof ModelCallCancelled || o.signal?.aborted) {
      const cancelled = err instanceof ModelCallCancelled ? err : new ModelCallCancelled();
      cancelled.toolCalls = toolbox?.records ?? [];
      throw cancelled;
    }
    // The ledger could not be written: the answer cannot be worked out now (the caller asks again; the ledger keeps the calls at most once).
    if (calling) throw err;
    log('warn', { err: (err as Error).message }, 'agent: the model failed after its retries; handing off (no charge)');
    return none(handoff(agent, 'model_failed', { detail: (err as Error).message, ...called() }));
  }
  // A turn that asked for tools says nothing to the customer (its text, if any, is the model thinking aloud).
  if (result!.toolCalls && result!.kind === 'reply') result = { ...result!, text: null };
  result = result!;
  // Priced and recorded under the configured model name (the agent's choice, what
  // `model.pricing` overrides); the server's own name may carry a snapshot date.
  const inputTokens = turns.reduce((n, r) => n + r.inputTokens, 0);
  const outputTokens = turns.reduce((n, r) => n + r.outputTokens, 0);
  const usage = { agentId: agent.agentId, model: agent.modelName, inputTokens, outputTokens, costUsd: costUsd(inputTokens, outputTokens, pricing) };
  if (turns.some((r) => !r.usageReported)) log('warn', { usage }, 'agent: the model server reported no token usage; charging an estimate');
  // Every answer records its decision: the model answered (from the passages given, whose best confidence the reply shows) or did not.
  const held = (output: AgentOutput): ModelAnswer => ({
    output: {
      ...output,
      ...(output.kind === 'reply' && output.sources?.length && output.confidence === undefined ? { confidence: found[0]!.confidence } : {}),
      decision: output.decision ?? decide(output.kind === 'handoff' ? 'no_answer' : 'answer'),
      ...called(),
    },
    reservationId: reservation.reservationId,
  });
  // The last stage the model moved the lead to, in whichever turn.
  const leadStage = turns.findLast((r) => r.leadStage)?.leadStage;
  const extras = leadStage ? { leadStage } : {};
  // A reply (or last words) promising what no tool did is not sent: the customer would wait for it (lib/agents/promises.ts).
  // What the tools that succeeded did and gave is no promise.
  const done = toolbox?.done ?? [];
  const groundedBy = [...found.map((h) => `${h.title}\n${h.heading ?? ''}\n${h.content}`), ...done.map((d) => `${d.name}\n${d.description}\n${JSON.stringify(d.result)}`)];
  const promise = result.text && result.kind !== 'handoff' ? promisedAction(result.text, groundedBy, done) : null;
  if (promise) {
    log('info', { promise }, 'agent: the model promised an action no tool performed; the reply is withheld');
    const withheldFields = { usage, withheld: result.text!, decision: decide('no_answer'), ...extras };
    if (agent.onNoAnswer === 'fallback') return held({ kind: 'reply', text: agent.fallbackMessage ?? DEFAULT_FALLBACK_TEXT, sources: [], ...withheldFields });
    return held(handoff(agent, 'no_answer', { detail: `the model's reply promised an action no tool performed ("${promise}")`, ...withheldFields }));
  }
  if (result.kind === 'reply' && (result.text || leadStage)) return held({ kind: 'reply', text: result.text ?? '', usage, sources: found.map(sourceOf), ...extras });
  if (result.kind === 'close') return held({ kind: 'close', reason: result.closeReason ?? 'close_conversation', ...(result.text ? { text: result.text } : {}), usage, ...extras });
  // The model asked for a human: its tokens were spent, so they are charged.
  if (agent.onNoAnswer === 'fallback') return held({ kind: 'reply', text: agent.fallbackMessage ?? DEFAULT_FALLBACK_TEXT, usage, sources: [], decision: decide('no_answer'), ...extras });
  const why = result.handoffReason ?? (result.kind === 'reply' ? 'empty answer' : undefined);
  return held(handoff(agent, 'no_answer', { usage, ...(why ? { detail: why } : {}), ...extras }));
}

/**
 * A question answered outside a customer's conversation (an evaluation, lib/agents/evaluate.ts;
 * a replay, lib/agents/replays/answer.ts), by the decisions the worker's runner makes for a
 * customer: one asking for a person is handed over (no call), a built-in agent answers from its
 * knowledge base, a model agent is asked with its credit reserved at once (no customer message:
 * `messageId` null). The caller charges or releases `reservationId`.
 */
export async function answerOutsideConversation(
  deps: AnswerDeps & { sql: SqlPool },
  agent: AgentProfile,
  base: KnowledgeBaseInfo | null,
  question: string,
  o: Omit<ModelAnswerOptions, 'messageId'> & { maxLength?: number },
): Promise<ModelAnswer> {
  if (wantsHuman(question)) {
    const decision = answerDecision('asked_for_human', { knowledgeBaseId: base?.id ?? null, question, threshold: agent.relevanceThreshold });
    return { output: handoff(agent, 'asked_for_human', { decision }), reservationId: null };
  }
  if (agent.provider === 'builtin') return { output: await builtinAnswer(deps, agent, base, question, { maxLength: o.maxLength, signal: o.signal }), reservationId: null };
  const { maxLength: _maxLength, ...options } = o;
  return modelAnswer({ ...deps, credit: directAdmission(deps.sql) }, agent, base, question, { ...options, messageId: null });
}

/**
 * The `tool` messages answering a turn's calls, in order: each company tool's result
 * (lib/agents/tools/toolbox.ts), and a short acknowledgement of a built-in call among them (a
 * lead stage, set when the answer is committed): every call of the assistant message needs its answer.
 */
async function toolResults(toolbox: Toolbox, asked: NonNullable<ModelResult['toolCalls']>): Promise<ChatMessage[]> {
  const out: ChatMessage[] = [];
  const company = new Map(asked.calls.map((c) => [c.id, c]));
  for (const c of asked.message.role === 'assistant' ? (asked.message.tool_calls ?? []) : []) {
    const call = company.get(c.id);
    out.push({ role: 'tool', tool_call_id: c.id, content: call ? await toolbox.run(call) : JSON.stringify({ result: 'noted' }) });
  }
  return out;
}

/** Releases a reservation whose call ended without an answer to charge (a failure to release is left to the expiry sweep). */
async function release(deps: ModelAnswerDeps, companyId: number, reservationId: string): Promise<void> {
  try {
    await releaseReservations(deps.sql, companyId, [{ reservationId }]);
    deps.credit.settled([companyId]);
  } catch (err) {
    deps.logger?.warn({ err, reservationId }, 'agent: could not release a credit reservation (it expires by itself)');
  }
}
