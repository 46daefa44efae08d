import type { Config } from '../lib/config.js';
import { query, type SqlPool } from '../lib/db.js';
import { guardForUrl } from '../lib/address-guard.js';
import { HelpdeskClient, HelpdeskError } from '../lib/helpdesk-client.js';
import type { Logger } from '../lib/logger.js';
import type { NatsConnection } from '../lib/nats.js';
import { SecretBox } from '../lib/secrets.js';
import type { StreamNames } from '../lib/streams.js';
import { publishWebchatPush } from '../lib/webchat-pushes.js';
import { messageView, type ConversationNotice } from '../lib/conversations.js';
import { inSpan, NO_PARENT, SpanKind, traceOf, tracingEnabled } from '../lib/tracing.js';
import { Batcher } from './batcher.js';
import type { OwnedPartition } from './partitions.js';
import { deliveredAs, readHistory } from './reconcile.js';
import type { MessageRow, OutboxSend } from './store.js';

/**
 * Sends what the host put in the outbox (transactional outbox): agent replies, handoff
 * notices and operator replies, exactly once at the helpdesk (contract.md § Delivery).
 *
 * - A row moves `pending → sending → sent | failed | cancelled`. `sending` is committed
 *   before the HTTP call, with `sending_at` and the partition lease's epoch (`lease_rev`,
 *   actors/partitions.ts) as a fencing token; right before the call the sender checks that
 *   it still holds that lease (by its own clock: a stalled process sends nothing), and every
 *   later write of the row is conditional on the epoch, so a sender that lost its lease
 *   changes nothing. Every Chat2Desk send carries `external_id` = the row id.
 * - A row found in `sending` by anyone but its live sender (left by a killed or stalled
 *   worker: an older epoch; or whose send failed in a way that may have delivered it: a
 *   timeout, a cut connection, a 5xx) is *uncertain*: before anything is sent again it is
 *   reconciled against the helpdesk's history (actors/reconcile.ts). Delivered: its remote id
 *   is recorded, nothing is sent. Not delivered: sent. History unreadable: reconciliation is
 *   retried with backoff, never a blind send; past `maxReconcileAttempts` the row is failed
 *   with `delivery uncertain`, visible to operators.
 * - A new owner of a partition claims the uncertain rows of older epochs at once (the
 *   worker kicks the dispatcher at every acquisition): nothing waits for a claim to expire.
 *
 * Claims: rows of owned partitions with `for update skip locked`; one conversation's rows go
 * out one at a time, in order (a row is claimable only when no earlier row of its
 * conversation is pending or sending). Right before sending an agent reply the conversation
 * is checked again: paused, closed or with a pending operator hold, the reply is cancelled;
 * a handoff notice of a closed conversation is cancelled too; the agent's last words as it
 * closes the conversation (`closing_reply`) only by an operator's hold. A `helpdesk_transfer`
 * row is the Chat2Desk `transfer_to_group` call of a handed-off dialog (keyed to the
 * customer's message), sent like a reply, once; it is not reconciled (a transfer leaves no
 * message in the history): one whose outcome is unknown is made again, which moves a dialog
 * already in the group nowhere. It is cancelled when the conversation is no longer paused.
 * Other failures: 429 and sends
 * that cannot have arrived are retried with backoff (or after the helpdesk's `Retry-After`)
 * up to `maxAttempts`; any other 4xx, and a `{"status":"error"}` answer (HTTP 200 included:
 * Chat2Desk refused it, nothing was delivered), is failed at once. Webchat replies are marked sent first, then pushed to the gateway holding
 * the visitor's socket (a visitor resumes by seq, so a push is never the only copy).
 *
 * Throughput: the claim is one statement that also returns what a send needs; sends are a
 * pipeline of up to `maxInFlight`; finished rows are group-committed by a Batcher. Rows the
 * host could insert already `sending` (no earlier row of their conversation unfinished, its
 * partition's lease valid) are handed over right after its commit (`handOver`).
 */
export interface DispatcherDeps {
  sql: SqlPool;
  nc: NatsConnection;
  names: StreamNames;
  config: Pick<Config, 'secretsKeys' | 'allowPrivateUrls' | 'helpdeskGlobalUrl' | 'helpdeskEuropeUrl'>;
  logger: Logger;
  /** The partitions this worker owns, with their epochs, and whether it still holds one. */
  leases: { ownedWithEpochs(): OwnedPartition[]; holds(partition: number, epoch: number): boolean };
}

export interface DispatcherOptions {
  /** Claim this often when nothing was kicked (due retries, expired claims, other workers' leftovers). */
  pollMs?: number;
  /** Rows per claim statement. */
  batch?: number;
  /** Sends under way at once. */
  maxInFlight?: number;
  maxAttempts?: number;
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  /** How long a claim lasts: a row of this worker's own epoch whose bookkeeping was lost is claimed again after it. */
  claimMs?: number;
  helpdeskTimeoutMs?: number;
  /** Reconciliations of one row that could not read the history, before it is failed as `delivery uncertain`. */
  maxReconcileAttempts?: number;
  /** History pages read per reconciliation at most. */
  historyPages?: number;
}

type FinalStatus = 'sent' | 'failed' | 'cancelled';

interface Finish {
  outboxId: string;
  messageId: string;
  leaseRev: string;
  status: FinalStatus;
  externalId: string | null;
  error: string | null;
}

interface RetryLater {
  outboxId: string;
  leaseRev: string;
  error: string;
  delayMs: number;
  /** The row stays `sending` (it may have been delivered: reconcile before resending) or goes back to `pending`. */
  uncertain: boolean;
  /** Counts a reconciliation that could not read the history. */
  unreadable: boolean;
}

type FinishedMessage = MessageRow & { delivery_error: string | null };

/** The epoch of the row's partition among the claimed ones (the arrays $2 / $3 of the claim). */
const EPOCH = (partition: string) => `($3::bigint[])[array_position($2::int[], ${partition})]`;

// `= any(array(…))`: the locking subquery is an init plan, run once, and the claimed rows
// are then fetched by primary key (an `in (…)` semi-join was planned as a seq scan of outbox).
// A row already `sending` is uncertain; it keeps its `sending_at` (reconciliation compares
// the history with it), so RETURNING tells the two kinds apart by `sending_at < now()`
// (now() is this transaction's start: a fresh claim's sending_at equals it).
const CLAIM_SQL = `
update outbox o set status = 'sending', attempts = o.attempts + 1,
  sending_at = case when o.status = 'sending' and o.sending_at is not null then o.sending_at else now() end,
  lease_rev = ${EPOCH('o.partition')},
  claimed_until = now() + ($1::int * interval '1 millisecond'), updated_at = now()
from conversations c, integrations i, conversation_messages m
where o.id = any(array(
    select d.id from outbox d
    where d.partition = any($2::int[])
      and d.status in ('pending', 'sending')
      and d.next_attempt_at <= now()
      and (d.status = 'pending' or d.lease_rev is null or d.lease_rev < ${EPOCH('d.partition')} or d.claimed_until is null or d.claimed_until < now())
      and not exists (select 1 from outbox e where e.conversation_id = d.conversation_id and e.id < d.id and e.status in ('pending', 'sending'))
    order by d.id limit $4 for update skip locked))
  and c.id = o.conversation_id and i.id = c.integration_id and m.id = o.message_id
returning o.id, o.company_id, o.conversation_id, o.message_id, o.kind, o.attempts, o.partition, o.lease_rev::text, o.sending_at,
  o.reconcile_attempts, (o.sending_at < now()) as uncertain, o.last_error,
  exists (select 1 from outbox l where l.conversation_id = o.conversation_id and l.id > o.id and l.status in ('pending', 'sending')) as has_next,
  c.status as conversation_status, c.hold_requested_at, c.channel, c.client_id, c.channel_id, c.transport, c.integration_id,
  i.api_url, i.api_token_sealed, i.handoff_group_id, m.seq, m.role, m.text, m.created_at,
  case when o.kind = 'helpdesk_transfer' then (select r.external_id from conversation_messages r where r.id = m.reply_to_id) end as reply_to_external_id`;

// The outbox row and its message in one statement (a data-modifying CTE always runs); only
// rows still sending under the finishing sender's epoch change (fencing).
const FINISH_SQL = `
with done as (
  select * from unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::text[]) as d(outbox_id, lease_rev, status, external_id, error)
), outbox_done as (
  update outbox o set status = d.status, external_id = coalesce(d.external_id, o.external_id), last_error = d.error, claimed_until = null, updated_at = now(),
    sent_at = case when d.status = 'sent' then now() else null end
  from done d where o.id = d.outbox_id and o.status = 'sending' and o.lease_rev = d.lease_rev
  returning o.id, o.message_id, d.status, d.external_id, d.error
)
update conversation_messages m set delivery = d.status, external_id = coalesce(d.external_id, m.external_id), delivery_error = d.error
from outbox_done d where m.id = d.message_id
returning m.id, m.company_id, m.conversation_id, m.seq, m.role, m.kind, m.text, m.external_id, m.reply_to_id, m.delivery, m.delivery_error, m.sources, m.confidence, m.created_at`;

const RETRY_LATER_SQL = `
update outbox o set status = case when r.uncertain then 'sending' else 'pending' end, claimed_until = null, last_error = r.error,
  next_attempt_at = now() + (r.delay_ms * interval '1 millisecond'), updated_at = now(),
  reconcile_attempts = o.reconcile_attempts + case when r.unreadable then 1 else 0 end
from unnest($1::bigint[], $2::bigint[], $3::text[], $4::int[], $5::boolean[], $6::boolean[]) as r(id, lease_rev, error, delay_ms, uncertain, unreadable)
where o.id = r.id and o.status = 'sending' and o.lease_rev = r.lease_rev`;

/** Remote ids already recorded for the conversation's other rows: a history message carrying one is theirs. */
const RECORDED_SQL = `select external_id from outbox where conversation_id = $1 and id <> $2 and external_id is not null`;

const MAX_CACHED_CLIENTS = 1000;

export class OutboxDispatcher {
  readonly #deps: DispatcherDeps;
  readonly #secrets: SecretBox;
  readonly #o: Required<DispatcherOptions>;
  /** Helpdesk clients by sealed token: the token is unsealed once, and an edited token is a new key. */
  readonly #clients = new Map<string, HelpdeskClient>();
  readonly #finishes: Batcher<Finish, FinishedMessage | null>;
  readonly #retries: Batcher<RetryLater, void>;
  /** Sends under way, by outbox id. */
  readonly #sending = new Map<string, { partition: number; done: Promise<void> }>();
  #claiming: Promise<void> | null = null;
  /** Another claim may find rows: kicked, the last claim was full, or a finished send may have unblocked its conversation. */
  #due = false;
  /** Counts kicks, so a send can tell whether rows were queued while it was under way. */
  #kicks = 0;
  #pollTimer: NodeJS.Timeout | null = null;
  #closed = false;

  constructor(deps: DispatcherDeps, options: DispatcherOptions = {}) {
    this.#deps = deps;
    this.#secrets = new SecretBox(deps.config.secretsKeys);
    this.#o = {
      pollMs: options.pollMs ?? 500,
      batch: options.batch ?? 128,
      maxInFlight: options.maxInFlight ?? 256,
      maxAttempts: options.maxAttempts ?? 10,
      baseBackoffMs: options.baseBackoffMs ?? 500,
      maxBackoffMs: options.maxBackoffMs ?? 60_000,
      claimMs: options.claimMs ?? 30_000,
      helpdeskTimeoutMs: options.helpdeskTimeoutMs ?? 10_000,
      maxReconcileAttempts: options.maxReconcileAttempts ?? 8,
      historyPages: options.historyPages ?? 25,
    };
    this.#finishes = new Batcher((reqs) => this.#flushFinishes(reqs));
    this.#retries = new Batcher((reqs) => this.#flushRetries(reqs));
  }

  start(): void {
    this.#due = true;
    this.#pump();
  }

  /** How long a claim lasts (rows the host inserts already claimed use it too). */
  get claimMs(): number {
    return this.#o.claimMs;
  }

  /**
   * Rows the host committed already `sending` under its lease: sent at once, without a claim
   * statement. If this worker stops before they are sent, the partition's next owner finds
   * them uncertain and reconciles them.
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
    try {
      claimed = await this.#claim(limit);
    } catch (err) {
      if (!this.#closed) this.#deps.logger.warn({ err }, 'outbox: claim failed');
    }
    if (claimed.length === limit) this.#due = true;
    for (const row of claimed) this.#track(row, kicksBefore);
    if (!this.#due) this.#pollLater();
  }

  /** Sends a claimed row, tracked until its bookkeeping is done. */
  #track(row: OutboxSend, kicksBefore: number): void {
    // Its claim expired while it is still being sent here: that send finishes it.
    if (this.#sending.has(row.id)) return;
    const done = this.#deliver(row).finally(() => {
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

  async #claim(limit: number): Promise<OutboxSend[]> {
    const owned = this.#deps.leases.ownedWithEpochs();
    if (owned.length === 0) return [];
    return query<OutboxSend>(this.#deps.sql, 'outbox_claim', CLAIM_SQL, [this.#o.claimMs, owned.map((o) => o.partition), owned.map((o) => o.epoch), limit]);
  }

  async #flushFinishes(reqs: Finish[]): Promise<(FinishedMessage | null)[]> {
    const messages = await query<FinishedMessage>(this.#deps.sql, 'outbox_finish', FINISH_SQL, [
      reqs.map((r) => r.outboxId),
      reqs.map((r) => r.leaseRev),
      reqs.map((r) => r.status),
      reqs.map((r) => r.externalId),
      reqs.map((r) => r.error),
    ]);
    const byId = new Map(messages.map((m) => [String(m.id), m]));
    return reqs.map((r) => byId.get(r.messageId) ?? null);
  }

  async #flushRetries(reqs: RetryLater[]): Promise<void[]> {
    await query(this.#deps.sql, 'outbox_retry_later', RETRY_LATER_SQL, [
      reqs.map((r) => r.outboxId),
      reqs.map((r) => r.leaseRev),
      reqs.map((r) => r.error),
      reqs.map((r) => r.delayMs),
      reqs.map((r) => r.uncertain),
      reqs.map((r) => r.unreadable),
    ]);
    return reqs.map(() => undefined);
  }

  /** Records the outcome (if this sender still holds the row), then tells the conversation's watchers about the message. */
  async #finish(row: OutboxSend, status: FinalStatus, info: { externalId?: string | null; error?: string | null } = {}): Promise<void> {
    const msg = await this.#finishes.submit({ outboxId: row.id, messageId: row.message_id, leaseRev: row.lease_rev, status, externalId: info.externalId ?? null, error: info.error ?? null });
    if (!msg) return;
    const notice: ConversationNotice = {
      type: 'message',
      conversationId: row.conversation_id,
      message: messageView({ id: msg.id, seq: msg.seq, role: msg.role, kind: msg.kind, text: msg.text, externalId: msg.external_id, replyToId: msg.reply_to_id, delivery: msg.delivery, deliveryError: msg.delivery_error, sources: msg.sources ?? null, confidence: msg.confidence ?? null, createdAt: msg.created_at }),
    };
    try {
      this.#deps.nc.publish(this.#deps.names.conversationEvents(row.company_id, row.conversation_id), JSON.stringify(notice));
    } catch {
      /* best effort */
    }
  }

  #backoff(n: number): number {
    return Math.min(this.#o.maxBackoffMs, this.#o.baseBackoffMs * 2 ** Math.max(0, n - 1));
  }

  async #retryLater(row: OutboxSend, error: string, how: { uncertain: boolean; unreadable?: boolean; delayMs?: number }): Promise<void> {
    const delayMs = how.delayMs ?? this.#backoff(how.unreadable ? row.reconcile_attempts + 1 : row.attempts);
    await this.#retries.submit({ outboxId: row.id, leaseRev: row.lease_rev, error, delayMs, uncertain: how.uncertain, unreadable: how.unreadable ?? false });
  }

  /** One delivery attempt of a row, as a span of the trace that produced the reply (a row claimed after a crash starts its own). */
  #deliver(row: OutboxSend): Promise<void> {
    if (!tracingEnabled()) return this.#deliverRow(row);
    const attributes = { 'mas.outbox_id': row.id, 'mas.outbox_kind': row.kind, 'mas.attempt': row.attempts, 'mas.uncertain': row.uncertain, 'mas.conversation_id': row.conversation_id };
    return inSpan(`${row.channel} send`, { kind: SpanKind.CLIENT, parent: traceOf(row) ?? NO_PARENT, attributes }, () => this.#deliverRow(row));
  }

  async #deliverRow(row: OutboxSend): Promise<void> {
    try {
      if (row.channel === 'webchat') return await this.#deliverWebchat(row);
      if (!row.api_url || !row.api_token_sealed) return await this.#finish(row, 'failed', { error: 'the integration has no apiUrl / apiToken' });
      const client = this.#clientFor(row.api_url, row.api_token_sealed);
      if (row.uncertain && row.kind !== 'helpdesk_transfer') {
        const verdict = await this.#reconcile(row, client);
        if (verdict.kind === 'delivered') return await this.#finish(row, 'sent', { externalId: verdict.externalId });
        if (verdict.kind === 'unreadable') {
          if (row.reconcile_attempts + 1 >= this.#o.maxReconcileAttempts) {
            this.#deps.logger.error({ outboxId: row.id, err: verdict.error }, 'outbox: delivery uncertain; giving up');
            return await this.#finish(row, 'failed', { error: `delivery uncertain: the helpdesk history could not be read (${verdict.error})` });
          }
          this.#deps.logger.warn({ outboxId: row.id, err: verdict.error }, 'outbox: cannot read the helpdesk history; reconciling again later');
          return await this.#retryLater(row, `reconciling: ${verdict.error}`, { uncertain: true, unreadable: true });
        }
      }
      // The last check before a bot message leaves (read by the claim): a human who took over wins.
      const cancelled = this.#cancelReason(row);
      if (cancelled) return await this.#finish(row, 'cancelled', { error: cancelled });
      // Attempts are counted at each claim, so a row whose sends keep dying with their sender
      // (crash after crash) ends here too instead of looping.
      if (row.attempts > this.#o.maxAttempts) {
        return await this.#finish(row, 'failed', { error: `gave up after ${this.#o.maxAttempts} attempts${row.last_error ? ` (last: ${row.last_error})` : ''}` });
      }
      // Fencing: a sender whose lease is gone (another worker owns the partition now, or this
      // process stalled past its validity) sends nothing; the owner reconciles the row.
      if (!this.#deps.leases.holds(row.partition, Number(row.lease_rev))) {
        this.#deps.logger.warn({ outboxId: row.id, partition: row.partition }, 'outbox: lease lost before sending; left to the partition\'s owner');
        return;
      }
      if (row.kind === 'helpdesk_transfer') return await this.#transfer(row, client);
      let res;
      try {
        res = await client.sendMessage({ client_id: row.client_id, text: row.text, transport: row.transport, channel_id: row.channel_id, type: 'to_client', external_id: row.id });
      } catch (err) {
        return await this.#sendFailed(row, err, 'POST /v1/messages');
      }
      const externalId = res?.data?.message_id;
      return await this.#finish(row, 'sent', { externalId: externalId === undefined || externalId === null ? null : String(externalId) });
    } catch (err) {
      this.#deps.logger.error({ err, outboxId: row.id }, 'outbox: delivery bookkeeping failed; the row is claimed again when its claim expires');
    }
  }

  /** A send that failed: retried, reconciled first when it may have arrived, or failed for good. */
  async #sendFailed(row: OutboxSend, err: unknown, what: string): Promise<void> {
    const e = err instanceof HelpdeskError ? err : new HelpdeskError(`helpdesk ${what}: ${(err as Error).message}`, null, null, { cause: err });
    // It may have arrived: reconciled before anything is sent again (reconciliation also ends it past maxAttempts).
    // The helpdesk's Retry-After (a 429, a 503) sets when the row is tried again.
    const delayMs = e.retryAfterMs ?? undefined;
    if (e.maybeDelivered) {
      this.#deps.logger.warn({ outboxId: row.id, attempt: row.attempts, err: e.message }, 'outbox: send outcome unknown; reconciling before any resend');
      return this.#retryLater(row, e.message, { uncertain: true, delayMs });
    }
    if (e.retryable && row.attempts < this.#o.maxAttempts) {
      this.#deps.logger.warn({ outboxId: row.id, attempt: row.attempts, err: e.message, retryAfterMs: e.retryAfterMs }, 'outbox: send failed; will retry');
      return this.#retryLater(row, e.message, { uncertain: false, delayMs });
    }
    this.#deps.logger.warn({ outboxId: row.id, attempt: row.attempts, err: e.message }, 'outbox: send failed permanently');
    return this.#finish(row, 'failed', { error: e.message });
  }

  /** A handed-off dialog transferred to the integration's operator group (Chat2Desk transfer_to_group). */
  async #transfer(row: OutboxSend, client: HelpdeskClient): Promise<void> {
    if (!row.handoff_group_id) return this.#finish(row, 'cancelled', { error: 'not sent: the integration has no handoffGroupId any more' });
    if (!row.reply_to_external_id) return this.#finish(row, 'failed', { error: 'the customer message has no helpdesk message id to transfer by' });
    try {
      await client.transferToGroup(row.reply_to_external_id, row.handoff_group_id);
    } catch (err) {
      return this.#sendFailed(row, err, 'GET /v1/messages/…/transfer_to_group');
    }
    return this.#finish(row, 'sent');
  }

  /** Why this row must not be sent any more, if it must not. */
  #cancelReason(row: OutboxSend): string | null {
    if (row.kind === 'agent_reply' && (row.conversation_status !== 'active' || row.hold_requested_at !== null)) {
      return `not sent: conversation ${row.hold_requested_at ? 'held by an operator' : row.conversation_status}`;
    }
    if (row.kind === 'handoff_notice' && row.conversation_status === 'closed') return 'not sent: conversation closed';
    if (row.kind === 'closing_reply' && row.hold_requested_at !== null) return 'not sent: conversation held by an operator';
    if (row.kind === 'helpdesk_transfer' && row.conversation_status !== 'paused') return `not sent: conversation ${row.conversation_status}`;
    return null;
  }

  /**
   * Webchat: marked sent first, then pushed; the gateway holding the visitor's socket reads
   * PostgreSQL when the push arrives, and a visitor who is away gets it on reconnect. An
   * uncertain webchat row is simply finished and pushed again (the socket dedupes by seq).
   */
  async #deliverWebchat(row: OutboxSend): Promise<void> {
    const cancelled = row.uncertain ? null : this.#cancelReason(row);
    if (cancelled) return this.#finish(row, 'cancelled', { error: cancelled });
    await this.#finish(row, 'sent');
    publishWebchatPush(this.#deps.nc, this.#deps.names, { integrationId: row.integration_id, clientId: row.client_id }, {
      type: 'message', conversationId: row.conversation_id, seq: row.seq, role: row.role === 'operator' ? 'operator' : 'agent', text: row.text, at: new Date(row.created_at).toISOString(),
    });
  }

  /** Whether an uncertain row reached the helpdesk (actors/reconcile.ts). */
  async #reconcile(row: OutboxSend, client: HelpdeskClient): Promise<{ kind: 'delivered'; externalId: string } | { kind: 'not_delivered' } | { kind: 'unreadable'; error: string }> {
    let history;
    try {
      history = await readHistory(client, row.client_id, this.#o.historyPages);
    } catch (err) {
      return { kind: 'unreadable', error: (err as Error).message };
    }
    const recorded = new Set((await query<{ external_id: string }>(this.#deps.sql, 'outbox_recorded_ids', RECORDED_SQL, [row.conversation_id, row.id])).map((r) => r.external_id));
    const remoteId = deliveredAs({ id: row.id, text: row.text, sendingAt: new Date(row.sending_at) }, history, recorded);
    this.#deps.logger.info({ outboxId: row.id, delivered: remoteId !== null }, 'outbox: reconciled an uncertain send');
    return remoteId === null ? { kind: 'not_delivered' } : { kind: 'delivered', externalId: remoteId };
  }

  #clientFor(apiUrl: string, tokenSealed: string): HelpdeskClient {
    const key = `${apiUrl}\n${tokenSealed}`;
    let client = this.#clients.get(key);
    if (!client) {
      if (this.#clients.size >= MAX_CACHED_CLIENTS) this.#clients.delete(this.#clients.keys().next().value!);
      client = new HelpdeskClient(apiUrl, this.#secrets.open(tokenSealed), { timeoutMs: this.#o.helpdeskTimeoutMs, guard: guardForUrl(this.#deps.config, apiUrl) });
      this.#clients.set(key, client);
    }
    return client;
  }

  /** Stops claiming; waits for the sends under way and their bookkeeping. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#pollTimer) clearTimeout(this.#pollTimer);
    this.#pollTimer = null;
    await this.#claiming;
    while (this.#sending.size > 0) await Promise.all([...this.#sending.values()].map((s) => s.done));
  }
}
