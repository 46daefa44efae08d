import { jetstream, JetStreamApiError, type JetStreamClient } from '@nats-io/jetstream';
import { ConnectionError, headers, NoRespondersError, RequestError, TimeoutError, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import type { InboundEnvelope } from '../schema/envelope.js';
import { leaveServerWithoutJetStream } from './nats.js';
import { partitionOf, type StreamNames } from './streams.js';
import { injectTraceContext, inSpan, SpanKind, tracing } from './tracing.js';

/**
 * The inbound contract, in one place: which partition an envelope belongs to, and how it is
 * made durable in JetStream. Every producer (webhook ingress, webchat sockets, operator
 * commands, the worker re-routing a status event) publishes through `InboundPublisher`.
 *
 * A publish is retried (same `Nats-Msg-Id`, so JetStream drops a copy that did land) while
 * the stream cannot answer — a leader election on a cluster, a reconnect — until
 * `timeoutMs` is spent; then it fails with QueueUnavailableError and the caller answers 503.
 * It resolves only with JetStream's ack: never a 200 without one.
 */
export const DEFAULT_PUBLISH_TIMEOUT_MS = 4_000;
/** One attempt waits at most this long for its ack (an election takes a few seconds; retrying keeps up with it). */
const ATTEMPT_TIMEOUT_MS = 1_500;
const RETRY_PAUSE_MS = 100;

/** The customer an envelope is about; null only for a status event that carries only helpdesk ids (the worker routes it on). */
function clientIdOf(env: InboundEnvelope): string | null {
  if (env.kind === 'message') return env.message.clientId;
  if (env.kind === 'operator') return env.clientId;
  // A channel's report on one of our sent messages (WhatsApp statuses[]): the customer it went to.
  if (env.kind === 'delivery') return env.delivery.clientId;
  return env.status.clientId;
}

type StatusEnvelope = Extract<InboundEnvelope, { kind: 'status' }>;

/** A customer's conversations, as one key: what the worker serialises their events by. */
export const conversationKey = (integrationId: number, clientId: string): string => `c:${integrationId}:${clientId}`;

/** The key of the conversation an envelope belongs to; a status event without a client id has one of its own until it is routed. */
export function conversationKeyOf(env: InboundEnvelope): string {
  const clientId = clientIdOf(env);
  if (clientId !== null) return conversationKey(env.integrationId, clientId);
  const { requestId, dialogId } = (env as StatusEnvelope).status;
  return `r:${env.integrationId}:${requestId}:${dialogId ?? ''}`;
}

/** The key that decides an envelope's partition: its client id, or for a status event without one `request:<request_id>` (the worker routes it on). */
export function partitionKeyOf(env: InboundEnvelope): string {
  return clientIdOf(env) ?? `request:${(env as StatusEnvelope).status.requestId}`;
}

export function partitionOfEnvelope(env: InboundEnvelope, partitions: number): number {
  return partitionOf(env.integrationId, partitionKeyOf(env), partitions);
}

/** JetStream did not take the envelope within the publish timeout (the sender should retry later). */
export class QueueUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'QueueUnavailableError';
  }
}

/** The envelope can never be taken (larger than the server's max_payload): retrying cannot help. */
export class EnvelopeTooLargeError extends Error {
  constructor(readonly bytes: number, readonly maxBytes: number) {
    super(`the envelope is ${bytes} bytes; the queue takes at most ${maxBytes}`);
    this.name = 'EnvelopeTooLargeError';
  }
}

/**
 * Failures that a later attempt may not meet: no ack in time, no responder (the stream has
 * no leader right now), the connection away, or a JetStream answer of a passing kind.
 */
export function isTransientPublishError(err: unknown): boolean {
  if (err instanceof TimeoutError || err instanceof NoRespondersError || err instanceof ConnectionError || err instanceof RequestError) return true;
  // 503: "JetStream system temporarily unavailable" / no leader; 408: request timeout.
  if (err instanceof JetStreamApiError) return err.status === 503 || err.status === 408 || err.status >= 500;
  return false;
}

export interface PublishOptions {
  /** Appended to the dedup id when the same envelope is published again on purpose (a routed status event). */
  dedupSuffix?: string;
  /** Overrides the publisher's timeout for this call. */
  timeoutMs?: number;
  /** `JSON.stringify(env)`, when the caller has it already. */
  json?: string;
}

export interface InboundPublisher {
  /** Resolves with JetStream's ack (`duplicate`: an earlier copy had landed); QueueUnavailableError or EnvelopeTooLargeError otherwise. */
  publish(env: InboundEnvelope, options?: PublishOptions): Promise<{ duplicate: boolean; partition: number }>;
}

let thisTurn: Promise<void> | null = null;
/**
 * Resolves in the check phase of this turn of the event loop, the same promise for every
 * caller of the turn: publishes made after it go out together in one socket write (the client
 * flushes once per microtask checkpoint), where each request's own would cost a write.
 */
export function endOfTurn(): Promise<void> {
  thisTurn ??= new Promise((resolve) =>
    setImmediate(() => {
      thisTurn = null;
      resolve();
    }),
  );
  return thisTurn;
}

export function inboundPublisher(
  nc: NatsConnection,
  deps: {
    names: StreamNames;
    partitions: number;
    timeoutMs?: number;
    js?: JetStreamClient;
    /** Hold each publish to the end of the loop's turn (endOfTurn): for a producer of many at once (the webhook ingress). */
    coalesce?: boolean;
  },
): InboundPublisher {
  const js = deps.js ?? jetstream(nc);
  const timeoutMs = deps.timeoutMs ?? DEFAULT_PUBLISH_TIMEOUT_MS;
  return {
    async publish(env, options = {}) {
      const data = Buffer.from(options.json ?? JSON.stringify(env));
      const maxPayload = nc.info?.max_payload;
      if (maxPayload && data.length > maxPayload) throw new EnvelopeTooLargeError(data.length, maxPayload);
      const partition = partitionOfEnvelope(env, deps.partitions);
      const subject = deps.names.inboundSubject(partition, env.companyId);
      const msgID = `${env.integrationId}:${env.idempotencyKey}${options.dedupSuffix ?? ''}`;
      const send = async (hdrs: MsgHdrs | undefined) => {
        if (deps.coalesce) await endOfTurn();
        const deadline = Date.now() + (options.timeoutMs ?? timeoutMs);
        let last: unknown;
        for (;;) {
          const left = deadline - Date.now();
          if (left <= 0) break;
          try {
            const ack = await js.publish(subject, data, { msgID, timeout: Math.min(ATTEMPT_TIMEOUT_MS, left), headers: hdrs });
            return { duplicate: ack.duplicate, partition };
          } catch (err) {
            last = err;
            // A node whose JetStream is disabled: another node of the cluster may take it.
            const moved = leaveServerWithoutJetStream(nc, err);
            if ((!moved && !isTransientPublishError(err)) || nc.isClosed()) break;
            await new Promise((r) => setTimeout(r, Math.min(RETRY_PAUSE_MS, Math.max(0, deadline - Date.now()))));
          }
        }
        throw new QueueUnavailableError(`JetStream did not take the envelope within ${options.timeoutMs ?? timeoutMs} ms`, { cause: last });
      };
      if (!tracing.enabled) return send(undefined);
      // The worker's spans of this envelope become children of this one (the `traceparent` header).
      const attributes = { 'messaging.system': 'nats', 'messaging.destination.name': subject, 'messaging.message.id': msgID, 'mas.company_id': env.companyId, 'mas.partition': partition };
      return inSpan('inbound publish', { kind: SpanKind.PRODUCER, attributes }, async (span) => {
        const hdrs = headers();
        injectTraceContext(hdrs);
        const result = await send(hdrs);
        span?.setAttribute('mas.duplicate', result.duplicate);
        return result;
      });
    },
  };
}
