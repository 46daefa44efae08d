import t from 'tap';
import { addDocument } from '../support/knowledge.js';
import { startOpenAiStub } from '../support/openai-stub.js';
import { signUp, startTestService } from '../support/service.js';
import { sql } from '../support/worker.js';

// "Test agent": the agent's answer path on a list of questions, nothing sent, no conversation.
const svc = await startTestService(t, 'evaluations');
const model = await startOpenAiStub(t);
const { api } = svc;
const user = await signUp(api, 'Eval Co');
const token = user.token;
const kb = (await api('POST', '/api/knowledge-bases', { token, body: { name: 'FAQ', language: 'english' } })).body.knowledgeBase;
const doc = await addDocument(api, token, kb.id, {
  title: 'Shop',
  content: '## Opening hours\n\nWe are open from 9 am to 6 pm, Monday to Saturday.\n\n## Returns\n\nItems can be returned within 30 days with the receipt.',
});
const builtin = (await api('POST', '/api/agents', { token, body: { name: 'FAQ bot', knowledgeBaseId: kb.id } })).body.agent;
const gpt = (
  await api('POST', '/api/agents', { token, body: { name: 'GPT bot', knowledgeBaseId: kb.id, model: { provider: 'openai', name: 'gpt-4o-mini', baseUrl: model.baseUrl, apiKey: 'sk-test' } } })
).body.agent;

t.test('a built-in agent: pass, fail with the missing phrases, no answer, a person asked for', async (t) => {
  const res = await api('POST', `/api/agents/${builtin.id}/evaluations`, {
    token,
    body: {
      cases: [
        { question: 'When do you open?', expect: ['9 am', 'Saturday'] },
        { question: 'Can I return something?', expect: ['30 days', 'refund in cash'] },
        { question: 'Do you repair bicycles?', expect: [] },
        { question: 'How long do I have for returnign an item?', expect: ['30 DAYS'] },
        { question: 'I want to talk to a human', expect: ['human colleague'] },
      ],
    },
  });
  t.equal(res.status, 201);
  const e = res.body.evaluation;
  t.same(Object.keys(e).sort(), ['agentId', 'cases', 'createdAt', 'failed', 'id', 'passed']);
  t.match(e, { agentId: builtin.id, passed: 3, failed: 2 });
  const [open, ret, none, typo, human] = e.cases;
  t.match(open, { question: 'When do you open?', answer: 'We are open from 9 am to 6 pm, Monday to Saturday.', outcome: 'reply', pass: true, missing: [] });
  t.match(open.sources, [{ documentId: doc.id, chunkId: Number, title: 'Shop' }]);
  t.match(ret, { outcome: 'reply', pass: false, missing: ['refund in cash'] }, 'a missing phrase fails the case and is named');
  t.match(none, { outcome: 'handoff', reason: 'no_answer', answer: "Sorry, I don't have an answer to that. A human colleague will take over shortly.", sources: [], pass: false }, 'no expectations: passes only when the agent answers');
  t.match(typo, { outcome: 'reply', pass: true }, 'phrases are matched without case; typos in the question are answered');
  t.match(human, { outcome: 'handoff', reason: 'asked_for_human', pass: true });

  t.equal((await sql(svc.orm, 'select count(*)::int as n from conversations'))[0].n, 0, 'no conversation was touched');
  t.equal((await sql(svc.orm, 'select count(*)::int as n from outbox'))[0].n, 0, 'nothing was sent');
  const list = await api('GET', `/api/agents/${builtin.id}/evaluations`, { token });
  t.same(list.body.evaluations.map((x: { id: number }) => x.id), [e.id], 'kept and listed');
});

t.test('a model agent: real calls, billed like any call; told when nothing is relevant', async (t) => {
  // An obedient model: answers from the passages it is given, hands over when told there are none.
  model.respond((req) =>
    /returned within 30 days/.test(JSON.stringify(req.body.messages))
      ? { content: 'You can return items within 30 days.' }
      : { content: null, toolCalls: [{ name: 'handoff_to_human', arguments: '{"reason":"not in the knowledge base"}' }] },
  );
  const before = (await api('GET', '/api/billing', { token })).body.billing;
  const res = await api('POST', `/api/agents/${gpt.id}/evaluations`, {
    token,
    body: { cases: [{ question: 'How long can I return items?', expect: ['30 days'] }, { question: 'Do you repair bicycles?', expect: ['repair'] }] },
  });
  t.equal(res.status, 201);
  const [answered, unknown] = res.body.evaluation.cases;
  t.match(answered, { answer: 'You can return items within 30 days.', outcome: 'reply', pass: true });
  t.ok(answered.sources.some((s: { documentId: number }) => s.documentId === doc.id), 'the passages in the prompt are the sources');
  t.match(unknown, { outcome: 'handoff', reason: 'no_answer', sources: [], pass: false });
  t.equal(model.requests.length, 2);
  const systemOf = (q: string) => model.requests.find((r) => model.lastUserText(r) === q)!.body.messages[0].content as string;
  t.match(systemOf('How long can I return items?'), /Knowledge base passages[\s\S]*Shop › Returns/, 'the relevant passage, named by its heading path');
  t.notMatch(systemOf('How long can I return items?'), /Opening hours/, 'irrelevant passages stay out of the prompt');
  t.match(systemOf('Do you repair bicycles?'), /knowledge base has nothing relevant/, 'with nothing relevant the model is told so');

  const after = (await api('GET', '/api/billing', { token })).body.billing;
  const usage = after.ledger.filter((l: { kind: string }) => l.kind === 'model_usage');
  t.equal(usage.length, 2, 'one ledger entry per call');
  t.match(usage[0], { model: 'gpt-4o-mini', inputTokens: 1234, outputTokens: 567, conversationId: null });
  t.not(after.balanceUsd, before.balanceUsd, 'the balance went down');

  t.equal((await api('PATCH', `/api/agents/${gpt.id}`, { token, body: { onNoAnswer: 'fallback' } })).status, 200);
  const fallback = await api('POST', `/api/agents/${gpt.id}/evaluations`, { token, body: { cases: [{ question: 'Do you repair bicycles?', expect: [] }] } });
  t.match(fallback.body.evaluation.cases[0], { outcome: 'reply', answer: "Sorry, I don't have an answer to that.", sources: [], pass: true }, 'onNoAnswer "fallback": the model handing over becomes the fallback text');
});

t.test('validation and ownership', async (t) => {
  for (const body of [{}, { cases: [] }, { cases: [{ question: 'x' }] }, { cases: [{ question: '', expect: [] }] }, { cases: Array.from({ length: 51 }, () => ({ question: 'q', expect: [] })) }]) {
    const res = await api('POST', `/api/agents/${builtin.id}/evaluations`, { token, body });
    t.equal(res.status, 400, JSON.stringify(body).slice(0, 60));
    t.equal(res.body.error.code, 'VALIDATION_ERROR');
  }
  const other = await signUp(api, 'Other Co');
  const res = await api('POST', `/api/agents/${builtin.id}/evaluations`, { token: other.token, body: { cases: [{ question: 'When do you open?', expect: [] }] } });
  t.equal(res.status, 404);
  t.equal((await api('GET', `/api/agents/${builtin.id}/evaluations`, { token: other.token })).status, 404);
});
