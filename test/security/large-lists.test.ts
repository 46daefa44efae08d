// A tenant with thousands of large agents (issue #26 finding 4: 5,400 agents of 100 KB
// prompts made GET /api/agents fail with 500 "Invalid string length", ~1 GB per request).
// Lists answer a page (50 by default, 200 at most), so the heavy tenant's own list answers
// quickly and another tenant's requests are not held up while it pages through all of it.
// The agents (5,400 of the longest prompt the API takes now, 20,000 characters: 110 MB of JSON
// answered at once before) are written straight into the database, as a company holding them
// from before the quota would: the API now refuses the 101st.
import t from 'tap';
import { signUp, startTestService } from '../support/service.js';
import { sql } from '../support/worker.js';

const AGENTS = 5400;
const PROMPT = 20_000;
/** What another tenant's request may take at most while the heavy one pages (contract: < 500 ms). */
const OTHER_TENANT_MS = 500;

const svc = await startTestService(t, 'large-lists');
const heavy = await signUp(svc.api, 'Heavy Co');
const other = await signUp(svc.api, 'Other Co');
await svc.api('POST', '/api/agents', { token: other.token, body: { name: 'Their only agent' } });
await sql(
  svc.orm,
  // md5 chains: text PostgreSQL cannot compress away, as real prompts.
  `insert into agents (company_id, name, system_prompt)
   select ?, 'Agent ' || g, left(repeat(md5(g::text) || ' ' || md5((g * 7)::text) || ' ', ?), ?) from generate_series(1, ?) g`,
  [heavy.companyId, Math.ceil(PROMPT / 66) + 1, PROMPT, AGENTS],
);

async function timed(path: string, token: string) {
  const started = performance.now();
  const res = await fetch(svc.url + path, { headers: { authorization: `Bearer ${token}` } });
  const text = await res.text();
  return { status: res.status, ms: performance.now() - started, bytes: Buffer.byteLength(text), body: JSON.parse(text) };
}

t.test('the heavy tenant gets a page of its agents, quickly, with the total', async (t) => {
  const first = await timed('/api/agents', heavy.token);
  t.equal(first.status, 200);
  t.match(first.body, { total: AGENTS, limit: 50, offset: 0 });
  t.equal(first.body.agents.length, 50);
  t.equal(first.body.agents[0].systemPrompt.length, PROMPT, 'whole prompts');
  const biggest = await timed('/api/agents?limit=200&offset=1800', heavy.token);
  t.equal(biggest.body.agents.length, 200);
  t.ok(biggest.bytes < 200 * (PROMPT + 2000), `the largest page is bounded: ${(biggest.bytes / 1e6).toFixed(1)} MB`);
  t.ok(first.ms < 500, `the first page in ${Math.round(first.ms)} ms (${(first.bytes / 1e6).toFixed(1)} MB)`);
  t.ok(biggest.ms < 1500, `a page of 200 in ${Math.round(biggest.ms)} ms`);
  t.comment(`first page ${Math.round(first.ms)} ms / ${(first.bytes / 1e6).toFixed(2)} MB; page of 200 ${Math.round(biggest.ms)} ms / ${(biggest.bytes / 1e6).toFixed(2)} MB`);
});

t.test("another tenant's requests are unaffected while the heavy one pages through all of it, two pages at a time", async (t) => {
  let paging = true;
  const pages: number[] = [];
  // Two clients, page after page of the largest size, round and round, for as long as the other tenant is measured.
  const pager = async (lane: number) => {
    for (let offset = lane * 200; paging; offset = (offset + 400) % AGENTS) {
      // Read, not parsed: the client shares this process with the service, and must not be what slows it.
      const started = performance.now();
      const res = await fetch(`${svc.url}/api/agents?limit=200&offset=${offset}`, { headers: { authorization: `Bearer ${heavy.token}` } });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`page at ${offset}: ${res.status}`);
      pages.push(performance.now() - started);
    }
  };
  const pagers = [0, 1].map(pager);
  const theirs: number[] = [];
  for (let i = 0; i < 30; i++) {
    const res = await timed('/api/agents', other.token);
    t.equal(res.status, 200);
    t.equal(res.body.total, 1, 'their own list');
    theirs.push(res.ms);
    await new Promise((r) => setTimeout(r, 20));
  }
  paging = false;
  await Promise.all(pagers);
  const worst = Math.max(...theirs);
  t.ok(pages.length >= 8, `the heavy tenant fetched ${pages.length} pages of 200 meanwhile`);
  t.ok(worst < OTHER_TENANT_MS, `the other tenant's slowest answer: ${Math.round(worst)} ms (under ${OTHER_TENANT_MS})`);
  t.comment(`other tenant: median ${Math.round(theirs.sort((a, b) => a - b)[15]!)} ms, slowest ${Math.round(worst)} ms; heavy pages: slowest ${Math.round(Math.max(...pages))} ms`);
});
