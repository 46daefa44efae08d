import { settleAnswers, type AnswerSettlement } from '../../lib/credit.js';
import { partitionOfEnvelope } from '../../lib/inbound.js';
import { attachTrace, traceOf } from '../../lib/tracing.js';
import { isOpen, outsideHoursOutput } from '../../lib/agents/hours.js';
import { query, type SqlClient } from '../../lib/db.js';
import { collectedText, statusOf } from '../../machines/conversation.js';
import type { ConversationEvent } from '../../schema/conversation.js';
import type { InboundEnvelope } from '../../schema/envelope.js';
import { Batcher } from '../batcher.js';
import { sleep } from '../limit.js';
import { createConversations, initialSnapshot, insertMessages, insertReceipts, lockOpenConversations, receiptKey, setReceiptOutcomes, type ConversationRow } from '../store.js';
import type { TxPlan } from '../tx-plan.js';
import { isAnswering, isCollecting, type AnswerRoute, type Answers } from './answers.js';
import type { Commits } from './commit.js';
import type { DebounceTimers } from './debounce.js';
import type { Applied, Lane } from './lanes.js';

/**
 * Customer messages, group-committed: the messages of all lanes that are ready go into ONE
 * transaction (actors/batcher.ts), each batch holding at most one per conversation (a lane
 * has one item in flight). In it the conversations are locked (`for update`, in id order) or
 * created, the inbound receipts drop redeliveries and the helpdesk's late retries, the
 * messages are stored and the machines stepped in memory (actors/tx-plan.ts); a `local`
 * agent answers in the same transaction (actors/host/answers.ts). Only after the commit are
 * the JetStream messages acked; a `call` agent's answer is then asked for, and the message is
 * acked once that answer is committed. A batch that fails is retried message by message, so
 * one bad envelope does not hold up the others.
 */
type MessageEnvelope = Extract<InboundEnvelope, { kind: 'message' }>;

interface MessageRequest {
  env: MessageEnvelope;
  route: AnswerRoute;
}

/** What became of a customer message: applied (or a duplicate), or the machine waits for an answer. */
type MessageOutcome =
  | { kind: 'done' }
  | { kind: 'answer'; conv: ConversationRow; messageId: string; text: string }
  /** The agent waits out its debounce window (actors/host/debounce.ts answers when it ends). */
  | { kind: 'collecting'; conv: ConversationRow }
  /** The conversation is answering an earlier message (a crash or another process left it so). */
  | { kind: 'busy'; conv: ConversationRow };

export class CustomerMessages {
  readonly #batch: Batcher<MessageRequest, MessageOutcome>;
  readonly #answers: Answers;
  readonly #partitions: number;
  readonly #debounce: DebounceTimers;
  readonly #now: () => number;

  constructor(deps: { commits: Commits; answers: Answers; debounce: DebounceTimers; partitions: number; now: () => number }, batch: { maxBatch?: number; concurrency?: number }) {
    this.#answers = deps.answers;
    this.#partitions = deps.partitions;
    this.#debounce = deps.debounce;
    this.#now = deps.now;
    this.#batch = new Batcher(async (reqs) => {
      const { outcomes } = await deps.commits.run(
        (client, plan) => this.#applyMessages(client, plan, reqs),
        (client, out) => settleAnswers(client, out.settle),
      );
      return outcomes;
    }, { ...batch, fairBy: (r) => r.env.companyId });
  }

  async apply(lane: Lane, env: MessageEnvelope): Promise<Applied> {
    for (;;) {
      // A machine answering an earlier message of this lane gets its answer first.
      while (lane.agentTask) await lane.agentTask;
      const route = await this.#answers.routeOf(env.companyId, env.integrationId);
      const outcome = await this.#batch.submit({ env, route });
      if (outcome.kind === 'done') return 'ack';
      // Stored with its deadline in the snapshot: acked now, answered when the window ends.
      if (outcome.kind === 'collecting') {
        this.#debounce.arm(outcome.conv);
        return 'ack';
      }
      if (outcome.kind === 'busy') {
        this.#answers.resume(lane, outcome.conv);
        if (!lane.agentTask) await sleep(200); // answering with no message to answer: another process owns it now
        continue;
      }
      // The JetStream message is acked once the answer is committed (or discarded).
      return { wait: this.#answers.start(lane, outcome.conv, outcome.messageId, outcome.text, route) };
    }
  }

  async #applyMessages(client: SqlClient, plan: TxPlan, reqs: MessageRequest[]): Promise<{ outcomes: MessageOutcome[]; settle: AnswerSettlement[] }> {
    const envs = reqs.map((r) => r.env);
    const outcomes: MessageOutcome[] = envs.map(() => ({ kind: 'done' }));
    const keyOf = (integrationId: number, clientId: string) => `${integrationId}\n${clientId}`;
    const keys = envs.map((e) => keyOf(e.integrationId, e.message.clientId));
    const open = new Map((await lockOpenConversations(client, envs.map((e) => ({ integrationId: e.integrationId, clientId: e.message.clientId })))).map((c) => [keyOf(c.integration_id, c.client_id), c]));
    const ready: number[] = [];
    envs.forEach((_, i) => {
      const conv = open.get(keys[i]!);
      if (conv && isAnswering(conv.state)) outcomes[i] = { kind: 'busy', conv };
      else ready.push(i);
    });
    const fresh = await insertReceipts(
      client,
      ready.map((i) => {
        const env = envs[i]!;
        return { integrationId: env.integrationId, key: env.idempotencyKey, companyId: env.companyId, kind: 'message', outcome: 'applied', conversationId: open.get(keys[i]!)?.id ?? null };
      }),
    );
    // Redeliveries and late helpdesk retries were applied before: acked, nothing written.
    const applying = ready.filter((i) => fresh.has(receiptKey(envs[i]!.integrationId, envs[i]!.idempotencyKey)));
    const missing = applying.filter((i) => !open.has(keys[i]!));
    if (missing.length > 0) {
      const snapshot = initialSnapshot();
      const created = await createConversations(
        client,
        missing.map((i) => {
          const env = envs[i]!;
          const m = env.message;
          return {
            companyId: env.companyId, integrationId: env.integrationId, channel: env.channel, clientId: m.clientId, status: statusOf(snapshot.value), snapshot,
            partition: partitionOfEnvelope(env, this.#partitions), channelId: m.channelId, transport: m.transport,
          };
        }),
      );
      for (const c of created) open.set(keyOf(c.integration_id, c.client_id), c);
      plan.opened.push(...created);
      await setReceiptOutcomes(
        client,
        missing.map((i) => ({ integrationId: envs[i]!.integrationId, key: envs[i]!.idempotencyKey, outcome: 'applied', conversationId: open.get(keys[i]!)!.id })),
      );
    }
    const convOf = (i: number) => open.get(keys[i]!)!;
    const stored = await insertMessages(
      client,
      applying.map((i) => {
        const conv = convOf(i);
        const m = envs[i]!.message;
        conv.message_seq += 1;
        return {
          companyId: conv.company_id, conversationId: conv.id, seq: conv.message_seq, role: 'customer', kind: 'message', text: m.text,
          externalId: m.messageId, replyToId: null, delivery: null, attachments: m.attachments,
        };
      }),
    );
    const storedByConv = new Map(stored.map((r) => [r.conversation_id, r]));
    const now = new Date(this.#now());
    // Read only for customers writing outside the hours of an agent that tells them once.
    const told = await toldOutsideHours(
      client,
      applying.filter((i) => {
        const hours = reqs[i]!.route.behaviour.hours;
        return hours?.outside === 'message' && !isOpen(hours, now);
      }).map((i) => convOf(i).id),
    );
    const local: { conv: ConversationRow; messageId: string; text: string; agentId: number | null }[] = [];
    for (const i of applying) {
      const conv = convOf(i);
      attachTrace(conv, traceOf(envs[i]!));
      const m = envs[i]!.message;
      const row = storedByConv.get(conv.id);
      if (!row) throw new Error(`customer message of conversation ${conv.id} (seq ${conv.message_seq}) was not stored`);
      plan.noticeStored(conv, row);
      const { behaviour } = reqs[i]!.route;
      // Outside business hours the agent's policy answers at once (no debounce window).
      const outside = outsideHoursOutput(behaviour.hours, now, told.has(conv.id));
      const event: ConversationEvent = {
        // Our clock, not the sender's: a debounce deadline is `at` + debounceMs, judged by our clock.
        type: 'customer.message', messageId: row.id, text: m.text, at: now.toISOString(),
        ...(m.requestId !== null ? { requestId: m.requestId } : {}),
        ...(m.dialogId !== null ? { dialogId: m.dialogId } : {}),
        ...(behaviour.debounceMs > 0 && !outside ? { debounceMs: behaviour.debounceMs } : {}),
      };
      plan.remember(conv, m.requestId, m.dialogId);
      plan.step(conv, event, { lastMessageAt: now, channelId: m.channelId, transport: m.transport });
      plan.touch(conv);
      if (isCollecting(conv.state)) outcomes[i] = { kind: 'collecting', conv };
      if (!isAnswering(conv.state)) continue;
      if (outside) {
        // Marked, so the transition log tells why, and a customer is told the hours once.
        plan.step(conv, { type: 'xstate.done.actor.agent', output: outside, outsideHours: true });
        continue;
      }
      const route = reqs[i]!.route;
      if (route.path.kind === 'local') local.push({ conv, messageId: row.id, text: collectedText(conv.snapshot.context), agentId: route.agentId });
      else outcomes[i] = { kind: 'answer', conv, messageId: row.id, text: collectedText(conv.snapshot.context) };
    }
    return { outcomes, settle: await this.#answers.askLocally(plan, local) };
  }
}

/** The conversations whose customer was already told the business hours (a transition marked `outsideHours`). */
async function toldOutsideHours(client: SqlClient, conversationIds: number[]): Promise<Set<number>> {
  if (conversationIds.length === 0) return new Set();
  const rows = await query<{ conversation_id: number }>(
    client,
    'conv_told_outside_hours',
    `select distinct conversation_id from conversation_transitions where conversation_id = any($1::int[]) and payload->>'outsideHours' = 'true'`,
    [conversationIds],
  );
  return new Set(rows.map((r) => r.conversation_id));
}
