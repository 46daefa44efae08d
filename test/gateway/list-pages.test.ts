// Every list takes `limit` (default 50, 1–200) and `offset` and answers `total` (issue #26
// finding 4; contract.md § No tenant slows another down): agents, knowledge bases,
// integrations, API tokens, an agent's evaluations and pipelines, beside the lists that
// already paged (test/gateway/lists.test.ts). Before, each answered everything it had.
import t from 'tap';
import { signUp, startTestService } from '../support/service.js';
import { sql } from '../support/worker.js';

const svc = await startTestService(t, 'list-pages');
const owner = await signUp(svc.api, 'Paged Co');
const get = (path: string) => svc.api('GET', path, { token: owner.token });

const MANY = 57;
// Agents and knowledge bases in bulk (the quota, 100, leaves room); integrations through the API.
await sql(svc.orm, `insert into agents (company_id, name) select ?, 'Agent ' || lpad(g::text, 3, '0') from generate_series(1, ?) g`, [owner.companyId, MANY]);
await sql(svc.orm, `insert into knowledge_bases (company_id, name) select ?, 'Base ' || lpad(g::text, 3, '0') from generate_series(1, ?) g`, [owner.companyId, MANY]);
const firstAgent = (await get('/api/agents?limit=1')).body.agents[0].id as number;
for (let n = 0; n < MANY; n++) {
  const res = await svc.api('POST', '/api/integrations', { token: owner.token, body: { type: 'webchat', name: `Chat ${n}`, agentId: firstAgent } });
  if (res.status !== 201) throw new Error(`integration: ${res.status}`);
}
for (let n = 0; n < 3; n++) await svc.api('POST', '/api/api-tokens', { token: owner.token, body: { name: `Token ${n}` } });
for (let n = 0; n < 3; n++) await svc.api('POST', `/api/agents/${firstAgent}/evaluations`, { token: owner.token, body: { cases: [{ question: `Question ${n}?`, expect: [] }] } });

interface List {
  path: string;
  key: string;
  count: number;
}
const LISTS: List[] = [
  { path: '/api/agents', key: 'agents', count: MANY },
  { path: '/api/knowledge-bases', key: 'knowledgeBases', count: MANY },
  { path: '/api/integrations', key: 'integrations', count: MANY },
  { path: '/api/api-tokens', key: 'apiTokens', count: 3 },
  { path: `/api/agents/${firstAgent}/evaluations`, key: 'evaluations', count: 3 },
  { path: '/api/pipelines', key: 'pipelines', count: 1 },
];

for (const { path, key, count } of LISTS) {
  t.test(`${path}: pages of limit (default 50) from offset, with the total`, async (t) => {
    const first = await get(path);
    t.equal(first.status, 200);
    t.same(Object.keys(first.body).sort(), [key, 'limit', 'offset', 'total'].sort(), 'the items under their name, beside total, limit and offset');
    t.match(first.body, { total: count, limit: 50, offset: 0 });
    t.equal(first.body[key].length, Math.min(count, 50));

    const all = (await get(`${path}?limit=200`)).body[key] as { id: number }[];
    t.equal(all.length, count, 'limit=200: all of them');
    const paged: number[] = [];
    for (let offset = 0; offset < count; offset += 2) {
      const page = await get(`${path}?limit=2&offset=${offset}`);
      t.match(page.body, { total: count, limit: 2, offset });
      paged.push(...page.body[key].map((item: { id: number }) => item.id));
    }
    t.same(paged, all.map((item) => item.id), 'pages of 2 walk the same list in the same order, each item once');
    t.match((await get(`${path}?offset=${count + 10}`)).body, { [key]: [], total: count }, 'past the end: none, and the total');
  });
}

t.test('a bad limit or offset is 400 naming it, on every list', async (t) => {
  const cases: [string, string][] = [
    ['limit=0', 'limit'],
    ['limit=201', 'limit'],
    ['limit=1e2', 'limit'],
    ['limit=-5', 'limit'],
    ['offset=-1', 'offset'],
    ['offset=1.5', 'offset'],
    ['offset=99999999999', 'offset'],
    ['limit=10&limit=20', 'limit'],
  ];
  for (const { path } of LISTS) {
    for (const [query, field] of cases) {
      const res = await get(`${path}?${query}`);
      t.equal(res.status, 400, `${path}?${query}`);
      t.match(res.body.error, { code: 'VALIDATION_ERROR', details: [{ field }] });
    }
  }
});

t.test("another company's lists count only its own", async (t) => {
  const other = await signUp(svc.api, 'Empty Co');
  for (const { path, key } of LISTS.filter((l) => !l.path.includes('evaluations'))) {
    const res = await svc.api('GET', path, { token: other.token });
    t.equal(res.body.total, res.body[key].length, `${path}: total is the other company's own`);
    t.ok(res.body.total <= 1, `${path}: ${res.body.total}`);
  }
  t.equal((await svc.api('GET', `/api/agents/${firstAgent}/evaluations`, { token: other.token })).status, 404);
});
