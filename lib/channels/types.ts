import type { ChannelEffect, DeliveryReport, NormalisedMessage, NormalisedStatus } from '../../schema/envelope.js';

/**
 * A channel: a messaging platform reached over HTTP webhooks (the helpdesk, WhatsApp Cloud
 * API, Telegram Bot API), as one folder behind two small halves. The gateway's half checks a
 * webhook's proof and normalises its payload (WebhookChannel); the worker's half sends a reply
 * and judges a failed send (SendingChannel). The message path (gateway/webhook/ingress.ts,
 * actors/outbox/delivery.ts) knows channels only through these; adding one touches its
 * folder, its registration (lib/channels/registry.ts) and its tests.
 * (Webchat speaks WebSocket and has no folder here.)
 */
export type WebhookChannelType = 'helpdesk' | 'whatsapp' | 'telegram';

/** One thing a webhook body asks the worker to do, with the key that makes it happen once. */
export type InboundItem =
  | { kind: 'message'; idempotencyKey: string; message: NormalisedMessage }
  | { kind: 'status'; idempotencyKey: string; status: NormalisedStatus }
  | { kind: 'delivery'; idempotencyKey: string; delivery: DeliveryReport };

/** What a webhook body became: the items to enqueue in order (possibly none: it is then answered 200 and dropped). */
export interface Normalised {
  items: InboundItem[];
}

/**
 * How a webhook POST proves it comes from the platform, checked against the integration's
 * webhook secret (integrations.webhook_secret_sealed):
 * - `signature`: HMAC-SHA256 of the raw body keyed with the secret, `sha256=<hex>` in one of
 *   `headers` (the helpdesk: either of two; WhatsApp: `x-hub-signature-256`, keyed with the app secret);
 * - `secret_header`: the secret itself in `header`, compared in constant time (Telegram's
 *   `X-Telegram-Bot-Api-Secret-Token`).
 */
export type WebhookProof = { kind: 'signature'; headers: readonly string[] } | { kind: 'secret_header'; header: string };

/** What the gateway knows of an integration that a channel's GET probe may need. */
export interface ProbedIntegration {
  verifyToken: string | null;
}

/** A GET probe's answer: plain text with its status. */
export interface ProbeAnswer {
  status: 200 | 403;
  text: string;
}

/** The gateway's half of a channel. */
export interface WebhookChannel {
  type: WebhookChannelType;
  proof: WebhookProof;
  /**
   * The payload (parsed JSON, cleaned to storable text) as items. Throws AppError
   * VALIDATION_ERROR (400) for a payload of a kind it acts on that is malformed; anything it
   * does not act on is simply not an item.
   */
  normalise(payload: unknown, raw: Uint8Array, receivedAt: string): Normalised;
  /**
   * `GET /api/webhook/<type>/<id>` with the platform's query (WhatsApp `hub.mode=subscribe`,
   * `hub.verify_token`, `hub.challenge`): the answer, or null when the query is not the
   * platform's probe (the generic `{"ok":true,"verified":true}` then answers).
   */
  probe?(query: URLSearchParams, integration: ProbedIntegration): ProbeAnswer | null;
}

/** Where a reply goes: the conversation's customer and the integration's account. */
export interface SendTarget {
  integrationId: number;
  /** The customer: helpdesk client_id, WhatsApp wa_id, Telegram chat id. */
  clientId: string;
  channelId: string | null;
  transport: string | null;
  /** The integration's API base (the helpdesk's apiUrl); null where the channel's base is configured service-wide. */
  apiUrl: string | null;
  /** The integration's API token, unsealed (helpdesk apiToken, WhatsApp access token, Telegram bot token). */
  token: string;
  /** WhatsApp: the business phone number's id. */
  phoneNumberId: string | null;
}

export interface SendOptions {
  /** Our id of the message (the outbox row id): carried where the platform keeps one (Chat2Desk external_id, WhatsApp biz_opaque_callback_data). */
  outboxId: string;
  /** Called as soon as the request has been handed to the network (before any answer): a crash after it may have delivered it. */
  onWritten?: () => void;
}

/** What a failed send means (SendingChannel.classify). */
export interface SendFailure {
  /**
   * `later`: it did not arrive and may succeed when tried again (rate limits, 5xx where the
   * platform says nothing was done); `never`: it will fail again (shown on the message);
   * `unknown`: it may have arrived (a timeout, a cut connection after the request left).
   */
  retry: 'later' | 'never' | 'unknown';
  /** The platform's error code (`131047`, `429`, ...) or ours (`timeout`, `network`). */
  code: string;
  /** For the operator, in our words (never the platform's answer body). */
  message: string;
  /** How long the platform asked us to wait (Retry-After, Telegram's `retry_after`). */
  retryAfterMs: number | null;
  /** What the failure does to the conversation: `window_closed` hands it to a person, `blocked` closes it. */
  effect: ChannelEffect | null;
}

/** An uncertain send checked against the platform's history (channels that keep one). */
export type Reconciled = { kind: 'delivered'; externalId: string } | { kind: 'not_delivered' } | { kind: 'unreadable'; error: string };

export interface UncertainSend {
  outboxId: string;
  text: string;
  sendingAt: Date;
}

/** The worker's half of a channel. */
export interface SendingChannel {
  type: WebhookChannelType;
  /** The parts a reply is sent as (the platform's largest text, e.g. 4096 characters), in order; at least one. */
  split(text: string): string[];
  /** Sends one part; resolves with the platform's id of the sent message. Rejects with anything: classify() judges it. */
  send(target: SendTarget, text: string, options: SendOptions): Promise<{ externalId: string | null }>;
  classify(err: unknown): SendFailure;
  /** What the integration lacks for any send (the helpdesk: its apiUrl), in the operator's words; null when nothing. The row is then failed as `no_token`, unsent. */
  lacks?(target: SendTarget): string | null;
  /**
   * Only channels whose dialogs have operator groups (the helpdesk: Chat2Desk transfer_to_group):
   * moves the dialog of `messageId` (the platform's id of the customer message) to `groupId`
   * when the agent hands it off. The registry's TRANSFERS_DIALOGS says which channels have one.
   */
  transfer?(target: SendTarget, messageId: string, groupId: number): Promise<void>;
  /**
   * Only channels that keep a history of sent messages (the helpdesk): whether an uncertain
   * send arrived. Others resume an uncertain send after the parts whose requests had left
   * (outbox.written_parts): a part is never sent twice.
   */
  reconcile?(target: SendTarget, send: UncertainSend, recordedIds: () => Promise<ReadonlySet<string>>): Promise<Reconciled>;
  /**
   * How long after the customer's last message (its platform time) free text may still be
   * sent (WhatsApp: 24 h); past it the send is not made and fails with `window_closed`.
   */
  replyWindowMs?: number;
  /**
   * Channels that report the fate of every message they took, naming our outbox id (WhatsApp
   * statuses with `biz_opaque_callback_data`): how long after a send its first report comes at
   * the latest. An uncertain one-part send whose request had left is delivered when a report
   * came, waited for until then, and sent again when none did (its request never arrived).
   */
  reportWithinMs?: number;
}
