import { setTimeout as sleep } from 'node:timers/promises';
import type { Config } from '../../lib/config.js';
import { chargeReplayUsage, releaseReservations } from '../../lib/credit.js';
import { inTransaction, type Orm, type SqlPool } from '../../lib/db.js';
import { agentProfile, type AgentProfile, type AnswerDeps, type AnswerTools } from '../../lib/agents/answer.js';
import { DEFAULT_HISTORY_TOKEN_BUDGET } from '../../lib/agents/prompt.js';
import { replayAnswer, type ReplayAnswerOptions, type ReplayItemAnswer } from '../../lib/agents/replays/answer.js';
import { answersDiffer, claimReplays, finishReplay, pendingItems, releaseLease, renewLease, storeItemAnswer, type ClaimedReplay, type PendingItem } from '../../lib/agents/replays/store.js';
import type { McpConnections } from '../../lib/agents/tools/mcp-client.js';
import { loadAgentTools } from '../../lib/agents/tools/toolbox.js';
import { loadBaseInfo, type KnowledgeBaseInfo } from '../../lib/knowledge/retrieve.js';
import type { VectorIndex } from '../../lib/knowledge/vectors.js';
import type { Logger } from '../../lib/logger.js';
import type { SecretBox } from '../../lib/secrets.js';
import { tenantScope } from '../../lib/tenancy.js';
import { AgentSchema } from '../../schema/entities.js';
import { FairSlots, type Slot } from '../fair-slots.js';
import type { ReplayItemOutcome } from '../metrics.js';
import { recentMessages } from '../tables/messages.js';

/**
 * The workers' side of replays (contract.md § Replay before publishing): every `pollMs` a
 * worker takes up to `maxReplays` running replays whose lease is free or ran out
 * (lib/agents/replays/store.ts claimReplays) and answers their items again with the replay's
 * settings (lib/agents/replays/answer.ts), renewing the lease every leaseMs/3. A worker that
 * dies leaves its lease to run out; the next one answers only the items without an answer
 * (each answer is stored, with its debit, only while the lease is its own).
 *
 * Fairness: the items a worker answers at once (REPLAY_MAX_CONCURRENCY) are shared between
 * companies and their replays by a FairSlots of their own (a company with a big replay takes
 * one turn like a company with a small one); a model call of an item then also takes a spare
 * place among the worker's model calls (actors/fair-slots.ts acquireSpare): only a place no
 * customer's call waits for, never the last quarter, so a customer is never queued behind a
 * replay. A built-in agent's item needs no such place.
 *
 * Each stored answer and its debit (one `replay_usage` ledger entry) commit together; an
 * answer that cannot be stored (the lease was lost) releases its credit reservation instead.
 * A company whose credit runs out, or that reaches a daily spend cap, stops its replay
 * `failed` with the reason. Nothing else is written: no conversation, message, transition,
 * lead, outbox or analytics row, nothing published.
 */
export interface ReplayRunnerOptions {
  /** How often running replays are looked for (default 1000). */
  pollMs?: number;
  /** How long a claimed replay stays this worker's without a renewal (default 15,000). */
  leaseMs?: number;
  /** Replays one worker answers at once (default 4). */
  maxReplays?: number;
}

export const DEFAULT_REPLAY_POLL_MS = 1_000;
export const DEFAULT_REPLAY_LEASE_MS = 15_000;
export const DEFAULT_MAX_REPLAYS = 4;
/** Attempts at one item that fails for a reason of ours (the database unreachable, say) before the replay fails. */
const ITEM_ATTEMPTS = 3;
/** Messages of the conversation read for the history (the runner's default). */
const HISTORY_MAX_MESSAGES = 50;

export interface ReplayRunnerDeps {
  workerId: string;
  orm: Orm;
  /** The replays' own connections (the tool-call ledger's too). */
  sql: SqlPool;
  secrets: SecretBox;
  config: Pick<Config, 'allowPrivateUrls' | 'helpdeskGlobalUrl' | 'helpdeskEuropeUrl' | 'model'>;
  logger: Logger;
  /** The worker's places for model calls (actors/host.ts `slots`): replays take spare ones. */
  modelSlots: FairSlots;
  vectors: VectorIndex;
  mcp: McpConnections | null;
  /** Per-attempt deadline and retries of a model call (the worker's agent runner's). */
  model?: ReplayAnswerOptions['model'];
  /** Told of every item answered, or given up. */
  onItem?: (outcome: ReplayItemOutcome) => void;
}

/** Why a replay's work stops before its end. */
class Stopped extends Error {
  /** `failed`: the replay ends failed with this message; otherwise it is left for its lease to run out. */
  constructor(
    message: string,
    readonly failed: boolean,
  ) {
    super(message);
  }
}

/** What answering a replay's items needs of its agent. */
interface ReplayAgent {
  profile: AgentProfile;
  base: KnowledgeBaseInfo | null;
  tools: AnswerTools | null;
}

export class ReplayRunner {
  readonly #deps: ReplayRunnerDeps;
  readonly #pollMs: number;
  readonly #leaseMs: number;
  readonly #maxReplays: number;
  /** The items answered at once, shared between companies (tenant: the company, group: the replay). */
  readonly #places: FairSlots;
  readonly #answerDeps: AnswerDeps & { sql: SqlPool };
  /** Replays being answered here, by id: how to stop each and when it has stopped. */
  readonly #running = new Map<number, { stop: AbortController; done: Promise<void> }>();
  #timer: NodeJS.Timeout | null = null;
  #polling: Promise<void> | null = null;
  #closed = false;

  constructor(deps: ReplayRunnerDeps, options: ReplayRunnerOptions = {}) {
    this.#deps = deps;
    this.#pollMs = options.pollMs ?? DEFAULT_REPLAY_POLL_MS;
    this.#leaseMs = options.leaseMs ?? DEFAULT_REPLAY_LEASE_MS;
    this.#maxReplays = options.maxReplays ?? DEFAULT_MAX_REPLAYS;
    this.#places = new FairSlots(deps.config.model.replayMaxConcurrency);
    this.#answerDeps = { sql: deps.sql, vectors: deps.vectors, secrets: deps.secrets, urls: deps.config, logger: deps.logger };
  }

  start(): void {
    if (this.#closed || this.#timer) return;
    const tick = () => {
      this.#polling = this.#poll().finally(() => {
        this.#polling = null;
        if (!this.#closed) {
          this.#timer = setTimeout(tick, this.#pollMs);
          this.#timer.unref();
        }
      });
    };
    this.#timer = setTimeout(tick, 0);
    this.#timer.unref();
  }

  /** Stops claiming, stops the replays under way (their model calls aborted) and gives their leases up for another worker. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    await this.#polling;
    for (const r of this.#running.values()) r.stop.abort(new Stopped('the worker is stopping', false));
    await Promise.all([...this.#running.values()].map((r) => r.done));
  }

  async #poll(): Promise<void> {
    const room = this.#maxReplays - this.#running.size;
    if (this.#closed || room <= 0) return;
    let claimed: ClaimedReplay[];
    try {
      claimed = await claimReplays(this.#deps.sql, this.#deps.workerId, room, this.#leaseMs);
    } catch (err) {
      this.#deps.logger.warn({ err }, 'replays: could not look for running replays');
      return;
    }
    for (const replay of claimed) {
      const stop = new AbortController();
      if (this.#closed) stop.abort(new Stopped('the worker is stopping', false));
      const done = this.#run(replay, stop)
        .catch((err) => this.#deps.logger.error({ err, replayId: replay.id }, 'replays: a replay stopped unexpectedly (its lease runs out for another try)'))
        .finally(() => this.#running.delete(replay.id));
      this.#running.set(replay.id, { stop, done });
    }
  }

  /** Answers a claimed replay's unanswered items, then ends it (unless it was stopped). */
  async #run(replay: ClaimedReplay, stop: AbortController): Promise<void> {
    const { sql, workerId, logger } = this.#deps;
    const log = logger.child({ replayId: replay.id, companyId: replay.companyId, agentId: replay.agentId });
    const renewal = setInterval(() => {
      renewLease(sql, replay.id, workerId, this.#leaseMs).then(
        (ours) => {
          if (!ours) stop.abort(new Stopped('the lease was lost', false));
        },
        (err) => log.warn({ err }, 'replays: could not renew a lease (tried again shortly)'),
      );
    }, Math.max(1, Math.floor(this.#leaseMs / 3)));
    renewal.unref();
    try {
      const agent = await this.#agentOf(replay);
      if (!agent) return;
      const items = await pendingItems(sql, replay.id);
      log.info({ items: items.length, total: replay.total }, 'replays: answering');
      const tasks = new Set<Promise<void>>();
      for (const item of items) {
        let place: Slot;
        try {
          place = await this.#places.acquire({ tenant: replay.companyId, group: `replay:${replay.id}`, groupLimit: null }, stop.signal);
        } catch {
          break;
        }
        const task = this.#item(replay, agent, item, stop).finally(() => {
          place.release();
          tasks.delete(task);
        });
        tasks.add(task);
      }
      await Promise.all(tasks);
      const why = stop.signal.reason as Stopped | undefined;
      if (!stop.signal.aborted) {
        await finishReplay(sql, replay.id, workerId, 'done');
        log.info('replays: done');
      } else if (why?.failed) {
        await finishReplay(sql, replay.id, workerId, 'failed', why.message);
        log.info({ error: why.message }, 'replays: failed');
      } else if (this.#closed) {
        // An orderly stop: the next worker to look takes the replay over at once.
        await releaseLease(sql, replay.id, workerId).catch((err) => log.warn({ err }, 'replays: could not give a lease up (it runs out by itself)'));
      }
    } finally {
      clearInterval(renewal);
    }
  }

  /** The replay's agent: the row's identity with the replay's settings; null when the agent is gone. */
  async #agentOf(replay: ClaimedReplay): Promise<ReplayAgent | null> {
    const { orm, sql, secrets, config, logger } = this.#deps;
    const { em } = tenantScope(orm, replay.companyId);
    const row = await em.findOne(AgentSchema, { id: replay.agentId });
    if (!row) return null;
    const profile = agentProfile({ ...row, ...replay.settings });
    const [base, tools] = await Promise.all([
      profile.knowledgeBaseId === null ? null : loadBaseInfo(sql, secrets, config, replay.companyId, profile.knowledgeBaseId, logger),
      profile.provider === 'openai' ? loadAgentTools(sql, replay.companyId, replay.agentId) : null,
    ]);
    return { profile, base, tools: tools && { tools, mcp: this.#deps.mcp, conversationId: null, ledger: sql } };
  }

  /** One item: answered and stored with its debit; tried again a few times when it fails for a reason of ours. */
  async #item(replay: ClaimedReplay, agent: ReplayAgent, item: PendingItem, stop: AbortController): Promise<void> {
    const { logger } = this.#deps;
    for (let attempt = 1; ; attempt++) {
      if (stop.signal.aborted) return;
      try {
        await this.#answerAndStore(replay, agent, item, stop);
        return;
      } catch (err) {
        if (stop.signal.aborted) return;
        logger.warn({ err, replayId: replay.id, seq: item.seq, attempt }, 'replays: an item could not be answered');
        if (attempt >= ITEM_ATTEMPTS) {
          this.#deps.onItem?.('failed');
          stop.abort(new Stopped(`message ${item.seq} of ${replay.total} could not be answered`, true));
          return;
        }
        await sleep(1000 * attempt, undefined, { signal: stop.signal }).catch(() => {});
      }
    }
  }

  async #answerAndStore(replay: ClaimedReplay, agent: ReplayAgent, item: PendingItem, stop: AbortController): Promise<void> {
    const { sql, workerId } = this.#deps;
    const signal = stop.signal;
    const model = agent.profile.provider === 'openai';
    // A model call takes a place no customer's call waits for: asked for first, so the items ask in the turns the replays' places gave them.
    const spare = model ? await this.#deps.modelSlots.acquireSpare(signal) : null;
    let result: ReplayItemAnswer;
    try {
      const history = model ? await recentMessages(sql, item.conversationId, item.messageId, HISTORY_MAX_MESSAGES) : [];
      result = await replayAnswer(
        this.#answerDeps,
        agent.profile,
        agent.base,
        agent.tools,
        { messageId: item.messageId, conversationId: item.conversationId, question: item.question },
        history.map((h) => ({ role: h.role as 'customer' | 'agent' | 'operator' | 'system', text: h.text })),
        { signal, slot: spare ?? undefined, historyTokenBudget: DEFAULT_HISTORY_TOKEN_BUDGET, model: this.#modelOptions() },
      );
    } finally {
      spare?.release();
    }
    if (result.stop !== null) {
      await this.#release(replay, result);
      this.#deps.onItem?.('failed');
      stop.abort(new Stopped(result.stop, true));
      return;
    }
    const changed = answersDiffer(item.before, result.answer);
    const usage = result.usage;
    const stored = await inTransaction(sql, async (c) => {
      if (!(await storeItemAnswer(c, { id: item.id, replayId: replay.id, workerId, after: result.answer, changed, costUsd: usage?.costUsd ?? '0' }))) return false;
      if (usage) await chargeReplayUsage(c, { companyId: replay.companyId, agentId: replay.agentId, reservationId: result.reservationId, ...usage });
      return true;
    });
    if (!stored) {
      await this.#release(replay, result);
      this.#deps.onItem?.('failed');
      stop.abort(new Stopped('the lease was lost', false));
      return;
    }
    this.#deps.onItem?.(changed ? 'changed' : 'same');
  }

  #modelOptions(): ReplayAnswerOptions['model'] {
    return { retryBudgetMs: this.#deps.config.model.retryBudgetMs, ...this.#deps.model };
  }

  /** The credit an answer that is not stored still holds (a failure to release is left to the expiry sweep). */
  async #release(replay: ClaimedReplay, result: ReplayItemAnswer): Promise<void> {
    if (result.reservationId === null) return;
    try {
      await releaseReservations(this.#deps.sql, replay.companyId, [{ reservationId: result.reservationId }]);
    } catch (err) {
      this.#deps.logger.warn({ err, replayId: replay.id }, 'replays: could not release a credit reservation (it expires by itself)');
    }
  }
}
