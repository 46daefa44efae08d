import type { Logger } from '../../lib/logger.js';
import type { SqlPool } from '../../lib/db.js';
import { sqlState } from '../../lib/pg-errors.js';
import type { InboundEnvelope } from '../../schema/envelope.js';
import { sleep } from '../limit.js';
import { insertReceipts, isDataError } from '../store.js';

/**
 * Lanes: one per conversation key (integration + client id). A lane's envelopes are applied
 * one at a time in arrival order; lanes run concurrently and are dropped when idle, so memory
 * holds only conversations with work in flight.
 *
 * An envelope that fails is retried at the head of its lane for RETRY_IN_PLACE_MS (the
 * consumer keeps its JetStream message alive), so the conversation's later envelopes cannot
 * overtake it (during a database outage, say); then it is nak'ed with the lane's later ones.
 * One the database refuses for its own values (SQLSTATE class 22/23) is recorded as a
 * rejected receipt and acked: no retry could store it.
 */
export type ItemResult = 'ack' | 'nak';

interface ItemBase {
  partition: number;
  resolve: (r: ItemResult) => void;
  /** When its first attempt failed (it is retried in place for RETRY_IN_PLACE_MS). */
  failingSince?: number;
}

/** An inbound envelope (a JetStream message). */
export interface EnvelopeItem extends ItemBase {
  env: InboundEnvelope;
  task?: undefined;
}

/** Work of the host's own for the conversation (a debounce deadline that passed), in order with its envelopes. */
export interface TaskItem extends ItemBase {
  env?: undefined;
  task: (lane: Lane) => Promise<Applied>;
}

export type Item = EnvelopeItem | TaskItem;

/** The answer a lane's conversation is waiting for, with the switch that cancels it. */
export interface InflightAnswer {
  conversationId: number;
  messageId: string;
  controller: AbortController;
}

export interface Lane {
  key: string;
  queue: Item[];
  running: boolean;
  /** The answer being worked out (actors/host/answers.ts); the lane's next customer message waits for it. */
  agentTask: Promise<ItemResult> | null;
  inflight: InflightAnswer | null;
}

/** An item's outcome now, or (a customer message being answered) once its answer is committed. */
export type Applied = ItemResult | { wait: Promise<ItemResult> };

/** How long a failing envelope is retried at the head of its lane before it is nak'ed (with the lane's later ones). */
export const RETRY_IN_PLACE_MS = 60_000;

/** The lane of a customer's conversations. */
export const conversationLaneKey = (integrationId: number, clientId: string): string => `c:${integrationId}:${clientId}`;

export function laneKey(env: InboundEnvelope): string {
  if (env.kind === 'message') return conversationLaneKey(env.integrationId, env.message.clientId);
  if (env.kind === 'operator') return conversationLaneKey(env.integrationId, env.clientId);
  if (env.status.clientId !== null) return conversationLaneKey(env.integrationId, env.status.clientId);
  return `r:${env.integrationId}:${env.status.requestId}:${env.status.dialogId ?? ''}`;
}

export class Lanes {
  readonly #lanes = new Map<string, Lane>();
  readonly #apply: (lane: Lane, item: Item) => Promise<Applied>;
  readonly #sql: SqlPool;
  readonly #logger: Logger;
  readonly #closed: () => boolean;

  constructor(deps: { sql: SqlPool; logger: Logger; closed: () => boolean }, apply: (lane: Lane, item: Item) => Promise<Applied>) {
    this.#sql = deps.sql;
    this.#logger = deps.logger;
    this.#closed = deps.closed;
    this.#apply = apply;
  }

  get size(): number {
    return this.#lanes.size;
  }

  /** Queues an envelope on its conversation's lane; resolves when it may be acked (or must be nak'ed). */
  submit(partition: number, env: InboundEnvelope): Promise<ItemResult> {
    return new Promise<ItemResult>((resolve) => this.#queue(laneKey(env), { env, partition, resolve }));
  }

  /** Queues a task of the host's own on the lane of the conversation `key` (laneKey's `c:` form). */
  enqueue(key: string, partition: number, task: (lane: Lane) => Promise<Applied>): Promise<ItemResult> {
    return new Promise<ItemResult>((resolve) => this.#queue(key, { task, partition, resolve }));
  }

  #queue(key: string, item: Item): void {
    let lane = this.#lanes.get(key);
    if (!lane) {
      lane = { key, queue: [], running: false, agentTask: null, inflight: null };
      this.#lanes.set(key, lane);
    }
    lane.queue.push(item);
    if (!lane.running) {
      lane.running = true;
      void this.#run(lane);
    }
  }

  /** Drops a lane that has nothing queued, running or being answered. */
  evictIfIdle(lane: Lane): void {
    if (!lane.running && lane.queue.length === 0 && !lane.agentTask && this.#lanes.get(lane.key) === lane) this.#lanes.delete(lane.key);
  }

  async #run(lane: Lane): Promise<void> {
    try {
      while (lane.queue.length > 0) {
        const item = lane.queue[0]!;
        let result: Applied;
        try {
          result = await this.#apply(lane, item);
          lane.queue.shift();
        } catch (err) {
          if (item.env && isDataError(err) && (await this.#reject(item.env, err))) {
            lane.queue.shift();
            item.resolve('ack');
            continue;
          }
          item.failingSince ??= Date.now();
          if (!this.#closed() && Date.now() - item.failingSince < RETRY_IN_PLACE_MS) {
            this.#logger.warn({ err, key: lane.key, idempotencyKey: item.env?.idempotencyKey }, 'host: an envelope failed; retrying it in place');
            await sleep(1000);
            continue;
          }
          this.#logger.error({ err, key: lane.key, idempotencyKey: item.env?.idempotencyKey }, 'host: giving up on an envelope for now (will be redelivered)');
          result = 'nak';
          lane.queue.shift();
          for (const later of lane.queue.splice(0)) later.resolve('nak');
        }
        if (typeof result === 'string') item.resolve(result);
        else void result.wait.then(item.resolve, () => item.resolve('nak'));
      }
    } finally {
      lane.running = false;
      this.evictIfIdle(lane);
    }
  }

  /** Records an envelope the database cannot store (receipt outcome `rejected`); false when even that failed. */
  async #reject(env: InboundEnvelope, err: unknown): Promise<boolean> {
    const code = sqlState(err);
    this.#logger.error({ err, integrationId: env.integrationId, idempotencyKey: env.idempotencyKey }, 'host: the database refuses this envelope; recording it as rejected');
    try {
      await insertReceipts(this.#sql, [
        { integrationId: env.integrationId, key: env.idempotencyKey, companyId: env.companyId, kind: env.kind, outcome: `rejected (SQLSTATE ${code})`, conversationId: null },
      ]);
      return true;
    } catch (again) {
      this.#logger.warn({ err: again }, 'host: could not record the rejection');
      return false;
    }
  }
}
