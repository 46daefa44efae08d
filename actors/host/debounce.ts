import { settleAnswers, type AnswerSettlement } from '../../lib/credit.js';
import { query, type SqlPool } from '../../lib/db.js';
import type { Logger } from '../../lib/logger.js';
import { collectedText } from '../../machines/conversation.js';
import { sleep } from '../limit.js';
import { lockConversation, type ConversationRow } from '../store.js';
import { isAnswering, isCollecting, type Answers } from './answers.js';
import type { Commits } from './commit.js';
import { conversationLaneKey, type Applied, type Lane, type Lanes } from './lanes.js';

/**
 * The agent's debounce window (contract.md § Behaviour): a conversation in `active.collecting`
 * has its deadline, `answerDueAt`, in its persisted snapshot; this keeps one timer per such
 * conversation of the partitions this worker owns. When it fires, `debounce.elapsed` is
 * applied on the conversation's lane (in order with its envelopes, so a message arriving at
 * the deadline is either collected before or answered after, never both) and the agent
 * answers every collected message together. The customer messages themselves were acked when
 * stored: what keeps the answer from being lost is the deadline in the snapshot, which a
 * worker that acquires a partition (a restart, a takeover after a SIGKILL) re-arms from the
 * database (`acquire`; an overdue one fires at once). Exactly one answer: the elapsed event
 * is applied under the conversation's row lock, and only a machine still collecting moves
 * to answering (actors/host/answers.ts then owns the answer, with its attempt bound).
 */
const RETRY_MS = 1_000;
/** Longer than any debounce window (60 s at most). */
const MAX_TIMER_MS = 65_000;

const timerOf = (conv: ConversationRow): Omit<Timer, 'dueAt' | 'handle'> => ({
  conversationId: conv.id, companyId: conv.company_id, integrationId: conv.integration_id, clientId: conv.client_id, partition: conv.partition,
});

interface Timer {
  conversationId: number;
  companyId: number;
  integrationId: number;
  clientId: string;
  partition: number;
  dueAt: number;
  handle: NodeJS.Timeout;
}

type Elapsed =
  | { kind: 'done'; settle: AnswerSettlement[] }
  /** Answering a window's messages with no answer under way here (it failed, or its worker died): asked again. */
  | { kind: 'resume'; conv: ConversationRow }
  /** Not due yet (a timer that fired early, or a deadline moved by a message): armed again. */
  | { kind: 'collecting'; conv: ConversationRow }
  | { kind: 'answer'; conv: ConversationRow; messageId: string; text: string };

export interface DebounceDeps {
  sql: SqlPool;
  logger: Logger;
  commits: Commits;
  answers: Answers;
  lanes: Lanes;
  now: () => number;
  /** Whether this worker may work the partition now (its lease). */
  owns: (partition: number) => boolean;
  closed: () => boolean;
}

export class DebounceTimers {
  readonly #deps: DebounceDeps;
  readonly #timers = new Map<number, Timer>();

  constructor(deps: DebounceDeps) {
    this.#deps = deps;
  }

  /** Conversations waiting for their deadline now. */
  get size(): number {
    return this.#timers.size;
  }

  /** Arms (or moves) the conversation's timer to its answerDueAt; a conversation without one has none. */
  arm(conv: ConversationRow): void {
    const due = isCollecting(conv.state) ? conv.snapshot.context.answerDueAt : null;
    if (!due) return this.#drop(conv.id);
    const dueAt = Date.parse(due);
    const old = this.#timers.get(conv.id);
    if (old?.dueAt === dueAt) return;
    this.#schedule(timerOf(conv), dueAt);
  }

  /**
   * A partition this worker acquired: the deadlines its conversations are waiting for, from
   * their snapshots. Never rejects: while the database cannot be read it is tried again (the
   * partition's envelopes are consumed meanwhile).
   */
  async acquire(partition: number): Promise<void> {
    while (!this.#deps.closed() && this.#deps.owns(partition)) {
      try {
        const rows = await query<ConversationRow>(
          this.#deps.sql,
          'conv_debounce_due',
          `select * from conversations where partition = $1 and status = 'active' and snapshot->'context'->>'answerDueAt' is not null`,
          [partition],
        );
        // An answer of a window that was under way when the previous owner stopped: asked again at once.
        for (const conv of rows) isAnswering(conv.state) ? this.#schedule(timerOf(conv), this.#deps.now()) : this.arm(conv);
        if (rows.length > 0) this.#deps.logger.info({ partition, conversations: rows.length }, 'host: debounce deadlines re-armed');
        return;
      } catch (err) {
        this.#deps.logger.warn({ err, partition }, 'host: cannot read the debounce deadlines now; trying again');
        await sleep(RETRY_MS);
      }
    }
  }

  /** A partition given up: its next owner arms its deadlines. */
  release(partition: number): void {
    for (const t of [...this.#timers.values()]) if (t.partition === partition) this.#drop(t.conversationId);
  }

  close(): void {
    for (const t of this.#timers.values()) clearTimeout(t.handle);
    this.#timers.clear();
  }

  #drop(conversationId: number): void {
    const t = this.#timers.get(conversationId);
    if (t) clearTimeout(t.handle);
    this.#timers.delete(conversationId);
  }

  #schedule(at: Omit<Timer, 'dueAt' | 'handle'>, dueAt: number): void {
    this.#drop(at.conversationId);
    // A deadline further out than any window (a clock moved back) is looked at again, never overflowing the timer.
    const handle = setTimeout(() => this.#fire(timer), Math.min(Math.max(0, dueAt - this.#deps.now()), MAX_TIMER_MS));
    const timer: Timer = { ...at, dueAt, handle };
    this.#timers.set(at.conversationId, timer);
  }

  #fire(timer: Timer): void {
    if (this.#timers.get(timer.conversationId) !== timer) return;
    this.#timers.delete(timer.conversationId);
    if (this.#deps.closed() || !this.#deps.owns(timer.partition)) return;
    const key = conversationLaneKey(timer.integrationId, timer.clientId);
    void this.#deps.lanes.enqueue(key, timer.partition, (lane) => this.#elapse(lane, timer)).then((result) => {
      // The database could not be reached for a while: the deadline stays, tried again.
      if (result === 'nak' && !this.#timers.has(timer.conversationId) && !this.#deps.closed()) this.#schedule(timer, this.#deps.now() + RETRY_MS);
    });
  }

  async #elapse(lane: Lane, timer: Timer): Promise<Applied> {
    const route = await this.#deps.answers.routeOf(timer.companyId, timer.integrationId);
    const out = await this.#deps.commits.run(
      async (client, plan): Promise<Elapsed> => {
        const conv = await lockConversation(client, timer.conversationId);
        if (conv && isAnswering(conv.state) && conv.snapshot.context.answerDueAt) return { kind: 'resume', conv };
        if (!conv || !isCollecting(conv.state)) return { kind: 'done', settle: [] };
        plan.step(conv, { type: 'debounce.elapsed', at: new Date(this.#deps.now()).toISOString() });
        if (!isAnswering(conv.state)) return { kind: 'collecting', conv };
        const messageId = conv.snapshot.context.lastCustomerMessageId ?? '';
        const text = collectedText(conv.snapshot.context);
        if (route.path.kind !== 'local') return { kind: 'answer', conv, messageId, text };
        return { kind: 'done', settle: await this.#deps.answers.askLocally(plan, [{ conv, messageId, text, agentId: route.agentId }]) };
      },
      (client, e) => settleAnswers(client, e.kind === 'done' ? e.settle : []),
    );
    if (out.kind === 'collecting') this.arm(out.conv);
    if (out.kind === 'resume') {
      if (lane.agentTask) return 'ack';
      this.#deps.answers.resume(lane, out.conv);
      // Its outcome decides, as a first answer's does: one that could not be worked out is tried again.
      return lane.agentTask ? { wait: lane.agentTask } : 'ack';
    }
    if (out.kind !== 'answer') return 'ack';
    return { wait: this.#deps.answers.start(lane, out.conv, out.messageId, out.text, route) };
  }
}
