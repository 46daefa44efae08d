import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { jetstream } from '@nats-io/jetstream';
import { WebSocketServer } from 'ws';
import type { Config } from '../../lib/config.js';
import type { Orm } from '../../lib/db.js';
import type { Logger } from '../../lib/logger.js';
import type { NatsConnection } from '../../lib/nats.js';
import { streamNames } from '../../lib/streams.js';
import type { IntegrationCache } from '../webhook/integration-cache.js';
import { VisitorConnection, type ConnectionContext } from './connection.js';
import { VisitorTokens } from './visitor-token.js';

/**
 * The webchat connector's WebSocket endpoint, `GET /api/webchat/:integrationId/ws`, on the
 * gateway's own HTTP server (its 'upgrade' event). Before the upgrade: the integration must
 * exist and be a webchat one (404), be active (403 INTEGRATION_INACTIVE), the `Origin` must
 * be one of its allowedOrigins when it has any (403 ORIGIN_NOT_ALLOWED), and the gateway
 * process must hold fewer than maxSocketsPerIntegration sockets of it (503 TOO_MANY_SOCKETS).
 * The integration comes from the webhook path's in-memory cache (no query per upgrade;
 * changes are announced over NATS).
 *
 * Frames above maxFrameBytes close the socket with 1009, a sustained flood with 1008; every
 * heartbeatMs a WebSocket ping goes out and a socket that did not answer the previous one
 * is terminated.
 */
export interface WebchatOptions {
  /** WebSocket ping interval; a socket silent for two intervals is terminated. Default 30 s. */
  heartbeatMs?: number;
  /** A socket must send hello within this long (else close 1008). Default 15 s. */
  helloTimeoutMs?: number;
  /** Concurrent sockets per integration, per gateway process. Default 500. */
  maxSocketsPerIntegration?: number;
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
  /** JetStream publish deadline of a widget message. Default 2.5 s. */
  publishTimeoutMs?: number;
  /** Lifetime of a visitor token (renewed at every hello). Default 180 days. */
  visitorTokenTtlSeconds?: number;
}

export const WEBCHAT_DEFAULTS = {
  heartbeatMs: 30_000,
  helloTimeoutMs: 15_000,
  maxSocketsPerIntegration: 500,
  maxFrameBytes: 64 * 1024,
  framesPerSecond: 20,
  frameBurst: 40,
  ackRecheckMs: 3_000,
  stallMs: 30_000,
  publishTimeoutMs: 2_500,
} as const;

const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;
const PATH = /^\/api\/webchat\/([^/]+)\/ws\/?$/;

export interface WebchatDeps {
  config: Config;
  orm: Orm;
  nc: NatsConnection;
  logger: Logger;
  cache: IntegrationCache;
  now?: () => number;
  options?: WebchatOptions;
}

function refuse(socket: Duplex, status: number, code: string, message: string): void {
  const body = JSON.stringify({ error: { code, message } });
  if (!socket.writable) return void socket.destroy();
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
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
  readonly #maxPerIntegration: number;
  readonly #perIntegration = new Map<number, number>();
  readonly #connections = new Set<VisitorConnection>();
  readonly #heartbeat: NodeJS.Timeout;
  #closing = false;

  constructor(deps: WebchatDeps) {
    this.#deps = deps;
    const o = { ...WEBCHAT_DEFAULTS, ...deps.options };
    const now = deps.now ?? Date.now;
    this.#maxPerIntegration = o.maxSocketsPerIntegration;
    this.#wss = new WebSocketServer({ noServer: true, maxPayload: o.maxFrameBytes, perMessageDeflate: false, clientTracking: false });
    this.#ctx = {
      orm: deps.orm,
      nc: deps.nc,
      js: jetstream(deps.nc),
      names: streamNames(deps.config.natsPrefix),
      partitions: deps.config.partitions,
      tokens: new VisitorTokens(deps.config, { now, ttlSeconds: deps.options?.visitorTokenTtlSeconds }),
      cache: deps.cache,
      logger: deps.logger,
      now,
      limits: {
        helloTimeoutMs: o.helloTimeoutMs,
        framesPerSecond: o.framesPerSecond,
        frameBurst: o.frameBurst,
        ackRecheckMs: o.ackRecheckMs,
        stallMs: o.stallMs,
        publishTimeoutMs: o.publishTimeoutMs,
        maxBufferedBytes: MAX_BUFFERED_BYTES,
      },
    };
    this.#heartbeat = setInterval(() => {
      for (const c of this.#connections) c.ping();
    }, o.heartbeatMs);
    this.#heartbeat.unref();
  }

  /** Open sockets (of every integration) in this process. */
  get size(): number {
    return this.#connections.size;
  }

  /** The HTTP server's 'upgrade' listener. Paths other than the webchat socket get 404. */
  readonly handleUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', () => {});
    void this.#upgrade(req, socket, head).catch((err: unknown) => {
      this.#deps.logger.error({ err }, 'webchat: upgrade failed');
      refuse(socket, 500, 'INTERNAL_ERROR', 'Internal server error.');
    });
  };

  async #upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const match = PATH.exec(path);
    if (!match) return refuse(socket, 404, 'NOT_FOUND', `No WebSocket endpoint at ${path.slice(0, 200)}.`);
    if (this.#closing) return refuse(socket, 503, 'NOT_READY', 'The server is shutting down.');
    const raw = match[1]!;
    const id = /^[1-9]\d{0,9}$/.test(raw) ? Number(raw) : NaN;
    const integration = id <= 2_147_483_647 ? await this.#deps.cache.get(id) : null;
    if (!integration || integration.type !== 'webchat') return refuse(socket, 404, 'NOT_FOUND', 'Integration not found.');
    if (!integration.active) return refuse(socket, 403, 'INTEGRATION_INACTIVE', 'The integration is not active.');
    if (integration.allowedOrigins.length > 0) {
      const origin = originOf(req.headers.origin);
      if (!origin || !integration.allowedOrigins.includes(origin)) return refuse(socket, 403, 'ORIGIN_NOT_ALLOWED', 'This page may not open the chat.');
    }
    if (socket.destroyed) return; // the client gave up while the integration was looked up
    const open = this.#perIntegration.get(integration.id) ?? 0;
    if (open >= this.#maxPerIntegration) return refuse(socket, 503, 'TOO_MANY_SOCKETS', 'Too many open chats; retry later.');
    this.#perIntegration.set(integration.id, open + 1); // reserved until the socket closes
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      const n = (this.#perIntegration.get(integration.id) ?? 1) - 1;
      if (n > 0) this.#perIntegration.set(integration.id, n);
      else this.#perIntegration.delete(integration.id);
    };
    socket.once('close', release);
    this.#wss.handleUpgrade(req, socket, head, (ws) => {
      if (this.#closing) {
        ws.close(1001, 'shutting down');
        return;
      }
      const conn = new VisitorConnection(ws, this.#ctx, integration, () => {
        this.#connections.delete(conn);
        release();
      });
      this.#connections.add(conn);
    });
  }

  /** Closes every socket (1001 going away; the widget reconnects elsewhere), then stops. */
  async close(graceMs = 1000): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    clearInterval(this.#heartbeat);
    for (const c of this.#connections) c.close(1001, 'server going away');
    const deadline = Date.now() + graceMs;
    while (this.#connections.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    for (const c of this.#connections) c.terminate();
    this.#wss.close();
  }
}
