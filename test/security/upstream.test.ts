import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { addDocument } from '../support/knowledge.js';
import { startOpenAiStub } from '../support/openai-stub.js';
import { signUp, startTestService } from '../support/service.js';
import { dropNatsPrefixAtEnd } from '../support/webhooks.js';
import { createHelpdeskIntegration, eventually, messageEnvelope, publishEnvelope, sql, startTestWorker, waitForPartitions } from '../support/worker.js';

/**
 * What a tenant's own servers answer cannot hurt the service: an endless answer to a reply
 * send or to register-webhook is cut off at 1 MiB (it once crashed the process in a loop),
 * a helpdesk's or model's own words never reach another screen, a row whose sends keep
 * failing ends, and a stolen API token cannot steer a stored secret to a listener.
 */
const svc = await startTestService(t, 'upstream', { env: { PARTITIONS: '2' } });
dropNatsPrefixAtEnd(t, svc);
const helpdesk = await startChat2DeskStub(t);
const llm = await startOpenAiStub(t);
const worker = await startTestWorker(t, svc, { workerId: 'upstream', options: { agentRunner: { cacheTtlMs: 0 }, outbox: { maxAttempts: 4 } } });
await waitForPartitions([worker], 2);
const user = await signUp(svc.api, 'Upstream Co');

/** An answer that never ends (a tenant's server sending ~560 MiB and more). */
function endless(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  res.write('{"status":"success","data":"');
  const pump = () => {
    while (!res.destroyed && res.write(chunk));
    if (!res.destroyed) res.once('drain', pump);
  };
  pump();
}

const sentTo = (clientId: string) => helpdesk.sent().filter((b) => b.client_id === clientId);
const agentMessages = (integrationId: number, clientId: string) =>
  sql(svc.orm, `select m.text, m.delivery, m.delivery_error from conversation_messages m join conversations c on c.id = m.conversation_id where c.integration_id = ? and c.client_id = ? and m.role = 'agent' order by m.id`, [integrationId, clientId]);

t.test('an endless answer to a reply send: cut off, reconciled, bounded; the worker goes on', async (t) => {
  const kb = (await svc.api('POST', '/api/knowledge-bases', { token: user.token, body: { name: 'FAQ' } })).body.knowledgeBase;
  await addDocument(svc.api, user.token, kb.id, { title: 'Hours', content: 'We open at nine in the morning.' });
  const agent = (await svc.api('POST', '/api/agents', { token: user.token, body: { name: 'Bot', knowledgeBaseId: kb.id } })).body.agent;
  const integration = await createHelpdeskIntegration(svc, user, helpdesk, 'Desk', agent.id);
  helpdesk.handle((req) => (req.method === 'POST' && req.path === '/v1/messages' && req.body?.client_id === 'flood' ? { status: 200, raw: endless } : undefined));

  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'flood', 'When do you open?'));
  const [failed] = await eventually(async () => {
    const rows = await agentMessages(integration.id, 'flood');
    return rows[0]?.delivery === 'failed' ? rows : null;
  }, 15_000, 'the reply recorded as failed');
  t.match(failed!.delivery_error, /gave up after 4 attempts \(last: .*more than 1048576 bytes\)/, 'with the reason');
  // An answer that could not be read may hide a delivery: each resend came after a look at the history.
  const flood = helpdesk.requests.filter((r) => r.body?.client_id === 'flood' || r.query.get('client_id') === 'flood');
  t.same(flood.map((r) => r.method), ['POST', 'GET', 'POST', 'GET', 'POST', 'GET', 'POST', 'GET'], 'bounded: 4 sends, each followed by a reconciliation');

  // Still alive and answering.
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'calm', 'When do you open?'));
  await helpdesk.waitFor(() => sentTo('calm').length === 1);
  t.match(sentTo('calm')[0].text, /nine/);
  helpdesk.handle(null);
});

t.test('register-webhook: an endless answer or a refusal → 502 naming the status, never the helpdesk\'s own words', async (t) => {
  const agent = (await svc.api('POST', '/api/agents', { token: user.token, body: { name: 'Reg' } })).body.agent;
  const integration = await createHelpdeskIntegration(svc, user, helpdesk, 'Reg desk', agent.id);
  helpdesk.handle((req) => (req.path === '/v1/webhooks' ? { status: 200, raw: endless } : undefined));
  const flood = await svc.api('POST', `/api/integrations/${integration.id}/register-webhook`, { token: user.token });
  t.equal(flood.status, 502);
  t.match(flood.body.error.message, /more than 1048576 bytes/);
  t.equal((await svc.api('GET', '/healthz')).status, 200, 'the gateway is alive');

  helpdesk.handle((req) => (req.path === '/v1/webhooks' ? { status: 401, body: { status: 'error', message: 'MARKER-from-their-server <script>' } } : undefined));
  const refused = await svc.api('POST', `/api/integrations/${integration.id}/register-webhook`, { token: user.token });
  t.equal(refused.status, 502);
  t.match(refused.body.error.message, /HTTP 401/);
  t.notMatch(JSON.stringify(refused.body), /MARKER/, 'the helpdesk body is not echoed');
  helpdesk.handle(null);
});

t.test('a model server\'s own words never reach the transition log', async (t) => {
  llm.respond(() => ({ status: 400, headers: { 'x-should-retry': 'false' } }));
  const agent = (await svc.api('POST', '/api/agents', { token: user.token, body: { name: 'LLM', model: { provider: 'openai', name: 'gpt-4o', baseUrl: llm.baseUrl, apiKey: 'sk-x' } } })).body.agent;
  const integration = await createHelpdeskIntegration(svc, user, helpdesk, 'LLM desk', agent.id);
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'asker', 'hello'));
  const [row] = await eventually(
    async () => {
      const rows = await sql(svc.orm, `select t.payload from conversation_transitions t join conversations c on c.id = t.conversation_id where c.integration_id = ? and t.event = 'xstate.done.actor.agent'`, [integration.id]);
      return rows.length ? rows : null;
    },
    10_000,
    'the handoff',
  );
  t.match(row.payload.output, { kind: 'handoff', reason: 'model_failed', detail: 'model call failed (HTTP 400)' });
  t.notMatch(JSON.stringify(row.payload), /stub error/, 'the server\'s error text is not recorded');
  llm.respond(() => ({ content: 'ok' }));
});

t.test('a row whose sends kept dying with their sender ends as failed, not sent again', async (t) => {
  const agent = (await svc.api('POST', '/api/agents', { token: user.token, body: { name: 'Poison' } })).body.agent;
  const integration = await createHelpdeskIntegration(svc, user, helpdesk, 'Poison desk', agent.id);
  // Hold the first reply so its row can be given the history of a crash loop.
  helpdesk.handle((req) => (req.body?.client_id === 'poison' ? { status: 503, body: { status: 'error' } } : undefined));
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'poison', 'operator please'));
  const [row] = await eventually(
    async () => {
      const rows = await sql(svc.orm, `select o.id from outbox o join conversations c on c.id = o.conversation_id where c.integration_id = ?`, [integration.id]);
      return rows.length ? rows : null;
    },
    10_000,
    'the outbox row',
  );
  // What four claims that each died mid-send leave behind: `sending`, attempts counted, claim expired.
  await sql(svc.orm, `update outbox set status = 'sending', attempts = 4, claimed_until = now() - interval '1 second', next_attempt_at = now() where id = ?`, [row.id]);
  const before = helpdesk.requests.filter((r) => r.body?.client_id === 'poison').length;
  const [done] = await eventually(
    async () => {
      const rows = await sql(svc.orm, `select status, last_error from outbox where id = ? and status = 'failed'`, [row.id]);
      return rows.length ? rows : null;
    },
    10_000,
    'the row ended',
  );
  t.match(done.last_error, /gave up after 4 attempts/);
  t.equal(helpdesk.requests.filter((r) => r.body?.client_id === 'poison').length, before, 'not sent again');
  helpdesk.handle(null);
});

t.test('a stolen API token cannot steer a stored secret to a listener', async (t) => {
  const listener = createServer((_req, res) => res.end('{}'));
  await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => listener.close(() => r())));
  const elsewhere = `http://127.0.0.1:${(listener.address() as AddressInfo).port}`;
  const apiToken = (await svc.api('POST', '/api/api-tokens', { token: user.token, body: { name: 'leaked' } })).body.apiToken.token;

  const agent = (await svc.api('POST', '/api/agents', { token: user.token, body: { name: 'Keyed', model: { provider: 'openai', name: 'gpt-4o', baseUrl: llm.baseUrl, apiKey: 'sk-precious' } } })).body.agent;
  const moved = await svc.api('PATCH', `/api/agents/${agent.id}`, { token: apiToken, body: { model: { baseUrl: `${elsewhere}/v1` } } });
  t.equal(moved.status, 400);
  t.match(moved.body.error.details, [{ field: 'model.apiKey' }]);
  t.equal((await svc.api('GET', `/api/agents/${agent.id}`, { token: user.token })).body.agent.model.baseUrl, llm.baseUrl, 'unchanged');
  const withKey = await svc.api('PATCH', `/api/agents/${agent.id}`, { token: apiToken, body: { model: { baseUrl: `${elsewhere}/v1`, apiKey: 'sk-new' } } });
  t.equal(withKey.status, 200, 'with the key given again it may move');
  const keyless = (await svc.api('POST', '/api/agents', { token: user.token, body: { name: 'Keyless', model: { provider: 'openai', name: 'llama', baseUrl: llm.baseUrl } } })).body.agent;
  t.equal((await svc.api('PATCH', `/api/agents/${keyless.id}`, { token: apiToken, body: { model: { baseUrl: `${elsewhere}/v1` } } })).status, 200, 'no stored key: nothing to steer');

  const integration = await createHelpdeskIntegration(svc, user, helpdesk, 'Steer desk', agent.id);
  const steer = await svc.api('PATCH', `/api/integrations/${integration.id}`, { token: apiToken, body: { apiUrl: elsewhere } });
  t.equal(steer.status, 400);
  t.match(steer.body.error.details, [{ field: 'apiToken' }]);
  const region = await svc.api('PATCH', `/api/integrations/${integration.id}`, { token: apiToken, body: { region: 'europe' } });
  t.equal(region.status, 400, 'a region change moves the token too');
  t.equal((await svc.api('GET', `/api/integrations/${integration.id}`, { token: user.token })).body.integration.apiUrl, helpdesk.url, 'unchanged');
  const given = await svc.api('PATCH', `/api/integrations/${integration.id}`, { token: apiToken, body: { apiUrl: elsewhere, apiToken: 'new-token' } });
  t.equal(given.status, 200, 'with the token given again it may move');
  t.equal((await svc.api('PATCH', `/api/integrations/${integration.id}`, { token: apiToken, body: { name: 'Renamed' } })).status, 200, 'other fields need no token');
});
