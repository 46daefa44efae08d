import type { Subscription } from '@nats-io/transport-node';
import { noticesOf } from '../../lib/conversations.js';
import type { Logger } from '../../lib/logger.js';
import type { NatsConnection } from '../../lib/nats.js';
import type { StreamNames } from '../../lib/streams.js';
import type { ConversationStatus } from '../../schema/conversation.js';
import type { ServerFrame } from './frames.js';
import type { OwnMessages } from './own-messages.js';
import { MESSAGES_PER_READ, type SessionReads, type StoredMessage } from './sessions.js';

export interface PumpDeps {
  reads: SessionReads;
  nc: NatsConnection;
  names: StreamNames;
  logger: Logger;
  companyId: number;
  /** An agent / operator message still `pending` after this long no longer holds later ones back. */
  stallMs: number;
  /** The visitor's socket: once it is closed, nothing more is read or sent. */
  socket: { readonly closed: boolean };
}

/** Where the pump's frames go (methods of the socket's owner, not per-socket closures: socket.ts SocketEvents). */
export interface PumpOutput {
  /** A stored message the visitor has not been shown. */
  showMessage(frame: Extract<ServerFrame, { type: 'message' }>): void;
  /** The session's status changed. */
  showStatus(status: ConversationStatus): void;
}

/** The session a socket follows. */
interface Followed {
  readonly id: number;
  readonly notices: Subscription;
  /** The watermark: every seq ≤ it was sent or deliberately skipped. */
  delivered: number;
  /** Outbound messages left `pending` past stallMs: skipped by the pump, sent when their push arrives. */
  readonly stalled: Set<number>;
  status: ConversationStatus;
}

/**
 * What a socket shows of the session it follows, pumped from `conversation_messages` in seq
 * order behind a watermark, so a replay at `hello` and live triggers that race it can neither
 * duplicate nor skip a message:
 * - customer messages are deliverable once stored (the socket's own are acked instead,
 *   own-messages.ts); agent / operator messages once the worker's dispatcher marked them
 *   `sent` (a `pending` one holds the pump back, so a visitor never sees seq N+1 before N is
 *   settled; `cancelled` / `failed` are skipped); an operator's note is always skipped (its
 *   text is not even read, sessions.ts); an operator's message names its author (`name`);
 * - a trigger is anything that says "look again": the session's notices
 *   `names.conversationEvents(companyId, conversationId)` (subscribed here; a customer message
 *   stored → its ack), a push on the visitor's outbound subject (connection.ts), a timer.
 * Triggers that come while a pump runs make it run once more, unless all they named were
 * messages it has shown (or skipped) meanwhile. The session's status is read with its
 * messages and sent when it changed.
 */
export class SessionPump {
  readonly #deps: PumpDeps;
  readonly #own: OwnMessages;
  readonly #out: PumpOutput;
  #followed: Followed | null = null;
  #running = false;
  /**
   * The triggers that came while running: 0 none, Infinity one that names no message, else
   * the highest seq named. It runs once more unless that seq was shown meanwhile.
   */
  #wanted = 0;
  #stallTimer: NodeJS.Timeout | null = null;

  constructor(deps: PumpDeps, own: OwnMessages, out: PumpOutput) {
    this.#deps = deps;
    this.#own = own;
    this.#out = out;
  }

  get conversationId(): number | null {
    return this.#followed?.id ?? null;
  }

  /** Follows a session from after seq `after`; a pump of the one followed before stops. */
  follow(conversationId: number, after: number): void {
    this.#followed?.notices.unsubscribe();
    const notices = this.#deps.nc.subscribe(this.#deps.names.conversationEvents(this.#deps.companyId, conversationId), {
      callback: (err, msg) => {
        if (!err) this.#onNotice(msg.data, followed);
      },
    });
    const followed: Followed = { id: conversationId, notices, delivered: after, stalled: new Set(), status: 'active' };
    this.#followed = followed;
  }

  /** A reply the pump skipped as stalled has gone out after all: true once (then show it). */
  releaseStalled(seq: number): boolean {
    return this.#followed?.stalled.delete(seq) ?? false;
  }

  /**
   * Look again (the pump runs now, or once more after the run in progress). `seq`: the
   * trigger is about that message, which needs nothing once it was shown (or skipped).
   */
  schedule(seq = Infinity): void {
    const followed = this.#followed;
    if (this.#deps.socket.closed || !followed || seq <= followed.delivered) return;
    void this.pump(seq);
  }

  async pump(seq = Infinity): Promise<void> {
    if (this.#running) {
      this.#wanted = Math.max(this.#wanted, seq);
      return;
    }
    this.#running = true;
    try {
      do {
        this.#wanted = 0;
        await this.#pumpOnce();
      } while (this.#wanted > (this.#followed?.delivered ?? Infinity) && !this.#deps.socket.closed);
    } catch (err) {
      if (!this.#deps.socket.closed) {
        this.#deps.logger.warn({ err, conversationId: this.conversationId }, 'webchat: could not read the session; retrying');
        const retry = setTimeout(() => this.schedule(), 1000);
        retry.unref();
      }
    } finally {
      this.#running = false;
    }
  }

  stop(): void {
    if (this.#stallTimer) clearTimeout(this.#stallTimer);
    this.#stallTimer = null;
    try {
      this.#followed?.notices.unsubscribe();
    } catch {
      /* connection closed */
    }
    this.#followed = null;
  }

  #onNotice(data: Uint8Array, followed: Followed): void {
    if (!this.#follows(followed)) return;
    const notices = noticesOf(data);
    // A malformed publish is a trigger all the same.
    if (notices.length === 0) return this.schedule();
    for (const notice of notices) {
      // An operator command's answer, or a team change (assignee, labels, reads): nothing a visitor sees.
      if (notice.type === 'applied' || notice.type === 'updated') continue;
      if (notice.type === 'message') {
        if (notice.message.role === 'customer' && notice.message.externalId) this.#own.stored(notice.message.externalId, notice.message.seq, followed.id);
        this.schedule(notice.message.seq);
      } else this.schedule();
    }
  }

  async #pumpOnce(): Promise<void> {
    const followed = this.#followed;
    if (!followed) return;
    let blockedAt: Date | null = null;
    let status: ConversationStatus | null;
    for (;;) {
      const read = await this.#deps.reads.messagesAfter(followed.id, followed.delivered);
      if (!this.#follows(followed)) return;
      status = read.status;
      for (const m of read.messages) {
        const verdict = this.#verdict(m);
        if (verdict === 'wait') {
          blockedAt = new Date(m.created_at);
          break;
        }
        if (verdict === 'stalled') followed.stalled.add(m.seq);
        else if (verdict === 'own') this.#own.stored(m.external_id!, m.seq, followed.id);
        else if (verdict === 'send') this.#out.showMessage(messageFrame(m));
        followed.delivered = m.seq;
      }
      if (blockedAt || read.messages.length < MESSAGES_PER_READ) break;
    }
    if (blockedAt) this.#lookAgainWhenStalled(blockedAt);
    if (!status) return;
    if (status !== followed.status) {
      followed.status = status;
      this.#out.showStatus(status);
    }
  }

  /**
   * Shows a reply the pump skipped as stalled and that has gone out after all (its push
   * came): read again, as the pump would have shown it.
   */
  async showReleased(seq: number): Promise<void> {
    const followed = this.#followed;
    if (!followed) return;
    try {
      const read = await this.#deps.reads.messagesAfter(followed.id, seq - 1);
      const m = read.messages[0];
      if (this.#follows(followed) && m?.seq === seq && this.#verdict(m) === 'send') this.#out.showMessage(messageFrame(m));
    } catch (err) {
      this.#deps.logger.warn({ err, conversationId: followed.id }, 'webchat: could not read a reply that went out late');
    }
  }

  /** Still following that session (a pump of one followed before stops). */
  #follows(followed: Followed): boolean {
    return followed === this.#followed && !this.#deps.socket.closed;
  }

  /** Look again once the pending message counts as stalled (its dispatcher may be gone). */
  #lookAgainWhenStalled(createdAt: Date): void {
    if (this.#stallTimer) clearTimeout(this.#stallTimer);
    const wait = Math.max(50, createdAt.getTime() + this.#deps.stallMs - Date.now() + 10);
    this.#stallTimer = setTimeout(() => {
      this.#stallTimer = null;
      this.schedule();
    }, wait);
    this.#stallTimer.unref();
  }

  #verdict(m: StoredMessage): 'send' | 'own' | 'skip' | 'wait' | 'stalled' {
    if (m.role === 'customer') return m.external_id !== null && this.#own.isOwn(m.external_id) ? 'own' : 'send';
    // An operator's note is for the team, never for the visitor.
    if ((m.role !== 'agent' && m.role !== 'operator') || m.kind === 'note') return 'skip';
    if (m.delivery === 'cancelled' || m.delivery === 'failed') return 'skip';
    if (m.delivery === 'pending') return Date.now() - new Date(m.created_at).getTime() < this.#deps.stallMs ? 'wait' : 'stalled';
    return 'send';
  }
}

function messageFrame(m: StoredMessage): Extract<ServerFrame, { type: 'message' }> {
  const frame: Extract<ServerFrame, { type: 'message' }> = { type: 'message', seq: m.seq, role: m.role as 'customer' | 'agent' | 'operator', text: m.text, at: new Date(m.created_at).toISOString(), name: m.role === 'operator' ? m.name : null };
  // A clarify reply: the titles of its numbered options, for the widget to offer as choices.
  if (m.options?.length) frame.options = m.options.map((o) => o.title);
  return frame;
}
