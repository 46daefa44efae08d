import { randomBytes } from 'node:crypto';
import type { Test } from 'tap';
import { loadConfig, type Config, type LoadConfigOptions } from '../../lib/config.js';
import { createLogger, type Logger } from '../../lib/logger.js';
import { connectNats, type NatsConnection } from '../../lib/nats.js';
import type { Orm } from '../../lib/db.js';
import type { IngestorOptions } from '../../gateway/knowledge/ingestor.js';
import type { WebhookActivityOptions } from '../../gateway/webhook/activity.js';
import { startGateway, type RunningGateway } from '../../gateway/server.js';
import { createTestDatabase } from './database.js';
import { removeNatsPrefix } from '../../scripts/nats-prefix.js';

export { removeNatsPrefix };

export const TEST_NATS_URL = process.env.TEST_NATS_URL ?? 'nats://127.0.0.1:4222';

export interface TestService {
  config: Config;
  orm: Orm;
  nc: NatsConnection;
  gateway: RunningGateway;
  url: string;
  api: ApiClient;
}

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export type ApiClient = <T = any>(method: string, path: string, options?: { body?: unknown; rawBody?: string | Buffer; token?: string; headers?: Record<string, string> }) => Promise<ApiResponse<T>>;

export function apiClient(baseUrl: string): ApiClient {
  return async (method, path, options = {}) => {
    const headers: Record<string, string> = { ...options.headers };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    let body: string | Buffer | undefined;
    if (options.rawBody !== undefined) body = options.rawBody;
    else if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(baseUrl + path, { method, headers, body: body as BodyInit | undefined });
    const text = await res.text();
    let parsed: any = text;
    if ((res.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
    return { status: res.status, body: parsed, headers: res.headers };
  };
}

export interface StartOptions {
  env?: Record<string, string>;
  /** Background document processing (shorter leases and sweeps for the tests). */
  knowledge?: IngestorOptions;
  /** How often gateways write webhook activity (tests shorten it to see it at once). */
  webhookActivity?: WebhookActivityOptions;
  overrides?: LoadConfigOptions['overrides'];
  now?: () => number;
  /** The gateway's logger (default: silent, or TEST_LOG_LEVEL); tests that read log lines pass their own. */
  logger?: Logger;
}

/** The gateway on port 0 against a fresh database and a private NATS prefix. */
export async function startTestService(t: Test, label: string, options: StartOptions = {}): Promise<TestService> {
  const { url: databaseUrl, orm } = await createTestDatabase(t, label);
  const config = loadConfig(
    // The stand-ins of outside services listen on loopback: private addresses allowed, unless a test says otherwise.
    { NODE_ENV: 'test', ALLOW_PRIVATE_URLS: 'true', DATABASE_URL: databaseUrl, NATS_URL: TEST_NATS_URL, NATS_PREFIX: `t${randomBytes(4).toString('hex')}`, ...options.env },
    { overrides: options.overrides },
  );
  // First registered, last to run: the file's streams and buckets go after its workers and gateways.
  dropNatsPrefixAtEnd(t, { config });
  const logger = options.logger ?? createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');
  const nc = await connectNats(config.natsUrl, `test-${label}`);
  const gateway = await startGateway({ config, orm, nc, logger, now: options.now, knowledge: options.knowledge, webhookActivity: options.webhookActivity }, { port: 0, host: '127.0.0.1' });
  t.teardown(async () => {
    await gateway.close();
    await nc.close();
  });
  return { config, orm, nc, gateway, url: gateway.url, api: apiClient(gateway.url) };
}

let counter = 0;
export const uniqueEmail = (tag = 'user') => `${tag}-${Date.now().toString(36)}-${counter++}@example.com`;

/** Registers a company and logs in; returns the session and ids. */
export async function signUp(api: ApiClient, companyName = 'Acme') {
  const email = uniqueEmail();
  const password = 'correct horse battery';
  const reg = await api('POST', '/api/auth/register', { body: { email, password, companyName } });
  if (reg.status !== 201) throw new Error(`register failed: ${reg.status} ${JSON.stringify(reg.body)}`);
  const login = await api('POST', '/api/auth/login', { body: { email, password } });
  if (login.status !== 200) throw new Error(`login failed: ${login.status} ${JSON.stringify(login.body)}`);
  return {
    email,
    password,
    userId: reg.body.user.id as string,
    companyId: reg.body.company.id as number,
    token: login.body.session.access_token as string,
    refreshToken: login.body.session.refresh_token as string,
  };
}

/**
 * Deletes everything a test file created in the shared NATS under its prefix at the end: the
 * inbound stream (with its consumers) and the KV buckets (the workers' leases). Registered
 * first, it runs last (tap runs teardowns last-in first-out): after the workers and gateways
 * of the file have stopped.
 */
export function dropNatsPrefixAtEnd(t: Test, svc: { config: Pick<Config, 'natsUrl' | 'natsPrefix'> }): void {
  t.teardown(() => removeNatsPrefix(svc.config.natsUrl, svc.config.natsPrefix));
}
