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
  | { action: 'reply' | 'note'; text: string; by: string | null };

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
