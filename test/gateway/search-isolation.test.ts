import { createServer } from 'node:http';
import pg from 'pg';
import t from 'tap';
import type { Orm } from '../../lib/db.js';
import { chunkContent } from '../../lib/knowledge/chunker.js';
import { replaceChunks, type Exec } from '../../lib/knowledge/store.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { embedText } from '../support/embeddings-stub.js';
import { listenLocal, readBody } from '../support/local-server.js';
import { seededRandom } from '../support/random.js';
import { signUp, startTestService, type ApiClient, type TestService } from '../support/service.js';
import { deliver } from '../support/webhooks.js';
import { createHelpdeskIntegration, startTestWorker, waitForPartitions } from '../support/worker.js';

/**
 * One tenant's knowledge searches cannot slow another down (contract.md § No tenant slows
 * another down; issue #26 finding 3): a base with the most synonyms allowed and questions
 * written to be expensive, the per-company limit of searches at once, the statement timeout
 * of API requests, and the message path on connections of its own.
 */

const search = (api: ApiClient, token: string, kbId: number, q: string) => api('GET', `/api/knowledge-bases/${kbId}/search?q=${encodeURIComponent(q)}`, { token });

async function createBase(api: ApiClient, token: string, body: Record<string, unknown>): Promise<number> {
  const res = await api('POST', '/api/knowledge-bases', { token, body });
  if (res.status !== 201) throw new Error(`base: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.knowledgeBase.id as number;
}

/** Chunks written as the ingestor writes them (lib/knowledge/store.ts), many at once. */
async function seedDocument(orm: Orm, ref: { companyId: number; knowledgeBaseId: number }, title: string, markdown: string): Promise<void> {
  const em = orm.em.fork();
  const [doc] = await em.execute<{ id: number }[]>(
    `insert into knowledge_documents (company_id, knowledge_base_id, title, content, format, source, status) values (?, ?, ?, ?, 'markdown', '{"type":"markdown"}', 'ready') returning id`,
    [ref.companyId, ref.knowledgeBaseId, title, markdown],
  );
  await em.transactional(async (tx) => {
    const exec: Exec = (s, p) => tx.execute(s, p as unknown[]);
    await replaceChunks(exec, { ...ref, documentId: doc!.id }, title, chunkContent(markdown, 'markdown'));
  });
}

/** Timed requests in a loop until `until` resolves; every status and duration. */
async function loop(until: Promise<unknown>, request: () => Promise<{ status: number }>): Promise<{ status: number; ms: number }[]> {
  let done = false;
  void until.then(() => (done = true));
  const out: { status: number; ms: number }[] = [];
  while (!done) {
    const t0 = performance.now();
    const res = await request();
    out.push({ status: res.status, ms: performance.now() - t0 });
  }
  return out;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test('a tenant with the most synonyms and hostile questions does not slow another', async (t) => {
  const svc = await startTestService(t, 'search_isolation');
  const a = await signUp(svc.api, 'Hostile');
  const b = await signUp(svc.api, 'Bystander');
  const random = seededRandom(26);
  const vocabulary = Array.from({ length: 3000 }, (_, i) => `w${i.toString(36)}q`);
  const word = () => vocabulary[Math.floor(vocabulary.length * random() ** 2)]!;

  // Tenant A: every chunk and every synonym group holds "x"; the groups' other terms are
  // 60-character phrases of the base's own words (each a real look-up); 2000 groups of 20.
  const hostileBase = await createBase(svc.api, a.token, { name: 'Hostile' });
  for (let d = 0; d < 4; d++) {
    const sections = Array.from({ length: 100 }, () => `## ${word()} ${word()}\n\n${Array.from({ length: 50 }, word).join(' ')} x.`);
    await seedDocument(svc.orm, { companyId: a.companyId, knowledgeBaseId: hostileBase }, `Article ${d}`, sections.join('\n\n'));
  }
  const phrase = () => {
    let p = word();
    while (p.length < 55) p += ` ${word()}`;
    return p.slice(0, 60).trim();
  };
  const groups = Array.from({ length: 2000 }, () => ['x', ...Array.from({ length: 19 }, phrase)]);
  const patched = await svc.api('PATCH', `/api/knowledge-bases/${hostileBase}`, { token: a.token, body: { synonyms: groups } });
  t.equal(patched.status, 200, 'the most synonyms a base may hold are taken (and indexed within the statement timeout)');

  // Tenant B: a small help centre.
  const bBase = await createBase(svc.api, b.token, { name: 'Help', language: 'english' });
  await seedDocument(svc.orm, { companyId: b.companyId, knowledgeBaseId: bBase }, 'Shipping', '## Delivery times\n\nParcels arrive within three days.\n\n## Returns\n\nReturn any item within 30 days for a refund.');
  t.equal((await search(svc.api, b.token, bBase, 'when does my parcel arrive')).body.results[0]?.heading, 'Delivery times');

  const hostile = [
    'x',
    vocabulary.slice(0, 400).join(' ').slice(0, 1000),
    'x '.repeat(500).trim(),
    vocabulary.slice(0, 60).map((w) => `${w}${w}zz`).join(' ').slice(0, 1000),
  ];
  for (const q of hostile) {
    const t0 = performance.now();
    const res = await search(svc.api, a.token, hostileBase, q);
    t.equal(res.status, 200, `hostile question ${JSON.stringify(q.slice(0, 30))}… answers 200 in ${Math.round(performance.now() - t0)} ms`);
  }

  // Four heavy searches of A at all times for 4 s; B searches and lists its leads meanwhile.
  const until = sleep(4000);
  let n = 0;
  const [heavy, bystander] = await Promise.all([
    Promise.all(Array.from({ length: 4 }, () => loop(until, () => search(svc.api, a.token, hostileBase, hostile[n++ % hostile.length]!)))).then((r) => r.flat()),
    loop(until, async () => {
      const found = await search(svc.api, b.token, bBase, 'can I return an item for a refund');
      if (found.status !== 200) return found;
      return svc.api('GET', '/api/leads', { token: b.token });
    }),
  ]);
  t.ok(heavy.length >= 8, `${heavy.length} heavy searches of A ran`);
  t.same([...new Set(heavy.map((r) => r.status))], [200], "A's heavy searches all answer 200");
  t.ok(bystander.length >= 8, `${bystander.length} rounds of B's search + GET /api/leads`);
  t.same([...new Set(bystander.map((r) => r.status))], [200], "B's requests all answer 200");
  const slowest = Math.max(...bystander.map((r) => r.ms));
  t.ok(slowest < 500, `B's slowest round (search, then leads) took ${Math.round(slowest)} ms (< 500); A's slowest search ${Math.round(Math.max(...heavy.map((r) => r.ms)))} ms`);
});

t.test('at most SEARCH_MAX_PER_COMPANY searches of a company at once: the next is refused, others are not affected', async (t) => {
  const svc = await startTestService(t, 'search_limit');
  const a = await signUp(svc.api, 'Busy');
  const b = await signUp(svc.api, 'Other');
  // An embedding server that holds every request until released: a search waits for it
  // (the question's vector) while it holds its place.
  const held: (() => void)[] = [];
  let released = false;
  const server = createServer(async (req, res) => {
    const body = await readBody(req);
    if (!released) await new Promise<void>((r) => held.push(r));
    const input: string[] = Array.isArray(body?.input) ? body.input : [body?.input];
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ data: input.map((text, index) => ({ index, embedding: embedText(String(text)) })) }));
  });
  const embeddings = await listenLocal(server, t);
  const release = () => {
    released = true;
    for (const r of held.splice(0)) r();
  };
  t.teardown(release);
  const slow = await createBase(svc.api, a.token, { name: 'Embedded', embedding: { baseUrl: embeddings.url, name: 'stand-in' } });
  const aPlain = await createBase(svc.api, a.token, { name: 'Plain' });
  const bBase = await createBase(svc.api, b.token, { name: 'Other' });

  const running = Array.from({ length: svc.config.searchMaxPerCompany }, () => search(svc.api, a.token, slow, 'where is my parcel'));
  while (held.length < svc.config.searchMaxPerCompany) await sleep(20);
  const refused = await search(svc.api, a.token, aPlain, 'anything');
  t.equal(refused.status, 429, `a ${svc.config.searchMaxPerCompany + 1}th search of the company at once: 429`);
  t.equal(refused.body.error.code, 'RATE_LIMITED');
  t.equal(refused.headers.get('retry-after'), '1');
  const other = await search(svc.api, b.token, bBase, 'anything');
  t.equal(other.status, 200, "another company's search goes through meanwhile");
  release();
  t.same((await Promise.all(running)).map((r) => r.status), Array(svc.config.searchMaxPerCompany).fill(200), 'the held searches finish');
  t.equal((await search(svc.api, a.token, aPlain, 'anything')).status, 200, 'and their places are free again');
});

/** A test connection holding ACCESS EXCLUSIVE locks on tables (every statement on them waits) until released. */
async function lockTables(svc: TestService, t: { teardown: (fn: () => Promise<void>) => void }): Promise<{ lock: (table: string) => Promise<void>; release: () => Promise<void> }> {
  const client = new pg.Client({ connectionString: svc.config.databaseUrl });
  await client.connect();
  await client.query('begin');
  let open = true;
  const release = async () => {
    if (!open) return;
    open = false;
    await client.query('commit');
    await client.end();
  };
  t.teardown(release);
  return { lock: async (table) => void (await client.query(`lock table ${table} in access exclusive mode`)), release };
}

/** Backends of this database waiting on a lock. */
async function waitingOnLocks(orm: Orm): Promise<number> {
  const [row] = await orm.em.fork().execute<{ n: number }[]>(`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`);
  return row!.n;
}

t.test('a statement past DB_STATEMENT_TIMEOUT_MS ends the request with 503 TIMEOUT and Retry-After', async (t) => {
  const svc = await startTestService(t, 'statement_timeout', { env: { DB_STATEMENT_TIMEOUT_MS: '400' } });
  const a = await signUp(svc.api, 'Patient');
  const kb = await createBase(svc.api, a.token, { name: 'Help' });
  await seedDocument(svc.orm, { companyId: a.companyId, knowledgeBaseId: kb }, 'Doc', '## One\n\nSome text.');
  const [{ id: docId }] = await svc.orm.em.fork().execute<{ id: number }[]>(`select id from knowledge_documents where knowledge_base_id = ?`, [kb]);
  const locks = await lockTables(svc, t);
  // One statement through each of the API's pools waits on a lock held by this test.
  await locks.lock('leads');
  await locks.lock('knowledge_chunks');
  for (const [what, path] of [['GET /api/leads (the ORM)', '/api/leads'], ['the chunks of a document (plain SQL)', `/api/knowledge-bases/${kb}/documents/${docId}/chunks`]] as const) {
    const t0 = performance.now();
    const res = await svc.api('GET', path, { token: a.token });
    const ms = performance.now() - t0;
    t.equal(res.status, 503, `${what}: 503`);
    t.equal(res.body.error?.code, 'TIMEOUT');
    t.equal(res.headers.get('retry-after'), '5', 'with Retry-After');
    t.ok(ms >= 350 && ms < 3000, `after the timeout (${Math.round(ms)} ms)`);
  }
  t.equal((await svc.api('GET', '/api/agents', { token: a.token })).status, 200, 'requests that need no locked table go on');
  await locks.release();
  t.equal((await svc.api('GET', '/api/leads', { token: a.token })).status, 200, 'once the lock is gone, the same request answers');
  t.equal((await svc.api('GET', `/api/knowledge-bases/${kb}/documents/${docId}/chunks`, { token: a.token })).status, 200);
});

t.test('replies keep flowing while every API connection is taken', async (t) => {
  // Long enough that the API requests stay stuck for the whole test.
  const svc = await startTestService(t, 'api_saturated', { env: { DB_STATEMENT_TIMEOUT_MS: '30000', PARTITIONS: '2' } });
  const stub = await startChat2DeskStub(t);
  const user = await signUp(svc.api, 'Replies');
  const integration = await createHelpdeskIntegration(svc, user, stub);
  const worker = await startTestWorker(t, svc, { workerId: 'saturated-1' });
  await waitForPartitions([worker], 2);
  const kb = await createBase(svc.api, user.token, { name: 'Help' });
  await seedDocument(svc.orm, { companyId: user.companyId, knowledgeBaseId: kb }, 'Doc', '## One\n\nSome text.');
  const [{ id: docId }] = await svc.orm.em.fork().execute<{ id: number }[]>(`select id from knowledge_documents where knowledge_base_id = ?`, [kb]);

  const locks = await lockTables(svc, t);
  const stuck: Promise<unknown>[] = [];
  let answered = 0;
  const fire = (n: number, path: string) => {
    for (let i = 0; i < n; i++) stuck.push(svc.api('GET', path, { token: user.token }).finally(() => answered++));
  };
  // Plain SQL first (each request passes the ORM on its way), then the ORM's connections.
  await locks.lock('knowledge_chunks');
  fire(14, `/api/knowledge-bases/${kb}/documents/${docId}/chunks`);
  while ((await waitingOnLocks(svc.orm)) < 10) await sleep(50);
  await locks.lock('knowledge_bases');
  fire(14, '/api/knowledge-bases');
  while ((await waitingOnLocks(svc.orm)) < 20) await sleep(50);

  const t0 = performance.now();
  const payload = { hook_type: 'inbox', type: 'from_client', message_id: 5001, text: 'are you there?', client_id: 7001, channel_id: 9, transport: 'telegram', request_id: 9001, dialog_id: 91 };
  const res = await deliver(svc.api, integration.id, payload, { secret: integration.webhookSecret });
  t.equal(res.status, 200, 'the webhook is accepted');
  await stub.waitFor(() => stub.sent().some((b) => b.client_id === 7001), 8000);
  t.ok(performance.now() - t0 < 8000, `the reply went out in ${Math.round(performance.now() - t0)} ms`);
  t.equal(answered, 0, 'while all 28 API requests were still waiting for the database');
  t.ok((await waitingOnLocks(svc.orm)) >= 20, 'and every API connection still held');
  await locks.release();
  await Promise.all(stuck);
});
