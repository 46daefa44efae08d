import type { Config } from '../lib/config.js';
import { query, type SqlPool } from '../lib/db.js';
import { HelpdeskClient, HelpdeskError } from '../lib/helpdesk-client.js';
import type { Logger } from '../lib/logger.js';
import type { NatsConnection } from '../lib/nats.js';
import { SecretBox } from '../lib/secrets.js';
import type { StreamNames } from '../lib/streams.js';
import { messageView, type ConversationNotice } from '../lib/conversations.js';
import { Batcher } from './batcher.js';
import type { MessageRow, OutboxSend } from './store.js';

/**
 * Sends what the host put in the outbox (transactional outbox): agent replies, handoff
 * notices and operator replies. Rows of the partitions this worker owns are claimed with
 * `for update skip locked` (a claim expires, so a crashed sender's rows are picked up
 * again); one conversation's rows go out one at a time, in order: a row is claimable only
 * when no earlier row of its conversation is pending or sending. Right before sending an
 * agent reply the conversation is checked again: paused, closed or with a pending operator
 * hold, the reply is cancelled, never sent; a handoff notice of a closed conversation is
 * cancelled too. 5xx / 429 / network errors are retried with exponential backoff up to
 * `maxAttempts`; any other 4xx is recorded as failed and not retried. Webchat replies are
 * marked sent first, then pushed to the gateway holding the visitor's socket.
 *
 * Throughput: the claim is one statement that also returns the conversation, integration
 * and message a send needs (that read is the "check right before sending"); sends are a
 * pipeline of up to `maxInFlight`, claimed again as soon as there is room and more may be
 * due; finished rows (outbox row and message in one statement) are group-committed by a
 * Batcher, and the `message` notices are published from what that statement returns.
 * Bookkeeping that fails is logged and left to claim expiry. Rows the host could insert
 * already claimed (no earlier row of their conversation unfinished) are handed over right
 * after its commit (`handOver`) and skip the claim.
 */
export interface DispatcherDeps {
  sql: SqlPool;
  nc: NatsConnection;
  names: StreamNames;
  config: Pick<Config, 'secretsKeys'>;
  logger: Logger;
  owned: () => number[];
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
  claimMs?: number;
  helpdeskTimeoutMs?: number;
}

type FinalStatus = 'sent' | 'failed' | 'cancelled';

interface Finish {
  outboxId: string;
  messageId: string;
  status: FinalStatus;
  externalId: string | null;
  error: string | null;
}

interface RetryLater {
  outboxId: string;
  error: string;
  delayMs: number;
}

type FinishedMessage = MessageRow & { delivery_error: string | null };

// `= any(array(…))`: the locking subquery is an init plan, run once, and the claimed rows
// are then fetched by primary key (an `in (…)` semi-join was planned as a seq scan of outbox).
const CLAIM_SQL = `
update outbox o set status = 'sending', attempts = o.attempts + 1, claimed_until = now() + ($1::int * interval '1 millisecond'), updated_at = now()
from conversations c, integrations i, conversation_messages m
where o.id = any(array(
    select d.id from outbox d
    where d.partition = any($2::int[])
      and (d.status = 'pending' or (d.status = 'sending' and d.claimed_until < now()))
      and d.next_attempt_at <= now()
      and not exists (select 1 from outbox e where e.conversation_id = d.conversation_id and e.id < d.id and e.status in ('pending', 'sending'))
    order by d.id limit $3 for update skip locked))
  and c.id = o.conversation_id and i.id = c.integration_id and m.id = o.message_id
returning o.id, o.company_id, o.conversation_id, o.message_id, o.kind, o.attempts,
  exists (select 1 from outbox l where l.conversation_id = o.conversation_id and l.id > o.id and l.status in ('pending', 'sending')) as has_next,
  c.status as conversation_status, c.hold_requested_at, c.channel, c.client_id, c.channel_id, c.transport, c.integration_id,
  i.api_url, i.api_token_sealed, m.seq, m.role, m.text, m.created_at`;

// The outbox row and its message in one statement (a data-modifying CTE always runs).
const FINISH_SQL = `
with done as (
  select * from unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::text[]) as d(outbox_id, message_id, status, external_id, error)
), outbox_done as (
  update outbox o set status = d.status, external_id = d.external_id, last_error = d.error, claimed_until = null, updated_at = now(),
    sent_at = case when d.status = 'sent' then now() else null end
  from done d where o.id = d.outbox_id
)
update conversation_messages m set delivery = d.status, external_id = coalesce(d.external_id, m.external_id), delivery_error = d.error
from done d where m.id = d.message_id
returning m.id, m.company_id, m.conversation_id, m.seq, m.role, m.kind, m.text, m.external_id, m.reply_to_id, m.delivery, m.delivery_error, m.created_at`;

const RETRY_LATER_SQL = `
update outbox o set status = 'pending', claimed_until = null, last_error = r.error, next_attempt_at = now() + (r.delay_ms * interval '1 millisecond'), updated_at = now()
from unnest($1::bigint[], $2::text[], $3::int[]) as r(id, error, delay_ms)
where o.id = r.id`;

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
  readonly #sending = new Map<string, Promise<void>>();
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
   * Rows the host committed already claimed (no earlier row of their conversation was
   * unfinished): sent at once, without a claim statement. If this worker stops before they
   * are sent, their claim expires and whoever owns the partition then sends them.
   */
  handOver(rows: OutboxSend[]): void {
    if (this.#closed) return;
    const kicksBefore = this.#kicks;
    for (const row of rows) this.#track(row, kicksBefore);
  }

  /** Something was queued: look now. */
  kick(): void {
    if (this.#closed) return;
    this.#kicks++;
    this.#due = true;
    this.#pump();
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
    const sending = this.#deliver(row).finally(() => {
      this.#sending.delete(row.id);
      // The conversation's next row is claimable now, if there is one: it was there at
      // the claim (has_next), or it was queued (kicked) while this one was under way.
      if (row.has_next || this.#kicks !== kicksBefore) this.#due = true;
      this.#pump();
    });
    this.#sending.set(row.id, sending);
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
    const owned = this.#deps.owned();
    if (owned.length === 0) return [];
    return query<OutboxSend>(this.#deps.sql, 'outbox_claim', CLAIM_SQL, [this.#o.claimMs, owned, limit]);
  }

  async #flushFinishes(reqs: Finish[]): Promise<(FinishedMessage | null)[]> {
    const messages = await query<FinishedMessage>(this.#deps.sql, 'outbox_finish', FINISH_SQL, [
      reqs.map((r) => r.outboxId),
      reqs.map((r) => r.messageId),
      reqs.map((r) => r.status),
      reqs.map((r) => r.externalId),
      reqs.map((r) => r.error),
    ]);
    const byId = new Map(messages.map((m) => [String(m.id), m]));
    return reqs.map((r) => byId.get(r.messageId) ?? null);
  }

  async #flushRetries(reqs: RetryLater[]): Promise<void[]> {
    await query(this.#deps.sql, 'outbox_retry_later', RETRY_LATER_SQL, [reqs.map((r) => r.outboxId), reqs.map((r) => r.error), reqs.map((r) => r.delayMs)]);
    return reqs.map(() => undefined);
  }

  /** Records the outcome, then tells the conversation's watchers (operator UI) about the message. */
  async #finish(row: OutboxSend, status: FinalStatus, info: { externalId?: string | null; error?: string | null } = {}): Promise<void> {
    const msg = await this.#finishes.submit({ outboxId: row.id, messageId: row.message_id, status, externalId: info.externalId ?? null, error: info.error ?? null });
    if (!msg) return;
    const notice: ConversationNotice = {
      type: 'message',
      conversationId: row.conversation_id,
      message: messageView({ id: msg.id, seq: msg.seq, role: msg.role, kind: msg.kind, text: msg.text, externalId: msg.external_id, replyToId: msg.reply_to_id, delivery: msg.delivery, deliveryError: msg.delivery_error, createdAt: msg.created_at }),
    };
    try {
      this.#deps.nc.publish(this.#deps.names.conversationEvents(row.company_id, row.conversation_id), JSON.stringify(notice));
    } catch {
      /* best effort */
    }
  }

  async #retryLater(row: OutboxSend, error: string): Promise<void> {
    const delayMs = Math.min(this.#o.maxBackoffMs, this.#o.baseBackoffMs * 2 ** Math.max(0, row.attempts - 1));
    await this.#retries.submit({ outboxId: row.id, error, delayMs });
  }

  async #deliver(row: OutboxSend): Promise<void> {
    try {
      // The last check before a bot message leaves (read by the claim): a human who took over wins.
      if (row.kind === 'agent_reply' && (row.conversation_status !== 'active' || row.hold_requested_at !== null)) {
        return await this.#finish(row, 'cancelled', { error: `not sent: conversation ${row.hold_requested_at ? 'held by an operator' : row.conversation_status}` });
      }
      if (row.kind === 'handoff_notice' && row.conversation_status === 'closed') return await this.#finish(row, 'cancelled', { error: 'not sent: conversation closed' });

      if (row.channel === 'webchat') {
        // Marked sent first: the gateway holding the visitor's socket reads PostgreSQL when
        // this push arrives (and a visitor who is away gets it from there on reconnect).
        await this.#finish(row, 'sent');
        this.#deps.nc.publish(
          this.#deps.names.webchatOutbound(row.integration_id, row.client_id),
          JSON.stringify({ type: 'message', conversationId: row.conversation_id, seq: row.seq, role: row.role === 'operator' ? 'operator' : 'agent', text: row.text, at: new Date(row.created_at).toISOString() }),
        );
        return;
      }
      if (!row.api_url || !row.api_token_sealed) return await this.#finish(row, 'failed', { error: 'the integration has no apiUrl / apiToken' });
      const client = this.#clientFor(row.api_url, row.api_token_sealed);
      try {
        const res = await client.sendMessage({ client_id: row.client_id, text: row.text, transport: row.transport, channel_id: row.channel_id, type: 'to_client' });
        const externalId = res?.data?.message_id;
        return await this.#finish(row, 'sent', { externalId: externalId === undefined || externalId === null ? null : String(externalId) });
      } catch (err) {
        const e = err as HelpdeskError;
        const retryable = !(err instanceof HelpdeskError) || e.retryable;
        if (retryable && row.attempts < this.#o.maxAttempts) {
          this.#deps.logger.warn({ outboxId: row.id, attempt: row.attempts, err: e.message }, 'outbox: send failed; will retry');
          return await this.#retryLater(row, e.message);
        }
        this.#deps.logger.warn({ outboxId: row.id, attempt: row.attempts, err: e.message }, 'outbox: send failed permanently');
        return await this.#finish(row, 'failed', { error: e.message });
      }
    } catch (err) {
      this.#deps.logger.error({ err, outboxId: row.id }, 'outbox: delivery bookkeeping failed; the claim will expire and it is retried');
    }
  }

  #clientFor(apiUrl: string, tokenSealed: string): HelpdeskClient {
    const key = `${apiUrl}\n${tokenSealed}`;
    let client = this.#clients.get(key);
    if (!client) {
      if (this.#clients.size >= MAX_CACHED_CLIENTS) this.#clients.delete(this.#clients.keys().next().value!);
      client = new HelpdeskClient(apiUrl, this.#secrets.open(tokenSealed), this.#o.helpdeskTimeoutMs);
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
    while (this.#sending.size > 0) await Promise.all(this.#sending.values());
  }
}
