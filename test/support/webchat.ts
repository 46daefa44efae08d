import type { Test } from 'tap';
import { WebSocket } from 'ws';
import type { RunningGateway } from '../../gateway/server.js';
import type { Config } from '../../lib/config.js';
import type { WebchatOptions } from '../../gateway/webchat/server.js';
import type { ApiClient, TestService } from './service.js';
import { startPeerGateway } from './webhooks.js';

/** Helpers of the webchat tests: a frame-reading `ws` client, webchat integrations, gateways with short limits. */

export async function createWebchatIntegration(api: ApiClient, token: string, body: Record<string, unknown> = {}): Promise<{ id: number; companyId: number; agentId: number }> {
  let agentId = body.agentId as number | undefined;
  if (agentId === undefined) {
    const agent = await api('POST', '/api/agents', { token, body: { name: 'Webchat bot' } });
    if (agent.status !== 201) throw new Error(`agent: ${agent.status} ${JSON.stringify(agent.body)}`);
    agentId = agent.body.agent.id as number;
  }
  const res = await api('POST', '/api/integrations', { token, body: { type: 'webchat', name: 'Site chat', ...body, agentId } });
  if (res.status !== 201) throw new Error(`integration: ${res.status} ${JSON.stringify(res.body)}`);
  const me = await api('GET', '/api/auth/me', { token });
  return { id: res.body.integration.id, companyId: me.body.company?.id ?? me.body.user?.companyId, agentId };
}

export const wsUrl = (httpUrl: string, integrationId: number | string) => `${httpUrl.replace(/^http/, 'ws')}/api/webchat/${integrationId}/ws`;

export type Frame = { type: string; [k: string]: any };

/** Frames that only preview an answer being worked out (the reply itself follows as a `message`). */
const PREVIEWS = new Set(['typing', 'delta']);

/** A widget stand-in: every frame received is queued; `next` takes them in order. */
export class ChatClient {
  readonly frames: Frame[] = [];
  readonly ws: WebSocket;
  #cursor = 0;
  #waiters: (() => void)[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;

  constructor(ws: WebSocket) {
    this.ws = ws;
    ws.on('message', (data) => {
      this.frames.push(JSON.parse(data.toString()));
      this.#wake();
    });
    this.closed = new Promise((resolve) => ws.on('close', (code, reason) => {
      this.#wake();
      resolve({ code, reason: reason.toString() });
    }));
    ws.on('error', () => {});
  }

  #wake(): void {
    const w = this.#waiters;
    this.#waiters = [];
    for (const f of w) f();
  }

  send(frame: unknown): void {
    this.ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
  }

  /**
   * The next unread frame (optionally the next one of a type, skipping others), or throws after
   * timeoutMs. Without a type, the previews of an answer in the making are skipped: a `typing`
   * frame precedes every answer the agent works on outside the message's transaction, and a
   * model's answer comes in `delta` frames before the reply itself (the stream tests read
   * them by type).
   */
  async next(type?: string, timeoutMs = 8000): Promise<Frame> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      while (this.#cursor < this.frames.length) {
        const f = this.frames[this.#cursor++]!;
        if (type ? f.type === type : !PREVIEWS.has(f.type)) return f;
      }
      const left = deadline - Date.now();
      if (left <= 0 || this.ws.readyState === WebSocket.CLOSED) throw new Error(`no ${type ?? ''} frame within ${timeoutMs} ms; got ${JSON.stringify(this.frames)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Frames that arrive within `ms` (unread ones first). */
  async drain(ms = 400): Promise<Frame[]> {
    await new Promise((r) => setTimeout(r, ms));
    const out = this.frames.slice(this.#cursor);
    this.#cursor = this.frames.length;
    return out;
  }

  async hello(hello: Record<string, unknown> = {}): Promise<Frame> {
    this.send({ type: 'hello', ...hello });
    return this.next('welcome');
  }

  close(): Promise<{ code: number; reason: string }> {
    this.ws.close();
    return this.closed;
  }
}

export class UpgradeRefused extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
    readonly headers: Record<string, string | string[] | undefined> = {},
  ) {
    super(`upgrade refused: ${status} ${body}`);
  }
}

export interface OpenChatOptions {
  origin?: string;
  autoPong?: boolean;
  /** Source address of the socket (any of 127.0.0.0/8 reaches a loopback server): another client address. */
  localAddress?: string;
  /** Extra upgrade request headers (X-Forwarded-For, X-Forwarded-Proto). */
  headers?: Record<string, string>;
}

/** Opens a socket; rejects with UpgradeRefused when the server answers the upgrade with an HTTP status. */
export function openChat(t: Test, httpUrl: string, integrationId: number | string, options: OpenChatOptions = {}): Promise<ChatClient> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(wsUrl(httpUrl, integrationId), { origin: options.origin, autoPong: options.autoPong ?? true, localAddress: options.localAddress, headers: options.headers });
    const client = new ChatClient(ws);
    ws.once('open', () => {
      t.teardown(() => {
        if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) ws.terminate();
      });
      resolve(client);
    });
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => reject(new UpgradeRefused(res.statusCode ?? 0, body, res.headers)));
      res.on('error', () => reject(new UpgradeRefused(res.statusCode ?? 0, body, res.headers)));
    });
    ws.once('error', (err) => reject(err));
  });
}

export interface WebchatGateway {
  gateway: RunningGateway;
  url: string;
  api: ApiClient;
  close: () => Promise<void>;
}

/**
 * Another gateway process on the same database and NATS prefix, with its own webchat timings
 * and (`config`) its own caps, rates, ENFORCE_HTTPS and TRUST_PROXY.
 */
export function startWebchatGateway(
  t: Test,
  svc: TestService,
  webchat: WebchatOptions = {},
  port = 0,
  config: { webchat?: Partial<Config['webchat']>; enforceHttps?: boolean; trustProxy?: Config['trustProxy'] } = {},
  now?: () => number,
): Promise<WebchatGateway> {
  const { webchat: limits, ...rest } = config;
  return startPeerGateway(t, svc, { webchat, port, now, config: { ...rest, webchat: { ...svc.config.webchat, ...limits } } });
}
