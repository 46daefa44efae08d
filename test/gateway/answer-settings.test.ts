import t from 'tap';
import { signUp, startTestService } from '../support/service.js';
import { sql } from '../support/worker.js';

// The settings of contract.md § Answers that find what the help centre says: an agent's
// `outOfScopeText` (the reply to a message not about the business; null: a default) and
// `knowledgePassages` (how many passages a model agent is given, 0–20, default 5), and a
// knowledge base's `language` `auto` (the default) beside the text-search configurations.
const svc = await startTestService(t, 'answer_settings');
const { api } = svc;
const acme = await signUp(api, 'Acme');
const token = acme.token;

t.test('agent: the defaults, set (text trimmed), shown, kept, cleared', async (t) => {
  const created = (await api('POST', '/api/agents', { token, body: { name: 'Plain' } })).body.agent;
  t.match(created, { outOfScopeText: null, knowledgePassages: 5 }, 'null: the default line in the customer’s language; 5 passages');
  const own = await api('POST', '/api/agents', { token, body: { name: 'Own', outOfScopeText: '  I can help with tents and camping gear only.  ', knowledgePassages: 0 } });
  t.equal(own.status, 201);
  t.match(own.body.agent, { outOfScopeText: 'I can help with tents and camping gear only.', knowledgePassages: 0 });
  const [row] = await sql(svc.orm, 'select out_of_scope_text, knowledge_passages from agents where id = ?', [own.body.agent.id]);
  t.same(row, { out_of_scope_text: 'I can help with tents and camping gear only.', knowledge_passages: 0 }, 'stored as sent');

  const patched = await api('PATCH', `/api/agents/${created.id}`, { token, body: { outOfScopeText: 'Ask me about your order 🙂', knowledgePassages: 20 } });
  t.equal(patched.status, 200);
  t.match(patched.body.agent, { outOfScopeText: 'Ask me about your order 🙂', knowledgePassages: 20 });
  t.same((await api('GET', `/api/agents/${created.id}`, { token })).body.agent, patched.body.agent, 'read back as saved');
  const listed = (await api('GET', '/api/agents', { token })).body.agents.find((a: { id: number }) => a.id === created.id);
  t.match(listed, { outOfScopeText: 'Ask me about your order 🙂', knowledgePassages: 20 }, 'and in the list');
  const renamed = await api('PATCH', `/api/agents/${created.id}`, { token, body: { name: 'Plain 2' } });
  t.match(renamed.body.agent, { outOfScopeText: 'Ask me about your order 🙂', knowledgePassages: 20 }, 'a patch without them keeps them');
  const cleared = await api('PATCH', `/api/agents/${created.id}`, { token, body: { outOfScopeText: null } });
  t.equal(cleared.body.agent.outOfScopeText, null, 'null restores the default');
  const longest = await api('PATCH', `/api/agents/${created.id}`, { token, body: { outOfScopeText: 'x'.repeat(1000) } });
  t.equal(longest.body.agent.outOfScopeText, 'x'.repeat(1000), '1000 characters fit');
});

t.test('agent: bad values are 400 naming the field, for create and patch; nothing changes', async (t) => {
  const agent = (await api('POST', '/api/agents', { token, body: { name: 'Strict', outOfScopeText: 'Only tents.', knowledgePassages: 3 } })).body.agent;
  const cases: [string, Record<string, unknown>, string, RegExp][] = [
    ['an empty text', { outOfScopeText: '' }, 'outOfScopeText', /must not be empty/],
    ['a blank text', { outOfScopeText: '  \n ' }, 'outOfScopeText', /must not be blank/],
    ['a text of 1001', { outOfScopeText: 'x'.repeat(1001) }, 'outOfScopeText', /at most 1000/],
    ['a number as text', { outOfScopeText: 42 }, 'outOfScopeText', /must be a string or null/],
    ['21 passages', { knowledgePassages: 21 }, 'knowledgePassages', /<= 20|at most 20/],
    ['-1 passages', { knowledgePassages: -1 }, 'knowledgePassages', />= 0|at least 0/],
    ['2.5 passages', { knowledgePassages: 2.5 }, 'knowledgePassages', /integer/],
    ['passages as a string', { knowledgePassages: '5' }, 'knowledgePassages', /integer/],
    ['null passages', { knowledgePassages: null }, 'knowledgePassages', /integer/],
  ];
  for (const [label, body, field, message] of cases) {
    for (const [method, path] of [['POST', '/api/agents'], ['PATCH', `/api/agents/${agent.id}`]] as const) {
      const res = await api(method, path, { token, body: { name: 'Strict', ...body } });
      t.equal(res.status, 400, `${method} ${label}`);
      t.equal(res.body.error?.code, 'VALIDATION_ERROR');
      t.match(res.body.error?.details, [{ field, message }], `${method} ${label}: ${JSON.stringify(res.body.error?.details)}`);
    }
  }
  t.match((await api('GET', `/api/agents/${agent.id}`, { token })).body.agent, { outOfScopeText: 'Only tents.', knowledgePassages: 3, version: 1 }, 'nothing changed');
  t.equal((await api('GET', '/api/agents', { token })).body.agents.filter((a: { name: string }) => a.name === 'Strict').length, 1, 'no agent was created');
});

t.test('agent: both are versioned settings; a restore brings them back', async (t) => {
  const agent = (await api('POST', '/api/agents', { token, body: { name: 'Versioned' } })).body.agent;
  t.equal((await api('PATCH', `/api/agents/${agent.id}`, { token, body: { outOfScopeText: 'Tents only.', knowledgePassages: 8 } })).status, 200);
  const [latest] = (await api('GET', `/api/agents/${agent.id}/versions`, { token })).body.versions;
  t.match(latest, { version: 2, changes: ['outOfScopeText', 'knowledgePassages'] }, 'the changes named as the API names them');
  t.equal((await api('PATCH', `/api/agents/${agent.id}`, { token, body: { knowledgePassages: 8 } })).body.agent.version, 2, 'the same value again: no version');
  const restored = await api('POST', `/api/agents/${agent.id}/versions/1/restore`, { token });
  t.equal(restored.status, 201, JSON.stringify(restored.body));
  t.match(restored.body.agent, { outOfScopeText: null, knowledgePassages: 5, version: 3 });
  t.same(restored.body.version.changes, ['outOfScopeText', 'knowledgePassages']);
});

t.test('knowledge base language: auto by default and on request; configurations as before; others 400', async (t) => {
  const plain = await api('POST', '/api/knowledge-bases', { token, body: { name: 'Defaults' } });
  t.equal(plain.status, 201);
  t.equal(plain.body.knowledgeBase.language, 'auto', 'auto when absent');
  const auto = await api('POST', '/api/knowledge-bases', { token, body: { name: 'Asked for', language: 'auto' } });
  t.equal(auto.body.knowledgeBase.language, 'auto');
  const english = await api('POST', '/api/knowledge-bases', { token, body: { name: 'English', language: 'english' } });
  t.equal(english.body.knowledgeBase.language, 'english', 'a configuration is still honoured');
  const toAuto = await api('PATCH', `/api/knowledge-bases/${english.body.knowledgeBase.id}`, { token, body: { language: 'auto' } });
  t.equal(toAuto.status, 200);
  t.equal(toAuto.body.knowledgeBase.language, 'auto');
  const toSimple = await api('PATCH', `/api/knowledge-bases/${english.body.knowledgeBase.id}`, { token, body: { language: 'simple' } });
  t.equal(toSimple.body.knowledgeBase.language, 'simple');
  const renamed = await api('PATCH', `/api/knowledge-bases/${plain.body.knowledgeBase.id}`, { token, body: { name: 'Renamed' } });
  t.equal(renamed.body.knowledgeBase.language, 'auto', 'a patch without it keeps it');
  t.equal((await api('GET', `/api/knowledge-bases/${plain.body.knowledgeBase.id}`, { token })).body.knowledgeBase.language, 'auto');

  for (const [label, language, message] of [
    ['an unknown configuration', 'klingon', /auto or a text-search configuration/],
    ['AUTO in capitals', 'AUTO', /auto or a text-search configuration/],
    ['an empty string', '', /must not be empty/],
    ['a number', 7, /string/],
    ['null', null, /string/],
  ] as const) {
    for (const [method, path] of [['POST', '/api/knowledge-bases'], ['PATCH', `/api/knowledge-bases/${plain.body.knowledgeBase.id}`]] as const) {
      const res = await api(method, path, { token, body: { name: 'Bad', language } });
      t.equal(res.status, 400, `${method} ${label}`);
      t.match(res.body.error, { code: 'VALIDATION_ERROR', details: [{ field: 'language', message }] }, `${method} ${label}: ${JSON.stringify(res.body.error?.details)}`);
    }
  }
  t.equal((await api('GET', `/api/knowledge-bases/${plain.body.knowledgeBase.id}`, { token })).body.knowledgeBase.language, 'auto', 'nothing changed');
});
