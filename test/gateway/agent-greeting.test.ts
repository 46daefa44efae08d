import t from 'tap';
import { signUp, startTestService } from '../support/service.js';

// `agent.greeting`: the company's own short reply to a greeting such as "hi" (null: a default in
// the customer's language; a thanks always gets the default).
const svc = await startTestService(t, 'agent_greeting');
const { api } = svc;
const acme = await signUp(api, 'Acme');
const token = acme.token;

t.test('null by default; set, trimmed, kept, cleared with null', async (t) => {
  const created = (await api('POST', '/api/agents', { token, body: { name: 'Greeter' } })).body.agent;
  t.equal(created.greeting, null, 'the default text in the customer’s language');
  const own = await api('POST', '/api/agents', { token, body: { name: 'Own words', greeting: '  Hello! Ask me about your order.  ' } });
  t.equal(own.status, 201);
  t.equal(own.body.agent.greeting, 'Hello! Ask me about your order.');

  const patched = await api('PATCH', `/api/agents/${created.id}`, { token, body: { greeting: 'Hi there 👋 How can I help?' } });
  t.equal(patched.status, 200);
  t.equal(patched.body.agent.greeting, 'Hi there 👋 How can I help?');
  t.equal((await api('GET', `/api/agents/${created.id}`, { token })).body.agent.greeting, 'Hi there 👋 How can I help?', 'stored');
  const untouched = await api('PATCH', `/api/agents/${created.id}`, { token, body: { name: 'Greeter 2' } });
  t.equal(untouched.body.agent.greeting, 'Hi there 👋 How can I help?', 'a patch without it keeps it');
  const cleared = await api('PATCH', `/api/agents/${created.id}`, { token, body: { greeting: null } });
  t.equal(cleared.body.agent.greeting, null, 'null restores the default');
  const longest = await api('PATCH', `/api/agents/${created.id}`, { token, body: { greeting: 'x'.repeat(1000) } });
  t.equal(longest.body.agent.greeting, 'x'.repeat(1000), '1000 characters fit');
});

t.test('a bad greeting: 400 naming it, nothing changed', async (t) => {
  const agent = (await api('POST', '/api/agents', { token, body: { name: 'Strict', greeting: 'Hello!' } })).body.agent;
  const cases: [string, unknown, RegExp][] = [
    ['empty', '', /must not be empty/],
    ['blank', '   ', /must not be blank/],
    ['too long', 'x'.repeat(1001), /at most 1000/],
    ['a number', 42, /must be a string or null/],
  ];
  for (const [label, greeting, message] of cases) {
    for (const [method, path] of [['POST', '/api/agents'], ['PATCH', `/api/agents/${agent.id}`]] as const) {
      const res = await api(method, path, { token, body: { name: 'Strict', greeting } });
      t.equal(res.status, 400, `${method} ${label}`);
      t.equal(res.body.error.code, 'VALIDATION_ERROR');
      t.match(res.body.error.details, [{ field: 'greeting', message }], `${method} ${label}: ${JSON.stringify(res.body.error.details)}`);
    }
  }
  t.equal((await api('GET', `/api/agents/${agent.id}`, { token })).body.agent.greeting, 'Hello!', 'nothing changed');
  t.equal((await api('GET', '/api/agents', { token })).body.agents.filter((a: { name: string }) => a.name === 'Strict').length, 1, 'no agent was created');
});

t.test("the agent's answer to a greeting is its greeting; null: the default", async (t) => {
  const agent = (await api('POST', '/api/agents', { token, body: { name: 'Shop bot', greeting: 'Welcome to Tent Co! What can I do for you?' } })).body.agent;
  const ask = async () => (await api('POST', `/api/agents/${agent.id}/evaluations`, { token, body: { cases: [{ question: 'Hello!', expect: [] }] } })).body.evaluation.cases[0];
  t.match(await ask(), { decision: 'greeting', outcome: 'reply', answer: 'Welcome to Tent Co! What can I do for you?', sources: [], pass: true });
  await api('PATCH', `/api/agents/${agent.id}`, { token, body: { greeting: null } });
  const fallback = await ask();
  t.match(fallback, { decision: 'greeting', outcome: 'reply', pass: true });
  t.not(fallback.answer, 'Welcome to Tent Co! What can I do for you?', 'the default text again');
});
