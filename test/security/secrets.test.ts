import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { dropNatsPrefixAtEnd } from '../support/service.js';
import { startGateway } from '../../gateway/server.js';
import { signBody } from '../../gateway/webhook/signature.js';
import { startWorker } from '../../actors/worker.js';
import { loadConfig } from '../../lib/config.js';
import { createLogger } from '../../lib/logger.js';
import { connectNats } from '../../lib/nats.js';
import { startActionApiStub } from '../support/action-api-stub.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { createTestDatabase } from '../support/database.js';
import { startMcpStub } from '../support/mcp-stub.js';
import { apiClient, TEST_NATS_URL, type ApiResponse } from '../support/service.js';
import { FAST_WORKER_OPTIONS, eventually, sql } from '../support/worker.js';

/**
 * Secrets (webhook secrets, helpdesk tokens, model keys, passwords, session, API and invitation tokens)
 * are sealed at rest and never appear in a log line, nor in a response after the one that
 * created them. A full flow runs with the logger at debug level writing to a captured
 * stream (gateway and worker), then every log line and every response body is searched.
 */
const { url: databaseUrl, orm } = await createTestDatabase(t, 'secrets');
const config = loadConfig({ NODE_ENV: 'test', ALLOW_PRIVATE_URLS: 'true', DATABASE_URL: databaseUrl, NATS_URL: TEST_NATS_URL, NATS_PREFIX: `t${randomBytes(4).toString('hex')}`, PARTITIONS: '2' });
dropNatsPrefixAtEnd(t, { config }); // registered first: runs after the workers and gateways stop
const lines: string[] = [];
const logger = createLogger('debug', { write: (s: string) => void lines.push(s) });
const nc = await connectNats(config.natsUrl, 'test-secrets');
const gateway = await startGateway({ config, orm, nc, logger }, { port: 0, host: '127.0.0.1' });
const workerNc = await connectNats(config.natsUrl, 'test-secrets-worker');
const worker = await startWorker({ config, orm, nc: workerNc, logger, workerId: 'secrets', options: FAST_WORKER_OPTIONS });
t.teardown(async () => {
  await worker.close();
  await workerNc.close();
  await gateway.close();
  await nc.close();
});

// A model server (OpenAI-compatible) that answers every chat completion.
const modelCalls: { authorization?: string }[] = [];
const model = createServer((req, res) => {
  modelCalls.push({ authorization: req.headers.authorization });
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: 'x', object: 'chat.completion', created: 0, model: 'm', choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'We open at nine.' } }], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } }));
  });
});
await new Promise<void>((r) => model.listen(0, '127.0.0.1', r));
t.teardown(() => new Promise<void>((r) => model.close(() => r())));
const modelUrl = `http://127.0.0.1:${(model.address() as AddressInfo).port}/v1`;

const stub = await startChat2DeskStub(t, `c2d-${randomBytes(12).toString('hex')}`);
const api = apiClient(gateway.url);
const responses: { label: string; res: ApiResponse }[] = [];
const call = async (label: string, method: string, path: string, options: Parameters<typeof api>[2] = {}) => {
  const res = await api(method, path, options);
  responses.push({ label, res });
  return res;
};

const password = `pw-${randomBytes(12).toString('hex')}`;
const modelKey = `sk-${randomBytes(16).toString('hex')}`;
const email = `secret-${randomBytes(4).toString('hex')}@example.com`;
const inviteePassword = `pw-${randomBytes(12).toString('hex')}`;
const actionKey = `ak-${randomBytes(16).toString('hex')}`;
const mcpKey = `mk-${randomBytes(16).toString('hex')}`;

t.test('a full flow, then no secret anywhere it should not be', async (t) => {
  t.equal((await call('register', 'POST', '/api/auth/register', { body: { email, password, companyName: 'Secret Co' } })).status, 201);
  t.equal((await call('bad login', 'POST', '/api/auth/login', { body: { email, password: `${password}x` } })).status, 401);
  const login = await call('login', 'POST', '/api/auth/login', { body: { email, password } });
  const access: string = login.body.session.access_token;
  const refreshToken: string = login.body.session.refresh_token;
  const refreshed = await call('refresh', 'POST', '/api/auth/refresh', { body: { refresh_token: refreshToken } });
  const token: string = refreshed.body.session.access_token;
  const apiTokenRes = await call('api token', 'POST', '/api/api-tokens', { token, body: { name: 'ci' } });
  const apiToken: string = apiTokenRes.body.apiToken.token;

  const agent = await call('agent', 'POST', '/api/agents', { token: apiToken, body: { name: 'Model bot', model: { provider: 'openai', name: 'm', baseUrl: modelUrl, apiKey: modelKey, pricing: { inputUsdPerMTok: '0', outputUsdPerMTok: '0' } } } });
  t.equal(agent.status, 201, 'agent with a model key');
  const integration = await call('integration', 'POST', '/api/integrations', { token: apiToken, body: { type: 'helpdesk', name: 'Desk', agentId: agent.body.agent.id, apiUrl: stub.url, apiToken: stub.token } });
  t.equal(integration.status, 201);
  const id = integration.body.integration.id;
  const secret1: string = integration.body.integration.webhookSecret;

  await call('get agent', 'GET', `/api/agents/${agent.body.agent.id}`, { token });
  await call('list agents', 'GET', '/api/agents', { token });
  await call('get integration', 'GET', `/api/integrations/${id}`, { token });
  await call('list integrations', 'GET', '/api/integrations', { token });
  await call('patch integration', 'PATCH', `/api/integrations/${id}`, { token, body: { name: 'Desk 2' } });
  await call('list tokens', 'GET', '/api/api-tokens', { token });
  await call('me', 'GET', '/api/auth/me', { token });
  // An invitation: its token is in the answer that makes it (and its link), then only used.
  const invited = await call('invite', 'POST', '/api/users/invitations', { token, body: { email: `invitee-${randomBytes(4).toString('hex')}@example.com`, role: 'operator' } });
  t.equal(invited.status, 201);
  const invitation: string = invited.body.invitation.token;
  await call('list invitations', 'GET', '/api/users/invitations', { token });
  t.equal((await call('accept', 'POST', '/api/auth/accept-invitation', { body: { token: invitation, password: inviteePassword } })).status, 201);
  t.equal((await call('accept again', 'POST', '/api/auth/accept-invitation', { body: { token: invitation, password: inviteePassword } })).status, 404);
  await call('users', 'GET', '/api/users', { token });

  // A webhook, answered by the model through the helpdesk.
  const body = JSON.stringify({ message_id: 'm-1', text: 'When do you open?', client_id: 'c-1', channel_id: 'ch', transport: 'telegram' });
  const hook = await call('webhook', 'POST', `/api/webhook/helpdesk/${id}`, { rawBody: body, headers: { 'content-type': 'application/json', 'x-webhook-signature': signBody(secret1, body) } });
  t.equal(hook.status, 200);
  await call('bad webhook', 'POST', `/api/webhook/helpdesk/${id}`, { rawBody: body, headers: { 'content-type': 'application/json', 'x-webhook-signature': signBody('nope', body) } });
  await eventually(async () => stub.sent().length === 1, 15_000, 'the reply');
  t.equal(modelCalls[0]?.authorization, `Bearer ${modelKey}`, 'the model got its key');
  const convs = await call('conversations', 'GET', '/api/conversations', { token });
  await call('messages', 'GET', `/api/conversations/${convs.body.conversations[0].id}/messages`, { token });

  // Rotate; register-webhook against a failing helpdesk that echoes what it got (token included).
  const rotated = await call('rotate', 'POST', `/api/integrations/${id}/rotate-secret`, { token });
  const secret2: string = rotated.body.integration.webhookSecret;
  stub.handle((r) => (r.path.startsWith('/v1/webhooks') ? { status: 500, body: { status: 'error', message: `cannot, your token ${r.headers.authorization} is odd` } } : undefined));
  const reg = await call('register-webhook failing', 'POST', `/api/integrations/${id}/register-webhook`, { token });
  t.equal(reg.status, 502, 'the helpdesk failure is a 502');
  stub.handle(null);
  await call('register-webhook', 'POST', `/api/integrations/${id}/register-webhook`, { token });
  // The agent's tools: an action's and an MCP server's header values go to their servers only
  // (an API that echoes its key in an error included).
  const shopApi = await startActionApiStub(t);
  shopApi.answer('GET', '/orders/', (r) => ({ status: 401, body: { error: `the key ${String(r.headers['x-api-key'])} is not valid` } }));
  const actions = `/api/agents/${agent.body.agent.id}/actions`;
  const action = await call('action', 'POST', actions, { token: apiToken, body: { name: 'order_status', description: 'x', parameters: { type: 'object', properties: { orderId: { type: 'string' } } }, request: { method: 'GET', url: `${shopApi.url}/orders/{orderId}`, headers: { 'X-Api-Key': actionKey } } } });
  t.equal(action.status, 201);
  await call('list actions', 'GET', actions, { token });
  await call('patch action', 'PATCH', `${actions}/${action.body.action.id}`, { token, body: { request: { headers: { 'X-Api-Key': '********' } } } });
  const tried = await call('try action', 'POST', `${actions}/${action.body.action.id}/try`, { token, body: { arguments: { orderId: 'A-1' } } });
  t.equal(tried.body.outcome?.httpStatus, 401);
  t.equal(shopApi.requests[0]?.headers['x-api-key'], actionKey, 'the API got its key');
  const mcp = await startMcpStub(t, { requiredHeaders: { authorization: `Bearer ${mcpKey}` } });
  const servers = `/api/agents/${agent.body.agent.id}/mcp-servers`;
  const server = await call('mcp server', 'POST', servers, { token, body: { name: 'crm', url: mcp.url, headers: { Authorization: `Bearer ${mcpKey}` } } });
  t.equal(server.body.mcpServer?.status, 'connected', 'the MCP server got its key');
  await call('list mcp servers', 'GET', servers, { token });
  await call('refresh mcp server', 'POST', `${servers}/${server.body.mcpServer.id}/refresh`, { token });
  await call('logout', 'POST', '/api/auth/logout', { token });

  // At rest: sealed.
  const [row] = await sql(orm, 'select api_token_sealed, webhook_secret_sealed, previous_secret_sealed from integrations where id = ?', [id]);
  for (const [col, plain] of [['api_token_sealed', stub.token], ['webhook_secret_sealed', secret2], ['previous_secret_sealed', secret1]] as const) {
    t.match(row[col], /^v1\./, `${col} is sealed`);
    t.notOk(String(row[col]).includes(plain), `${col} does not hold the plain value`);
  }
  const [agentRow] = await sql(orm, 'select model_api_key_sealed from agents where id = ?', [agent.body.agent.id]);
  t.match(agentRow.model_api_key_sealed, /^v1\./, 'the model key is sealed');
  t.notOk(String(agentRow.model_api_key_sealed).includes(modelKey));
  const tools = JSON.stringify(await sql(orm, 'select (select json_agg(a.headers_sealed) from agent_actions a) a, (select json_agg(m.headers_sealed) from agent_mcp_servers m) m'));
  t.match(tools, /v1\./, 'header values are sealed');
  for (const [name, plain] of [['action header', actionKey], ['MCP header', mcpKey]] as const) t.notOk(tools.includes(plain), `the ${name} is not stored in clear`);
  const dump = JSON.stringify(await sql(orm, `select (select json_agg(u) from users u) u, (select json_agg(a) from api_tokens a) a, (select json_agg(r) from refresh_tokens r) r, (select json_agg(s) from auth_sessions s) s, (select json_agg(i) from user_invitations i) i`));
  for (const [name, plain] of [['password', password], ['api token', apiToken], ['refresh token', refreshToken], ['invitation token', invitation], ["invitee's password", inviteePassword]] as const) t.notOk(dump.includes(plain), `the ${name} is not stored in clear`);

  // Logs: nothing, at debug level, from gateway and worker.
  await new Promise((r) => setTimeout(r, 300));
  t.ok(lines.length > 0, `${lines.length} log lines captured`);
  const all = lines.join('');
  const secrets: Record<string, string> = { password, modelKey, helpdeskToken: stub.token, secret1, secret2, apiToken, refreshToken, access, token, invitation, inviteePassword, actionKey, mcpKey };
  for (const [name, value] of Object.entries(secrets)) t.notOk(all.includes(value), `no log line holds the ${name}`);

  // Responses: the webhook secret only in the create / rotate answers, a token only where it is issued.
  const allowed: Record<string, string[]> = {
    secret1: ['integration'],
    secret2: ['rotate'],
    apiToken: ['api token'],
    invitation: ['invite'],
    refreshToken: ['login'],
    // Same session and claims within the same second: the refresh may issue the identical JWT.
    access: ['login', 'refresh'],
    token: ['login', 'refresh'],
  };
  for (const [name, value] of Object.entries(secrets)) {
    const leaks = responses.filter(({ label, res }) => !(allowed[name] ?? []).includes(label) && JSON.stringify(res.body).includes(value)).map((r) => r.label);
    t.same(leaks, [], `the ${name} appears in no other response`);
  }
  t.match(reg.body.error.message, /HTTP 500/, 'the helpdesk\'s status is named');
  t.notMatch(reg.body.error.message, /cannot/, 'its own words (which echo the token) are not relayed');
});
