import { createServer, type ServerResponse } from 'node:http';
import t from 'tap';
import { startGateway } from '../../gateway/server.js';
import { createLogger } from '../../lib/logger.js';
import { startEmbeddingsStub } from '../support/embeddings-stub.js';
import { waitForDocument } from '../support/knowledge.js';
import { listenLocal } from '../support/local-server.js';
import { signUp, startTestService, type TestService } from '../support/service.js';

// POST /api/knowledge-bases/:id/documents/:docId/retry: a failed document processed again
// once what failed it is mended (the embedding server, the page), from what it kept.
const svc = await startTestService(t, 'knowledge_retry', { knowledge: { sweepMs: 200, leaseMs: 2000, pageDeadlineMs: 700 } });
const { api } = svc;
// "parcel" and "delivery" share a vector: only the vector list finds one from the other.
const stub = await startEmbeddingsStub(t, { parcel: 'shipment', delivery: 'shipment', delivered: 'shipment' });
const owner = await signUp(api, 'Retry Co');
const token = owner.token;

// Help pages that can be broken (404), slow (held until released) or mended.
const GIFT_CARDS = '<html><head><title>Gift cards</title></head><body><h1>Gift cards</h1><p>Gift cards never expire and can be spent in every shop.</p></body></html>';
type Page = 'missing' | 'held' | { html: string };
const pages = new Map<string, Page>();
const held: ServerResponse[] = [];
let pageFetches = 0;
const site = createServer((req, res) => {
  pageFetches++;
  const page = pages.get(req.url ?? '/') ?? 'missing';
  if (page === 'held') held.push(res);
  else if (page === 'missing') res.writeHead(404, { 'content-type': 'text/html' }).end('<h1>Not found</h1>');
  else res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page.html);
});
const { url: siteUrl } = await listenLocal(site, t);
const heldRequest = async () => {
  while (held.length === 0) await new Promise((r) => setTimeout(r, 20));
};
/** Mends a page and answers the requests held meanwhile (those still waiting). */
const mend = (path: string, html = GIFT_CARDS) => {
  pages.set(path, { html });
  for (const res of held.splice(0)) if (!res.destroyed) res.writeHead(200, { 'content-type': 'text/html' }).end(html);
};

const base = async (tokenOf: string, body: Record<string, unknown>) => {
  const res = await api('POST', '/api/knowledge-bases', { token: tokenOf, body });
  if (res.status !== 201) throw new Error(`create base: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.knowledgeBase as { id: number };
};
const addDocument = async (kbId: number, body: Record<string, unknown>) => {
  const res = await api('POST', `/api/knowledge-bases/${kbId}/documents`, { token, body });
  if (res.status !== 201) throw new Error(`add document: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.document as { id: number; status: string };
};
const retry = (kbId: number | string, docId: number | string, tokenOf = token) => api('POST', `/api/knowledge-bases/${kbId}/documents/${docId}/retry`, { token: tokenOf });
const getDocument = async (kbId: number, docId: number) => (await api('GET', `/api/knowledge-bases/${kbId}/documents/${docId}`, { token })).body.document;
const search = async (kbId: number, q: string) => (await api('GET', `/api/knowledge-bases/${kbId}/search?q=${encodeURIComponent(q)}`, { token })).body.results as { documentId: number; matchedBy: string[] }[];

const semantic = await base(token, { name: 'Semantic', language: 'english', embedding: { baseUrl: stub.baseUrl, name: 'stand-in-embed', apiKey: 'sk-embed-secret' } });
const plain = await base(token, { name: 'Pages', language: 'english' });

t.test('failed by the embedding server: retried once it is back, ready and found by its vector', async (t) => {
  stub.fail(500);
  t.teardown(() => stub.fail(null));
  const added = await addDocument(semantic.id, { title: 'Shipping', content: 'Orders are delivered within three working days.' });
  t.match(await waitForDocument(api, token, semantic.id, added.id), { status: 'failed', error: 'the embedding server answered HTTP 500', chunks: 0 });
  t.notOk((await search(semantic.id, 'when does my parcel come')).some((r) => r.documentId === added.id), 'not found while failed');

  const whileDown = await retry(semantic.id, added.id);
  t.equal(whileDown.status, 200, 'a failed document may be retried');
  t.match(await waitForDocument(api, token, semantic.id, added.id), { status: 'failed', error: 'the embedding server answered HTTP 500' }, 'still down: failed again, with the reason');

  stub.fail(null);
  const embedCallsBefore = stub.requests.length;
  const res = await retry(semantic.id, added.id);
  t.equal(res.status, 200);
  t.match(res.body.document, { id: added.id, title: 'Shipping', status: 'processing', progress: 0, error: null, chunks: 0 }, 'processing again from the start');
  const done = await waitForDocument(api, token, semantic.id, added.id);
  t.match(done, { status: 'ready', progress: 100, error: null, chunks: 1 });
  t.ok(stub.requests.length > embedCallsBefore, 'the embedding server was asked again');
  const chunks = (await api('GET', `/api/knowledge-bases/${semantic.id}/documents/${added.id}/chunks`, { token })).body.chunks;
  t.match(chunks, [{ content: 'Orders are delivered within three working days.', embedded: true }], 'its stored content, embedded this time');
  const [first] = await search(semantic.id, 'when does my parcel come');
  t.match(first, { documentId: added.id, matchedBy: ['vector'] }, 'found by a question sharing no word with it');
});

t.test('a ready or processing document: 409 CONFLICT, and nothing changes', async (t) => {
  const ready = await waitForDocument(api, token, plain.id, (await addDocument(plain.id, { title: 'Opening hours', content: 'We open at nine, Monday to Saturday.' })).id);
  t.equal(ready.status, 'ready');
  const before = await getDocument(plain.id, ready.id);
  const res = await retry(plain.id, ready.id);
  t.equal(res.status, 409);
  t.same(res.body, { error: { code: 'CONFLICT', message: 'The document is ready: only a failed document can be retried.' } });
  t.same(await getDocument(plain.id, ready.id), before, 'the document is as it was (status, chunks, updatedAt)');
  t.equal((await search(plain.id, 'when do you open'))[0]?.documentId, ready.id, 'and still found');

  pages.set('/slow', 'held');
  const pending = await addDocument(plain.id, { url: `${siteUrl}/slow` });
  await heldRequest();
  const busy = await retry(plain.id, pending.id);
  t.equal(busy.status, 409);
  t.equal(busy.body.error.message, 'The document is processing: only a failed document can be retried.');
  mend('/slow', '<h1>Store pickup</h1><p>Orders can be picked up at the store after two hours.</p>');
  t.match(await waitForDocument(api, token, plain.id, pending.id), { status: 'ready', title: 'Store pickup' }, 'the run under way was left alone');
});

t.test("another company's document, an unknown one, a bad id: 404 as the other document routes", async (t) => {
  const failed = await addDocument(plain.id, { url: `${siteUrl}/gone` });
  t.match(await waitForDocument(api, token, plain.id, failed.id), { status: 'failed', error: 'the page answered HTTP 404' });
  const other = await signUp(api, 'Other Co');
  const theirs = await base(other.token, { name: 'Theirs' });

  const cases: [string, number | string, number | string, string][] = [
    ["another company's credential", plain.id, failed.id, other.token],
    ["the document under another company's base", theirs.id, failed.id, other.token],
    ['an unknown document', plain.id, 2147483646, token],
    ['the document under another base of the company', semantic.id, failed.id, token],
    ['an unknown base', 2147483646, failed.id, token],
    ['a document id that is not a number', plain.id, 'abc', token],
    ['a document id of 0', plain.id, 0, token],
    ['a base id that is not a number', 'abc', failed.id, token],
  ];
  for (const [what, kbId, docId, tokenOf] of cases) {
    const res = await retry(kbId, docId, tokenOf);
    t.equal(res.status, 404, what);
    t.equal(res.body.error.code, 'NOT_FOUND', what);
  }
  t.equal((await retry(plain.id, failed.id, 'not-a-token')).status, 401, 'no valid credential: 401');
  t.match(await getDocument(plain.id, failed.id), { status: 'failed', error: 'the page answered HTTP 404' }, 'none of them touched it');
});

t.test('a page that answered 404 is fetched again once mended, and found', async (t) => {
  pages.set('/gift-cards', 'missing');
  const added = await addDocument(plain.id, { url: `${siteUrl}/gift-cards` });
  t.match(await waitForDocument(api, token, plain.id, added.id), { status: 'failed', error: 'the page answered HTTP 404', title: `${siteUrl}/gift-cards` });

  mend('/gift-cards');
  const fetchesBefore = pageFetches;
  const res = await retry(plain.id, added.id);
  t.equal(res.status, 200);
  t.match(res.body.document, { status: 'processing', progress: 0, error: null });
  const done = await waitForDocument(api, token, plain.id, added.id);
  t.match(done, { status: 'ready', title: 'Gift cards', chunks: 1, error: null }, 'named by the page, as when added');
  t.ok(pageFetches > fetchesBefore, 'the page was fetched again');
  t.equal((await search(plain.id, 'do gift cards expire'))[0]?.documentId, added.id);
});

t.test('a page is fetched again even when its text had been read: what failed may be mended on the page', async (t) => {
  mend('/vouchers', '<h1>Vouchers</h1><p>Vouchers are personal.</p>');
  stub.fail(503);
  t.teardown(() => stub.fail(null));
  const added = await addDocument(semantic.id, { url: `${siteUrl}/vouchers`, title: 'Voucher terms' });
  t.match(await waitForDocument(api, token, semantic.id, added.id), { status: 'failed', error: 'the embedding server answered HTTP 503' });
  t.match(await getDocument(semantic.id, added.id), { content: /Vouchers are personal/ }, 'its text was read before the embedding server failed');
  stub.fail(null);
  mend('/vouchers', '<h1>Vouchers</h1><p>Vouchers are personal and valid for one year.</p>');
  t.equal((await retry(semantic.id, added.id)).status, 200);
  t.match(await waitForDocument(api, token, semantic.id, added.id), { status: 'ready', title: 'Voucher terms' }, 'a given title is kept');
  t.match(await getDocument(semantic.id, added.id), { content: /valid for one year/ }, 'the content is the page as it is now');
});

t.test('an upload interrupted 3 times keeps its file: a retry starts a fresh count and indexes it', async (t) => {
  const em = svc.orm.em.fork();
  // As crashed gateways leave it: three leases taken, the last one run out, the bytes still there.
  const [row] = await em.execute<{ id: number }[]>(
    `insert into knowledge_documents (company_id, knowledge_base_id, title, content, format, source, status, progress, raw, attempts, lease_until)
     values (?, ?, 'Descaling', null, 'markdown', '{"type":"markdown","filename":"descaling.md","bytes":60}', 'processing', 40, ?, 3, now() - interval '1 second') returning id`,
    [owner.companyId, plain.id, Buffer.from('# Descaling\n\nDescale the kettle once a month with citric acid.')],
  );
  const id = row!.id;
  t.match(await waitForDocument(api, token, plain.id, id), { status: 'failed', error: 'processing was interrupted 3 times; retry the document, or split it' });
  const res = await retry(plain.id, id);
  t.equal(res.status, 200, 'a fourth lease is a first one again');
  t.match(await waitForDocument(api, token, plain.id, id), { status: 'ready', chunks: 1 }, 'read from the stored file');
  t.equal((await search(plain.id, 'how often should I descale the kettle'))[0]?.documentId, id);
});

t.test('an upload whose file is no longer stored (failed before failed files were kept): a clear 409', async (t) => {
  const [row] = await svc.orm.em.fork().execute<{ id: number }[]>(
    `insert into knowledge_documents (company_id, knowledge_base_id, title, content, format, source, status, progress, error, raw)
     values (?, ?, 'Old scan', null, 'markdown', '{"type":"pdf","filename":"scan.pdf","bytes":900}', 'failed', 5, 'the file is not a PDF', null) returning id`,
    [owner.companyId, plain.id],
  );
  const res = await retry(plain.id, row!.id);
  t.equal(res.status, 409);
  t.same(res.body.error, { code: 'CONFLICT', message: 'The uploaded file of this document is no longer stored: delete the document and upload the file again.' });
  t.match(await getDocument(plain.id, row!.id), { status: 'failed', error: 'the file is not a PDF' }, 'left as it was');
});

t.test('two retries at once: one goes through, the other is told the document is processing', async (t) => {
  pages.set('/twice', 'missing');
  const added = await addDocument(plain.id, { url: `${siteUrl}/twice` });
  await waitForDocument(api, token, plain.id, added.id);
  mend('/twice');
  const answers = await Promise.all([retry(plain.id, added.id), retry(plain.id, added.id)]);
  t.same(answers.map((a) => a.status).sort(), [200, 409]);
  t.match(await waitForDocument(api, token, plain.id, added.id), { status: 'ready' });
});

t.test('the gateway stops mid-retry: another one takes the document up when its lease runs out', async (t) => {
  // A database of its own, where no other gateway sweeps unless the test starts it.
  const quiet: TestService = await startTestService(t, 'knowledge_retry_crash', { knowledge: { sweepMs: 600_000 } });
  const user = await signUp(quiet.api, 'Crash Co');
  const kb = (await quiet.api('POST', '/api/knowledge-bases', { token: user.token, body: { name: 'Pages' } })).body.knowledgeBase;
  pages.set('/crash', 'missing');
  const added = (await quiet.api('POST', `/api/knowledge-bases/${kb.id}/documents`, { token: user.token, body: { url: `${siteUrl}/crash` } })).body.document;
  t.match(await waitForDocument(quiet.api, user.token, kb.id, added.id), { status: 'failed' });

  const deps = { config: quiet.config, orm: quiet.orm, nc: quiet.nc, logger: createLogger('silent') };
  const doomed = await startGateway({ ...deps, knowledge: { sweepMs: 600_000, leaseMs: 1000 } }, { port: 0, host: '127.0.0.1' });
  pages.set('/crash', 'held');
  const res = await fetch(`${doomed.url}/api/knowledge-bases/${kb.id}/documents/${added.id}/retry`, { method: 'POST', headers: { authorization: `Bearer ${user.token}` } });
  t.equal(res.status, 200);
  await heldRequest();
  await doomed.close();
  t.match(await (await quiet.api('GET', `/api/knowledge-bases/${kb.id}/documents/${added.id}`, { token: user.token })).body.document, { status: 'processing' }, 'left processing under its lease');

  mend('/crash');
  const survivor = await startGateway({ ...deps, knowledge: { sweepMs: 200, leaseMs: 1000 } }, { port: 0, host: '127.0.0.1' });
  t.teardown(() => survivor.close());
  t.match(await waitForDocument(quiet.api, user.token, kb.id, added.id), { status: 'ready', title: 'Gift cards', chunks: 1 }, 'resumed by the next gateway, nothing lost');
});

t.test('documented in the OpenAPI document with its answers', async (t) => {
  const doc = (await api('GET', '/api/openapi.json')).body;
  const op = doc.paths['/api/knowledge-bases/{id}/documents/{docId}/retry']?.post;
  t.ok(op, 'the route is in the document');
  t.equal(op?.operationId, 'retryDocument');
  t.same(Object.keys(op?.responses ?? {}).filter((s) => ['200', '404', '409'].includes(s)).sort(), ['200', '404', '409']);
});
