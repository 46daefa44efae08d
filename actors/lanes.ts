import type { Logger } from '../lib/logger.js';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Lanes: one per conversation key (lib/inbound.ts `conversationKeyOf`). A lane's tasks run one
 * at a time in the order they were queued; lanes run concurrently and are dropped when idle,
 * so memory holds only conversations with work in flight.
 *
 * A task that fails is run again at the head of its lane for RETRY_IN_PLACE_MS (the consumer
 * keeps its JetStream message alive meanwhile), so the conversation's later tasks cannot
 * overtake it (during a database outage, say); then it is nak'ed with the lane's later ones.
 */
export type ItemResult = 'ack' | 'nak';

/** A task's outcome now, or (a customer message being answered) once its answer is committed. */
export type Applied = ItemResult | { wait: Promise<ItemResult> };

/** The answer a lane's conversation is waiting for, with the switch that cancels it. */
export interface InflightAnswer {
  conversationId: number;
  messageId: string;
  controller: AbortController;
  /** Settles once the answer is committed or given up. */
  task: Promise<ItemResult>;
}

export interface Lane {
  key: string;
  /** The answer being worked out (actors/answers.ts); the lane's next customer message waits for it. */
  inflight: InflightAnswer | null;
}

interface Task {
  run: (lane: Lane) => Promise<Applied>;
  resolve: (r: ItemResult) => void;
  /** When its first attempt failed. */
  failingSince?: number;
}

interface LaneState extends Lane {
  queue: Task[];
  running: boolean;
}

/** How long a failing task is run again at the head of its lane before it is nak'ed (with the lane's later ones). */
export const RETRY_IN_PLACE_MS = 60_000;

export class Lanes {
  readonly #lanes = new Map<string, LaneState>();
  readonly #logger: Logger;
  readonly #closed: () => boolean;

  constructor(deps: { logger: Logger; closed: () => boolean }) {
    this.#logger = deps.logger;
    this.#closed = deps.closed;
  }

  get size(): number {
    return this.#lanes.size;
  }

  /** Queues a task on the lane `key`; resolves when its item may be acked (or must be nak'ed). */
  run(key: string, task: (lane: Lane) => Promise<Applied>): Promise<ItemResult> {
    return new Promise<ItemResult>((resolve) => {
      let lane = this.#lanes.get(key);
      if (!lane) {
        lane = { key, queue: [], running: false, inflight: null };
        this.#lanes.set(key, lane);
      }
      lane.queue.push({ run: task, resolve });
      if (!lane.running) {
        lane.running = true;
        void this.#drain(lane);
      }
    });
  }

  /** Drops a lane that has nothing queued, running or being answered. */
  evictIfIdle(lane: Lane): void {
    const state = this.#lanes.get(lane.key);
    if (state === lane && !state.running && state.queue.length === 0 && !state.inflight) this.#lanes.delete(lane.key);
  }

  async #drain(lane: LaneState): Promise<void> {
    try {
      while (lane.queue.length > 0) {
        const task = lane.queue[0]!;
        let result: Applied;
        try {
          result = await task.run(lane);
          lane.queue.shift();
        } catch (err) {
          task.failingSince ??= Date.now();
          if (!this.#closed() && Date.now() - task.failingSince < RETRY_IN_PLACE_MS) {
            this.#logger.warn({ err, key: lane.key }, 'host: a step failed; retrying it in place');
            await sleep(1000);
            continue;
          }
          this.#logger.error({ err, key: lane.key }, 'host: giving up on a step for now (its envelope will be redelivered)');
          result = 'nak';
          lane.queue.shift();
          for (const later of lane.queue.splice(0)) later.resolve('nak');
        }
        if (typeof result === 'string') task.resolve(result);
        else void result.wait.then(task.resolve, () => task.resolve('nak'));
      }
    } finally {
      lane.running = false;
      this.evictIfIdle(lane);
    }
  }
}
