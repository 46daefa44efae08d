import t from 'tap';
import { addDocument } from '../support/knowledge.js';
import { signUp, startTestService } from '../support/service.js';
import { join } from '../support/team.js';

// Test agent keeps its cases per agent (contract.md § The first hour):
// GET|PUT /api/agents/:id/evaluation-cases, the cases POST /api/agents/:id/evaluations runs.
const svc = await startTestService(t, 'evaluation_cases');
const { api } = svc;
const owner = await signUp(api, 'Cases Co');
const token = owner.token;
const kb = (await api('POST', '/api/knowledge-bases', { token, body: { name: 'FAQ', language: 'english' } })).body.knowledgeBase;
await addDocument(api, token, kb.id, { title: 'Delivery', content: '## Delivery\n\nDelivery takes 2–4 working days within Germany.' });
const agent = (await api('POST', '/api/agents', { token, body: { name: 'FAQ bot', knowledgeBaseId: kb.id } })).body.agent;
const other = (await api('POST', '/api/agents', { token, body: { name: 'Other bot' } })).body.agent;

const CASES = [
  { question: 'How long does delivery take?', expect: ['2-4 working days'] },
  { question: 'Who won the match last night?', expect: 'handoff' },
  { question: 'Hello', expect: [] },
];
const casesOf = async (id: number, tok = token) => api('GET', `/api/agents/${id}/evaluation-cases`, { token: tok });
const save = (id: number, cases: unknown, tok = token) => api('PUT', `/api/agents/${id}/evaluation-cases`, { token: tok, body: { cases } });

t.test('none saved: an empty list; saved: the same cases back, in order, per agent', async (t) => {
  t.match(await casesOf(agent.id), { status: 200, body: { cases: [] } });
  const put = await save(agent.id, CASES);
  t.equal(put.status, 200);
  t.same(put.body, { cases: CASES }, 'the PUT answers what is kept');
  t.same((await casesOf(agent.id)).body, { cases: CASES }, 'read back as saved');
  t.same((await casesOf(other.id)).body, { cases: [] }, "another agent's list is its own");

  const replaced = await save(agent.id, [CASES[1]]);
  t.same(replaced.body, { cases: [CASES[1]] }, 'a PUT replaces the list whole');
  t.same((await casesOf(agent.id)).body, { cases: [CASES[1]] });
  t.same((await save(agent.id, [])).body, { cases: [] }, 'an empty list clears it');
  t.same((await casesOf(agent.id)).body, { cases: [] });
});

t.test('the saved cases run as they are: "2-4 working days" passes against the answer\'s "2–4"', async (t) => {
  await save(agent.id, CASES.slice(0, 1));
  const { cases } = (await casesOf(agent.id)).body;
  const run = await api('POST', `/api/agents/${agent.id}/evaluations`, { token, body: { cases } });
  t.equal(run.status, 201);
  const [delivery] = run.body.evaluation.cases;
  t.match(delivery.answer, /2–4 working days/, 'the help centre writes an en dash');
  t.match(delivery, { pass: true, missing: [] }, 'the typed hyphen matches it');
});

t.test('the same validation as a run, and bounds', async (t) => {
  const bad = [
    { body: [{ question: '', expect: [] }], field: 'cases.0.question' },
    { body: [{ question: '   ', expect: [] }], field: 'cases.0.question' },
    { body: [{ question: 'Q', expect: 'maybe' }], field: 'cases.0.expect', message: /list of phrases or "handoff"/ },
    { body: [{ question: 'Q', expect: [''] }], field: 'cases.0.expect.0' },
    { body: [{ question: 'Q', expect: ['x'], extra: 1 }], field: 'cases.0' },
    { body: [{ question: 'x'.repeat(2001), expect: [] }], field: 'cases.0.question' },
    { body: Array.from({ length: 51 }, (_, i) => ({ question: `Q${i}`, expect: [] })), field: 'cases' },
    { body: 'all of them', field: 'cases' },
  ];
  await save(agent.id, CASES);
  for (const b of bad) {
    const res = await save(agent.id, b.body);
    t.equal(res.status, 400, `refused: ${JSON.stringify(b.body).slice(0, 60)}`);
    t.equal(res.body.error.code, 'VALIDATION_ERROR');
    t.match(res.body.error.details, [{ field: b.field, ...(b.message ? { message: b.message } : {}) }]);
  }
  const noBody = await api('PUT', `/api/agents/${agent.id}/evaluation-cases`, { token, body: {} });
  t.match(noBody, { status: 400, body: { error: { code: 'VALIDATION_ERROR', details: [{ field: 'cases' }] } } }, 'cases is required');
  t.same((await casesOf(agent.id)).body, { cases: CASES }, 'nothing refused was kept');
  const fifty = Array.from({ length: 50 }, (_, i) => ({ question: `Question ${i}`, expect: [`phrase ${i}`] }));
  t.equal((await save(agent.id, fifty)).status, 200, '50 cases are fine');
  t.equal((await casesOf(agent.id)).body.cases.length, 50);
});

t.test("another company's agent: 404 both ways; nothing of it changes", async (t) => {
  await save(agent.id, CASES);
  const stranger = await signUp(api, 'Other Co');
  t.match(await casesOf(agent.id, stranger.token), { status: 404, body: { error: { code: 'NOT_FOUND' } } });
  t.match(await save(agent.id, [], stranger.token), { status: 404, body: { error: { code: 'NOT_FOUND' } } });
  t.same((await casesOf(agent.id)).body, { cases: CASES }, 'the owner still has them');
  t.match(await casesOf(999_999), { status: 404 }, 'no such agent');
  t.match(await casesOf('abc' as never), { status: 404 }, 'not an id');
});

t.test('an operator: 403 like the other agent routes', async (t) => {
  const operator = await join(api, token, 'operator', 'Olga');
  t.match(await casesOf(agent.id, operator.token), { status: 403, body: { error: { code: 'FORBIDDEN' } } });
  t.match(await save(agent.id, [], operator.token), { status: 403, body: { error: { code: 'FORBIDDEN' } } });
  t.same((await casesOf(agent.id)).body, { cases: CASES }, 'unchanged');
});

t.test('the OpenAPI document has both routes', async (t) => {
  const doc = (await api('GET', '/api/openapi.json')).body;
  t.ok(doc.paths['/api/agents/{id}/evaluation-cases']?.get, 'GET');
  t.ok(doc.paths['/api/agents/{id}/evaluation-cases']?.put, 'PUT');
});
