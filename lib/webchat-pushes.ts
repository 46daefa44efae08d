/**
 * The pushes on a webchat visitor's outbound subject (`StreamNames.webchatOutbound`, core
 * NATS) that are previews of an answer in the making, sent by the worker
 * (actors/host/webchat-live.ts) and forwarded by the gateway holding the visitor's sockets
 * (gateway/webchat/connection.ts):
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
