import { randomUUID } from 'node:crypto';
import type { Subscription } from '@nats-io/transport-node';
import { WebSocket, type RawData } from 'ws';
import type { ConversationNotice } from '../../lib/conversations.js';
import type { Orm } from '../../lib/db.js';
import type { Logger } from '../../lib/logger.js';
import type { NatsConnection } from '../../lib/nats.js';
import type { InboundPublisher } from '../../lib/inbound.js';
import type { StreamNames } from '../../lib/streams.js';
import type { LivePush } from '../../lib/webchat-pushes.js';
import { inSpan, SpanKind } from '../../lib/tracing.js';
import type { ConversationStatus } from '../../schema/conversation.js';
import type { InboundEnvelope } from '../../schema/envelope.js';
import type { IntegrationCache } from '../webhook/integration-cache.js';
import { FrameError, parseClientFrame, type ClientFrame, type ServerFrame, type WebchatErrorCode } from './frames.js';
import { findOpenSession, findStoredCustomerMessage, messagesAfter, sessionStatus, type StoredMessage } from './sessions.js';
import type { TokenBuckets } from './limits.js';
import type { VisitorTokens } from './visitor-token.js';

/**
 * One widget socket (one visitor, one browser tab).
 *
 * PostgreSQL is the source of truth; NATS only says "look again". What a socket shows is
 * pumped from `conversation_messages` in seq order behind a per-socket watermark
 * (`#delivered`: every seq ≤ it was sent or deliberately skipped), so a replay at `hello`
 * and live pushes that race it can neither duplicate nor skip a message:
 * - customer messages are deliverable once stored; agent / operator messages once the
 *   worker's dispatcher marked them `sent` (a `pending` one holds the pump back, so a
 *   visitor never sees seq N+1 before N is settled; `cancelled` / `failed` are skipped);
 * - triggers: the visitor's outbound subject `names.webchatOutbound(integrationId,
 *   visitorId)` (the dispatcher's push of a reply; whichever gateway holds the socket has
 *   subscribed to it) and the session's notices `names.conversationEvents(companyId,
 *   conversationId)` (a customer message stored → its `ack`; transitions → `status`).
 * The visitor's own messages sent on this socket are answered by `ack` and not echoed back
 * as `message` frames (other tabs of the same visitor get them as `message` frames; a
 * replay includes them).
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
 * Previews (lib/webchat-pushes.ts) come on the same outbound subject and are forwarded, never
 * stored: `typing` as `typing {role:"agent"}`, a streamed reply's pieces as `delta
 * {conversationId, text}`. A socket forwards one stream at a time and only from its first
 * piece, in order, without a gap: one that joined mid-stream, missed a piece, or still shows an
 * earlier stream (an answer asked again after a crash) forwards nothing more of it, and the
 * reply's `message` (from PostgreSQL, like any other) replaces what was shown. The visitor's
 * own `typing` frames are accepted silently.
 */
export interface ConnectionContext {
  orm: Orm;
  nc: NatsConnection;
  /** Makes the visitor's messages durable in JetStream (lib/inbound.ts). */
  publisher: InboundPublisher;
  names: StreamNames;
  tokens: VisitorTokens;
  cache: IntegrationCache;
  logger: Logger;
  now: () => number;
  /** Message rates, keyed by client address and by visitor. */
  rates: { perIp: TokenBuckets; perVisitor: TokenBuckets };
  limits: ConnectionLimits;
}

export interface ConnectionLimits {
  helloTimeoutMs: number;
  framesPerSecond: number;
  frameBurst: number;
  ackRecheckMs: number;
  stallMs: number;
  maxBufferedBytes: number;
}

const PUMP_BATCH = 200;
const MAX_OWN_IDS = 1000;

export class VisitorConnection {
  readonly #ws: WebSocket;
  readonly #ctx: ConnectionContext;
  readonly #integrationId: number;
  readonly #companyId: number;
  /** The client address the socket is counted under (limits.ts addressKey). */
  readonly #address: string;
  readonly #onClose: () => void;

  #visitorId: string | null = null;
  #visitorToken = '';
  #conversationId: number | null = null;
  /** Bumped whenever the socket moves to another session; a pump of an old one stops. */
  #bindGen = 0;
  #delivered = 0;
  /** Outbound messages left `pending` past stallMs: skipped by the pump, sent when their push arrives. */
  readonly #stalled = new Set<number>();
  #lastStatus: ConversationStatus = 'active';
  /** clientMessageId → message frames waiting for their ack. */
  readonly #pendingAcks = new Map<string, number>();
  /** clientMessageIds sent on this socket (not echoed back). */
  readonly #own = new Set<string>();
  #outSub: Subscription | null = null;
  #convSub: Subscription | null = null;
  #chain: Promise<void> = Promise.resolve();
  #pumping = false;
  #pumpAgain = false;
  #bucket: number;
  #refilledAt: number;
  #helloTimer: NodeJS.Timeout | null = null;
  #recheckTimer: NodeJS.Timeout | null = null;
  #stallTimer: NodeJS.Timeout | null = null;
  #closed = false;
  #cleaned = false;
  /** The streamed reply being forwarded (its next piece), until a reply or status frame ends it. */
  #stream: { id: string; next: number } | null = null;
  /** Agent / operator messages sent so far: a preview queued before one of them is stale. */
  #repliesSent = 0;
  /** Previews waiting in the frame chain (behind a session switch): later ones wait behind them. */
  #liveQueued = 0;
  /** Heartbeat: set by every pong / frame, cleared by every ping. */
  alive = true;

  constructor(ws: WebSocket, ctx: ConnectionContext, integration: { id: number; companyId: number }, address: string, onClose: () => void) {
    this.#ws = ws;
    this.#ctx = ctx;
    this.#integrationId = integration.id;
    this.#companyId = integration.companyId;
    this.#address = address;
    this.#onClose = onClose;
    this.#bucket = ctx.limits.frameBurst;
    this.#refilledAt = ctx.now();
    ws.on('message', (data, isBinary) => this.#onFrame(data, isBinary));
    ws.on('pong', () => {
      this.alive = true;
    });
    ws.on('error', (err) => ctx.logger.debug({ err, integrationId: this.#integrationId }, 'webchat: socket error'));
    ws.on('close', () => this.#cleanup());
    this.#helloTimer = setTimeout(() => this.close(1008, 'hello expected'), ctx.limits.helloTimeoutMs);
    this.#helloTimer.unref();
  }

  get visitorId(): string | null {
    return this.#visitorId;
  }

  get conversationId(): number | null {
    return this.#conversationId;
  }

  ping(): void {
    if (!this.alive) {
      this.#ws.terminate();
      return;
    }
    this.alive = false;
    try {
      this.#ws.ping();
    } catch {
      this.#ws.terminate();
    }
  }

  close(code: number, reason: string): void {
    if (this.#ws.readyState === WebSocket.OPEN || this.#ws.readyState === WebSocket.CONNECTING) this.#ws.close(code, reason);
  }

  terminate(): void {
    this.#ws.terminate();
  }

  // ---- frames in -----------------------------------------------------------------------

  #onFrame(data: RawData, isBinary: boolean): void {
    if (this.#closed) return;
    this.alive = true;
    // Token bucket: a sustained flood above framesPerSecond closes the socket.
    const now = this.#ctx.now();
    const { framesPerSecond, frameBurst } = this.#ctx.limits;
    this.#bucket = Math.min(frameBurst, this.#bucket + ((now - this.#refilledAt) / 1000) * framesPerSecond);
    this.#refilledAt = now;
    if (this.#bucket < 1) {
      this.close(1008, 'too many frames');
      this.#closed = true;
      return;
    }
    this.#bucket -= 1;
    if (isBinary) return this.#error('INVALID_FRAME', 'Frames must be JSON text.');
    let frame: ClientFrame;
    try {
      frame = parseClientFrame(dataToString(data));
    } catch (err) {
      if (err instanceof FrameError) return this.#error(err.code, err.message, err.clientMessageId);
      throw err;
    }
    if (frame.type === 'ping') return this.#send({ type: 'pong' });
    if (frame.type === 'typing') return;
    this.#enqueue(() => (frame.type === 'hello' ? this.#hello(frame) : this.#message(frame as Extract<ClientFrame, { type: 'message' }>)));
  }

  /** Frames and session switches run one at a time, in order. */
  #enqueue(work: () => Promise<void>): void {
    this.#chain = this.#chain
      .then(() => (this.#closed ? undefined : work()))
      .catch((err: unknown) => {
        this.#ctx.logger.error({ err, integrationId: this.#integrationId, visitorId: this.#visitorId }, 'webchat: frame handling failed');
        this.#error('INTERNAL_ERROR', 'Something went wrong; try again.');
      });
  }

  async #hello(frame: Extract<ClientFrame, { type: 'hello' }>): Promise<void> {
    if (this.#visitorId) return this.#error('ALREADY_WELCOMED', 'hello was already answered on this socket.');
    if (this.#helloTimer) clearTimeout(this.#helloTimer);
    this.#helloTimer = null;
    let visitorId: string | null = null;
    if (frame.visitorToken !== null) {
      const claims = await this.#ctx.tokens.verify(frame.visitorToken, this.#integrationId);
      // Decision: an invalid token (forged, expired, another integration's) never fails the
      // widget and never reaches anyone's session: an error frame, then a brand-new visitor.
      if (claims) visitorId = claims.visitorId;
      else this.#error('INVALID_TOKEN', 'The visitor token is not valid here; starting a new visitor.');
    }
    const known = visitorId !== null;
    visitorId ??= randomUUID();
    this.#visitorId = visitorId;
    // Subscribe before reading: nothing committed after the read can be missed.
    this.#outSub = this.#ctx.nc.subscribe(this.#ctx.names.webchatOutbound(this.#integrationId, visitorId), {
      callback: (err, msg) => {
        if (!err) this.#onOutbound(msg.data);
      },
    });
    let session;
    try {
      session = await findOpenSession(this.#ctx.orm, this.#integrationId, visitorId);
      this.#visitorToken = await this.#ctx.tokens.issue({ visitorId, integrationId: this.#integrationId });
    } catch (err) {
      // Not welcomed after all: the client may send hello again.
      this.#outSub.unsubscribe();
      this.#outSub = null;
      this.#visitorId = null;
      throw err;
    }
    if (!session) {
      // No open session: the visitor's first message makes one (the worker does).
      this.#send({ type: 'welcome', visitorId, visitorToken: this.#visitorToken, conversationId: null });
      return;
    }
    let after = known ? frame.lastSeq : 0;
    // lastSeq counts in another session (a closed one): the open session is all new to the visitor.
    if ((frame.conversationId !== null && frame.conversationId !== session.id) || after > session.message_seq) after = 0;
    this.#bind(session.id, after);
    this.#send({ type: 'welcome', visitorId, visitorToken: this.#visitorToken, conversationId: session.id });
    await this.#pump();
  }

  async #message(frame: Extract<ClientFrame, { type: 'message' }>): Promise<void> {
    const id = frame.clientMessageId;
    const visitorId = this.#visitorId;
    if (!visitorId) return this.#error('HELLO_REQUIRED', 'Send hello first.', id);
    // Checked before any lookup, so a flood costs no database work; a refused message spends no token.
    const { perIp, perVisitor } = this.#ctx.rates;
    const visitorKey = `${this.#integrationId}:${visitorId}`;
    const waitMs = Math.max(perIp.waitMs(this.#address), perVisitor.waitMs(visitorKey));
    if (waitMs > 0) return this.#error('RATE_LIMITED', `Too many messages; send this one again in ${Math.ceil(waitMs / 1000)} s.`, id);
    perIp.take(this.#address);
    perVisitor.take(visitorKey);
    const integration = await this.#ctx.cache.get(this.#integrationId);
    if (!integration || integration.type !== 'webchat' || !integration.active) {
      this.#error('INTEGRATION_INACTIVE', 'This chat is not available.', id);
      this.close(1008, 'integration inactive');
      return;
    }
    this.#own.add(id);
    if (this.#own.size > MAX_OWN_IDS) this.#own.delete(this.#own.values().next().value!);

    // A resend of a stored message: answered from PostgreSQL, not queued again.
    const stored = await findStoredCustomerMessage(this.#ctx.orm, this.#integrationId, visitorId, id);
    if (stored) {
      this.#send({ type: 'ack', clientMessageId: id, seq: stored.seq, conversationId: stored.conversationId });
      return;
    }
    // No open session, or a closed one: the worker opens a new one for this message and
    // announces it (#onOutbound follows it; its replay acks the message).
    this.#pendingAcks.set(id, (this.#pendingAcks.get(id) ?? 0) + 1);
    const receivedAt = new Date(this.#ctx.now()).toISOString();
    const idempotencyKey = `webchat:${visitorId}:${id}`;
    const env: InboundEnvelope = {
      v: 1,
      kind: 'message',
      idempotencyKey,
      companyId: this.#companyId,
      integrationId: this.#integrationId,
      channel: 'webchat',
      receivedAt,
      message: { messageId: id, text: frame.text, clientId: visitorId, channelId: null, transport: null, requestId: null, dialogId: null, attachments: [], sentAt: receivedAt },
    };
    try {
      // A visitor's message starts its trace here, as a webhook does at ingress.
      await inSpan('webchat message', { kind: SpanKind.SERVER, attributes: { 'mas.integration_id': this.#integrationId } }, () => this.#ctx.publisher.publish(env));
    } catch (err) {
      this.#ctx.logger.warn({ err, integrationId: this.#integrationId }, 'webchat: JetStream did not take a message');
      const n = (this.#pendingAcks.get(id) ?? 1) - 1;
      if (n > 0) this.#pendingAcks.set(id, n);
      else this.#pendingAcks.delete(id);
      return this.#error('QUEUE_UNAVAILABLE', 'The message could not be queued; send it again.', id);
    }
    this.#armRecheck();
  }

  // ---- sessions ------------------------------------------------------------------------

  #bind(conversationId: number, after: number): void {
    this.#bindGen++;
    this.#convSub?.unsubscribe();
    this.#conversationId = conversationId;
    this.#delivered = after;
    this.#stalled.clear();
    this.#stream = null;
    this.#lastStatus = 'active';
    this.#convSub = this.#ctx.nc.subscribe(this.#ctx.names.conversationEvents(this.#companyId, conversationId), {
      callback: (err, msg) => {
        if (!err) this.#onNotice(msg.data, conversationId);
      },
    });
  }

  /**
   * The visitor's open session is another one than this socket's (the worker opened it for
   * a message of this or another socket of the visitor): a new `welcome`, then that
   * session's messages from seq 1.
   */
  async #switchSession(): Promise<void> {
    const visitorId = this.#visitorId!;
    const session = await findOpenSession(this.#ctx.orm, this.#integrationId, visitorId);
    if (!session || session.id === this.#conversationId) return;
    this.#bind(session.id, 0);
    this.#send({ type: 'welcome', visitorId, visitorToken: this.#visitorToken, conversationId: session.id });
    await this.#pump();
  }

  // ---- NATS in -------------------------------------------------------------------------

  #onOutbound(data: Uint8Array): void {
    if (this.#closed) return;
    let push: { type?: unknown; conversationId?: unknown; seq?: unknown; role?: unknown; text?: unknown; at?: unknown };
    try {
      push = JSON.parse(Buffer.from(data).toString('utf8'));
    } catch {
      return;
    }
    if (typeof push.conversationId !== 'number') return this.#schedulePump();
    if (push.type === 'typing' || push.type === 'delta') return this.#onLive(push as LivePush);
    if (push.conversationId !== this.#conversationId) {
      this.#enqueue(() => this.#switchSession());
      return;
    }
    // A reply the pump skipped as stalled has gone out after all: show it now.
    if (push.type === 'message' && typeof push.seq === 'number' && this.#stalled.delete(push.seq)) {
      const role = push.role === 'operator' ? 'operator' : 'agent';
      this.#sendMessage({ type: 'message', seq: push.seq, role, text: String(push.text ?? ''), at: String(push.at ?? new Date().toISOString()) });
      return;
    }
    this.#schedulePump();
  }

  /**
   * A preview. One of a session the socket does not follow yet (the worker just opened it)
   * waits behind the switch in the frame chain, and so do the ones after it; it is dropped if a
   * reply was sent meanwhile (it would show after its own reply).
   */
  #onLive(push: LivePush): void {
    if (push.conversationId === this.#conversationId && this.#liveQueued === 0) return this.#forwardLive(push);
    const replies = this.#repliesSent;
    this.#liveQueued++;
    this.#enqueue(async () => {
      try {
        if (push.conversationId !== this.#conversationId) await this.#switchSession();
        if (this.#repliesSent === replies) this.#forwardLive(push);
      } finally {
        this.#liveQueued--;
      }
    });
  }

  #forwardLive(push: LivePush): void {
    if (push.conversationId !== this.#conversationId) return;
    if (push.type === 'typing') return this.#send({ type: 'typing', role: 'agent' });
    if (typeof push.stream !== 'string' || typeof push.n !== 'number' || typeof push.text !== 'string') return;
    if (push.n === 0 && this.#stream === null) this.#stream = { id: push.stream, next: 0 };
    if (this.#stream?.id !== push.stream || this.#stream.next !== push.n) return;
    this.#stream.next++;
    this.#send({ type: 'delta', conversationId: push.conversationId, text: push.text });
  }

  #onNotice(data: Uint8Array, conversationId: number): void {
    if (this.#closed || conversationId !== this.#conversationId) return;
    try {
      const notice = JSON.parse(Buffer.from(data).toString('utf8')) as ConversationNotice;
      if (notice.type === 'message' && notice.message.role === 'customer' && notice.message.externalId) this.#ackPending(notice.message.externalId, notice.message.seq, conversationId);
      if (notice.type === 'applied') return;
    } catch {
      /* a trigger all the same */
    }
    this.#schedulePump();
  }

  #ackPending(clientMessageId: string, seq: number, conversationId: number): void {
    const n = this.#pendingAcks.get(clientMessageId);
    if (!n) return;
    this.#pendingAcks.delete(clientMessageId);
    for (let i = 0; i < n; i++) this.#send({ type: 'ack', clientMessageId, seq, conversationId });
  }

  /** Safety net for a lost notice (core NATS is at-most-once): look the pending messages up. */
  #armRecheck(): void {
    if (this.#recheckTimer || this.#closed) return;
    this.#recheckTimer = setTimeout(() => {
      this.#recheckTimer = null;
      this.#enqueue(async () => {
        const visitorId = this.#visitorId;
        if (!visitorId) return;
        let moved = false;
        for (const id of [...this.#pendingAcks.keys()]) {
          const stored = await findStoredCustomerMessage(this.#ctx.orm, this.#integrationId, visitorId, id);
          if (!stored) continue;
          if (stored.conversationId === this.#conversationId) this.#ackPending(id, stored.seq, stored.conversationId);
          else moved = true;
        }
        // Stored in a session the socket does not follow (the worker reopened one): follow it;
        // its pump acks the visitor's own messages.
        if (moved) await this.#switchSession();
        if (this.#pendingAcks.size > 0) this.#armRecheck();
      });
    }, this.#ctx.limits.ackRecheckMs);
    this.#recheckTimer.unref();
  }

  // ---- the pump ------------------------------------------------------------------------

  #schedulePump(): void {
    if (this.#closed || this.#conversationId === null) return;
    if (this.#pumping) {
      this.#pumpAgain = true;
      return;
    }
    void this.#pump();
  }

  async #pump(): Promise<void> {
    if (this.#pumping) {
      this.#pumpAgain = true;
      return;
    }
    this.#pumping = true;
    try {
      do {
        this.#pumpAgain = false;
        await this.#pumpOnce();
      } while (this.#pumpAgain && !this.#closed);
    } catch (err) {
      if (!this.#closed) {
        this.#ctx.logger.warn({ err, conversationId: this.#conversationId }, 'webchat: could not read the session; retrying');
        const retry = setTimeout(() => this.#schedulePump(), 1000);
        retry.unref();
      }
    } finally {
      this.#pumping = false;
    }
  }

  async #pumpOnce(): Promise<void> {
    const gen = this.#bindGen;
    const conversationId = this.#conversationId;
    if (conversationId === null) return;
    let blockedAt: Date | null = null;
    for (;;) {
      const batch = await messagesAfter(this.#ctx.orm, conversationId, this.#delivered, PUMP_BATCH);
      if (gen !== this.#bindGen || this.#closed) return;
      for (const m of batch) {
        const verdict = this.#verdict(m);
        if (verdict === 'wait') {
          blockedAt = new Date(m.created_at);
          break;
        }
        if (verdict === 'stalled') this.#stalled.add(m.seq);
        else if (verdict === 'own') this.#ackPending(m.external_id!, m.seq, conversationId);
        else if (verdict === 'send') this.#sendMessage({ type: 'message', seq: m.seq, role: m.role as 'customer' | 'agent' | 'operator', text: m.text, at: new Date(m.created_at).toISOString() });
        this.#delivered = m.seq;
      }
      if (blockedAt || batch.length < PUMP_BATCH) break;
    }
    if (blockedAt) {
      // Look again once the pending message counts as stalled (its dispatcher may be gone).
      if (this.#stallTimer) clearTimeout(this.#stallTimer);
      const wait = Math.max(50, blockedAt.getTime() + this.#ctx.limits.stallMs - Date.now() + 10);
      this.#stallTimer = setTimeout(() => {
        this.#stallTimer = null;
        this.#schedulePump();
      }, wait);
      this.#stallTimer.unref();
    }
    const status = await sessionStatus(this.#ctx.orm, conversationId);
    if (gen !== this.#bindGen || this.#closed || !status) return;
    if (status !== this.#lastStatus) {
      this.#lastStatus = status;
      // A human took over or the session ended: a preview still shown is over.
      this.#stream = null;
      this.#send({ type: 'status', status });
    }
  }

  #verdict(m: StoredMessage): 'send' | 'own' | 'skip' | 'wait' | 'stalled' {
    if (m.role === 'customer') return m.external_id !== null && this.#own.has(m.external_id) ? 'own' : 'send';
    if (m.role !== 'agent' && m.role !== 'operator') return 'skip';
    if (m.delivery === 'cancelled' || m.delivery === 'failed') return 'skip';
    if (m.delivery === 'pending') return Date.now() - new Date(m.created_at).getTime() < this.#ctx.limits.stallMs ? 'wait' : 'stalled';
    return 'send';
  }

  // ---- frames out ----------------------------------------------------------------------

  /** A stored message; an agent's or operator's ends the preview of the reply being written. */
  #sendMessage(frame: Extract<ServerFrame, { type: 'message' }>): void {
    if (frame.role !== 'customer') {
      this.#repliesSent++;
      this.#stream = null;
    }
    this.#send(frame);
  }

  #send(frame: ServerFrame): void {
    if (this.#ws.readyState !== WebSocket.OPEN) return;
    if (this.#ws.bufferedAmount > this.#ctx.limits.maxBufferedBytes) {
      // A client that does not read: drop it rather than buffer without bound (it resumes with lastSeq).
      this.close(1008, 'not reading');
      return;
    }
    this.#ws.send(JSON.stringify(frame));
  }

  #error(code: WebchatErrorCode, message: string, clientMessageId?: string): void {
    this.#send(clientMessageId === undefined ? { type: 'error', code, message } : { type: 'error', code, message, clientMessageId });
  }

  #cleanup(): void {
    if (this.#cleaned) return;
    this.#cleaned = true;
    this.#closed = true;
    for (const timer of [this.#helloTimer, this.#recheckTimer, this.#stallTimer]) if (timer) clearTimeout(timer);
    this.#helloTimer = this.#recheckTimer = this.#stallTimer = null;
    for (const sub of [this.#outSub, this.#convSub]) {
      try {
        sub?.unsubscribe();
      } catch {
        /* connection closed */
      }
    }
    this.#outSub = this.#convSub = null;
    this.#onClose();
  }
}

function dataToString(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}
