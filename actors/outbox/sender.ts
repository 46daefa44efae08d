import type { Config } from '../../lib/config.js';
import type { ConversationNotices } from '../../lib/conversations.js';
import type { SqlPool } from '../../lib/db.js';
import type { Logger } from '../../lib/logger.js';
import type { NatsConnection } from '../../lib/nats.js';
import type { StreamNames } from '../../lib/streams.js';
import { inSpan, NO_PARENT, SpanKind, traceOf, tracing } from '../../lib/tracing.js';
import { publishWebchatPush } from '../../lib/webchat-pushes.js';
import { Batcher } from '../../lib/batcher.js';
import type { InboundPublisher } from '../../lib/inbound.js';
import type { ChannelEffect, InboundEnvelope } from '../../schema/envelope.js';
import type { OwnedPartition } from '../partitions.js';
import { messageRowView } from '../plan.js';
import type { MessageRow } from '../tables/messages.js';
import { claimSends, finishSends, retrySendsLater, type Finish, type OutboxSend, type RetryLater } from '../tables/outbox.js';
import { Delivery, type DeliveryOptions, type Outcome } from './delivery.js';
import { WrittenParts } from './written-parts.js';

/**
 * Sends what the steps put in the outbox (transactional outbox): agent replies, handoff
 * notices, operator replies and transfers, exactly once at the helpdesk (contract.md §
 * Delivery). What each attempt does is actors/outbox/delivery.ts; this keeps them coming:
 *
 * - A row moves `pending → sending → sent | failed | cancelled`. `sending` is committed
 *   before the HTTP call, with `sending_at` and the partition lease's epoch (`lease_rev`,
 *   actors/partitions.ts) as a fencing token; every later write of the row is conditional on
 *   the epoch, so a sender that lost its lease changes nothing.
 * - Claims: rows of owned partitions (`for update skip locked`); one conversation's rows go out
 *   one at a time, in order. A new owner of a partition claims the uncertain rows of older
 *   epochs at once (the worker kicks the sender at every acquisition).
 * - Rows a step could insert already `sending` (no earlier row of their conversation
 *   unfinished, its partition's lease valid) are handed over right after its commit
 *   (`handOver`): no claim statement.
 * - Throughput: sends are a pipeline of up to `maxInFlight`; outcomes are group-committed.
 */
export interface SenderDeps {
  sql: SqlPool;
  nc: NatsConnection;
  names: StreamNames;
  config: Pick<Config, 'databaseUrl' | 'secretsKeys' | 'allowPrivateUrls' | 'helpdeskGlobalUrl' | 'helpdeskEuropeUrl' | 'whatsappGraphUrl' | 'whatsappGraphVersion' | 'whatsappStatusWaitMs' | 'telegramApiUrl'>;
  logger: Logger;
  /** Tells a conversation what its channel's refusal does to it (a `channel_refused` command to its partition). */
  publisher: InboundPublisher;
  /** The partitions this worker owns, with their epochs, and whether it still holds one. */
  leases: { ownedWithEpochs(): OwnedPartition[]; holds(partition: number, epoch: number): boolean };
}

export interface SenderOptions extends Partial<DeliveryOptions> {
  /** Claim this often when nothing was kicked (due retries, expired claims, other workers' leftovers). */
  pollMs?: number;
  /** Rows per claim statement. */
  batch?: number;
  /** Sends under way at once. */
  maxInFlight?: number;
  /** How long a claim lasts: a row of this worker's own epoch whose bookkeeping was lost is claimed again after it. */
  claimMs?: number;
}

export class OutboxSender {
  readonly #deps: SenderDeps;
  readonly #o: Required<Omit<SenderOptions, keyof DeliveryOptions>>;
  readonly #delivery: Delivery;
  readonly #writtenParts: WrittenParts;
  readonly #finishes: Batcher<Finish, Map<string, MessageRow>>;
  readonly #retries: Batcher<RetryLater, undefined>;
  /** Sends under way, by outbox id. */
  readonly #sending = new Map<string, { partition: number; done: Promise<void> }>();
  #claiming: Promise<void> | null = null;
  /** Another claim may find rows: kicked, the last claim was full, or a finished send may have unblocked its conversation. */
  #due = false;
  /** Counts kicks, so a send can tell whether rows were queued while it was under way. */
  #kicks = 0;
  #pollTimer: NodeJS.Timeout | null = null;
  #closed = false;

  constructor(deps: SenderDeps, options: SenderOptions = {}) {
    this.#deps = deps;
    this.#o = { pollMs: options.pollMs ?? 500, batch: options.batch ?? 128, maxInFlight: options.maxInFlight ?? 256, claimMs: options.claimMs ?? 30_000 };
    this.#writtenParts = new WrittenParts(deps.config.databaseUrl, deps.logger);
    this.#delivery = new Delivery(
      { sql: deps.sql, config: deps.config, logger: deps.logger, leases: deps.leases, writtenParts: this.#writtenParts },
      {
        maxAttempts: options.maxAttempts ?? 10,
        baseBackoffMs: options.baseBackoffMs ?? 500,
        maxBackoffMs: options.maxBackoffMs ?? 60_000,
        helpdeskTimeoutMs: options.helpdeskTimeoutMs ?? 10_000,
        maxReconcileAttempts: options.maxReconcileAttempts ?? 8,
        historyPages: options.historyPages ?? 25,
      },
    );
    this.#finishes = new Batcher(async (reqs) => {
      const messages = await finishSends(deps.sql, reqs);
      return reqs.map(() => messages);
    });
    this.#retries = new Batcher(async (reqs) => {
      await retrySendsLater(deps.sql, reqs);
      return reqs.map(() => undefined);
    });
  }

  start(): void {
    this.#due = true;
    this.#pump();
  }

  /** How long a claim lasts (rows a step inserts already claimed use it too). */
  get claimMs(): number {
    return this.#o.claimMs;
  }

  /**
   * Rows a step committed already `sending` under its lease: sent at once. If this worker
   * stops before they are sent, the partition's next owner finds them uncertain and reconciles
   * them.
   */
  handOver(rows: OutboxSend[]): void {
    if (this.#closed) return;
    const kicksBefore = this.#kicks;
    for (const row of rows) this.#track(row, kicksBefore);
  }

  /** Something was queued, or a partition was acquired: look now. */
  kick(): void {
    if (this.#closed) return;
    this.#kicks++;
    this.#due = true;
    this.#pump();
  }

  /** Resolves once the sends under way of this partition have finished (a lease is released after them). */
  async drainPartition(partition: number): Promise<void> {
    for (;;) {
      const pending = [...this.#sending.values()].filter((s) => s.partition === partition).map((s) => s.done);
      if (pending.length === 0) return;
      await Promise.all(pending);
    }
  }

  /** Stops claiming; waits for the sends under way and their bookkeeping. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#pollTimer) clearTimeout(this.#pollTimer);
    this.#pollTimer = null;
    await this.#claiming;
    while (this.#sending.size > 0) await Promise.all([...this.#sending.values()].map((s) => s.done));
    await this.#writtenParts.close();
  }

  /** Starts a claim when one is due, none is running and there is room for more sends. */
  #pump(): void {
    if (this.#closed || this.#claiming || !this.#due) return;
    const room = this.#o.maxInFlight - this.#sending.size;
    if (room <= 0) return;
    this.#due = false;
    this.#claiming = this.#claimAndSend(Math.min(this.#o.batch, room)).finally(() => {
      this.#claiming = null;
      this.#pump();
    });
  }

  async #claimAndSend(limit: number): Promise<void> {
    if (this.#pollTimer) clearTimeout(this.#pollTimer);
    this.#pollTimer = null;
    const kicksBefore = this.#kicks;
    let claimed: OutboxSend[] = [];
    const owned = this.#deps.leases.ownedWithEpochs();
    try {
      if (owned.length > 0) claimed = await claimSends(this.#deps.sql, owned, this.#o.claimMs, limit);
    } catch (err) {
      if (!this.#closed) this.#deps.logger.warn({ err }, 'outbox: claim failed');
    }
    if (claimed.length === limit) this.#due = true;
    for (const row of claimed) this.#track(row, kicksBefore);
    if (!this.#due) this.#pollLater();
  }

  /** Sends a claimed row, tracked until its outcome is recorded. */
  #track(row: OutboxSend, kicksBefore: number): void {
    // Its claim expired while it is still being sent here: that send finishes it.
    if (this.#sending.has(row.id)) return;
    const done = this.#send(row).finally(() => {
      this.#sending.delete(row.id);
      // The conversation's next row is claimable now, if there is one: it was there at
      // the claim (has_next), or it was queued (kicked) while this one was under way.
      if (row.has_next || this.#kicks !== kicksBefore) this.#due = true;
      this.#pump();
    });
    this.#sending.set(row.id, { partition: row.partition, done });
  }

  #pollLater(): void {
    if (this.#closed || this.#pollTimer) return;
    this.#pollTimer = setTimeout(() => {
      this.#pollTimer = null;
      this.#due = true;
      this.#pump();
    }, this.#o.pollMs);
  }

  /** One delivery attempt of a row, as a span of the trace that produced the reply (a row claimed after a crash starts its own). */
  #send(row: OutboxSend): Promise<void> {
    if (!tracing.enabled) return this.#attempt(row);
    const attributes = { 'mas.outbox_id': row.id, 'mas.outbox_kind': row.kind, 'mas.attempt': row.attempts, 'mas.uncertain': row.uncertain, 'mas.conversation_id': row.conversation_id };
    return inSpan(`${row.channel} send`, { kind: SpanKind.CLIENT, parent: traceOf(row) ?? NO_PARENT, attributes }, () => this.#attempt(row));
  }

  async #attempt(row: OutboxSend): Promise<void> {
    try {
      await this.#record(row, await this.#delivery.deliver(row));
    } catch (err) {
      this.#deps.logger.error({ err, outboxId: row.id }, 'outbox: delivery bookkeeping failed; the row is claimed again when its claim expires');
    }
  }

  /** Records an attempt's outcome (if this sender still holds the row); a finished row's message is told to its watchers. */
  async #record(row: OutboxSend, outcome: Outcome): Promise<void> {
    if (outcome.kind === 'leave') return;
    if (outcome.kind === 'retry') {
      await this.#retries.submit({ outboxId: row.id, leaseRev: row.lease_rev, error: outcome.error, delayMs: outcome.delayMs, uncertain: outcome.uncertain, unreadable: outcome.unreadable ?? false });
      return;
    }
    const finished = await this.#finishes.submit({ outboxId: row.id, leaseRev: row.lease_rev, status: outcome.status, externalId: outcome.externalId ?? null, error: outcome.error ?? null, errorCode: outcome.errorCode ?? null });
    const message = finished.get(row.id);
    if (!message) return;
    if (outcome.effect) await this.#tellConversation(row, outcome.effect);
    const { nc, names } = this.#deps;
    const notices: ConversationNotices = [{ type: 'message', conversationId: row.conversation_id, message: messageRowView(message) }];
    try {
      nc.publish(names.conversationEvents(row.company_id, row.conversation_id), JSON.stringify(notices));
      // The gateway holding the visitor's socket forwards it; a visitor who is away gets it on reconnect.
      if (outcome.push) publishWebchatPush(nc, names, { integrationId: row.integration_id, clientId: row.client_id }, outcome.push);
    } catch {
      /* best effort: the rows are the record */
    }
  }

  /** The conversation is handed to a person (window_closed) or closed (blocked) by its own worker, in turn with its messages. */
  async #tellConversation(row: OutboxSend, reason: ChannelEffect): Promise<void> {
    const env: InboundEnvelope = {
      v: 1, kind: 'operator', idempotencyKey: `channel-refused:${row.id}`, companyId: row.company_id, integrationId: row.integration_id, channel: row.channel,
      receivedAt: new Date().toISOString(), conversationId: row.conversation_id, clientId: row.client_id,
      command: { action: 'channel_refused', by: null, reason, outboxId: row.id },
    };
    try {
      await this.#deps.publisher.publish(env);
    } catch (err) {
      this.#deps.logger.error({ err, outboxId: row.id, reason }, 'outbox: could not tell the conversation what its channel refused');
    }
  }
}
