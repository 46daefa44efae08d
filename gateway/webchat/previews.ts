import type { LivePush } from '../../lib/webchat-pushes.js';
import type { ServerFrame } from './frames.js';

/** The socket's owner (its methods, not per-socket closures: socket.ts SocketEvents). */
export interface PreviewsDeps {
  send(frame: ServerFrame): void;
  /** The session the socket follows. */
  readonly conversationId: number | null;
  /** Runs work in the socket's frame chain (behind a session switch in progress). */
  enqueue(work: () => Promise<void>): void;
  /** Follows the visitor's open session (a `welcome`, then its messages). */
  followOpenSession(): Promise<void>;
}

/**
 * Previews of an answer in the making (lib/webchat-pushes.ts), forwarded, never stored:
 * `typing` as `typing {role:"agent"}`, a streamed reply's pieces as `delta {conversationId,
 * text}`. A socket forwards one stream at a time and only from its first piece, in order,
 * without a gap: one that joined mid-stream, missed a piece, or still shows an earlier stream
 * (an answer asked again after a crash) forwards nothing more of it, and the reply's `message`
 * (from PostgreSQL, like any other) replaces what was shown.
 */
export class Previews {
  readonly #deps: PreviewsDeps;
  /** The streamed reply being forwarded (its next piece), until a reply or status frame ends it. */
  #stream: { id: string; next: number } | null = null;
  /** Agent / operator messages sent so far: a preview queued before one of them is stale. */
  #repliesSent = 0;
  /** Previews waiting in the frame chain (behind a session switch): later ones wait behind them. */
  #queued = 0;

  constructor(deps: PreviewsDeps) {
    this.#deps = deps;
  }

  /**
   * A preview. One of a session the socket does not follow yet (the worker just opened it)
   * waits behind the switch in the frame chain, and so do the ones after it; it is dropped if a
   * reply was sent meanwhile (it would show after its own reply).
   */
  push(push: LivePush): void {
    if (push.conversationId === this.#deps.conversationId && this.#queued === 0) return this.#forward(push);
    const replies = this.#repliesSent;
    this.#queued++;
    this.#deps.enqueue(async () => {
      try {
        if (push.conversationId !== this.#deps.conversationId) await this.#deps.followOpenSession();
        if (this.#repliesSent === replies) this.#forward(push);
      } finally {
        this.#queued--;
      }
    });
  }

  /** An agent's or operator's message was sent: the preview of the reply being written is over. */
  replied(): void {
    this.#repliesSent++;
    this.#stream = null;
  }

  /** The socket moved to another session, or a human took over or the session ended: a preview still shown is over. */
  end(): void {
    this.#stream = null;
  }

  #forward(push: LivePush): void {
    if (push.conversationId !== this.#deps.conversationId) return;
    if (push.type === 'typing') return this.#deps.send({ type: 'typing', role: 'agent' });
    if (typeof push.stream !== 'string' || typeof push.n !== 'number' || typeof push.text !== 'string') return;
    if (push.n === 0 && this.#stream === null) this.#stream = { id: push.stream, next: 0 };
    if (this.#stream?.id !== push.stream || this.#stream.next !== push.n) return;
    this.#stream.next++;
    this.#deps.send({ type: 'delta', conversationId: push.conversationId, text: push.text });
  }
}
