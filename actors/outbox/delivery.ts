import type { Config } from '../../lib/config.js';
import { guardForUrl } from '../../lib/address-guard.js';
import type { SqlPool } from '../../lib/db.js';
import { HelpdeskClient, HelpdeskError } from '../../lib/helpdesk-client.js';
import type { Logger } from '../../lib/logger.js';
import { SecretBox } from '../../lib/secrets.js';
import type { WebchatPush } from '../../lib/webchat-pushes.js';
import { recordedExternalIds, type FinalStatus, type OutboxSend } from '../tables/outbox.js';
import { deliveredAs, readHistory } from './reconcile.js';

/**
 * One delivery attempt of a claimed outbox row, and the policy that decides what becomes of
 * it (contract.md § Delivery). It sends; the sender (actors/outbox/sender.ts) records what it
 * answers.
 *
 * - Right before sending a bot message the conversation is checked again (read by the
 *   claim): paused, closed or with a pending operator hold, an agent reply is cancelled; a
 *   handoff notice of a closed conversation is cancelled too; the agent's last words as it
 *   closes the conversation (`closing_reply`) only by an operator's hold.
 * - Fencing: a sender whose lease is gone (another worker owns the partition now, or this
 *   process stalled past its validity) sends nothing; the partition's owner reconciles it.
 * - A row found in `sending` by anyone but its live sender is *uncertain*: before anything is
 *   sent again it is reconciled against the helpdesk's history (actors/outbox/reconcile.ts).
 *   Delivered: its remote id is recorded, nothing is sent. Not delivered: sent. History
 *   unreadable: reconciled again later with backoff, never a blind send; past
 *   `maxReconcileAttempts` the row is failed with `delivery uncertain`.
 * - A failed send: one that may have arrived (a timeout, a cut connection, a 5xx) is
 *   reconciled before any resend; a 429 and sends that cannot have arrived are retried with
 *   backoff (or after the helpdesk's `Retry-After`) up to `maxAttempts`; any other 4xx, and a
 *   `{"status":"error"}` answer (HTTP 200 included), is failed at once.
 * - A `helpdesk_transfer` row is the Chat2Desk `transfer_to_group` call of a handed-off dialog,
 *   sent like a reply, once; it is not reconciled (a transfer leaves no message in the
 *   history): one whose outcome is unknown is made again, which moves a dialog already in the
 *   group nowhere. It is cancelled when the conversation is no longer paused.
 * - Webchat replies are marked sent, then pushed to the gateway holding the visitor's socket
 *   (a visitor resumes by seq, so a push is never the only copy).
 */
export interface DeliveryOptions {
  maxAttempts: number;
  baseBackoffMs: number;
  maxBackoffMs: number;
  helpdeskTimeoutMs: number;
  /** Reconciliations of one row that could not read the history, before it is failed as `delivery uncertain`. */
  maxReconcileAttempts: number;
  /** History pages read per reconciliation at most. */
  historyPages: number;
}

export interface DeliveryDeps {
  sql: SqlPool;
  config: Pick<Config, 'secretsKeys' | 'allowPrivateUrls' | 'helpdeskGlobalUrl' | 'helpdeskEuropeUrl'>;
  logger: Logger;
  /** Whether this worker still holds the partition's lease under the row's epoch. */
  leases: { holds(partition: number, epoch: number): boolean };
}

/** What becomes of a row after an attempt. */
export type Outcome =
  | { kind: 'finish'; status: FinalStatus; externalId?: string | null; error?: string | null; push?: WebchatPush }
  /** Tried again later: `uncertain` rows stay `sending` (reconciled before any resend). */
  | { kind: 'retry'; error: string; uncertain: boolean; unreadable?: boolean; delayMs: number }
  /** This sender may not touch it any more (its lease is gone). */
  | { kind: 'leave' };

const MAX_CACHED_CLIENTS = 1000;

export class Delivery {
  readonly #deps: DeliveryDeps;
  readonly #o: DeliveryOptions;
  readonly #secrets: SecretBox;
  /** Helpdesk clients by sealed token: the token is unsealed once, and an edited token is a new key. */
  readonly #clients = new Map<string, HelpdeskClient>();

  constructor(deps: DeliveryDeps, options: DeliveryOptions) {
    this.#deps = deps;
    this.#o = options;
    this.#secrets = new SecretBox(deps.config.secretsKeys);
  }

  async deliver(row: OutboxSend): Promise<Outcome> {
    if (row.channel === 'webchat') return this.#webchat(row);
    if (!row.api_url || !row.api_token_sealed) return { kind: 'finish', status: 'failed', error: 'the integration has no apiUrl / apiToken' };
    const client = this.#clientFor(row.api_url, row.api_token_sealed);
    if (row.uncertain && row.kind !== 'helpdesk_transfer') {
      const verdict = await this.#reconcile(row, client);
      if (verdict.kind === 'delivered') return { kind: 'finish', status: 'sent', externalId: verdict.externalId };
      if (verdict.kind === 'unreadable') {
        if (row.reconcile_attempts + 1 >= this.#o.maxReconcileAttempts) {
          this.#deps.logger.error({ outboxId: row.id, err: verdict.error }, 'outbox: delivery uncertain; giving up');
          return { kind: 'finish', status: 'failed', error: `delivery uncertain: the helpdesk history could not be read (${verdict.error})` };
        }
        this.#deps.logger.warn({ outboxId: row.id, err: verdict.error }, 'outbox: cannot read the helpdesk history; reconciling again later');
        return { kind: 'retry', error: `reconciling: ${verdict.error}`, uncertain: true, unreadable: true, delayMs: this.#backoff(row.reconcile_attempts + 1) };
      }
    }
    // The last check before a bot message leaves (read by the claim): a human who took over wins.
    const cancelled = cancelReason(row);
    if (cancelled) return { kind: 'finish', status: 'cancelled', error: cancelled };
    // Attempts are counted at each claim, so a row whose sends keep dying with their sender
    // (crash after crash) ends here too instead of looping.
    if (row.attempts > this.#o.maxAttempts) return { kind: 'finish', status: 'failed', error: `gave up after ${this.#o.maxAttempts} attempts${row.last_error ? ` (last: ${row.last_error})` : ''}` };
    if (!this.#deps.leases.holds(row.partition, Number(row.lease_rev))) {
      this.#deps.logger.warn({ outboxId: row.id, partition: row.partition }, "outbox: lease lost before sending; left to the partition's owner");
      return { kind: 'leave' };
    }
    if (row.kind === 'helpdesk_transfer') return this.#transfer(row, client);
    try {
      const res = await client.sendMessage({ client_id: row.client_id, text: row.text, transport: row.transport, channel_id: row.channel_id, type: 'to_client', external_id: row.id });
      const externalId = res?.data?.message_id;
      return { kind: 'finish', status: 'sent', externalId: externalId === undefined || externalId === null ? null : String(externalId) };
    } catch (err) {
      return this.#failed(row, err, 'POST /v1/messages');
    }
  }

  /** A send that failed: retried, reconciled first when it may have arrived, or failed for good. */
  #failed(row: OutboxSend, err: unknown, what: string): Outcome {
    const e = err instanceof HelpdeskError ? err : new HelpdeskError(`helpdesk ${what}: ${(err as Error).message}`, null, null, { cause: err });
    // The helpdesk's Retry-After (a 429, a 503) sets when the row is tried again.
    const delayMs = e.retryAfterMs ?? this.#backoff(row.attempts);
    if (e.maybeDelivered) {
      this.#deps.logger.warn({ outboxId: row.id, attempt: row.attempts, err: e.message }, 'outbox: send outcome unknown; reconciling before any resend');
      return { kind: 'retry', error: e.message, uncertain: true, delayMs };
    }
    if (e.retryable && row.attempts < this.#o.maxAttempts) {
      this.#deps.logger.warn({ outboxId: row.id, attempt: row.attempts, err: e.message, retryAfterMs: e.retryAfterMs }, 'outbox: send failed; will retry');
      return { kind: 'retry', error: e.message, uncertain: false, delayMs };
    }
    this.#deps.logger.warn({ outboxId: row.id, attempt: row.attempts, err: e.message }, 'outbox: send failed permanently');
    return { kind: 'finish', status: 'failed', error: e.message };
  }

  /** A handed-off dialog transferred to the integration's operator group (Chat2Desk transfer_to_group). */
  async #transfer(row: OutboxSend, client: HelpdeskClient): Promise<Outcome> {
    if (!row.handoff_group_id) return { kind: 'finish', status: 'cancelled', error: 'not sent: the integration has no handoffGroupId any more' };
    if (!row.reply_to_external_id) return { kind: 'finish', status: 'failed', error: 'the customer message has no helpdesk message id to transfer by' };
    try {
      await client.transferToGroup(row.reply_to_external_id, row.handoff_group_id);
    } catch (err) {
      return this.#failed(row, err, 'GET /v1/messages/…/transfer_to_group');
    }
    return { kind: 'finish', status: 'sent' };
  }

  /** Webchat: marked sent, then pushed; an uncertain row is simply finished and pushed again (the socket dedupes by seq). */
  #webchat(row: OutboxSend): Outcome {
    const cancelled = row.uncertain ? null : cancelReason(row);
    if (cancelled) return { kind: 'finish', status: 'cancelled', error: cancelled };
    return {
      kind: 'finish',
      status: 'sent',
      push: { type: 'message', conversationId: row.conversation_id, seq: row.seq, role: row.role === 'operator' ? 'operator' : 'agent', text: row.text, at: new Date(row.created_at).toISOString() },
    };
  }

  /** Whether an uncertain row reached the helpdesk. */
  async #reconcile(row: OutboxSend, client: HelpdeskClient): Promise<{ kind: 'delivered'; externalId: string } | { kind: 'not_delivered' } | { kind: 'unreadable'; error: string }> {
    let history;
    try {
      history = await readHistory(client, row.client_id, this.#o.historyPages);
    } catch (err) {
      return { kind: 'unreadable', error: (err as Error).message };
    }
    const recorded = await recordedExternalIds(this.#deps.sql, row.conversation_id, row.id);
    const remoteId = deliveredAs({ id: row.id, text: row.text, sendingAt: new Date(row.sending_at) }, history, recorded);
    this.#deps.logger.info({ outboxId: row.id, delivered: remoteId !== null }, 'outbox: reconciled an uncertain send');
    return remoteId === null ? { kind: 'not_delivered' } : { kind: 'delivered', externalId: remoteId };
  }

  #backoff(n: number): number {
    return Math.min(this.#o.maxBackoffMs, this.#o.baseBackoffMs * 2 ** Math.max(0, n - 1));
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
}

/**
 * Why this row must not be sent any more, if it must not. A bot reply goes out while the bot
 * has the conversation, or while the agent that handed it over still answers (no person has
 * acted yet): a person acting (a pause, a reply, a transfer, a close) cancels it.
 */
function cancelReason(row: OutboxSend): string | null {
  if (row.kind === 'agent_reply' && ((row.conversation_status !== 'active' && !row.handed_over) || row.hold_requested_at !== null)) {
    return `not sent: conversation ${row.hold_requested_at ? 'held by an operator' : row.conversation_status}`;
  }
  if (row.kind === 'handoff_notice' && row.conversation_status === 'closed') return 'not sent: conversation closed';
  if (row.kind === 'closing_reply' && row.hold_requested_at !== null) return 'not sent: conversation held by an operator';
  if (row.kind === 'helpdesk_transfer' && row.conversation_status !== 'paused') return `not sent: conversation ${row.conversation_status}`;
  return null;
}
