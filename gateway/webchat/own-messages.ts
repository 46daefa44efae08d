import type { ServerFrame } from './frames.js';

const MAX_REMEMBERED = 1000;

/**
 * The visitor's messages sent on this socket. Each is answered by `ack` once stored (once per
 * time it was queued) and is not echoed back as a `message` frame; other tabs of the same
 * visitor get it as one, and a replay includes it.
 */
export class OwnMessages {
  /** Where acks go (the visitor's socket). */
  readonly #out: { send(frame: ServerFrame): void };
  /** clientMessageIds sent on this socket (the latest MAX_REMEMBERED). */
  readonly #sent = new Set<string>();
  /** clientMessageId → acks owed: queued, not yet seen stored. */
  readonly #owed = new Map<string, number>();

  constructor(out: { send(frame: ServerFrame): void }) {
    this.#out = out;
  }

  sent(clientMessageId: string): void {
    this.#sent.add(clientMessageId);
    if (this.#sent.size > MAX_REMEMBERED) this.#sent.delete(this.#sent.values().next().value!);
  }

  isOwn(clientMessageId: string): boolean {
    return this.#sent.has(clientMessageId);
  }

  /** Queued: an ack is owed once it is stored. */
  queued(clientMessageId: string): void {
    this.#owed.set(clientMessageId, (this.#owed.get(clientMessageId) ?? 0) + 1);
  }

  /** Its queueing failed: one ack fewer is owed. */
  notQueued(clientMessageId: string): void {
    const n = (this.#owed.get(clientMessageId) ?? 1) - 1;
    if (n > 0) this.#owed.set(clientMessageId, n);
    else this.#owed.delete(clientMessageId);
  }

  /** Stored: the acks owed for it go out. */
  stored(clientMessageId: string, seq: number, conversationId: number): void {
    const n = this.#owed.get(clientMessageId);
    if (!n) return;
    this.#owed.delete(clientMessageId);
    for (let i = 0; i < n; i++) this.#out.send({ type: 'ack', clientMessageId, seq, conversationId });
  }

  /** The messages still waiting for their ack. */
  awaiting(): string[] {
    return [...this.#owed.keys()];
  }
}
