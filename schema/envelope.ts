/**
 * What the gateway publishes to JetStream and the workers consume: the one normalised
 * shape every channel's inbound traffic is turned into. Types only (no runtime imports),
 * so machines/, gateway/ and actors/ can all share it.
 */
export type Channel = 'helpdesk' | 'webchat';

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
}

/**
 * Who told us a customer's contact field (leads.*_source, migration 0031): an `operator`
 * (PATCH /api/leads, never replaced), the host page's `verified` identity (replaces any
 * other), the `customer` in the widget's pre-chat form and the `helpdesk`'s payload (these
 * two only fill an empty field).
 */
export type ContactSource = 'operator' | 'verified' | 'customer' | 'helpdesk';

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
  | { action: 'auto_resolve'; by: null; answeredAt: string; idleMinutes: number };

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
  | (EnvelopeBase & { kind: 'operator'; conversationId: number; clientId: string; command: OperatorCommand });
