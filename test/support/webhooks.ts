import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import type { Config } from '../../lib/config.js';
import { createLogger } from '../../lib/logger.js';
import { connectNats, type NatsConnection } from '../../lib/nats.js';
import { streamNames } from '../../lib/streams.js';
import { startGateway, type RunningGateway } from '../../gateway/server.js';
import { signBody } from '../../gateway/webhook/signature.js';
import { apiClient, type ApiClient, type ApiResponse, type TestService } from './service.js';
import { natsServerBinary } from './nats-binary.js';
import type { WebchatOptions } from '../../gateway/webchat/server.js';
import type { WebhookActivityOptions } from '../../gateway/webhook/activity.js';

/** Helpers of the webhook-ingress tests: signed deliveries, reading the inbound stream, extra gateways, a private NATS. */

export async function createAgent(api: ApiClient, token: string, name = 'Bot'): Promise<number> {
  const res = await api('POST', '/api/agents', { token, body: { name } });
  if (res.status !== 201) throw new Error(`agent: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.agent.id as number;
}

export async function createIntegration(api: ApiClient, token: string, body: Record<string, unknown>): Promise<any> {
  const res = await api('POST', '/api/integrations', { token, body: { type: 'helpdesk', name: 'Helpdesk', ...body } });
  if (res.status !== 201) throw new Error(`integration: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.integration;
}

export type SignatureHeader = 'x-webhook-signature' | 'x-hub-signature-256';

export interface DeliveryOptions {
  /** Sign with this secret (omit for an unsigned delivery). */
  secret?: string;
  header?: SignatureHeader;
  /** A signature header value to send as is. */
  signature?: string;
  type?: string;
}

/** POSTs a webhook; objects are sent as JSON, strings and buffers as they are. */
export function deliver(api: ApiClient, id: number | string, payload: unknown, options: DeliveryOptions = {}): Promise<ApiResponse> {
  const raw = typeof payload === 'string' || Buffer.isBuffer(payload) ? payload : JSON.stringify(payload);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  const signature = options.signature ?? (options.secret !== undefined ? signBody(options.secret, raw) : undefined);
  if (signature !== undefined) headers[options.header ?? 'x-webhook-signature'] = signature;
  return api('POST', `/api/webhook/${options.type ?? 'helpdesk'}/${id}`, { rawBody: raw, headers });
}

let customerMessageNo = 0;

/** A helpdesk customer writes: a signed Chat2Desk `from_client` webhook, as the helpdesk sends it (a new message id each time). */
export async function customerWrites(api: ApiClient, integration: { id: number; webhookSecret: string }, clientId: string, text: string): Promise<void> {
  const payload = { hook_type: 'inbox', type: 'from_client', message_id: 6_200_000 + ++customerMessageNo, text, client_id: clientId, channel_id: 12, transport: 'telegram' };
  const res = await deliver(api, integration.id, payload, { secret: integration.webhookSecret });
  if (res.status !== 200) throw new Error(`webhook: ${res.status} ${JSON.stringify(res.body)}`);
}

export interface StoredInbound {
  seq: number;
  subject: string;
  msgId: string | undefined;
  envelope: any;
}

/** Every message in the inbound stream of a prefix, oldest first. */
export async function inboundMessages(nc: NatsConnection, prefix: string): Promise<StoredInbound[]> {
  const jsm = await jetstreamManager(nc);
  const stream = streamNames(prefix).inboundStream;
  const { state } = await jsm.streams.info(stream);
  const out: StoredInbound[] = [];
  if (state.messages === 0) return out;
  for (let seq = state.first_seq; seq <= state.last_seq; seq++) {
    const m = await jsm.streams.getMessage(stream, { seq });
    if (!m) continue;
    out.push({ seq, subject: m.subject, msgId: m.header?.get('Nats-Msg-Id') || undefined, envelope: m.json() });
  }
  return out;
}

export async function inboundCount(nc: NatsConnection, prefix: string): Promise<number> {
  const jsm = await jetstreamManager(nc);
  return (await jsm.streams.info(streamNames(prefix).inboundStream)).state.messages;
}

export { dropNatsPrefixAtEnd, removeNatsPrefix } from './service.js';

export interface PeerGateway {
  gateway: RunningGateway;
  nc: NatsConnection;
  api: ApiClient;
  url: string;
  close: () => Promise<void>;
}

/** Another gateway process on the same database (and, unless natsUrl says otherwise, the same NATS prefix). */
export async function startPeerGateway(
  t: Test,
  svc: TestService,
  options: { config?: Partial<Config>; now?: () => number; webchat?: WebchatOptions; port?: number; webhookActivity?: WebhookActivityOptions } = {},
): Promise<PeerGateway> {
  const config: Config = Object.freeze({ ...svc.config, ...options.config });
  const nc = await connectNats(config.natsUrl, 'test-peer');
  const gateway = await startGateway(
    { config, orm: svc.orm, nc, logger: createLogger('silent'), now: options.now, webchat: options.webchat, webhookActivity: options.webhookActivity },
    { port: options.port ?? 0, host: '127.0.0.1' },
  );
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await gateway.close();
    await nc.close();
  };
  t.teardown(close);
  return { gateway, nc, api: apiClient(gateway.url), url: gateway.url, close };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

export interface PrivateNats {
  url: string;
  /** Kills this nats-server (SIGKILL, by its pid). */
  kill: () => Promise<void>;
}

/** A nats-server with JetStream of our own on a free port, for outage tests. */
export async function startPrivateNats(t: Test): Promise<PrivateNats> {
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'mas-nats-'));
  const child: ChildProcess = spawn(natsServerBinary(), ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', dir], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const kill = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  };
  t.teardown(async () => {
    await kill();
    await rm(dir, { recursive: true, force: true });
  });
  const url = `nats://127.0.0.1:${port}`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      const probe = await connect({ servers: url, timeout: 500, reconnect: false });
      await jetstreamManager(probe); // JetStream answers
      await probe.close();
      break;
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`private nats-server did not start on ${url}: ${(err as Error).message}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return { url, kill };
}

/** Polls `check` until it returns true or the deadline passes; returns whether it did. */
export async function eventually(check: () => Promise<boolean>, timeoutMs = 3_000, everyMs = 25): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
