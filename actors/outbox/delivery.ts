import type { Config } from '../../lib/config.js';
import type { SqlPool } from '../../lib/db.js';
import type { Logger } from '../../lib/logger.js';
import { SecretBox } from '../../lib/secrets.js';
import type { WebchatPush } from '../../lib/webchat-pushes.js';
import { sendingChannels, type SendingChannels } from '../../lib/channels/registry.js';
import type { SendFailure, SendingChannel, SendTarget } from '../../lib/channels/types.js';
import { recordedExternalIds, type FinalStatus, type OutboxSend } from '../tables/outbox.js';
import type { ChannelEffect } from '../../schema/envelope.js';
import type { WrittenParts } from './written-parts.js';

/**
 * One delivery attempt of a claimed outbox row, and the policy that decides what becomes of
 * it (contract.md § Delivery). It sends through the row's channel (lib/channels/: the
 * helpdesk, WhatsApp, Telegram; webchat here); the sender (actors/outbox/sender.ts) records
 * what it answers.
 *
 * - Right before sending a bot message the conversation is checked again (read by the
 *   claim): paused, closed or with a pending operator hold, an agent reply is cancelled; a
 *   handoff notice of a closed conversation is cancelled too; the agent's last words as it
 *   closes the conversation (`closing_reply`) only by an operator's hold.
 * - Fencing: a sender whose lease is gone (another worker owns the partition now, or this
 *   process stalled past its validity) sends nothing; the partition's owner reconciles it.
 * - A row found in `sending` by anyone but its live sender is *uncertain*. A channel that
 *   keeps a history (the helpdesk) reconciles it before anything is sent again: delivered,
 *   its remote id is recorded; not delivered, sent; history unreadable, reconciled again
 *   later with backoff, never a blind send, and past `maxReconcileAttempts` failed with
 *   `delivery uncertain`. A channel without one (WhatsApp, Telegram) goes on after the parts
 *   whose requests had left (`written_parts`, ./written-parts.ts): none is sent twice. One
 *   that reports what it took (WhatsApp statuses naming our outbox id) settles a one-part send
 *   by that report instead: delivered when one came, sent again when none came within
 *   `reportWithinMs` of the send (its request never arrived), no mark written.
 * - A failed send, as its channel judges it (SendingChannel.classify): one that may have
 *   arrived is reconciled before any resend (helpdesk) or, where nothing can tell, failed as
 *   `delivery_uncertain` rather than risk a double; one that did not arrive is retried with
 *   backoff (or after the platform's Retry-After / retry_after) up to `maxAttempts`; one that
 *   would fail again is failed at once, its code shown on the message. Some failures act on
 *   the conversation (`effect`): WhatsApp's closed 24-hour window hands it to a person, a
 *   Telegram bot blocked by the customer closes it.
 * - A channel with a reply window (WhatsApp: 24 h after the customer's last message, by the
 *   platform's time of it) sends no free text past it: `window_closed`, without a call.
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
  config: Pick<Config, 'secretsKeys' | 'allowPrivateUrls' | 'helpdeskGlobalUrl' | 'helpdeskEuropeUrl' | 'whatsappGraphUrl' | 'whatsappGraphVersion' | 'whatsappStatusWaitMs' | 'telegramApiUrl'>;
  logger: Logger;
  /** Whether this worker still holds the partition's lease under the row's epoch. */
  leases: { holds(partition: number, epoch: number): boolean };
  /** Where the parts of replies to channels without a history are marked as they leave. */
  writtenParts: WrittenParts;
  /** The clock of reply windows (tests inject one). */
  now?: () => number;
}

/** What becomes of a row after an attempt. */
export type Outcome =
  | { kind: 'finish'; status: FinalStatus; externalId?: string | null; error?: string | null; errorCode?: string | null; effect?: ChannelEffect | null; push?: WebchatPush }
  /** Tried again later: `uncertain` rows stay `sending` (reconciled before any resend). */
  | { kind: 'retry'; error: string; uncertain: boolean; unreadable?: boolean; delayMs: number }
  /** This sender may not touch it any more (its lease is gone). */
  | { kind: 'leave' };

const MAX_CACHED_TOKENS = 1000;

export class Delivery {
  readonly #deps: DeliveryDeps;
  readonly #o: DeliveryOptions;
  readonly #secrets: SecretBox;
  readonly #channels: SendingChannels;
  /** Unsealed tokens by sealed value: each is opened once, and an edited token is a new key. */
  readonly #tokens = new Map<string, string>();
  readonly #now: () => number;

  constructor(deps: DeliveryDeps, options: DeliveryOptions) {
    this.#deps = deps;
    this.#o = options;
    this.#secrets = new SecretBox(deps.config.secretsKeys);
    this.#channels = sendingChannels(deps.config, { timeoutMs: options.helpdeskTimeoutMs, historyPages: options.historyPages });
    this.#now = deps.now ?? Date.now;
  }

  async deliver(row: OutboxSend): Promise<Outcome> {
    if (row.channel === 'webchat') return this.#webchat(row);
    const channel = this.#channels[row.channel];
    if (!row.api_token_sealed) return { kind: 'finish', status: 'failed', error: 'the integration has no API token', errorCode: 'no_token' };
    const target = this.#targetOf(row);
    const lacking = channel.lacks?.(target);
    if (lacking) return { kind: 'finish', status: 'failed', error: lacking, errorCode: 'no_token' };
    const parts = channel.split(row.text);
    // A one-part reply to a channel that reports what it takes is settled by that report; others by marks (./written-parts.ts).
    const reported = channel.reportWithinMs !== undefined && parts.length === 1;
    const marks = !channel.reconcile && !reported;
    // Parts whose requests left before: a channel without history goes on after them.
    const done = marks ? Math.min(row.written_parts, parts.length) : 0;
    if (row.uncertain && row.kind !== 'helpdesk_transfer') {
      if (channel.reconcile) {
        const verdict = await this.#reconcile(row, channel, target);
        if (verdict) return verdict;
      } else if (reported) {
        // Reported (applied, or accepted by a gateway and not applied yet: tables/outbox.ts): it arrived.
        if (row.reported) return { kind: 'finish', status: 'sent', externalId: row.external_id };
        // None yet: waited for; none in time: it never arrived.
        const waited = this.#now() - new Date(row.sending_at).getTime();
        if (waited < channel.reportWithinMs!) {
          return { kind: 'retry', error: 'waiting for the platform to report a send a crash left uncertain', uncertain: true, delayMs: channel.reportWithinMs! - waited };
        }
        this.#deps.logger.warn({ outboxId: row.id }, 'outbox: an uncertain send was never reported by the platform; sending it again');
      } else if (done >= parts.length) {
        this.#deps.logger.info({ outboxId: row.id }, 'outbox: an uncertain send had left whole; counted delivered, not sent again');
        return { kind: 'finish', status: 'sent', externalId: row.external_id };
      }
    }
    // The last check before a bot message leaves (read by the claim): a human who took over wins.
    const cancelled = cancelReason(row);
    if (cancelled) return { kind: 'finish', status: 'cancelled', error: cancelled, errorCode: 'not_sent' };
    // Attempts are counted at each claim, so a row whose sends keep dying with their sender
    // (crash after crash) ends here too instead of looping.
    if (row.attempts > this.#o.maxAttempts) return { kind: 'finish', status: 'failed', error: `gave up after ${this.#o.maxAttempts} attempts${row.last_error ? ` (last: ${row.last_error})` : ''}`, errorCode: 'gave_up' };
    if (!this.#deps.leases.holds(row.partition, Number(row.lease_rev))) {
      this.#deps.logger.warn({ outboxId: row.id, partition: row.partition }, "outbox: lease lost before sending; left to the partition's owner");
      return { kind: 'leave' };
    }
    if (row.kind === 'helpdesk_transfer') return this.#transfer(row, channel, target);
    const closed = this.#windowClosed(row, channel);
    if (closed) return closed;
    let externalId: string | null = row.external_id;
    for (let n = done; n < parts.length; n++) {
      // A part whose fate nothing else tells is marked as its request leaves, on a connection reserved for it (./written-parts.ts).
      const slot = marks ? await this.#deps.writtenParts.reserve() : null;
      let marked: Promise<void> | null = null;
      try {
        const onWritten = slot ? () => void (marked = slot.mark(row.id, row.lease_rev, n + 1).catch(() => {})) : undefined;
        externalId = (await channel.send(target, parts[n]!, { outboxId: row.id, onWritten })).externalId ?? externalId;
      } catch (err) {
        const failure = channel.classify(err);
        // A part that surely did not arrive is sent again: its mark must not outlive the failure.
        if (marked && failure.retry !== 'unknown') {
          await marked;
          await (await this.#deps.writtenParts.reserve()).mark(row.id, row.lease_rev, n).catch(() => {});
        }
        return this.#failed(row, channel, failure, reported);
      } finally {
        slot?.release();
      }
    }
    return { kind: 'finish', status: 'sent', externalId };
  }

  /** A send that failed, as its channel judged it: retried, reconciled first when it may have arrived, or failed for good. */
  #failed(row: OutboxSend, channel: SendingChannel, f: SendFailure, reported = false): Outcome {
    const delayMs = f.retryAfterMs ?? this.#backoff(row.attempts);
    if (f.retry === 'unknown' && channel.reconcile) {
      this.#deps.logger.warn({ outboxId: row.id, attempt: row.attempts, err: f.message }, 'outbox: send outcome unknown; reconciling before any resend');
      return { kind: 'retry', error: f.message, uncertain: true, delayMs };
    }
    if (f.retry === 'unknown' && reported) {
      // Its report will say whether it arrived (looked at as an uncertain row, above).
      this.#deps.logger.warn({ outboxId: row.id, attempt: row.attempts, err: f.message }, 'outbox: send outcome unknown; waiting for the platform to report it');
      return { kind: 'retry', error: f.message, uncertain: true, delayMs: channel.reportWithinMs! };
    }
    if (f.retry === 'unknown') {
      this.#deps.logger.warn({ outboxId: row.id, attempt: row.attempts, err: f.message }, 'outbox: send outcome unknown and the channel keeps no history; not sent again');
      return { kind: 'finish', status: 'failed', error: `delivery uncertain: ${f.message}; not sent again, so the customer never gets it twice`, errorCode: 'delivery_uncertain' };
    }
    if (f.retry === 'later' && row.attempts < this.#o.maxAttempts) {
      this.#deps.logger.warn({ outboxId: row.id, attempt: row.attempts, err: f.message, retryAfterMs: f.retryAfterMs }, 'outbox: send failed; will retry');
      return { kind: 'retry', error: f.message, uncertain: false, delayMs };
    }
    this.#deps.logger.warn({ outboxId: row.id, attempt: row.attempts, err: f.message, effect: f.effect }, 'outbox: send failed permanently');
    return { kind: 'finish', status: 'failed', error: f.message, errorCode: f.code, effect: f.effect };
  }

  /** Past the channel's reply window (WhatsApp: 24 h after the customer's last message), no free text goes out. */
  #windowClosed(row: OutboxSend, channel: SendingChannel): Outcome | null {
    if (!channel.replyWindowMs || !row.customer_sent_at) return null;
    const last = new Date(row.customer_sent_at).getTime();
    if (this.#now() - last <= channel.replyWindowMs) return null;
    const hours = Math.round(channel.replyWindowMs / 3_600_000);
    return {
      kind: 'finish', status: 'failed', errorCode: 'window_closed', effect: 'window_closed',
      error: `not sent: the customer's last message is more than ${hours} h old, and the platform takes no free text after that; a person must reach them`,
    };
  }

  /** A handed-off dialog transferred to the integration's operator group (the channel's `transfer`: Chat2Desk transfer_to_group). */
  async #transfer(row: OutboxSend, channel: SendingChannel, target: SendTarget): Promise<Outcome> {
    if (!channel.transfer) return { kind: 'finish', status: 'cancelled', error: 'not sent: this channel transfers no dialogs', errorCode: 'not_sent' };
    if (!row.handoff_group_id) return { kind: 'finish', status: 'cancelled', error: 'not sent: the integration has no handoffGroupId any more', errorCode: 'not_sent' };
    if (!row.reply_to_external_id) return { kind: 'finish', status: 'failed', error: "the customer message has no platform message id to transfer by", errorCode: 'no_message_id' };
    try {
      await channel.transfer(target, row.reply_to_external_id, row.handoff_group_id);
    } catch (err) {
      return this.#failed(row, channel, channel.classify(err));
    }
    return { kind: 'finish', status: 'sent' };
  }

  /** Webchat: marked sent, then pushed; an uncertain row is simply finished and pushed again (the socket dedupes by seq). */
  #webchat(row: OutboxSend): Outcome {
    const cancelled = row.uncertain ? null : cancelReason(row);
    if (cancelled) return { kind: 'finish', status: 'cancelled', error: cancelled, errorCode: 'not_sent' };
    return {
      kind: 'finish',
      status: 'sent',
      push: { type: 'message', conversationId: row.conversation_id, seq: row.seq, role: row.role === 'operator' ? 'operator' : 'agent', text: row.text, at: new Date(row.created_at).toISOString() },
    };
  }

  /** An uncertain row of a channel with a history: what to do instead of sending, or null to send it. */
  async #reconcile(row: OutboxSend, channel: SendingChannel, target: SendTarget): Promise<Outcome | null> {
    const verdict = await channel.reconcile!(target, { outboxId: row.id, text: row.text, sendingAt: new Date(row.sending_at) }, () => recordedExternalIds(this.#deps.sql, row.conversation_id, row.id));
    if (verdict.kind !== 'unreadable') this.#deps.logger.info({ outboxId: row.id, delivered: verdict.kind === 'delivered' }, 'outbox: reconciled an uncertain send');
    if (verdict.kind === 'delivered') return { kind: 'finish', status: 'sent', externalId: verdict.externalId };
    if (verdict.kind === 'not_delivered') return null;
    if (row.reconcile_attempts + 1 >= this.#o.maxReconcileAttempts) {
      this.#deps.logger.error({ outboxId: row.id, err: verdict.error }, 'outbox: delivery uncertain; giving up');
      return { kind: 'finish', status: 'failed', error: `delivery uncertain: the helpdesk history could not be read (${verdict.error})`, errorCode: 'delivery_uncertain' };
    }
    this.#deps.logger.warn({ outboxId: row.id, err: verdict.error }, 'outbox: cannot read the helpdesk history; reconciling again later');
    return { kind: 'retry', error: `reconciling: ${verdict.error}`, uncertain: true, unreadable: true, delayMs: this.#backoff(row.reconcile_attempts + 1) };
  }

  #backoff(n: number): number {
    return Math.min(this.#o.maxBackoffMs, this.#o.baseBackoffMs * 2 ** Math.max(0, n - 1));
  }

  #targetOf(row: OutboxSend): SendTarget {
    const sealed = row.api_token_sealed!;
    let token = this.#tokens.get(sealed);
    if (token === undefined) {
      if (this.#tokens.size >= MAX_CACHED_TOKENS) this.#tokens.delete(this.#tokens.keys().next().value!);
      token = this.#secrets.open(sealed);
      this.#tokens.set(sealed, token);
    }
    return {
      integrationId: row.integration_id, clientId: row.client_id, channelId: row.channel_id, transport: row.transport,
      apiUrl: row.api_url, token, phoneNumberId: row.phone_number_id,
    };
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
