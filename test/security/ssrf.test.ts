import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { SecretBox } from '../../lib/secrets.js';
import { signUp, startTestService } from '../support/service.js';
import { dropNatsPrefixAtEnd } from '../support/webhooks.js';
import { eventually, messageEnvelope, publishEnvelope, sql, startTestWorker, waitForPartitions } from '../support/worker.js';

/**
 * Tenant-supplied URLs (a helpdesk integration's apiUrl, an agent's model baseUrl) may not
 * reach internal addresses (contract.md § Knowledge, ALLOW_PRIVATE_URLS off, as in
 * production). A local listener stands in for the internal service (a metadata endpoint, an
 * admin port): it must never hear a request, whatever the tenant types, and whatever the
 * stored URL says by the time a connection is made.
 */
const svc = await startTestService(t, 'ssrf', { env: { ALLOW_PRIVATE_URLS: 'false', PARTITIONS: '2' } });
dropNatsPrefixAtEnd(t, svc);

const heard: string[] = [];
const internal = createServer((req, res) => {
  heard.push(`${req.method} ${req.url}`);
  res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"success","data":{"message_id":1,"secret":"internal-only"}}');
});
await new Promise<void>((r) => internal.listen(0, '127.0.0.1', r));
t.teardown(() => new Promise<void>((r) => internal.close(() => r())));
const port = (internal.address() as AddressInfo).port;

const user = await signUp(svc.api, 'Attacker Co');
const builtin = (await svc.api('POST', '/api/agents', { token: user.token, body: { name: 'Bot' } })).body.agent;

const SPELLINGS = [
  `http://127.0.0.1:${port}`,
  `http://localhost:${port}`,
  `http://2130706433:${port}`,
  `http://0x7f000001:${port}`,
  `http://127.1:${port}`,
  `http://[::ffff:127.0.0.1]:${port}`,
  `http://[::ffff:0:127.0.0.1]:${port}`,
  `http://[64:ff9b::127.0.0.1]:${port}`,
  `http://[::1]:${port}`,
  `http://169.254.169.254/latest/meta-data`,
  `http://10.0.0.7:8080`,
];

t.test('an integration apiUrl that leads inside is refused with a clear 400', async (t) => {
  for (const apiUrl of SPELLINGS) {
    const res = await svc.api('POST', '/api/integrations', { token: user.token, body: { type: 'helpdesk', name: 'Desk', agentId: builtin.id, apiUrl, apiToken: 'tok' } });
    t.equal(res.status, 400, apiUrl);
    t.match(res.body.error, { code: 'VALIDATION_ERROR', details: [{ field: 'apiUrl', message: /private|internal/ }] });
  }
  const desk = await svc.api('POST', '/api/integrations', { token: user.token, body: { type: 'helpdesk', name: 'Desk', agentId: builtin.id } });
  t.equal(desk.status, 201);
  const patched = await svc.api('PATCH', `/api/integrations/${desk.body.integration.id}`, { token: user.token, body: { apiUrl: `http://2130706433:${port}`, apiToken: 'tok' } });
  t.equal(patched.status, 400, 'PATCH is checked too');
  t.same(heard, [], 'the internal service heard nothing');
});

t.test('a model baseUrl that leads inside is refused with a clear 400', async (t) => {
  for (const baseUrl of SPELLINGS) {
    const res = await svc.api('POST', '/api/agents', { token: user.token, body: { name: 'LLM', model: { provider: 'openai', name: 'gpt-4o', baseUrl: `${baseUrl}/v1`, apiKey: 'sk' } } });
    t.equal(res.status, 400, baseUrl);
    t.match(res.body.error, { code: 'VALIDATION_ERROR', details: [{ field: 'model.baseUrl', message: /private|internal/ }] });
  }
  t.same(heard, [], 'the internal service heard nothing');
});

// Stored URLs that lead inside, as if a host name had resolved publicly when it was typed and
// to the internal address by the time a connection is made: the guard applies at connect time.
const box = new SecretBox(svc.config.secretsKeys);
async function insideIntegration(agentId: number): Promise<{ id: number }> {
  const res = await svc.api('POST', '/api/integrations', { token: user.token, body: { type: 'helpdesk', name: 'Rebound', agentId } });
  await sql(svc.orm, 'update integrations set api_url = ?, api_token_sealed = ? where id = ?', [`http://127.0.0.1:${port}`, box.seal('tok'), res.body.integration.id]);
  return res.body.integration;
}

t.test('register-webhook: the stored apiUrl leads inside → 502 saying so, nothing sent', async (t) => {
  const integration = await insideIntegration(builtin.id);
  const res = await svc.api('POST', `/api/integrations/${integration.id}/register-webhook`, { token: user.token });
  t.equal(res.status, 502);
  t.match(res.body.error, { code: 'UPSTREAM_ERROR', message: /private, loopback or link-local/ });
  t.notMatch(JSON.stringify(res.body), /internal-only/);
  t.same(heard, []);
});

t.test('the worker refuses the connection too: replies and model calls', async (t) => {
  const worker = await startTestWorker(t, svc, { workerId: 'ssrf', options: { agentRunner: { cacheTtlMs: 0 } } });
  await waitForPartitions([worker], 2);

  // A built-in agent without knowledge hands off: its notice goes to the helpdesk, and is refused.
  const desk = await insideIntegration(builtin.id);
  await publishEnvelope(svc.nc, svc.config, messageEnvelope({ id: desk.id, companyId: user.companyId }, 'c-1', 'hello'));
  const failed = await eventually(
    async () => (await sql(svc.orm, `select m.delivery_error from conversation_messages m join conversations c on c.id = m.conversation_id where c.integration_id = ? and m.role = 'agent' and m.delivery = 'failed'`, [desk.id]))[0],
    10_000,
    'the handoff notice recorded as failed',
  );
  t.match(failed.delivery_error, /private, loopback or link-local/, 'failed with the reason, not retried');

  // A model agent whose stored baseUrl leads inside: handed to a human, the server never asked.
  const llm = (await svc.api('POST', '/api/agents', { token: user.token, body: { name: 'LLM', model: { provider: 'openai', name: 'gpt-4o', baseUrl: 'https://models.example.com/v1', apiKey: 'sk' } } })).body;
  t.ok(llm.agent, 'a public-looking host is accepted when it resolves publicly or not at all');
  await sql(svc.orm, 'update agents set model_base_url = ? where id = ?', [`http://127.0.0.1:${port}/v1`, llm.agent.id]);
  const modelDesk = await insideIntegration(llm.agent.id);
  await publishEnvelope(svc.nc, svc.config, messageEnvelope({ id: modelDesk.id, companyId: user.companyId }, 'c-2', 'what are your hours?'));
  const handoff = await eventually(
    async () => (await sql(svc.orm, `select t.payload from conversation_transitions t join conversations c on c.id = t.conversation_id where c.integration_id = ? and t.event = 'xstate.done.actor.agent'`, [modelDesk.id]))[0],
    15_000,
    'the handoff',
  );
  t.match(handoff.payload.output, { kind: 'handoff', reason: 'model_failed', detail: /private, loopback or link-local/ });
  t.same(heard, [], 'the internal service heard nothing at all');
});
