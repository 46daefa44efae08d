import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import type { Config } from '../../lib/config.js';
import type { SqlPool } from '../../lib/db.js';
import type { ErrorCode } from '../../lib/errors.js';
import type { Logger } from '../../lib/logger.js';
import type { NatsConnection } from '../../lib/nats.js';
import { inboundPublisher } from '../../lib/inbound.js';
import { streamNames } from '../../lib/streams.js';
import { requestTraceId } from '../http/request-observer.js';
import type { RequestObserver } from '../http/request-observer.js';
import type { RouteDoc } from '../http/route-docs.js';
import { idPathParam } from '../http/validate.js';
import type { IntegrationCache } from '../webhook/integration-cache.js';
import { VisitorConnection, type ConnectionContext } from './connection.js';
import { FRAME_ERROR_CODES } from './frames.js';
import { DEFAULT_WIDGET_GREETING, Greetings } from './greetings.js';
import { addressKey, SocketSlots, TokenBuckets } from './limits.js';
import { SessionReads } from './sessions.js';
import { VisitorTokens } from './visitor-token.js';

/**
 * The webchat connector's WebSocket endpoint, `GET /api/webchat/:integrationId/ws`, on the
 * gateway's own HTTP server (its 'upgrade' event). Before the upgrade, in this order:
 * - with ENFORCE_HTTPS, the upgrade must have come over TLS, directly or through a trusted
 *   proxy (`isSecure`, the webhook path's rule): else 403 HTTPS_REQUIRED;
 * - the process must hold fewer than `config.webchat.maxSockets` sockets, and fewer than
 *   `maxSocketsPerIp` from the client's address (`clientIp`, express's trust-proxy rule;
 *   IPv6 counted per /64): else 429 RATE_LIMITED with Retry-After. The slot is reserved
 *   before anything is looked up, so a burst of upgrades cannot overshoot the cap;
 * - the integration must exist and be a webchat one (404), be active (403
 *   INTEGRATION_INACTIVE), and the `Origin` must be one of its allowedOrigins when it has
 *   any (403 ORIGIN_NOT_ALLOWED). The integration comes from the webhook path's in-memory
 *   cache (no query per upgrade; changes are announced over NATS).
 *
 * Messages are rate-limited per client address and per visitor (token buckets shared by the
 * process's sockets, connection.ts). Frames above maxFrameBytes close the socket with 1009,
 * a sustained flood with 1008; every heartbeatMs a WebSocket ping goes out and a socket that
 * did not answer the previous one is terminated.
 */
export interface WebchatOptions {
  /** WebSocket ping interval; a socket silent for two intervals is terminated. Default 30 s. */
  heartbeatMs?: number;
  /** A socket must send hello within this long (else close 1008). Default 15 s. */
  helloTimeoutMs?: number;
  /** Largest frame accepted; beyond it the socket is closed with 1009. Default 64 KiB. */
  maxFrameBytes?: number;
  /** Sustained frames per second allowed per socket (token bucket); beyond it close 1008. Default 20. */
  framesPerSecond?: number;
  /** Bucket size (short bursts). Default 40. */
  frameBurst?: number;
  /** How often unacknowledged messages are looked up in PostgreSQL (a lost notice). Default 3 s. */
  ackRecheckMs?: number;
  /** An agent / operator message still `pending` after this long no longer holds later ones back. Default 30 s. */
  stallMs?: number;
  /** JetStream publish deadline of a widget message. Default PUBLISH_TIMEOUT_MS. */
  publishTimeoutMs?: number;
  /** Lifetime of a visitor token (renewed at every hello). Default 180 days. */
  visitorTokenTtlSeconds?: number;
}

export const WEBCHAT_DEFAULTS = {
  heartbeatMs: 30_000,
  helloTimeoutMs: 15_000,
  maxFrameBytes: 64 * 1024,
  framesPerSecond: 20,
  frameBurst: 40,
  ackRecheckMs: 3_000,
  stallMs: 30_000,
} as const;

const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;
/** Retry-After of an upgrade refused at a socket cap: a slot frees when some visitor leaves. */
const SOCKET_CAP_RETRY_AFTER_SECONDS = 30;
const PATH = /^\/api\/webchat\/([^/]+)\/ws\/?$/;

export interface WebchatDeps {
  config: Config;
  /** The message path's plain SQL connections (sessions.ts reads through them). */
  sql: SqlPool;
  nc: NatsConnection;
  logger: Logger;
  cache: IntegrationCache;
  /** Whether the upgrade came over TLS (directly or via a trusted proxy): the webhook path's rule. */
  isSecure: (req: IncomingMessage) => boolean;
  /** The client's address by express's trust-proxy rule (req.ip). */
  clientIp: (req: IncomingMessage) => string | undefined;
  now?: () => number;
  /** Told of every upgrade once it is answered (the access log). */
  observe?: RequestObserver;
  options?: WebchatOptions;
}

/** Answers an upgrade with an error; returns the status sent, or null when the client had already gone. */
function refuse(socket: Duplex, status: number, code: ErrorCode, message: string, headers: Record<string, string> = {}): number | null {
  const body = JSON.stringify({ error: { code, message } });
  if (!socket.writable) {
    socket.destroy();
    return null;
  }
  const extra = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}Connection: close\r\n\r\n${body}`,
  );
  return status;
}

function originOf(header: string | undefined): string | null {
  if (!header) return null;
  try {
    return new URL(header).origin;
  } catch {
    return null;
  }
}

export class WebchatServer {
  readonly #deps: WebchatDeps;
  readonly #wss: WebSocketServer;
  readonly #ctx: ConnectionContext;
  readonly #slots: SocketSlots;
  readonly #connections = new Set<VisitorConnection>();
  readonly #heartbeat: NodeJS.Timeout;
  /** Agent changes announced by any gateway (gateway/lib/agent-changes.ts): a new greeting greets the next visitor. */
  readonly #agentChanges: { unsubscribe(): void };
  #closing = false;

  constructor(deps: WebchatDeps) {
    this.#deps = deps;
    const o = { ...WEBCHAT_DEFAULTS, ...deps.options };
    const now = deps.now ?? Date.now;
    const limits = deps.config.webchat;
    this.#slots = new SocketSlots(limits.maxSockets, limits.maxSocketsPerIp);
    this.#wss = new WebSocketServer({ noServer: true, maxPayload: o.maxFrameBytes, perMessageDeflate: false, clientTracking: false });
    // A malformed handshake (method, Upgrade, Sec-WebSocket-Key or -Version) is refused here, in
    // the catalog's shape, rather than by ws: the upgrade knows what it answered.
    this.#wss.on('wsClientError', (err: Error, socket: Duplex) => {
      refuse(socket, 400, 'VALIDATION_ERROR', `Not a valid WebSocket handshake: ${err.message}`);
    });
    const names = streamNames(deps.config.natsPrefix);
    this.#ctx = {
      reads: new SessionReads(deps.sql),
      nc: deps.nc,
      publisher: inboundPublisher(deps.nc, { names, partitions: deps.config.partitions, timeoutMs: o.publishTimeoutMs ?? deps.config.publishTimeoutMs }),
      names,
      tokens: new VisitorTokens(deps.config, { now, ttlSeconds: deps.options?.visitorTokenTtlSeconds }),
      cache: deps.cache,
      greetings: new Greetings(deps.sql, deps.logger, { now }),
      logger: deps.logger,
      now,
      rates: {
        perIp: new TokenBuckets(limits.messagesPerMinutePerIp, now),
        perVisitor: new TokenBuckets(limits.messagesPerMinutePerVisitor, now),
      },
      limits: {
        helloTimeoutMs: o.helloTimeoutMs,
        framesPerSecond: o.framesPerSecond,
        frameBurst: o.frameBurst,
        ackRecheckMs: o.ackRecheckMs,
        stallMs: o.stallMs,
        maxBufferedBytes: MAX_BUFFERED_BYTES,
      },
    };
    this.#heartbeat = setInterval(() => {
      for (const c of this.#connections) c.ping();
    }, o.heartbeatMs);
    this.#heartbeat.unref();
    const greetings = this.#ctx.greetings;
    this.#agentChanges = deps.nc.subscribe(names.agentChanges, { callback: () => greetings.forgetAll() });
  }

  /** Open sockets (of every integration) in this process. */
  get size(): number {
    return this.#connections.size;
  }

  /** The HTTP server's 'upgrade' listener. Paths other than the webchat socket get 404. */
  readonly handleUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const started = process.hrtime.bigint();
    const traceId = requestTraceId();
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const route = PATH.test(path) ? webchatRouteDoc.path : null;
    socket.on('error', () => {});
    void this.#upgrade(req, socket, head, path)
      .catch((err: unknown) => {
        this.#deps.logger.error({ err, traceId }, 'webchat: upgrade failed');
        return refuse(socket, 500, 'INTERNAL_ERROR', 'Internal server error.');
      })
      .then((status) => {
        const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
        this.#deps.observe?.({ method: req.method ?? 'GET', route, status, durationMs, traceId, aborted: status === null });
      });
  };

  /** Answers the upgrade: the status sent (101 when the socket is open), or null when the client went away first. */
  async #upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, path: string): Promise<number | null> {
    const match = PATH.exec(path);
    if (!match) return refuse(socket, 404, 'NOT_FOUND', `No WebSocket endpoint at ${path.slice(0, 200)}.`);
    if (this.#closing) return refuse(socket, 503, 'NOT_READY', 'The server is shutting down.');
    if (this.#deps.config.enforceHttps && !this.#deps.isSecure(req)) return refuse(socket, 403, 'HTTPS_REQUIRED', 'The chat must be opened over HTTPS (wss://).');
    const address = addressKey(this.#deps.clientIp(req));
    const slot = this.#slots.take(address);
    if (!slot.ok) {
      this.#deps.logger.debug({ address, cap: slot.cap }, 'webchat: upgrade refused at a socket cap');
      const message = slot.cap === 'total' ? 'This server holds as many chats as it can; retry later.' : 'Too many chats are open from your address; retry later.';
      return refuse(socket, 429, 'RATE_LIMITED', message, { 'Retry-After': String(SOCKET_CAP_RETRY_AFTER_SECONDS) });
    }
    // Held until the socket closes (also when the upgrade is refused below, or fails).
    socket.once('close', slot.release);
    const deny = (status: number, code: ErrorCode, message: string) => {
      slot.release();
      return refuse(socket, status, code, message);
    };
    const raw = match[1]!;
    const id = /^[1-9]\d{0,9}$/.test(raw) ? Number(raw) : NaN;
    const integration = id <= 2_147_483_647 ? await this.#deps.cache.get(id) : null;
    if (!integration || integration.type !== 'webchat') return deny(404, 'NOT_FOUND', 'Integration not found.');
    if (!integration.active) return deny(403, 'INTEGRATION_INACTIVE', 'The integration is not active.');
    if (integration.allowedOrigins.length > 0) {
      const origin = originOf(req.headers.origin);
      if (!origin || !integration.allowedOrigins.includes(origin)) return deny(403, 'ORIGIN_NOT_ALLOWED', 'This page may not open the chat.');
    }
    if (socket.destroyed) {
      slot.release(); // the client gave up while the integration was looked up
      return null;
    }
    let status: number | null = null;
    // Synchronous (no verifyClient, no permessage-deflate): the callback has run, or the handshake was refused, when it returns.
    this.#wss.handleUpgrade(req, socket, head, (ws) => {
      status = 101;
      if (this.#closing) {
        ws.close(1001, 'shutting down');
        return;
      }
      const conn = new VisitorConnection(ws, this.#ctx, integration, address, () => {
        this.#connections.delete(conn);
        slot.release();
      });
      this.#connections.add(conn);
    });
    // Not upgraded: refused by the wsClientError listener (400), or the socket was already gone.
    return status ?? (socket.writableEnded ? 400 : null);
  }

  /** Closes every socket (1001 going away; the widget reconnects elsewhere), then stops. */
  async close(graceMs = 1000): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    clearInterval(this.#heartbeat);
    if (!this.#deps.nc.isClosed()) this.#agentChanges.unsubscribe();
    for (const c of this.#connections) c.close(1001, 'server going away');
    const deadline = Date.now() + graceMs;
    while (this.#connections.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    for (const c of this.#connections) c.terminate();
    this.#wss.close();
  }
}

/** The upgrade, as the OpenAPI document shows it (a GET answered 101; its frames described). */
export const webchatRouteDoc: RouteDoc = {
  method: 'GET', path: '/api/webchat/:integrationId/ws', operationId: 'openWebchatSocket', tag: 'Webchat', access: 'public',
  summary: "The webchat widget's WebSocket (upgrade): JSON frames {type, …} both ways",
  description: [
    'Open with a WebSocket client (`wss://…/api/webchat/{integrationId}/ws`); the integration must be a webchat one and active, and the page\'s `Origin` one of its `allowedOrigins` when it has any.',
    '',
    '| direction | frames |',
    '|---|---|',
    '| client → server | `hello {visitorToken?, lastSeq?, conversationId?, identity?}`, `identify {id, name?, email?, hash}`, `message {clientMessageId, text, contact?}`, `typing {role?: "customer"}` (accepted silently, never stored), `ping` |',
    '| server → client | `welcome {visitorId, visitorToken, conversationId, greeting, prechat}` (null until the first message), then every stored message with `seq > lastSeq`; `ack {clientMessageId, seq, conversationId}`; `message {seq, role, text, at, name, options?}` (`options`: on a clarify reply only, the titles of its numbered options in order); `status {status}`; `typing {role: "agent"}`; `delta {conversationId, text}`; `pong`; `error {code, message, clientMessageId?}` |',
    '',
    `\`welcome.greeting\` is the integration's agent's \`greeting\`, else "${DEFAULT_WIDGET_GREETING}": the widget shows it when the chat opens (it is not a message: never stored, no seq). \`message.name\` is an operator's display name (null for the customer's and the agent's messages, and for an operator without one). An operator's note (\`kind: "note"\`) never reaches the socket.`,
    '',
    'Customers have names: `hello.identity` / `identify` carry the host page\'s `MAS.identify({id, name, email, hash})`, `hash` = hex HMAC-SHA256 of `id` keyed with the integration\'s webhook secret (computed by the page\'s server); one that does not verify answers `error IDENTITY_INVALID` and the chat goes on anonymously. `message.contact {name?, email?}` carries the pre-chat form\'s answers (`welcome.prechat`: `off`, `name`, `name_email`, the integration\'s `prechatForm`), unverified. Both fill the customer\'s lead with their next message: a verified identity replaces anything but what the team wrote; typed answers and the helpdesk\'s only fill empty fields; only a verified or the team\'s email fills an action\'s `{customer.email}`.',
    '',
    'A model reply is streamed: `typing {role:"agent"}` when the agent starts, `delta` frames with the next pieces of its text as the model writes it, then the reply as one `message` (the whole text, stored; it replaces the deltas). Deltas are a preview: never stored, never replayed, and a socket that joins mid-reply gets only the `message`.',
    '',
    `\`error\` frame codes: ${FRAME_ERROR_CODES.join(', ')}; the socket stays open. A frame over ${WEBCHAT_DEFAULTS.maxFrameBytes / 1024} KiB closes it with 1009, a flood with 1008, no \`hello\` within ${WEBCHAT_DEFAULTS.helloTimeoutMs / 1000} s with 1008.`,
  ].join('\n'),
  params: [
    idPathParam('webchat integration', 'integrationId'),
    { name: 'Upgrade', in: 'header', required: true, description: 'A WebSocket upgrade.', schema: { const: 'websocket' } },
    { name: 'Origin', in: 'header', description: 'The page opening the chat; checked against allowedOrigins when the integration has any.', schema: { type: 'string' }, example: 'https://shop.example.com' },
  ],
  responses: { 101: { description: 'Switching Protocols: the socket is open; send `hello` first.' } },
  errors: {
    VALIDATION_ERROR: 'not a valid WebSocket handshake (method, Upgrade, Sec-WebSocket-Key or Sec-WebSocket-Version)',
    NOT_FOUND: 'no webchat integration with that id',
    INTEGRATION_INACTIVE: 'the integration is switched off',
    ORIGIN_NOT_ALLOWED: 'the page is not one of the allowedOrigins',
    RATE_LIMITED: 'too many sockets in this process or from this address (Retry-After)',
    NOT_READY: 'the gateway is shutting down',
  },
};
