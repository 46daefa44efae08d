import { randomBytes } from 'node:crypto';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { CHILD_BASE_ENV, type Scenario } from './env.js';
import { RESULTS_DIR, spawnChild, type Child, type LogLine } from './children.js';
import { KNOWLEDGE_DOCUMENTS } from './payloads.js';
import type { StandIn } from './stand-in.js';

/**
 * Starting the roles of a scenario and creating its tenant through the public API, as a
 * customer would: sign up, a knowledge base with a few documents, a built-in agent using
 * it, and a helpdesk integration whose API URL is the Chat2Desk stand-in.
 */
export interface Tenant {
  companyId: number;
  integrationId: number;
  agentId: number;
  knowledgeBaseId: number;
  webhookSecret: string;
  token: string;
}

export interface RoleOptions {
  partitions: number;
  /** Write a CPU profile into bench/results/profiles/<label>/. */
  profile: boolean;
  port?: number;
  /** DATABASE_URL instead of the scenario's (e.g. through the statement counter). */
  databaseUrl?: string;
  /** Extra node flags (--child-flags). */
  nodeFlags?: string[];
  /** More environment (NATS_URL and NATS_REPLICAS of a cluster, MODEL_MAX_CONCURRENCY). */
  env?: Record<string, string>;
}

export const profileDirOf = (label: string) => join(RESULTS_DIR, 'profiles', label);

function roleEnv(s: Scenario, o: RoleOptions): Record<string, string> {
  return {
    ...CHILD_BASE_ENV,
    DATABASE_URL: o.databaseUrl ?? s.databaseUrl,
    NATS_PREFIX: s.natsPrefix,
    PARTITIONS: String(o.partitions),
    ...o.env,
  };
}

export interface GatewayChild extends Child {
  url: string;
}

/** `npm run gateway` for a scenario, on a free port; resolves once it listens. */
export async function startGatewayChild(s: Scenario, label: string, o: RoleOptions): Promise<GatewayChild> {
  const port = o.port ?? 0;
  const child = await spawnChild({
    script: 'gateway',
    label,
    env: { ...roleEnv(s, o), PORT: String(port), HOST: '127.0.0.1' },
    nodeFlags: o.nodeFlags,
    profileDir: o.profile ? profileDirOf(label) : null,
  });
  const line = await child.waitForLog((l) => l.msg === 'gateway listening', 90_000);
  return { ...child, url: String(line.url) };
}

export interface WorkerChild extends Child {
  /** Log lines about partitions acquired (lease: acquired partition), with the time seen. */
  acquired: { partition: number; at: number }[];
  /** Partitions it gave up (rebalance when another worker joined). */
  released: { partition: number; at: number }[];
  startedAt: number;
}

/** `npm run worker` for a scenario; resolves once it logged "worker started" (its first partitions claimed). */
export async function startWorkerChild(s: Scenario, label: string, o: RoleOptions): Promise<WorkerChild> {
  const child = await spawnChild({
    script: 'worker',
    label,
    env: roleEnv(s, o),
    nodeFlags: o.nodeFlags,
    profileDir: o.profile ? profileDirOf(label) : null,
  });
  const acquired: { partition: number; at: number }[] = [];
  const released: { partition: number; at: number }[] = [];
  child.onLog((l: LogLine) => {
    if (l.msg === 'lease: acquired partition') acquired.push({ partition: Number(l.partition), at: performance.now() });
    if (l.msg === 'lease: released partition') released.push({ partition: Number(l.partition), at: performance.now() });
  });
  await child.waitForLog((l) => l.msg === 'worker started', 90_000);
  return Object.assign(child, { acquired, released, startedAt: performance.now() });
}

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

export interface HttpResult {
  status: number;
  body: string;
}

/** A small HTTP client on a keep-alive agent (the API calls and the paced webhooks). */
export function httpRequest(url: string, method: string, body: string | Buffer | undefined, headers: Record<string, string> = {}): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, agent, headers: body === undefined ? headers : { 'content-length': String(Buffer.byteLength(body)), ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function api<T>(base: string, method: string, path: string, body?: unknown, token?: string): Promise<{ status: number; body: T }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  const res = await httpRequest(base + path, method, body === undefined ? undefined : JSON.stringify(body), headers);
  return { status: res.status, body: (res.body ? JSON.parse(res.body) : null) as T };
}

function expect<T>(res: { status: number; body: T }, status: number, what: string): T {
  if (res.status !== status) throw new Error(`${what}: HTTP ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/**
 * Creates a company with a knowledge-base agent and a helpdesk integration pointing at the
 * stand-in; with `model`, the agent is an OpenAI-compatible model agent (no knowledge base,
 * like a webhook → model → reply flow) instead.
 */
export async function createTenant(gatewayUrl: string, standIn: StandIn, model?: { baseUrl: string; name: string; apiKey: string }): Promise<Tenant> {
  const email = `bench-${randomBytes(4).toString('hex')}@example.com`;
  const password = 'bench correct horse battery';
  const reg = expect(await api<{ company: { id: number } }>(gatewayUrl, 'POST', '/api/auth/register', { email, password, companyName: 'Bench Co' }), 201, 'register');
  const login = expect(await api<{ session: { access_token: string } }>(gatewayUrl, 'POST', '/api/auth/login', { email, password }), 200, 'login');
  const token = login.session.access_token;
  const kb = expect(await api<{ knowledgeBase: { id: number } }>(gatewayUrl, 'POST', '/api/knowledge-bases', { name: 'FAQ' }, token), 201, 'knowledge base');
  for (const doc of KNOWLEDGE_DOCUMENTS) {
    expect(await api(gatewayUrl, 'POST', `/api/knowledge-bases/${kb.knowledgeBase.id}/documents`, doc, token), 201, 'document');
  }
  // Documents are read in the background: the tenant is set up once they are.
  for (const until = Date.now() + 60_000; ; await new Promise((r) => setTimeout(r, 50))) {
    const list = expect(await api<{ documents: { status: string }[] }>(gatewayUrl, 'GET', `/api/knowledge-bases/${kb.knowledgeBase.id}/documents`, undefined, token), 200, 'documents');
    if (list.documents.every((d) => d.status !== 'processing')) break;
    if (Date.now() > until) throw new Error('documents still processing after 60 s');
  }
  const agentBody = model ? { name: 'Model bot', systemPrompt: 'You answer customers of a shop.', model: { provider: 'openai', ...model } } : { name: 'FAQ bot', knowledgeBaseId: kb.knowledgeBase.id };
  const ag = expect(await api<{ agent: { id: number } }>(gatewayUrl, 'POST', '/api/agents', agentBody, token), 201, 'agent');
  const integ = expect(
    await api<{ integration: { id: number; webhookSecret: string } }>(
      gatewayUrl, 'POST', '/api/integrations',
      { type: 'helpdesk', name: 'Helpdesk', agentId: ag.agent.id, apiUrl: standIn.url, apiToken: standIn.token },
      token,
    ),
    201,
    'integration',
  );
  return {
    companyId: reg.company.id,
    integrationId: integ.integration.id,
    agentId: ag.agent.id,
    knowledgeBaseId: kb.knowledgeBase.id,
    webhookSecret: integ.integration.webhookSecret,
    token,
  };
}

export interface WebchatTenant {
  companyId: number;
  integrationId: number;
}

/** A company with an agent and a webchat integration (any Origin): what a site embedding the widget has. */
export async function createWebchatTenant(gatewayUrl: string): Promise<WebchatTenant> {
  const email = `bench-${randomBytes(4).toString('hex')}@example.com`;
  const password = 'bench correct horse battery';
  const reg = expect(await api<{ company: { id: number } }>(gatewayUrl, 'POST', '/api/auth/register', { email, password, companyName: 'Bench Shop' }), 201, 'register');
  const login = expect(await api<{ session: { access_token: string } }>(gatewayUrl, 'POST', '/api/auth/login', { email, password }), 200, 'login');
  const token = login.session.access_token;
  const ag = expect(await api<{ agent: { id: number } }>(gatewayUrl, 'POST', '/api/agents', { name: 'Site bot' }, token), 201, 'agent');
  const integ = expect(await api<{ integration: { id: number } }>(gatewayUrl, 'POST', '/api/integrations', { type: 'webchat', name: 'Site chat', agentId: ag.agent.id }, token), 201, 'integration');
  return { companyId: reg.company.id, integrationId: integ.integration.id };
}

/** A WhatsApp or Telegram integration of a tenant (contract.md § Direct channels), with what its webhooks need. */
export interface ChannelIntegration {
  channel: 'whatsapp' | 'telegram';
  integrationId: number;
  companyId: number;
  /** WhatsApp: the Meta app secret (it signs X-Hub-Signature-256); Telegram: the secret_token of X-Telegram-Bot-Api-Secret-Token. */
  secret: string;
  /** WhatsApp: the business number the webhooks speak for. */
  account: { wabaId: string; phoneNumberId: string; displayPhoneNumber: string } | null;
}

/**
 * Adds a WhatsApp integration (its `accessToken` the sandbox's, `phoneNumberId` the sandbox
 * account's, an app secret of the bench's) or a Telegram one (`botToken` one the Telegram
 * sandbox knows: the create calls setWebhook at the gateway's TELEGRAM_API_URL, which must be
 * that sandbox) to a tenant's company, for its agent, through the API.
 */
export async function createChannelIntegration(
  gatewayUrl: string,
  tenant: Tenant,
  channel: 'whatsapp' | 'telegram',
  sandbox: { whatsapp?: { token: string; account: { wabaId: string; phoneNumberId: string; displayPhoneNumber: string } }; botToken?: string },
): Promise<ChannelIntegration> {
  if (channel === 'whatsapp') {
    const wa = sandbox.whatsapp;
    if (!wa) throw new Error('createChannelIntegration: a WhatsApp sandbox is needed');
    const appSecret = `bench-app-${randomBytes(16).toString('hex')}`;
    const res = expect(
      await api<{ integration: { id: number } }>(
        gatewayUrl, 'POST', '/api/integrations',
        { type: 'whatsapp', name: 'WhatsApp', agentId: tenant.agentId, phoneNumberId: wa.account.phoneNumberId, accessToken: wa.token, appSecret },
        tenant.token,
      ),
      201,
      'whatsapp integration',
    );
    return { channel, integrationId: res.integration.id, companyId: tenant.companyId, secret: appSecret, account: wa.account };
  }
  if (!sandbox.botToken) throw new Error('createChannelIntegration: a Telegram bot token is needed');
  const res = expect(
    await api<{ integration: { id: number; webhookSecret: string; webhookStatus?: string }; webhookError: unknown }>(
      gatewayUrl, 'POST', '/api/integrations',
      { type: 'telegram', name: 'Telegram', agentId: tenant.agentId, botToken: sandbox.botToken },
      tenant.token,
    ),
    201,
    'telegram integration',
  );
  if (res.webhookError) throw new Error(`telegram integration: setWebhook failed: ${JSON.stringify(res.webhookError)}`);
  return { channel, integrationId: res.integration.id, companyId: tenant.companyId, secret: res.integration.webhookSecret, account: null };
}
