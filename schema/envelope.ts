/**
 * What the gateway publishes to JetStream and the workers consume: the one normalised
 * shape every channel's inbound traffic is turned into. Types only (no runtime imports),
 * so machines/, gateway/ and actors/ can all share it.
 */
export type Channel = 'helpdesk' | 'webchat' | 'whatsapp' | 'telegram';

/**
 * What a channel's refusal of one of our messages does to its conversation, as the channel
 * judges it (lib/channels/types.ts): `window_closed` (the platform takes no free text any more,
 * e.g. WhatsApp's 24-hour window) hands it to a person; `blocked` (the customer blocked the
 * bot) closes it.
 */
export type ChannelEffect = 'window_closed' | 'blocked';

export interface NormalisedMessage {
  /** The platform's message id when it has one (helpdesk `message_id`, webchat clientMessageId). */
  messageId: string | null;
  text: string;
  /** Helpdesk client_id or webchat visitorId. */
  clientId: string;
  channelId: string | null;
  transport: string | null;
  requestId: number | null;
  dialogId: number | null;
  attachments: unknown[];
  /** When the platform says the message was sent (ISO), else when we received it. */
  sentAt: string;
  /** What the message says of its customer (cleaned at the door); the worker fills their lead with it (lib/leads.ts). */
  contact?: CustomerContact;
  /**
   * A message the agent cannot read (WhatsApp image, audio, location, ...: its type): stored
   * as `text` (e.g. "[image]"), answered with a short line and handed to a person
   * (`unsupported_message`) instead of being answered by the agent.
   */
  unsupported?: string;
}

/** What a channel reported of one of our sent messages (WhatsApp `statuses[]`). */
export interface DeliveryReport {
  /** The channel's id of our message (the wamid). */
  externalId: string;
  /** Our outbox row id, when the channel echoed it (WhatsApp `biz_opaque_callback_data`). */
  outboxId: string | null;
  status: 'sent' | 'delivered' | 'read' | 'failed';
  /** The first error of a `failed` status. */
  error: { code: string; message: string } | null;
  /** What that error does to the conversation, as the channel judges its code (absent in envelopes of older gateways: none). */
  effect?: ChannelEffect | null;
  /** The customer the message went to (WhatsApp `recipient_id`). */
  clientId: string;
  /** When the channel says it happened (ISO). */
  at: string;
}

/**
 * Who told us a customer's contact field (leads.*_source, migration 0031): an `operator`
 * (PATCH /api/leads, never replaced), the host page's `verified` identity (replaces any
 * other), the `customer` in the widget's pre-chat form and the `helpdesk`'s payload (these
 * two only fill an empty field).
 */
export type ContactSource = 'operator' | 'verified' | 'customer' | 'helpdesk' | 'whatsapp' | 'telegram';

export interface CustomerContact {
  name: string | null;
  email: string | null;
  phone: string | null;
  source: Exclude<ContactSource, 'operator'>;
  /** The host page's id of the customer, when `source` is `verified`. */
  verifiedId?: string;
}

export type StatusHook = 'close_dialog' | 'close_request' | 'dialog_transferred';

export interface NormalisedStatus {
  hookType: StatusHook;
  requestId: number;
  dialogId: number | null;
  /** Present when the payload carried it; otherwise the worker finds the session by request / dialog id. */
  clientId: string | null;
}

export type OperatorCommand =
  | { action: 'pause' | 'resume' | 'close'; by: string | null }
  /** `reply` is sent to the customer (pausing an active conversation first); `note` never is. `by`: the user id. */
  | { action: 'reply' | 'note'; text: string; by: string | null }
  /**
   * Not an operator's: the worker's auto-resolve sweep (actors/auto-resolve.ts) asks the owner of the partition to close a
   * session whose customer stayed silent `idleMinutes` after the agent's answer of `answeredAt`, in turn with the
   * customer's messages (one that came first wins: the answer is then no longer the last message).
   */
  | { action: 'auto_resolve'; by: null; answeredAt: string; idleMinutes: number }
  /**
   * Not an operator's: the worker's sender tells the conversation what its channel said of a
   * send or of a sent message (ChannelEffect: `window_closed` hands the conversation to a
   * person, `blocked` closes the session).
   */
  | { action: 'channel_refused'; by: null; reason: ChannelEffect; outboxId: string };

interface EnvelopeBase {
  v: 1;
  /** Stable across redeliveries and platform retries; also the JetStream Nats-Msg-Id. */
  idempotencyKey: string;
  companyId: number;
  integrationId: number;
  channel: Channel;
  /** ISO time the gateway accepted it. */
  receivedAt: string;
}

export type InboundEnvelope =
  | (EnvelopeBase & { kind: 'message'; message: NormalisedMessage })
  | (EnvelopeBase & { kind: 'status'; status: NormalisedStatus })
  | (EnvelopeBase & { kind: 'operator'; conversationId: number; clientId: string; command: OperatorCommand })
  | (EnvelopeBase & { kind: 'delivery'; delivery: DeliveryReport });
