import t from 'tap';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { startRepeatingModel } from '../support/repeating-model.js';
import { signUp, startTestService } from '../support/service.js';
import { createWebchatIntegration, openChat } from '../support/webchat.js';
import {
  createHelpdeskIntegration,
  eventually,
  messageEnvelope,
  publishEnvelope,
  sql,
  startTestWorker,
  statusEnvelope,
  untilIdle,
  waitForPartitions,
} from '../support/worker.js';

// Leads through the real path: the worker makes a customer a lead at their first message,
// the API lists, shows and moves them.
const svc = await startTestService(t, 'leads', { env: { PARTITIONS: '4' } });
const stub = await startChat2DeskStub(t);
const user = await signUp(svc.api, 'Leads Co');
const other = await signUp(svc.api, 'Other Co');
const model = await startRepeatingModel(t);
const integration = await createHelpdeskIntegration(svc, user, stub, 'Helpdesk', await model.createAgent(svc.api, user.token));
const worker = await startTestWorker(t, svc, { workerId: 'leads-1' });
await waitForPartitions([worker], 4);

const { pipelines } = (await svc.api('GET', '/api/pipelines', { token: user.token })).body;
const sales = pipelines[0];
const stage = (name: string): number => sales.stages.find((s: { name: string }) => s.name === name).id;
const otherStage = (await svc.api('GET', '/api/pipelines', { token: other.token })).body.pipelines[0].stages[2].id as number;

const say = async (clientId: string, text: string, extra: Parameters<typeof messageEnvelope>[3] = {}) => {
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, clientId, text, extra));
  await untilIdle(svc);
};
const leadsOf = async (query = '', token = user.token) => {
  const res = await svc.api('GET', `/api/leads${query}`, { token });
  if (res.status !== 200) throw new Error(`GET /api/leads${query}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { leads: any[]; total: number; limit: number; offset: number };
};
const leadOf = async (clientId: string) => (await leadsOf()).leads.find((l) => l.clientId === clientId);

t.test('first contact makes a lead in the first stage; a customer who comes back keeps it and its stage', async (t) => {
  await say('c-1', 'hello', { requestId: 11 });
  const [conv] = await sql(svc.orm, 'select id from conversations where integration_id = ? and client_id = ?', [integration.id, 'c-1']);
  const lead = await leadOf('c-1');
  t.match(lead, {
    id: Number, pipelineId: sales.id, stageId: stage('New lead'), integrationId: integration.id, clientId: 'c-1', channel: 'helpdesk', transport: 'telegram',
    conversationCount: 1, lastConversation: { id: conv.id, status: 'active' }, lastActivityAt: /Z$/, createdAt: /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/,
  });
  t.equal(lead.stageChangedAt, lead.createdAt, 'in its first stage since its first contact');

  await say('c-1', 'still me', { requestId: 11 });
  t.equal((await leadsOf()).leads.filter((l) => l.clientId === 'c-1').length, 1, 'a second message of the session adds no lead');

  const moved = await svc.api('PATCH', `/api/leads/${lead.id}`, { token: user.token, body: { stageId: stage('Qualified') } });
  t.equal(moved.status, 200, JSON.stringify(moved.body));
  t.equal(moved.body.lead.stageId, stage('Qualified'));

  // The helpdesk closes the dialog; the customer writes again later: a new session, the same lead.
  await publishEnvelope(svc.nc, svc.config, statusEnvelope(integration, 'close_dialog', 11));
  await untilIdle(svc);
  await say('c-1', 'back again');
  const sessions = await sql(svc.orm, 'select id, status from conversations where integration_id = ? and client_id = ? order by id', [integration.id, 'c-1']);
  t.same(sessions.map((s) => s.status), ['closed', 'active'], 'two sessions');
  const again = await leadOf('c-1');
  t.equal(again.id, lead.id, 'the same lead');
  t.equal(again.stageId, stage('Qualified'), 'in the stage an operator put it');
  t.match(again, { conversationCount: 2, lastConversation: { id: sessions[1].id, status: 'active' } });

  const one = await svc.api('GET', `/api/leads/${lead.id}`, { token: user.token });
  t.equal(one.status, 200);
  t.same(one.body.lead.conversations.map((c: any) => [c.id, c.status, c.clientId]), [[sessions[1].id, 'active', 'c-1'], [sessions[0].id, 'closed', 'c-1']], 'linked to its conversations, newest first');
  t.match(one.body.lead.moves, [{ fromStageId: stage('New lead'), toStageId: stage('Qualified'), by: 'operator', userId: user.userId, apiTokenId: null, conversationId: null, at: /Z$/ }]);
});

t.test('a webchat visitor is a lead too, keyed by the visitor id', async (t) => {
  const chat = await createWebchatIntegration(svc.api, user.token);
  const c = await openChat(t, svc.url, chat.id);
  const welcome = await c.hello();
  c.send({ type: 'message', clientMessageId: 'w-1', text: 'hi from the site' });
  await c.next('ack');
  await untilIdle(svc);
  const lead = await leadOf(welcome.visitorId);
  t.match(lead, { integrationId: chat.id, channel: 'webchat', stageId: stage('New lead'), conversationCount: 1 });
});

t.test('moving: by an API token, to the same stage, and bad input', async (t) => {
  const lead = await leadOf('c-1');
  const apiToken = (await svc.api('POST', '/api/api-tokens', { token: user.token, body: { name: 'crm' } })).body.apiToken;
  const byToken = await svc.api('PATCH', `/api/leads/${lead.id}`, { token: apiToken.token, body: { stageId: stage('Won') } });
  t.equal(byToken.status, 200);
  t.match(byToken.body.lead.moves[0], { fromStageId: stage('Qualified'), toStageId: stage('Won'), by: 'api_token', apiTokenId: apiToken.id, userId: null });

  const same = await svc.api('PATCH', `/api/leads/${lead.id}`, { token: user.token, body: { stageId: stage('Won') } });
  t.equal(same.status, 200);
  t.equal(same.body.lead.moves.length, 2, 'a move to the stage it is in records nothing');

  const foreign = await svc.api('PATCH', `/api/leads/${lead.id}`, { token: user.token, body: { stageId: otherStage } });
  t.equal(foreign.status, 400, "another company's stage");
  t.match(foreign.body.error, { code: 'VALIDATION_ERROR', details: [{ field: 'stageId', message: /not a stage/ }] });
  const missing = await svc.api('PATCH', `/api/leads/${lead.id}`, { token: user.token, body: { stageId: 2_000_000 } });
  t.equal(missing.status, 400, 'a stage that does not exist');
  for (const body of [{}, { stageId: 'Won' }, { stageId: 0 }, { stageId: 1.5 }, { stageId: stage('Lost'), extra: 1 }]) {
    const res = await svc.api('PATCH', `/api/leads/${lead.id}`, { token: user.token, body });
    t.equal(res.status, 400, JSON.stringify(body));
    t.equal(res.body.error.code, 'VALIDATION_ERROR');
  }
  t.equal((await leadOf('c-1')).stageId, stage('Won'), 'nothing moved it');
  for (const path of ['/api/leads/999999', '/api/leads/abc', '/api/leads/0']) {
    t.equal((await svc.api('GET', path, { token: user.token })).status, 404, `GET ${path}`);
    t.equal((await svc.api('PATCH', path, { token: user.token, body: { stageId: stage('Lost') } })).status, 404, `PATCH ${path}`);
  }
});

t.test('lists: filters, newest in a stage first, limit / offset / total, errors', async (t) => {
  for (const id of ['p-1', 'p-2', 'p-3', 'p-4']) await say(id, 'hi');
  const newLeads = await leadsOf(`?pipelineId=${sales.id}&stageId=${stage('New lead')}`);
  t.ok(newLeads.leads.every((l) => l.stageId === stage('New lead')), 'only that stage');
  t.same(newLeads.leads.slice(0, 4).map((l) => l.clientId), ['p-4', 'p-3', 'p-2', 'p-1'], 'the lead that entered the stage last comes first');
  const p2 = newLeads.leads.find((l) => l.clientId === 'p-2');
  await svc.api('PATCH', `/api/leads/${p2.id}`, { token: user.token, body: { stageId: stage('Contacted') } });
  t.same((await leadsOf(`?stageId=${stage('Contacted')}`)).leads.map((l) => l.clientId), ['p-2']);

  const all = await leadsOf();
  t.equal(all.total, all.leads.length);
  t.equal(all.limit, 50);
  t.equal(all.offset, 0);
  const page = await leadsOf('?limit=2&offset=1');
  t.match(page, { total: all.total, limit: 2, offset: 1 });
  t.same(page.leads.map((l) => l.id), all.leads.slice(1, 3).map((l) => l.id), 'the page is a slice of the whole list');
  t.same((await leadsOf(`?pipelineId=${sales.id}&stageId=${otherStage}`)).leads, [], "another company's stage filters to nothing");

  for (const q of ['?limit=0', '?limit=201', '?offset=-1', '?stageId=abc', '?pipelineId=0']) {
    const res = await svc.api('GET', `/api/leads${q}`, { token: user.token });
    t.equal(res.status, 400, q);
    t.equal(res.body.error.code, 'VALIDATION_ERROR', q);
  }
  t.same((await leadsOf('', other.token)).leads, [], 'another company sees none of them');
});

t.test("a redelivered first message (another msgID, same key) creates no second lead", async (t) => {
  const env = messageEnvelope(integration, 'c-dup', 'once');
  await publishEnvelope(svc.nc, svc.config, env, 'first');
  await publishEnvelope(svc.nc, svc.config, env, 'second');
  await untilIdle(svc);
  await eventually(async () => (await leadOf('c-dup')) !== undefined, 5000, 'the lead');
  const [{ n }] = await sql(svc.orm, 'select count(*)::int as n from leads where integration_id = ? and client_id = ?', [integration.id, 'c-dup']);
  t.equal(n, 1);
});

t.test("the customer's name, email and phone: set, cleared, with a move or alone, all or nothing", async (t) => {
  const lead = await leadOf('p-1');
  t.match(lead, { name: null, email: null, phone: null }, 'unknown at first');
  const patch = (body: unknown, token = user.token) => svc.api('PATCH', `/api/leads/${lead.id}`, { token, body });

  const set = await patch({ name: '  Maria Lopez ', email: 'maria@example.com', phone: '+34 600 000 000' });
  t.equal(set.status, 200, JSON.stringify(set.body));
  t.match(set.body.lead, { name: 'Maria Lopez', email: 'maria@example.com', phone: '+34 600 000 000', stageId: lead.stageId });
  t.equal(set.body.lead.moves.length, 0, 'no move without a stageId');
  t.match(await leadOf('p-1'), { name: 'Maria Lopez', email: 'maria@example.com', phone: '+34 600 000 000' }, 'the list shows them');

  const both = await patch({ stageId: stage('Proposal'), phone: null });
  t.match(both.body.lead, { stageId: stage('Proposal'), name: 'Maria Lopez', email: 'maria@example.com', phone: null }, 'a move and a field at once; null clears, the others are kept');
  t.match(both.body.lead.moves[0], { toStageId: stage('Proposal'), by: 'operator' });
  t.match((await patch({ name: '   ' })).body.lead, { name: null }, 'a blank name clears it');

  const refused = await patch({ stageId: otherStage, name: 'Not stored' });
  t.equal(refused.status, 400, "another company's stage");
  for (const body of [{ email: 'not an email' }, { email: '' }, { name: 'x'.repeat(201) }, { phone: '1'.repeat(41) }, { name: 'a\u0000b' }, { phone: 12345 }, { name: 'Maria', customer: 'x' }]) {
    const res = await patch(body);
    t.equal(res.status, 400, JSON.stringify(body).slice(0, 60));
    t.equal(res.body.error.code, 'VALIDATION_ERROR');
  }
  t.match(await leadOf('p-1'), { name: null, email: 'maria@example.com', phone: null, stageId: stage('Proposal') }, 'a refused PATCH changed nothing');
  t.equal((await patch({ name: 'Theirs' }, other.token)).status, 404, "another company's lead");
});
