import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { Test } from 'tap';
import { startWorker, type RunningWorker, type WorkerOptions } from '../../actors/worker.js';
import type { Config } from '../../lib/config.js';
import type { Orm } from '../../lib/db.js';
import { createLogger, type Logger } from '../../lib/logger.js';
import { connectNats, type NatsConnection } from '../../lib/nats.js';
import { partitionOfEnvelope } from '../../lib/inbound.js';
import { streamNames } from '../../lib/streams.js';
import type { InboundEnvelope, NormalisedMessage, StatusHook } from '../../schema/envelope.js';
import type { Chat2DeskStub } from './chat2desk-stub.js';
import { signUp, TEST_NATS_URL, type ApiClient } from './service.js';

/** Timings that keep test files short: leases expire in 3 s, short fetches, fast retries. */
export const FAST_WORKER_OPTIONS: WorkerOptions = {
  lease: { ttlMs: 3000, renewMs: 500 },
  consumer: { ackWaitMs: 10_000, expiresMs: 1000, drainTimeoutMs: 5000 },
  outbox: { pollMs: 150, baseBackoffMs: 150, maxBackoffMs: 1000 },
};

export interface TestWorker extends RunningWorker {
  /** The worker's own NATS connection (closing it simulates a dead process). */
  nc: NatsConnection;
}

/**
 * A worker (conversation engine) for a test service, on its own NATS connection so
 * several workers behave like separate processes. Closed at teardown. Its agents answer
 * through the real agent runner (actors/agents/runner.ts), as in production: a test gives
 * its agents a knowledge base, or a model at a stand-in server (openai-stub.ts,
 * repeating-model.ts).
 */
export async function startTestWorker(
  t: Test,
  svc: { config: Config; orm: Orm },
  options: { workerId?: string; options?: WorkerOptions; now?: () => number; logger?: Logger } = {},
): Promise<TestWorker> {
  const nc = await connectNats(svc.config.natsUrl ?? TEST_NATS_URL, `test-worker-${options.workerId ?? 'w'}`);
  const logger = options.logger ?? createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');
  const worker = await startWorker({
    config: svc.config,
    orm: svc.orm,
    nc,
    logger,
    workerId: options.workerId,
    options: { ...FAST_WORKER_OPTIONS, ...options.options },
    now: options.now,
  });
  t.teardown(async () => {
    await worker.close().catch(() => {});
    if (!nc.isClosed()) await nc.close();
  });
  return { ...worker, nc };
}

/** Waits until the worker owns every partition (or `count` of them). */
export async function waitForPartitions(workers: { ownedPartitions: () => number[] }[], total: number, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (workers.reduce((n, w) => n + w.ownedPartitions().length, 0) !== total) {
    if (Date.now() > deadline) throw new Error(`partitions not all owned within ${timeoutMs} ms: ${workers.map((w) => w.ownedPartitions().join(',')).join(' | ')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface TestIntegration {
  id: number;
  companyId: number;
  webhookSecret: string | null;
}

/** A helpdesk integration pointing at the Chat2Desk stand-in, created through POST /api/integrations. */
export async function createHelpdeskIntegration(
  svc: { api: ApiClient },
  user: { token: string; companyId: number },
  stub: Chat2DeskStub,
  name = 'Helpdesk',
  existingAgentId?: number,
): Promise<TestIntegration & { webhookSecret: string }> {
  let agentId = existingAgentId;
  if (agentId === undefined) {
    const agent = await svc.api('POST', '/api/agents', { token: user.token, body: { name: `${name} agent` } });
    if (agent.status !== 201) throw new Error(`POST /api/agents: ${agent.status} ${JSON.stringify(agent.body)}`);
    agentId = agent.body.agent.id as number;
  }
  const res = await svc.api('POST', '/api/integrations', { token: user.token, body: { type: 'helpdesk', name, agentId, apiUrl: stub.url, apiToken: stub.token } });
  if (res.status !== 201) throw new Error(`POST /api/integrations: ${res.status} ${JSON.stringify(res.body)}`);
  return { id: res.body.integration.id, companyId: user.companyId, webhookSecret: res.body.integration.webhookSecret };
}

/**
 * A new company whose model agent (`gpt-4o` at the OpenAI-compatible stand-in `modelBaseUrl`,
 * plus `agentExtra` fields) answers on a helpdesk integration at the Chat2Desk stand-in.
 */
export async function modelAgentCompany(
  svc: { api: ApiClient },
  helpdesk: Chat2DeskStub,
  modelBaseUrl: string,
  name: string,
  agentExtra: Record<string, unknown> = {},
): Promise<{ user: { token: string; companyId: number }; agent: any; integration: TestIntegration & { webhookSecret: string } }> {
  const user = await signUp(svc.api, name);
  const created = await svc.api('POST', '/api/agents', {
    token: user.token,
    body: { name: 'LLM', model: { provider: 'openai', name: 'gpt-4o', baseUrl: modelBaseUrl, apiKey: 'sk-test-key' }, ...agentExtra },
  });
  if (created.status !== 201) throw new Error(`agent: ${created.status} ${JSON.stringify(created.body)}`);
  const integration = await createHelpdeskIntegration(svc, user, helpdesk, name, created.body.agent.id);
  return { user, agent: created.body.agent, integration };
}

let seqNo = 0;

export function messageEnvelope(
  integration: { id: number; companyId: number },
  clientId: string,
  text: string,
  extra: Partial<NormalisedMessage> & { idempotencyKey?: string } = {},
): InboundEnvelope {
  const { idempotencyKey, ...message } = extra;
  const messageId = message.messageId ?? `m-${Date.now()}-${seqNo++}`;
  return {
    v: 1,
    kind: 'message',
    idempotencyKey: idempotencyKey ?? `msg:${messageId}`,
    companyId: integration.companyId,
    integrationId: integration.id,
    channel: 'helpdesk',
    receivedAt: new Date().toISOString(),
    message: {
      messageId,
      text,
      clientId,
      channelId: 'ch-1',
      transport: 'telegram',
      requestId: null,
      dialogId: null,
      attachments: [],
      sentAt: new Date().toISOString(),
      ...message,
    },
  };
}

export function statusEnvelope(
  integration: { id: number; companyId: number },
  hookType: StatusHook,
  requestId: number,
  extra: { dialogId?: number | null; clientId?: string | null; idempotencyKey?: string } = {},
): InboundEnvelope {
  const dialogId = extra.dialogId ?? null;
  return {
    v: 1,
    kind: 'status',
    idempotencyKey: extra.idempotencyKey ?? `${hookType}:${requestId}:${dialogId ?? ''}`,
    companyId: integration.companyId,
    integrationId: integration.id,
    channel: 'helpdesk',
    receivedAt: new Date().toISOString(),
    status: { hookType, requestId, dialogId, clientId: extra.clientId ?? null },
  };
}

/**
 * Publishes like the gateway does: to the conversation's partition (status events without
 * clientId: the partition of `request:<id>`), msgID `<integrationId>:<idempotencyKey>` unless given.
 */
export async function publishEnvelope(nc: NatsConnection, config: Config, env: InboundEnvelope, msgID?: string): Promise<{ duplicate: boolean }> {
  const names = streamNames(config.natsPrefix);
  const partition = partitionOfEnvelope(env, config.partitions);
  const ack = await jetstream(nc).publish(names.inboundSubject(partition, env.companyId), JSON.stringify(env), { msgID: msgID ?? `${env.integrationId}:${env.idempotencyKey}` });
  return { duplicate: ack.duplicate };
}

/** Polls until `fn` returns a truthy value. */
export async function eventually<T>(fn: () => Promise<T | null | undefined | false>, timeoutMs = 10_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`${what} not met within ${timeoutMs} ms${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The id of a customer's latest conversation as the API lists it, once it is listed. */
export function listedConversationId(api: ApiClient, token: string, clientId: string): Promise<number> {
  return eventually(async () => (await api('GET', `/api/conversations?clientId=${clientId}`, { token })).body.conversations?.[0]?.id as number | undefined, 20_000, `the conversation of ${clientId}`);
}

/**
 * Waits until the service has no unfinished work at all: no message left in the inbound
 * stream (a work queue: what is acknowledged is gone), no outbox row pending or sending, no
 * conversation waiting for its agent. What a test then sees is final: "nothing more
 * arrives" is a fact, not a guess about how long a fixed sleep should be.
 */
export async function untilIdle(svc: { orm: Orm; nc: NatsConnection; config: Config }, timeoutMs = 20_000): Promise<void> {
  const stream = streamNames(svc.config.natsPrefix).inboundStream;
  await eventually(
    async () => {
      // Made on each try: making it asks JetStream for the account, which can time out
      // while a cluster elects a new leader; that is "not yet", not a failure.
      const jsm = await jetstreamManager(svc.nc);
      const { state } = await jsm.streams.info(stream);
      if (state.messages > 0) return false;
      const [busy] = await sql(
        svc.orm,
        `select (select count(*) from outbox where status in ('pending', 'sending'))::int as outbox,
                (select count(*) from conversations where state->>'active' = 'answering')::int as answering`,
      );
      return busy.outbox === 0 && busy.answering === 0;
    },
    timeoutMs,
    'the service idle (no queued message, no unsent reply, no answer in progress)',
  );
}

/** Raw SQL for assertions (bypasses the tenant filter). */
export async function sql<T = any>(orm: Orm, query: string, params: unknown[] = []): Promise<T[]> {
  return (await orm.em.fork().execute(query, params as never[], 'all')) as unknown as T[];
}
