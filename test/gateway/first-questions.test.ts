import t from 'tap';
import { addDocument } from '../support/knowledge.js';
import { startOpenAiStub } from '../support/openai-stub.js';
import { signUp, startTestService } from '../support/service.js';

// Issue #42's findings, each as a new company meets it: a base created with only a name, a few
// one-line articles, the agent's real answer path ("Test agent" evaluations run it exactly as a
// customer's first message is answered).
const svc = await startTestService(t, 'first-questions');
const model = await startOpenAiStub(t);
const { api } = svc;
const { token } = await signUp(api, 'Shoe Shop');

const kb = (await api('POST', '/api/knowledge-bases', { token, body: { name: 'Help' } })).body.knowledgeBase;
const articles = {
  returns: await addDocument(api, token, kb.id, { title: 'Returns', content: 'Returns are accepted within 30 days with a receipt.' }),
  hours: await addDocument(api, token, kb.id, { title: 'Opening hours', content: 'We are open Monday to Friday 9:00-19:00 and Saturday 10:00-16:00. Closed on Sunday.' }),
  shipping: await addDocument(api, token, kb.id, { title: 'Shipping', content: 'We ship to Portugal, Spain and France within 5 days.' }),
  sizes: await addDocument(api, token, kb.id, { title: 'Sizes', content: 'Our shoes follow EU sizes from 35 to 47.' }),
};
const bot = (await api('POST', '/api/agents', { token, body: { name: 'Bot', knowledgeBaseId: kb.id } })).body.agent;

type Case = { question: string; decision: string; sources: { documentId: number }[]; outcome: string; answer: string; options?: unknown };
async function ask(agentId: number, ...questions: string[]): Promise<Case[]> {
  const res = await api('POST', `/api/agents/${agentId}/evaluations`, { token, body: { cases: questions.map((question) => ({ question, expect: [] })) } });
  if (res.status !== 201) throw new Error(`evaluation: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.evaluation.cases;
}

t.test('a base created with only a name detects its language and stems', async (t) => {
  const base = (await api('GET', `/api/knowledge-bases/${kb.id}`, { token })).body.knowledgeBase;
  t.equal(base.language, 'auto', 'the default language is auto');
  const [returns, shoes, saturday] = await ask(bot.id, 'Do you accept returns?', 'can I return my shoes', 'what time do you close on saturday');
  t.match(returns, { outcome: 'reply' }); t.equal(returns!.decision, 'answer', '"Do you accept returns?" is answered (was handed over at 0.29)');
  t.equal(returns!.sources[0]!.documentId, articles.returns.id);
  t.not(shoes!.decision, 'no_answer', `"can I return my shoes" is not handed to a person (${shoes!.decision})`);
  t.equal(saturday!.decision, 'answer', 'the opening hours answer "what time do you close on saturday"');
  t.equal(saturday!.sources[0]!.documentId, articles.hours.id);
});

t.test('numbers, ids and names do not sink a question', async (t) => {
  const cases = await ask(bot.id, 'when are you open?', 'when are you open? (17)', 'what are your opening hours? (ref 42)', 'Do you ship to Lisbon?');
  for (const c of cases.slice(0, 3)) {
    t.equal(c.decision, 'answer', `"${c.question}" is answered`);
    t.equal(c.sources[0]!.documentId, articles.hours.id);
  }
  t.equal(cases[3]!.decision, 'answer', '"Do you ship to Lisbon?" is answered');
  t.equal(cases[3]!.sources[0]!.documentId, articles.shipping.id, 'from the shipping article');
});

t.test('an off-topic question gets the out-of-scope line, no handoff', async (t) => {
  const [capital] = await ask(bot.id, 'What is the capital of France?');
  t.match(capital, { decision: 'out_of_scope', outcome: 'reply', sources: [] });
  t.match(capital!.answer, /only help with questions about/);
  await api('PATCH', `/api/agents/${bot.id}`, { token, body: { outOfScopeText: 'I only know about our shoes.' } });
  const [again] = await ask(bot.id, 'write me a poem about autumn');
  t.match(again, { decision: 'out_of_scope', answer: 'I only know about our shoes.' }, "the agent's own outOfScopeText");
  const [inDomain] = await ask(bot.id, 'do you sell handbags too?');
  t.not(inDomain!.decision, 'answer', 'a question about the business the articles do not answer is not answered');
});

t.test('a model agent gets the passage that answers, with its match', async (t) => {
  const gpt = (await api('POST', '/api/agents', { token, body: { name: 'GPT', knowledgeBaseId: kb.id, model: { provider: 'openai', name: 'gpt-4o-mini', baseUrl: model.baseUrl, apiKey: 'sk-test' } } })).body.agent;
  const before = model.requests.length;
  await ask(gpt.id, 'Do you ship to Lisbon?');
  const prompt = JSON.stringify(model.requests.slice(before).map((r) => r.body));
  t.match(prompt, /Portugal, Spain and France/, 'the Portugal passage is in the prompt');
  t.match(prompt, /match \d+ %/, 'with its match');
});

t.test("the demo's help centre answers what its articles say", async (t) => {
  const { readFile, readdir } = await import('node:fs/promises');
  const dir = new URL('../../web/dashboard/sample-help-centre/', import.meta.url);
  const demo = (await api('POST', '/api/knowledge-bases', { token, body: { name: 'Sample help centre', language: 'english' } })).body.knowledgeBase;
  const ids = new Map<string, number>();
  for (const f of (await readdir(dir)).filter((f) => f.endsWith('.md')).sort()) {
    const content = await readFile(new URL(f, dir), 'utf8');
    const doc = await addDocument(api, token, demo.id, { title: /^# (.+)$/m.exec(content)![1]!.trim(), content, format: 'markdown' });
    ids.set(f.replace(/\.md$/, ''), doc.id);
  }
  const agent = (await api('POST', '/api/agents', { token, body: { name: 'Demo bot', knowledgeBaseId: demo.id } })).body.agent;
  const expected: [string, string][] = [
    ['Is express delivery available?', 'delivery'],
    ['What is your phone number?', 'contact'],
    ['My blender is broken, what do I do?', 'warranty'],
    ['Can I pay with Klarna?', 'payments'],
    ['Do you deliver on weekends?', 'delivery'],
  ];
  const cases = await ask(agent.id, ...expected.map(([q]) => q));
  cases.forEach((c, i) => {
    const [, article] = expected[i]!;
    t.equal(c.decision, 'answer', `"${c.question}" is answered (${c.decision})`);
    t.equal(c.sources[0]?.documentId, ids.get(article), `from ${article}`);
  });
});
