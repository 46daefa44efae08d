import type { NatsConnection } from './nats.js';
import type { StreamNames } from './streams.js';

/**
 * The pushes on a webchat visitor's outbound subject (`StreamNames.webchatOutbound`, core
 * NATS), from the worker to the gateway holding the visitor's sockets
 * (gateway/webchat/connection.ts):
 * - `session`: the visitor's conversation was opened (actors/steps.ts);
 * - `message`: a reply was sent; the gateway reads it from PostgreSQL (actors/outbox/sender.ts).
 *
 * Previews of an answer in the making (actors/webchat-live.ts):
 * - `typing`: the agent started on an answer;
 * - `delta`: one piece of a streamed model answer. `stream` names one answer attempt and `n`
 *   counts its pieces from 0, so a socket that joins mid-stream (or misses a piece) forwards
 *   nothing more of it rather than half of it.
 * Ephemeral and best-effort: never stored, never in JetStream. The reply itself goes through
 * the outbox and reaches the visitor once, as a `message`.
 */
export type LivePush =
  | { type: 'typing'; conversationId: number; role: 'agent' }
  | { type: 'delta'; conversationId: number; stream: string; n: number; text: string };

export type WebchatPush =
  | LivePush
  | { type: 'session'; conversationId: number }
  | { type: 'message'; conversationId: number; seq: number; role: 'agent' | 'operator'; text: string; at: string };

/** Publishes a push to the visitor's gateway (throws what `publish` throws: a closed connection). */
export function publishWebchatPush(nc: NatsConnection, names: StreamNames, to: { integrationId: number; clientId: string }, push: WebchatPush): void {
  nc.publish(names.webchatOutbound(to.integrationId, to.clientId), JSON.stringify(push));
}
