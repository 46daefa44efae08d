import { randomUUID } from 'node:crypto';
import type { Subscription } from '@nats-io/transport-node';
import type { WebSocket } from 'ws';
import type { InboundPublisher } from '../../lib/inbound.js';
import type { Logger } from '../../lib/logger.js';
import type { NatsConnection } from '../../lib/nats.js';
import type { StreamNames } from '../../lib/streams.js';
import { inSpan, SpanKind } from '../../lib/tracing.js';
import type { LivePush } from '../../lib/webchat-pushes.js';
import type { ConversationStatus } from '../../schema/conversation.js';
import type { CustomerContact, InboundEnvelope } from '../../schema/envelope.js';
import type { IntegrationCache } from '../webhook/integration-cache.js';
import type { PrechatForm } from '../../schema/entities.js';
import { FrameError, type IdentityClaim, type ServerFrame } from './frames.js';
import { identityVerifies, visitorContact } from './identity.js';
import type { Greetings } from './greetings.js';
import type { TokenBuckets } from './limits.js';
import { OwnMessages } from './own-messages.js';
import { Previews, type PreviewsDeps } from './previews.js';
import { SessionPump, type PumpOutput } from './pump.js';
import type { SessionReads } from './sessions.js';
import { VisitorSocket, type SessionFrame, type SocketEvents, type SocketLimits } from './socket.js';
import type { VisitorTokens } from './visitor-token.js';

/**
 * One widget socket (one visitor, one browser tab): the visitor's session over it.
 *
 * PostgreSQL is the source of truth; NATS only says "look again". What the socket shows of
 * the session it follows is pumped from PostgreSQL (pump.ts); the triggers are the session's
 * notices and the visitor's outbound subject `names.webchatOutbound(integrationId,
 * visitorId)` (the dispatcher's push of a reply; whichever gateway holds the socket has
 * subscribed to it). The visitor's own messages sent on this socket are answered by `ack`
 * (own-messages.ts). Previews (`typing`, `delta`) come on the outbound subject too and are
 * forwarded, never stored (previews.ts).
 *
 * The gateway never creates a session: a visitor without an open one is welcomed with
 * `conversationId: null`, and the worker creates the session when the visitor's first
 * message arrives (also after a closed one). After its commit the worker pushes `{type:
 * "session", conversationId}` on the visitor's outbound subject; every socket of the
 * visitor then moves to it (a `welcome` with the new id, then its messages, which acks the
 * socket's own). A lost push is made up for by the ack recheck, or by the session's first reply.
 *
 * Messages are rate-limited per client address and per visitor (buckets shared by the
 * process's sockets): over a rate the visitor gets `error RATE_LIMITED` naming the
 * message, which is not published; the socket stays open.
 *
 * The host page may say who the visitor is (`hello.identity`, `identify`: identity.ts); a
 * verified identity, or else the pre-chat form's answers (`message.contact`), goes with each
 * of the socket's messages to the worker, which fills the customer's lead with it.
 *
 * `hello`, `identify`, `message` and session switches run one at a time, in order (the frame chain).
 *
 * The connection is what its parts call back (SocketEvents, PumpOutput, PreviewsDeps): methods,
 * not closures made per socket (socket.ts says why).
 */
export interface ConnectionContext {
  reads: SessionReads;
  nc: NatsConnection;
  /** Makes the visitor's messages durable in JetStream (lib/inbound.ts). */
  publisher: InboundPublisher;
  names: StreamNames;
  tokens: VisitorTokens;
  cache: IntegrationCache;
  /** What `welcome` carries as `greeting`. */
  greetings: Greetings;
  logger: Logger;
  now: () => number;
  /** Message rates, keyed by client address and by visitor. */
  rates: { perIp: TokenBuckets; perVisitor: TokenBuckets };
  limits: ConnectionLimits;
}

export interface ConnectionLimits extends SocketLimits {
  helloTimeoutMs: number;
  ackRecheckMs: number;
  stallMs: number;
}

export class VisitorConnection implements SocketEvents, PumpOutput, PreviewsDeps {
  readonly #ctx: ConnectionContext;
  readonly #integration: { id: number; companyId: number };
  /** The client address the socket is counted under (limits.ts addressKey). */
  readonly #address: string;
  readonly #onClose: () => void;
  readonly #socket: VisitorSocket;
  readonly #own: OwnMessages;
  readonly #pump: SessionPump;
  readonly #previews: Previews;

  /** Set once `hello` is answered. */
  #visitor: { id: string; token: string } | null = null;
  /** The host page's identity of the visitor, once its hash verified. */
  #identity: IdentityClaim | null = null;
  /** The integration's pre-chat form, as `welcome` tells it. */
  #prechat: PrechatForm = 'off';
  #outbound: Subscription | null = null;
  #chain: Promise<void> = Promise.resolve();
  #helloTimer: NodeJS.Timeout | null = null;
  #recheckTimer: NodeJS.Timeout | null = null;

  constructor(ws: WebSocket, ctx: ConnectionContext, integration: { id: number; companyId: number }, address: string, onClose: () => void) {
    this.#ctx = ctx;
    this.#integration = { id: integration.id, companyId: integration.companyId };
    this.#address = address;
    this.#onClose = onClose;
    this.#socket = new VisitorSocket(ws, { limits: ctx.limits, now: ctx.now, logger: ctx.logger, integrationId: integration.id }, this);
    this.#own = new OwnMessages(this.#socket);
    this.#pump = new SessionPump(
      { reads: ctx.reads, nc: ctx.nc, names: ctx.names, logger: ctx.logger, companyId: integration.companyId, stallMs: ctx.limits.stallMs, socket: this.#socket },
      this.#own,
      this,
    );
    this.#previews = new Previews(this);
    this.#helloTimer = setTimeout(() => this.close(1008, 'hello expected'), ctx.limits.helloTimeoutMs);
    this.#helloTimer.unref();
  }

  get visitorId(): string | null {
    return this.#visitor?.id ?? null;
  }

  get conversationId(): number | null {
    return this.#pump.conversationId;
  }

  ping(): void {
    this.#socket.ping();
  }

  close(code: number, reason: string): void {
    this.#socket.close(code, reason);
  }

  terminate(): void {
    this.#socket.terminate();
  }

  onFrame(frame: SessionFrame): void {
    this.enqueue(() => (frame.type === 'hello' ? this.#hello(frame) : frame.type === 'identify' ? this.#identify(frame.identity) : this.#message(frame)));
  }

  send(frame: ServerFrame): void {
    this.#socket.send(frame);
  }

  /** A stored message; an agent's or operator's ends the preview of the reply being written. */
  showMessage(frame: Extract<ServerFrame, { type: 'message' }>): void {
    if (frame.role !== 'customer') this.#previews.replied();
    this.#socket.send(frame);
  }

  showStatus(status: ConversationStatus): void {
    // A human took over or the session ended: a preview still shown is over.
    this.#previews.end();
    this.#socket.send({ type: 'status', status });
  }

  /** Frames and session switches run one at a time, in order. */
  enqueue(work: () => Promise<void>): void {
    this.#chain = this.#chain
      .then(() => (this.#socket.closed ? undefined : work()))
      .catch((err: unknown) => {
        this.#ctx.logger.error({ err, integrationId: this.#integration.id, visitorId: this.visitorId }, 'webchat: frame handling failed');
        this.#socket.fail(new FrameError('INTERNAL_ERROR', 'Something went wrong; try again.'));
      });
  }

  async #hello(frame: Extract<SessionFrame, { type: 'hello' }>): Promise<void> {
    if (this.#visitor) return this.#socket.fail(new FrameError('ALREADY_WELCOMED', 'hello was already answered on this socket.'));
    if (this.#helloTimer) clearTimeout(this.#helloTimer);
    this.#helloTimer = null;
    const integrationId = this.#integration.id;
    this.#prechat = (await this.#ctx.cache.get(integrationId))?.prechatForm ?? 'off';
    if (frame.identity) await this.#identify(frame.identity);
    let visitorId: string | null = null;
    if (frame.visitorToken !== null) {
      const claims = await this.#ctx.tokens.verify(frame.visitorToken, integrationId);
      // Decision: an invalid token (forged, expired, another integration's) never fails the
      // widget and never reaches anyone's session: an error frame, then a brand-new visitor.
      if (claims) visitorId = claims.visitorId;
      else this.#socket.fail(new FrameError('INVALID_TOKEN', 'The visitor token is not valid here; starting a new visitor.'));
    }
    const known = visitorId !== null;
    visitorId ??= randomUUID();
    // Looked up meanwhile (at once when cached); never rejects.
    const greeting = this.#ctx.greetings.get(integrationId);
    // Subscribe before reading: nothing committed after the read can be missed.
    this.#outbound = this.#ctx.nc.subscribe(this.#ctx.names.webchatOutbound(integrationId, visitorId), {
      callback: (err, msg) => {
        if (!err) this.#onOutbound(msg.data);
      },
    });
    let session;
    let token;
    try {
      session = await this.#ctx.reads.openSession(integrationId, visitorId);
      token = await this.#ctx.tokens.issue({ visitorId, integrationId });
    } catch (err) {
      // Not welcomed after all: the client may send hello again.
      this.#outbound?.unsubscribe();
      this.#outbound = null;
      throw err;
    }
    if (this.#socket.closed) return;
    this.#visitor = { id: visitorId, token };
    if (!session) {
      // No open session: the visitor's first message makes one (the worker does).
      const text = await greeting;
      if (!this.#socket.closed) this.#socket.send({ type: 'welcome', visitorId, visitorToken: token, conversationId: null, greeting: text, prechat: this.#prechat });
      return;
    }
    let after = known ? frame.lastSeq : 0;
    // lastSeq counts in another session (a closed one): the open session is all new to the visitor.
    if ((frame.conversationId !== null && frame.conversationId !== session.id) || after > session.message_seq) after = 0;
    await this.#follow(session.id, after);
  }

  /** Follows a session: a `welcome` with its id, then its messages after `after`. */
  async #follow(conversationId: number, after: number): Promise<void> {
    // Before following: the session's messages must not overtake its welcome.
    const greeting = await this.#ctx.greetings.get(this.#integration.id);
    const visitor = this.#visitor;
    // Gone while the session was looked up: nothing more to follow.
    if (!visitor || this.#socket.closed) return;
    this.#pump.follow(conversationId, after);
    this.#previews.end();
    this.#socket.send({ type: 'welcome', visitorId: visitor.id, visitorToken: visitor.token, conversationId, greeting, prechat: this.#prechat });
    await this.#pump.pump();
  }

  /**
   * The visitor's open session is another one than this socket's (the worker opened it for
   * a message of this or another socket of the visitor): that session, from seq 1.
   */
  async followOpenSession(): Promise<void> {
    if (!this.#visitor) return;
    const session = await this.#ctx.reads.openSession(this.#integration.id, this.#visitor.id);
    if (!session || session.id === this.#pump.conversationId) return;
    await this.#follow(session.id, 0);
  }

  /** The host page's identity: kept when its hash verifies; otherwise an error frame, and the one kept before (if any) stays. */
  async #identify(claim: IdentityClaim | 'malformed'): Promise<void> {
    const integration = claim === 'malformed' ? null : await this.#ctx.cache.get(this.#integration.id);
    if (claim !== 'malformed' && integration && identityVerifies(claim, integration.secrets, this.#ctx.now())) this.#identity = claim;
    else this.#socket.fail(new FrameError('IDENTITY_INVALID', 'The identity hash does not verify; the chat goes on without it.'));
  }

  async #message(frame: Extract<SessionFrame, { type: 'message' }>): Promise<void> {
    const id = frame.clientMessageId;
    if (!this.#visitor) return this.#socket.fail(new FrameError('HELLO_REQUIRED', 'Send hello first.', id));
    const visitorId = this.#visitor.id;
    const integrationId = this.#integration.id;
    // Checked before any lookup, so a flood costs no database work; a refused message spends no token.
    const { perIp, perVisitor } = this.#ctx.rates;
    const visitorKey = `${integrationId}:${visitorId}`;
    const waitMs = Math.max(perIp.waitMs(this.#address), perVisitor.waitMs(visitorKey));
    if (waitMs > 0) return this.#socket.fail(new FrameError('RATE_LIMITED', `Too many messages; send this one again in ${Math.ceil(waitMs / 1000)} s.`, id));
    perIp.take(this.#address);
    perVisitor.take(visitorKey);
    const integration = await this.#ctx.cache.get(integrationId);
    if (!integration || integration.type !== 'webchat' || !integration.active) {
      this.#socket.fail(new FrameError('INTEGRATION_INACTIVE', 'This chat is not available.', id));
      this.close(1008, 'integration inactive');
      return;
    }
    this.#own.sent(id);

    // A resend of a stored message: answered from PostgreSQL, not queued again.
    const stored = await this.#ctx.reads.storedCustomerMessage(integrationId, visitorId, id);
    if (stored) {
      this.#socket.send({ type: 'ack', clientMessageId: id, seq: stored.seq, conversationId: stored.conversationId });
      return;
    }
    // No open session, or a closed one: the worker opens a new one for this message and
    // announces it (#onOutbound follows it; its replay acks the message).
    this.#own.queued(id);
    const env = visitorEnvelope(this.#integration, visitorId, id, frame.text, new Date(this.#ctx.now()).toISOString(), visitorContact(this.#identity, frame.contact));
    try {
      // A visitor's message starts its trace here, as a webhook does at ingress.
      await inSpan('webchat message', { kind: SpanKind.SERVER, attributes: { 'mas.integration_id': integrationId } }, () => this.#ctx.publisher.publish(env));
    } catch (err) {
      this.#ctx.logger.warn({ err, integrationId }, 'webchat: JetStream did not take a message');
      this.#own.notQueued(id);
      return this.#socket.fail(new FrameError('QUEUE_UNAVAILABLE', 'The message could not be queued; send it again.', id, { cause: err }));
    }
    this.#armRecheck();
  }

  /** A push on the visitor's outbound subject. */
  #onOutbound(data: Uint8Array): void {
    if (this.#socket.closed) return;
    let push: { type?: unknown; conversationId?: unknown; seq?: unknown; role?: unknown; text?: unknown; at?: unknown };
    try {
      push = JSON.parse(Buffer.from(data).toString('utf8'));
    } catch {
      return;
    }
    if (typeof push.conversationId !== 'number') return this.#pump.schedule();
    if (push.type === 'typing' || push.type === 'delta') return this.#previews.push(push as LivePush);
    if (push.conversationId !== this.#pump.conversationId) return this.enqueue(() => this.followOpenSession());
    // A reply the pump skipped as stalled has gone out after all: show it now (read again: the push does not name its author).
    if (push.type === 'message' && typeof push.seq === 'number' && this.#pump.releaseStalled(push.seq)) return void this.#pump.showReleased(push.seq);
    this.#pump.schedule(push.type === 'message' && typeof push.seq === 'number' ? push.seq : undefined);
  }

  /** Safety net for a lost notice (core NATS is at-most-once): look the messages awaiting their ack up. */
  #armRecheck(): void {
    if (this.#recheckTimer || this.#socket.closed) return;
    this.#recheckTimer = setTimeout(() => {
      this.#recheckTimer = null;
      this.enqueue(() => this.#recheck());
    }, this.#ctx.limits.ackRecheckMs);
    this.#recheckTimer.unref();
  }

  async #recheck(): Promise<void> {
    if (!this.#visitor) return;
    let moved = false;
    for (const id of this.#own.awaiting()) {
      const stored = await this.#ctx.reads.storedCustomerMessage(this.#integration.id, this.#visitor.id, id);
      if (!stored) continue;
      if (stored.conversationId === this.#pump.conversationId) this.#own.stored(id, stored.seq, stored.conversationId);
      else moved = true;
    }
    // Stored in a session the socket does not follow (the worker reopened one): follow it;
    // its pump acks the visitor's own messages.
    if (moved) await this.followOpenSession();
    if (this.#own.awaiting().length > 0) this.#armRecheck();
  }

  onSocketClosed(): void {
    for (const timer of [this.#helloTimer, this.#recheckTimer]) if (timer) clearTimeout(timer);
    this.#helloTimer = this.#recheckTimer = null;
    this.#pump.stop();
    try {
      this.#outbound?.unsubscribe();
    } catch {
      /* connection closed */
    }
    this.#outbound = null;
    this.#onClose();
  }
}

/** A visitor's message as the worker takes it from JetStream. */
function visitorEnvelope(integration: { id: number; companyId: number }, visitorId: string, clientMessageId: string, text: string, receivedAt: string, contact: CustomerContact | undefined): InboundEnvelope {
  return {
    v: 1,
    kind: 'message',
    idempotencyKey: `webchat:${visitorId}:${clientMessageId}`,
    companyId: integration.companyId,
    integrationId: integration.id,
    channel: 'webchat',
    receivedAt,
    message: { messageId: clientMessageId, text, clientId: visitorId, channelId: null, transport: null, requestId: null, dialogId: null, attachments: [], sentAt: receivedAt, ...(contact ? { contact } : {}) },
  };
}
