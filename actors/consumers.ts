import { AckPolicy, DeliverPolicy, JetStreamApiCodes, JetStreamApiError, JetStreamError, type Consumer, type JetStreamClient, type JetStreamManager, type JsMsg } from '@nats-io/jetstream';
import type { Logger } from '../lib/logger.js';
import { leaveServerWithoutJetStream, type NatsConnection } from '../lib/nats.js';
import type { StreamNames } from '../lib/streams.js';
import type { InboundEnvelope } from '../schema/envelope.js';
import type { ConversationHost } from './host.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { attachTrace, contextOf, extractTraceContext, failSpan, NO_PARENT, SpanKind, startSpan, tracing } from '../lib/tracing.js';

/**
 * One durable pull consumer per partition (nats-server 2.9: one filter subject each).
 * The owner of a partition fetches short batches (so a released partition stops receiving
 * within `expiresMs`), hands every envelope to the host in stream order, keeps in-flight
 * messages alive with `working()`, and acks each once the host committed it.
 *
 * How much a worker takes in: the envelopes in flight of all its partitions share one budget
 * (`Intake`), so the host holds as much work as it can use whatever the number of partitions
 * it owns, and no more. Customer messages waiting for a model call wait in the host's fair
 * queues (actors/fair-slots.ts), so the budget is several times MODEL_MAX_CONCURRENCY
 * (INTAKE_PER_MODEL_CALL): enough that a company's backlog of thousands is pulled in whole
 * and another company's message behind it in the stream is fetched at once and served in its
 * own turn. One partition may hold the whole budget (its consumer's max_ack_pending).
 */
export interface ConsumerOptions {
  ackWaitMs?: number;
  /** Envelopes of one partition in flight at most (the consumer's max_ack_pending); default: the intake. */
  maxAckPending?: number;
  fetchBatch?: number;
  expiresMs?: number;
  /** How long a release waits for in-flight envelopes before nak'ing them for the next owner. */
  drainTimeoutMs?: number;
  /** Envelopes in flight in the whole worker at most (all partitions); default INTAKE_PER_MODEL_CALL × MODEL_MAX_CONCURRENCY. */
  intake?: number;
}

export const DEFAULT_ACK_WAIT_MS = 30_000;
/** A partition's envelopes in flight when no intake is given. */
export const DEFAULT_MAX_ACK_PENDING = 256;
/** Envelopes a worker takes in per model call it may have in flight. */
export const INTAKE_PER_MODEL_CALL = 8;

/**
 * The envelopes in flight of all of a worker's partitions. A partition asks for no more than
 * are free, and counts each envelope as it arrives (places are not held for a pull that is
 * still open: that would starve the other partitions while it waits); so pulls open at once
 * may overshoot it by at most one batch each.
 */
export class Intake {
  readonly max: number;
  #taken = 0;

  constructor(max: number) {
    this.max = Math.max(1, max);
  }

  get taken(): number {
    return this.#taken;
  }

  get free(): number {
    return Math.max(0, this.max - this.#taken);
  }

  take(): void {
    this.#taken++;
  }

  give(): void {
    this.#taken = Math.max(0, this.#taken - 1);
  }
}
/** The smallest idle heartbeat nats.js accepts. */
const FETCH_HEARTBEAT_MS = 500;

const ms = (n: number) => n * 1_000_000;

export async function ensurePartitionConsumer(jsm: JetStreamManager, names: StreamNames, partition: number, options: ConsumerOptions = {}): Promise<void> {
  const config = {
    durable_name: names.partitionConsumer(partition),
    filter_subject: names.partitionFilter(partition),
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: ms(options.ackWaitMs ?? DEFAULT_ACK_WAIT_MS),
    max_ack_pending: options.maxAckPending ?? DEFAULT_MAX_ACK_PENDING,
  };
  // Recreated at every acquisition, so that it offers, first and in stream order, all the stream
  // still holds of the partition: messages a previous owner fetched and never acknowledged (it
  // was killed, or lost its lease; they would come back only after ack_wait, behind newer ones
  // of the same conversations), and messages below the consumer's ack floor, which it would
  // never offer again (a nats-server that reset its cluster state can leave a consumer's floor
  // past messages the stream still holds). The stream is a work queue: acknowledged messages
  // are gone, so nothing acknowledged is delivered again.
  await jsm.consumers.delete(names.inboundStream, config.durable_name).catch(() => false);
  try {
    await jsm.consumers.add(names.inboundStream, config);
  } catch (err) {
    // Exists with other settings (e.g. an older ack_wait): update what may be updated.
    try {
      await jsm.consumers.update(names.inboundStream, config.durable_name, { ack_wait: config.ack_wait, max_ack_pending: config.max_ack_pending });
    } catch {
      throw err;
    }
  }
}

export class PartitionConsumer {
  readonly partition: number;
  readonly #js: JetStreamClient;
  readonly #names: StreamNames;
  readonly #host: ConversationHost;
  readonly #logger: Logger;
  readonly #o: Required<Omit<ConsumerOptions, 'intake'>>;
  readonly #intake: Intake;
  readonly #inflight = new Map<JsMsg, Promise<void>>();
  /** The envelopes in flight by `integrationId\nidempotencyKey` (copies of one envelope counted). */
  readonly #inflightKeys = new Map<string, number>();
  /** Resolves the loop's wait for a free slot; set only while the loop waits. */
  #slotWaiter: (() => void) | null = null;
  #stopping = false;
  #loop: Promise<void> | null = null;
  #heartbeat: NodeJS.Timeout | null = null;
  readonly #recover: (() => Promise<void>) | null;
  readonly #nc: NatsConnection | null;

  /**
   * `recover`: makes the stream and this partition's consumer exist again (a cluster that
   * reset its state, an operator's delete); called when the consumer is found missing.
   */
  constructor(deps: { js: JetStreamClient; names: StreamNames; host: ConversationHost; logger: Logger; intake?: Intake; recover?: () => Promise<void>; nc?: NatsConnection }, partition: number, options: ConsumerOptions = {}) {
    this.partition = partition;
    this.#nc = deps.nc ?? null;
    this.#recover = deps.recover ?? null;
    this.#js = deps.js;
    this.#names = deps.names;
    this.#host = deps.host;
    this.#logger = deps.logger.child({ partition });
    this.#o = {
      ackWaitMs: options.ackWaitMs ?? DEFAULT_ACK_WAIT_MS,
      maxAckPending: options.maxAckPending ?? DEFAULT_MAX_ACK_PENDING,
      fetchBatch: options.fetchBatch ?? 64,
      expiresMs: options.expiresMs ?? 2_000,
      drainTimeoutMs: options.drainTimeoutMs ?? 15_000,
    };
    this.#intake = deps.intake ?? new Intake(this.#o.maxAckPending);
  }

  start(): void {
    this.#loop = this.#run();
    this.#heartbeat = setInterval(() => {
      for (const m of this.#inflight.keys()) {
        try {
          m.working();
        } catch {
          /* connection trouble: redelivery covers it */
        }
      }
    }, Math.max(1000, Math.floor(this.#o.ackWaitMs / 3)));
  }

  async #run(): Promise<void> {
    let consumer: Consumer | null = null;
    const limit = Math.max(1, this.#o.maxAckPending - 1);
    while (!this.#stopping) {
      if (!consumer) {
        consumer = await this.#consumer();
        continue;
      }
      const room = Math.min(this.#o.fetchBatch, limit - this.#inflight.size, this.#intake.free);
      if (room <= 0) {
        await this.#freeSlot();
        continue;
      }
      try {
        // A pull that the server never ends (seen with nats-server 2.9) is only noticed by
        // missed heartbeats: two missed beats of FETCH_HEARTBEAT_MS stall the partition.
        const batch = await consumer.fetch({ max_messages: room, expires: this.#o.expiresMs, idle_heartbeat: FETCH_HEARTBEAT_MS });
        for await (const m of batch) {
          if (this.#stopping) {
            m.nak();
            continue;
          }
          this.#handle(m);
        }
      } catch (err) {
        if (this.#stopping) break;
        this.#logger.warn({ err: (err as Error).message }, 'consumer: fetch failed; retrying');
        if (this.#nc) leaveServerWithoutJetStream(this.#nc, err, this.#logger);
        // The server answered (a stale pull whose heartbeats were missed, a consumer recreated
        // by a new owner or deleted by a reset, a leader that moved): looked up again at once,
        // and made again when it is gone; NATS away: after a pause.
        if (err instanceof JetStreamError) consumer = null;
        else await sleep(500);
      }
    }
  }

  /** The partition's consumer, made again when it is gone (null after a failed attempt, retried by the loop after a pause). */
  async #consumer(): Promise<Consumer | null> {
    try {
      return await this.#js.consumers.get(this.#names.inboundStream, this.#names.partitionConsumer(this.partition));
    } catch (err) {
      if (this.#stopping) return null;
      const gone = err instanceof JetStreamApiError && (err.code === JetStreamApiCodes.ConsumerNotFound || err.code === JetStreamApiCodes.StreamNotFound);
      if (gone && this.#recover) {
        this.#logger.warn('consumer: the partition consumer is gone; making it again');
        await this.#recover().catch((again: unknown) => this.#logger.warn({ err: (again as Error).message }, 'consumer: could not make the partition consumer again; retrying'));
      } else {
        this.#logger.warn({ err: (err as Error).message }, 'consumer: cannot reach the partition consumer; retrying');
        if (this.#nc) leaveServerWithoutJetStream(this.#nc, err, this.#logger);
      }
      await sleep(500);
      return null;
    }
  }

  #handle(m: JsMsg): void {
    let env: InboundEnvelope;
    try {
      env = m.json<InboundEnvelope>();
      if (!env || env.v !== 1 || typeof env.idempotencyKey !== 'string' || typeof env.integrationId !== 'number') throw new Error('not an envelope');
    } catch (err) {
      this.#logger.error({ err: (err as Error).message, seq: m.seq }, 'consumer: dropping a message that is not an InboundEnvelope');
      m.term();
      return;
    }
    this.#intake.take();
    const key = `${env.integrationId}\n${env.idempotencyKey}`;
    this.#inflightKeys.set(key, (this.#inflightKeys.get(key) ?? 0) + 1);
    // The envelope's span, child of the publisher's (the `traceparent` header), until its ack or nak.
    const span = !tracing.enabled ? undefined : startSpan('inbound process', {
      kind: SpanKind.CONSUMER,
      parent: extractTraceContext(m.headers) ?? NO_PARENT,
      attributes: { 'messaging.system': 'nats', 'messaging.destination.name': m.subject, 'mas.partition': this.partition, 'mas.company_id': env.companyId, 'mas.redelivered': m.redelivered },
    });
    if (span) attachTrace(env, contextOf(span));
    const done = this.#host.submit(this.partition, env).then(
      (result) => {
        if (result === 'ack') m.ack();
        else m.nak(1000);
        span?.setAttribute('mas.outcome', result);
        span?.end();
      },
      (err: unknown) => {
        m.nak(1000);
        if (span) failSpan(span, err);
        span?.end();
      },
    );
    const tracked = done.finally(() => {
      this.#inflight.delete(m);
      const copies = (this.#inflightKeys.get(key) ?? 1) - 1;
      if (copies > 0) this.#inflightKeys.set(key, copies);
      else this.#inflightKeys.delete(key);
      this.#intake.give();
      const wake = this.#slotWaiter;
      this.#slotWaiter = null;
      wake?.();
    });
    this.#inflight.set(m, tracked);
  }

  /** Whether this consumer holds the envelope in flight now (fetched, not yet acked or nak'ed). */
  has(integrationId: number, idempotencyKey: string): boolean {
    return this.#inflightKeys.has(`${integrationId}\n${idempotencyKey}`);
  }

  /**
   * Waits until an in-flight envelope finishes (or 200 ms pass). One waiter, woken by the
   * next finished envelope: racing all in-flight promises instead would add a reaction to
   * each of them on every wake-up, which piles up under a backlog.
   */
  #freeSlot(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#slotWaiter = null;
        resolve();
      }, 200);
      this.#slotWaiter = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /** Stops fetching, lets in-flight envelopes finish (bounded), nak's the rest for the next owner. */
  async stop(): Promise<void> {
    this.#stopping = true;
    await this.#loop?.catch(() => {});
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), this.#o.drainTimeoutMs);
    });
    const all = Promise.all([...this.#inflight.values()]).then(() => 'done' as const);
    const outcome = await Promise.race([all, deadline]);
    clearTimeout(timer);
    if (outcome === 'timeout') {
      this.#logger.warn({ inflight: this.#inflight.size }, 'consumer: drain timed out; returning in-flight messages for redelivery');
      for (const m of this.#inflight.keys()) m.nak();
    }
  }
}
