import type { Config } from '../lib/config.js';
import type { Orm } from '../lib/db.js';
import { HelpdeskClient, HelpdeskError } from '../lib/helpdesk-client.js';
import type { Logger } from '../lib/logger.js';
import type { NatsConnection } from '../lib/nats.js';
import { SecretBox } from '../lib/secrets.js';
import type { StreamNames } from '../lib/streams.js';
import { messageView, type ConversationNotice } from '../lib/conversations.js';
import type { MessageRow } from './store.js';
import type { EntityManager } from '../lib/db.js';

async function rows<T>(em: EntityManager, sql: string, params: unknown[] = []): Promise<T[]> {
  return (await em.execute(sql, params as never[], 'all')) as unknown as T[];
}

/**
 * Sends what the host put in the outbox (transactional outbox): agent replies, handoff
 * notices and operator replies. Rows of the partitions this worker owns are claimed with
 * `for update skip locked` (a claim expires, so a crashed sender's rows are picked up
 * again); one conversation's rows go out one at a time, in order. Right before sending an
 * agent reply the conversation is checked again: paused, closed or with a pending operator
 * hold, the reply is cancelled, never sent. 5xx / 429 / network errors are retried with
 * exponential backoff; any other 4xx is recorded as failed and not retried.
 */
export interface DispatcherDeps {
  orm: Orm;
  nc: NatsConnection;
  names: StreamNames;
  config: Pick<Config, 'secretsKeys'>;
  logger: Logger;
  owned: () => number[];
}

export interface DispatcherOptions {
  pollMs?: number;
  batch?: number;
  maxAttempts?: number;
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  claimMs?: number;
  helpdeskTimeoutMs?: number;
}

interface OutboxRow {
  id: string;
  company_id: number;
  conversation_id: number;
  message_id: string;
  kind: 'agent_reply' | 'handoff_notice' | 'operator_reply';
  attempts: number;
}

interface TargetRow {
  status: string;
  hold_requested_at: Date | null;
  channel: 'helpdesk' | 'webchat';
  client_id: string;
  channel_id: string | null;
  transport: string | null;
  integration_id: number;
  api_url: string | null;
  api_token_sealed: string | null;
}

const MAX_CACHED_CLIENTS = 1000;

export class OutboxDispatcher {
  readonly #deps: DispatcherDeps;
  readonly #secrets: SecretBox;
  readonly #o: Required<DispatcherOptions>;
  /** Helpdesk clients by sealed token: the token is unsealed once, and an edited token is a new key. */
  readonly #clients = new Map<string, HelpdeskClient>();
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;
  #again = false;
  #closed = false;

  constructor(deps: DispatcherDeps, options: DispatcherOptions = {}) {
    this.#deps = deps;
    this.#secrets = new SecretBox(deps.config.secretsKeys);
    this.#o = {
      pollMs: options.pollMs ?? 500,
      batch: options.batch ?? 20,
      maxAttempts: options.maxAttempts ?? 10,
      baseBackoffMs: options.baseBackoffMs ?? 500,
      maxBackoffMs: options.maxBackoffMs ?? 60_000,
      claimMs: options.claimMs ?? 30_000,
      helpdeskTimeoutMs: options.helpdeskTimeoutMs ?? 10_000,
    };
  }

  start(): void {
    this.#schedule(0);
  }

  /** Something was queued: look now. */
  kick(): void {
    if (this.#closed) return;
    if (this.#running) this.#again = true;
    else this.#schedule(0);
  }

  #schedule(ms: number): void {
    if (this.#closed) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#running = this.#run().finally(() => {
        this.#running = null;
        const again = this.#again;
        this.#again = false;
        this.#schedule(again ? 0 : this.#o.pollMs);
      });
    }, ms);
  }

  async #run(): Promise<void> {
    try {
      for (let rounds = 0; rounds < 20 && !this.#closed; rounds++) {
        const claimed = await this.#claim();
        if (claimed.length === 0) return;
        await Promise.all(claimed.map((r) => this.#deliver(r)));
      }
    } catch (err) {
      if (!this.#closed) this.#deps.logger.warn({ err }, 'outbox: dispatch round failed');
    }
  }

  async #claim(): Promise<OutboxRow[]> {
    const owned = this.#deps.owned();
    if (owned.length === 0) return [];
    return rows<OutboxRow>(
      this.#deps.orm.em.fork(),
      `update outbox set status = 'sending', attempts = attempts + 1, claimed_until = now() + (?::int * interval '1 millisecond'), updated_at = now()
       where id in (
         select o.id from outbox o
         where o.partition = any(?::int[])
           and (o.status = 'pending' or (o.status = 'sending' and o.claimed_until < now()))
           and o.next_attempt_at <= now()
           and not exists (select 1 from outbox e where e.conversation_id = o.conversation_id and e.id < o.id and e.status in ('pending', 'sending'))
         order by o.id limit ? for update skip locked)
       returning id, company_id, conversation_id, message_id, kind, attempts`,
      [this.#o.claimMs, `{${owned.join(',')}}`, this.#o.batch],
    );
  }

  async #finish(row: OutboxRow, status: 'sent' | 'failed' | 'cancelled', info: { externalId?: string | null; error?: string | null } = {}): Promise<void> {
    const em = this.#deps.orm.em.fork();
    await em.transactional(async (tem) => {
      await tem.execute(
        `update outbox set status = ?, external_id = ?, last_error = ?, claimed_until = null, updated_at = now(), sent_at = case when ? = 'sent' then now() else null end where id = ?`,
        [status, info.externalId ?? null, info.error ?? null, status, row.id],
      );
      await tem.execute(`update conversation_messages set delivery = ?, external_id = coalesce(?, external_id), delivery_error = ? where id = ?`, [status, info.externalId ?? null, info.error ?? null, row.message_id]);
    });
    const msg = (await rows<MessageRow>(em, `select * from conversation_messages where id = ?`, [row.message_id]))[0];
    if (msg) {
      const notice: ConversationNotice = {
        type: 'message',
        conversationId: row.conversation_id,
        message: messageView({ id: msg.id, seq: msg.seq, role: msg.role, kind: msg.kind, text: msg.text, externalId: msg.external_id, replyToId: msg.reply_to_id, delivery: msg.delivery, deliveryError: (msg as MessageRow & { delivery_error?: string | null }).delivery_error ?? null, createdAt: msg.created_at }),
      };
      try {
        this.#deps.nc.publish(this.#deps.names.conversationEvents(row.company_id, row.conversation_id), JSON.stringify(notice));
      } catch {
        /* best effort */
      }
    }
  }

  async #retryLater(row: OutboxRow, error: string): Promise<void> {
    const delay = Math.min(this.#o.maxBackoffMs, this.#o.baseBackoffMs * 2 ** Math.max(0, row.attempts - 1));
    await this.#deps.orm.em.fork().execute(
      `update outbox set status = 'pending', claimed_until = null, last_error = ?, next_attempt_at = now() + (?::int * interval '1 millisecond'), updated_at = now() where id = ?`,
      [error, delay, row.id],
    );
    this.#again = true;
  }

  async #deliver(row: OutboxRow): Promise<void> {
    const em = this.#deps.orm.em.fork();
    try {
      const target = (
        await rows<TargetRow>(
          em,
          `select c.status, c.hold_requested_at, c.channel, c.client_id, c.channel_id, c.transport, c.integration_id, i.api_url, i.api_token_sealed
           from conversations c join integrations i on i.id = c.integration_id where c.id = ?`,
          [row.conversation_id],
        )
      )[0];
      const msg = (await rows<MessageRow>(em, `select * from conversation_messages where id = ?`, [row.message_id]))[0];
      if (!target || !msg) return this.#finish(row, 'cancelled', { error: 'conversation or message gone' });
      // The last check before a bot message leaves: a human who took over wins.
      if (row.kind === 'agent_reply' && (target.status !== 'active' || target.hold_requested_at !== null)) {
        return this.#finish(row, 'cancelled', { error: `not sent: conversation ${target.hold_requested_at ? 'held by an operator' : target.status}` });
      }
      if (row.kind === 'handoff_notice' && target.status === 'closed') return this.#finish(row, 'cancelled', { error: 'not sent: conversation closed' });

      if (target.channel === 'webchat') {
        // Marked sent first: the gateway holding the visitor's socket reads PostgreSQL when
        // this push arrives (and a visitor who is away gets it from there on reconnect).
        await this.#finish(row, 'sent');
        this.#deps.nc.publish(
          this.#deps.names.webchatOutbound(target.integration_id, target.client_id),
          JSON.stringify({ type: 'message', conversationId: row.conversation_id, seq: msg.seq, role: msg.role === 'operator' ? 'operator' : 'agent', text: msg.text, at: new Date(msg.created_at).toISOString() }),
        );
        return;
      }
      if (!target.api_url || !target.api_token_sealed) return this.#finish(row, 'failed', { error: 'the integration has no apiUrl / apiToken' });
      const client = this.#clientFor(target.api_url, target.api_token_sealed);
      try {
        const res = await client.sendMessage({ client_id: target.client_id, text: msg.text, transport: target.transport, channel_id: target.channel_id, type: 'to_client' });
        const externalId = res?.data?.message_id;
        return this.#finish(row, 'sent', { externalId: externalId === undefined || externalId === null ? null : String(externalId) });
      } catch (err) {
        const e = err as HelpdeskError;
        const retryable = !(err instanceof HelpdeskError) || e.retryable;
        if (retryable && row.attempts < this.#o.maxAttempts) {
          this.#deps.logger.warn({ outboxId: row.id, attempt: row.attempts, err: e.message }, 'outbox: send failed; will retry');
          return this.#retryLater(row, e.message);
        }
        this.#deps.logger.warn({ outboxId: row.id, attempt: row.attempts, err: e.message }, 'outbox: send failed permanently');
        return this.#finish(row, 'failed', { error: e.message });
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

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    await this.#running;
  }
}
