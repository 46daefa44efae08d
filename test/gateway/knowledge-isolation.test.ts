import { createServer, type ServerResponse } from 'node:http';
import t, { type Test } from 'tap';
import { deflateSync } from 'node:zlib';
import { addDocument, multipart, waitForDocument } from '../support/knowledge.js';
import { listenLocal } from '../support/local-server.js';
import { deflatedSpaces, makePdf, pdfOfObjects, pdfStream } from '../support/pdf.js';
import { signUp, startTestService, type ApiClient } from '../support/service.js';

// Contract § No tenant slows another down, for documents: while one company adds the
// documents of issue #26 (each of which froze the gateway for 13–63 s, or took it to 3.4 GB),
// another company's API answers within 500 ms throughout, the gateway's memory stays within a
// stated bound, and the document ends `failed` with its reason (or `ready` when it is merely
// odd). The gateway runs in this process: its event loop is the one the other company's
// requests wait for, its memory this process's.
const MB = 1024 * 1024;
const MEMORY_MB = 32;
/** What the process may grow by while a hostile document is read (the budget is MEMORY_MB; the old reader took 3.4 GB). */
const MEMORY_BOUND = 300 * MB;

const svc = await startTestService(t, 'knowledge_isolation', { env: { INGEST_MEMORY_MB: String(MEMORY_MB) }, knowledge: { sweepMs: 200, pageDeadlineMs: 20_000 } });
const { api } = svc;
const hostile = await signUp(api, 'Hostile Co');
const bystander = await signUp(api, 'Bystander Co');
const baseOf = async (token: string, name: string) => (await api('POST', '/api/knowledge-bases', { token, body: { name } })).body.knowledgeBase.id as number;
const kb = await baseOf(hostile.token, 'Docs');
// The reader thread started first (with PDF.js it holds some 150 MB): each case measures what its document takes.
await addDocument(api, hostile.token, kb, { title: 'Warm-up', content: 'The reader thread is up.' });

interface Watched<T> {
  result: T;
  /** The other company's slowest answer, and how many it got. */
  worstMs: number;
  answers: number;
  /** How far the process's memory grew over its level at the start. */
  grewBy: number;
}

/**
 * Runs `work` while the other company asks `GET /api/agents` every 50 ms and the process's
 * memory is sampled; every answer must be a 200.
 */
async function watched<T>(t: Test, work: () => Promise<T>): Promise<Watched<T>> {
  const start = process.memoryUsage().rss;
  let peak = start;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
  let done = false;
  let worstMs = 0;
  let answers = 0;
  const poll = (async () => {
    while (!done) {
      const began = performance.now();
      const res = await api('GET', '/api/agents', { token: bystander.token });
      worstMs = Math.max(worstMs, performance.now() - began);
      answers++;
      if (res.status !== 200) t.fail(`the other company got HTTP ${res.status}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  try {
    const result = await work();
    return { result, worstMs, answers, grewBy: peak - start };
  } finally {
    done = true;
    await poll;
    clearInterval(sampler);
    peak = Math.max(peak, process.memoryUsage().rss);
  }
}

/** Posts a document (JSON or multipart), checks the answer came at once as `processing`, waits for the end. */
async function addAndWait(t: Test, body: Record<string, unknown> | { file: { name: string; bytes: Buffer | string } }) {
  const began = performance.now();
  let res;
  if ('file' in body) {
    const { body: raw, contentType } = multipart(body.file as { name: string; bytes: Buffer });
    res = await api('POST', `/api/knowledge-bases/${kb}/documents`, { token: hostile.token, rawBody: raw, headers: { 'content-type': contentType } });
  } else res = await api('POST', `/api/knowledge-bases/${kb}/documents`, { token: hostile.token, body });
  const answeredMs = performance.now() - began;
  t.equal(res.status, 201);
  t.equal(res.body.document.status, 'processing', 'accepted as processing');
  t.ok(answeredMs < 200, `answered in ${Math.round(answeredMs)} ms (< 200)`);
  return waitForDocument(api, hostile.token, kb, res.body.document.id, 60_000);
}

function checkBystander(t: Test, w: Watched<unknown>) {
  t.ok(w.answers >= 1, `the other company asked ${w.answers} times meanwhile`);
  t.ok(w.worstMs < 500, `its slowest answer took ${Math.round(w.worstMs)} ms (< 500)`);
  t.ok(w.grewBy < MEMORY_BOUND, `the process grew by ${Math.round(w.grewBy / MB)} MB (< ${MEMORY_BOUND / MB} MB)`);
}

const PAGE_OBJECTS = [
  Buffer.from('<< /Type /Catalog /Pages 2 0 R >>'),
  Buffer.from('<< /Type /Pages /Kids [3 0 R] /Count 1 >>'),
  Buffer.from('<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>'),
  Buffer.from('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>'),
];

t.test('documents that froze the gateway (issue #26): the other company is not slowed, each ends with its result', async (t) => {
  const cases: [string, Record<string, unknown> | { file: { name: string; bytes: string } }, Record<string, unknown>][] = [
    ['markdown "word " + "![" × 100,000 (200 KB)', { title: 'Images', content: `word ${'!['.repeat(100_000)}`, format: 'markdown' }, { status: 'ready', chunks: 1 }],
    ['text "a" + 60,000 spaces + "b"', { title: 'Spaces', content: `a${' '.repeat(60_000)}b`, format: 'text' }, { status: 'ready', chunks: 1 }],
    ['HTML nested 30,000 deep (300 KB)', { title: 'Deep', content: `${'<div>'.repeat(30_000)}deep text${'</div>'.repeat(30_000)}`, format: 'html' }, { status: 'ready', chunks: 1 }],
    ['an uploaded 270 KB .md of the same kind', { file: { name: 'images.md', bytes: `# Gallery\n\nword ${'!['.repeat(135_000)}` } }, { status: 'ready', title: 'images' }],
    ['markdown without any text', { title: 'Nothing', content: '![](x) ** ** <br>', format: 'markdown' }, { status: 'failed', error: 'the document has no text to index' }],
  ];
  for (const [label, body, expected] of cases) {
    t.test(label, async (t) => {
      const w = await watched(t, () => addAndWait(t, body));
      t.match(w.result, expected, `its result (${w.result.status}: ${w.result.error ?? 'no error'})`);
      checkBystander(t, w);
    });
  }
});

t.test('a PDF compressed twice over 256 MiB of spaces: failed with the reason, memory bounded', async (t) => {
  const inner = await deflatedSpaces(256);
  const pdf = pdfOfObjects([...PAGE_OBJECTS, pdfStream('/Filter [/FlateDecode /FlateDecode]', deflateSync(inner))], 1);
  t.ok(pdf.length < 64 * 1024, `a ${Math.round(pdf.length / 1024)} KB file`);
  const w = await watched(t, () => addAndWait(t, { file: { name: 'bomb.pdf', bytes: pdf } }));
  t.match(w.result, { status: 'failed', error: `the PDF expands to more than ${MEMORY_MB} MB`, chunks: 0 });
  checkBystander(t, w);
});

t.test('a PDF bomb hidden from the measure (an object inside another stream): the memory watch ends its thread', async (t) => {
  // Object 5 (the page's content, compressed twice) is written inside object 6's data, where a
  // reader going through the file does not look; the cross-reference table points PDF.js at it.
  const bomb = Buffer.concat([Buffer.from('5 0 obj\n'), pdfStream('/Filter [/FlateDecode /FlateDecode]', deflateSync(await deflatedSpaces(512))), Buffer.from('\nendobj\n')]);
  const cover = pdfStream('', bomb);
  const at = cover.indexOf('5 0 obj');
  const pdf = pdfOfObjects([...PAGE_OBJECTS, { inside: 6, at }, cover], 1);
  const w = await watched(t, () => addAndWait(t, { file: { name: 'hidden.pdf', bytes: pdf } }));
  t.match(w.result, { status: 'failed', error: `reading the document needs more than ${MEMORY_MB} MB of memory`, chunks: 0 });
  checkBystander(t, w);
  const after = await addAndWait(t, { title: 'After', content: 'The next document is read by a new thread.' });
  t.match(after, { status: 'ready', chunks: 1 }, `the next document is read (${after.status}: ${after.error ?? 'no error'})`);
  t.equal((await api('GET', '/healthz')).status, 200, 'the gateway is up');
});

t.test('fair: one company queues 10 pages that trickle, another company\'s page is ready within seconds', async (t) => {
  const trickling: ServerResponse[] = [];
  let open = 0;
  let mostAtOnce = 0;
  let released = false;
  const site = createServer((req, res) => {
    if (req.url === '/small') return res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>Pickup</h1><p>Orders wait at the desk.</p>');
    res.writeHead(200, { 'content-type': 'text/html' });
    if (released) return res.end('<h1>Slow page</h1><p>It came at last.</p>');
    open++;
    mostAtOnce = Math.max(mostAtOnce, open);
    trickling.push(res);
    res.write('<h1>Slow page</h1><p>It came');
    const drip = setInterval(() => res.write(' slowly'), 200);
    res.on('close', () => {
      clearInterval(drip);
      open--;
    });
  });
  const { url } = await listenLocal(site, t);
  const other = await baseOf(bystander.token, 'Other');
  const slow = [];
  for (let i = 0; i < 10; i++) {
    const res = await api('POST', `/api/knowledge-bases/${kb}/documents`, { token: hostile.token, body: { url: `${url}/trickle/${i}` } });
    t.equal(res.status, 201);
    slow.push(res.body.document.id as number);
  }
  while (open === 0) await new Promise((r) => setTimeout(r, 20));
  const began = performance.now();
  const res = await api('POST', `/api/knowledge-bases/${other}/documents`, { token: bystander.token, body: { url: `${url}/small` } });
  const page = await waitForDocument(api, bystander.token, other, res.body.document.id, 10_000);
  const tookMs = performance.now() - began;
  t.match(page, { status: 'ready', title: 'Pickup' }, `the other company's page is read (${page.status}: ${page.error ?? 'no error'})`);
  t.ok(tookMs < 3000, `the other company's page was ready in ${Math.round(tookMs)} ms, behind none of the 10`);
  t.equal(mostAtOnce, 1, 'the trickling company had one page fetched at a time (INGEST_MAX_PER_COMPANY)');

  released = true;
  for (const r of trickling) r.end('</p>');
  for (const id of slow) {
    const doc = await waitForDocument(api, hostile.token, kb, id, 30_000);
    t.match(doc, { status: 'ready', title: 'Slow page' }, `each trickling page ends ready, nothing lost (${doc.status}: ${doc.error ?? 'no error'})`);
  }
});

t.test('the deadline (INGEST_TIMEOUT_MS): a document read past it fails, its thread is replaced', async (t) => {
  const quick = await startTestService(t, 'knowledge_deadline', { env: { INGEST_TIMEOUT_MS: '1000' } });
  const owner = await signUp(quick.api, 'Slow Co');
  const other = await signUp(quick.api, 'Quick Co');
  const base = (await quick.api('POST', '/api/knowledge-bases', { token: owner.token, body: { name: 'Docs' } })).body.knowledgeBase.id as number;
  const add = async (api: ApiClient, body: Record<string, unknown>, file?: { name: string; bytes: Buffer }) => {
    const form = file && multipart(file);
    const res = form
      ? await api('POST', `/api/knowledge-bases/${base}/documents`, { token: owner.token, rawBody: form.body, headers: { 'content-type': form.contentType } })
      : await api('POST', `/api/knowledge-bases/${base}/documents`, { token: owner.token, body });
    t.equal(res.status, 201);
    return waitForDocument(api, owner.token, base, res.body.document.id, 30_000);
  };
  t.match(await add(quick.api, {}, { name: 'small.pdf', bytes: makePdf([[{ text: 'A small PDF is read well within the deadline.' }]]) }), { status: 'ready' });

  // 60 pages sharing one content stream of 60,000 text runs: a minute of PDF.js work, in 1 MB.
  const runs = Array.from({ length: 60_000 }, (_, i) => `BT /F1 9 Tf 1 0 0 1 ${i % 500} ${i % 700} Tm (w${i}) Tj ET`).join('\n');
  const pages = Array.from({ length: 60 }, (_, i) => `${i + 6} 0 R`).join(' ');
  const pdf = pdfOfObjects(
    [
      Buffer.from('<< /Type /Catalog /Pages 2 0 R >>'),
      Buffer.from(`<< /Type /Pages /Kids [${pages}] /Count 60 >>`),
      Buffer.from('<< /Font << /F1 4 0 R >> >>'),
      Buffer.from('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>'),
      pdfStream('/Filter /FlateDecode', deflateSync(runs)),
      ...Array.from({ length: 60 }, () => Buffer.from('<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources 3 0 R /Contents 5 0 R >>')),
    ],
    1,
  );
  const began = performance.now();
  let worstMs = 0;
  let done = false;
  const poll = (async () => {
    while (!done) {
      const start = performance.now();
      t.equal((await quick.api('GET', '/api/agents', { token: other.token })).status, 200);
      worstMs = Math.max(worstMs, performance.now() - start);
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  const slow = await add(quick.api, {}, { name: 'catalogue.pdf', bytes: pdf });
  done = true;
  await poll;
  t.match(slow, { status: 'failed', error: 'processing the document took longer than 1 s', chunks: 0 });
  t.ok(performance.now() - began < 10_000, `failed after ${Math.round(performance.now() - began)} ms`);
  t.ok(worstMs < 500, `the other company's slowest answer meanwhile: ${Math.round(worstMs)} ms`);
  t.match(await add(quick.api, { title: 'Next', content: 'Read by the thread that replaced the one ended.' }), { status: 'ready', chunks: 1 });
});

t.test('quota: documents per base (QUOTA_DOCUMENTS_PER_BASE)', async (t) => {
  const small = await startTestService(t, 'knowledge_quota', { env: { QUOTA_DOCUMENTS_PER_BASE: '3' } });
  const owner = await signUp(small.api, 'Quota Co');
  const other = await signUp(small.api, 'Other Quota Co');
  const create = async (token: string) => (await small.api('POST', '/api/knowledge-bases', { token, body: { name: 'Docs' } })).body.knowledgeBase.id as number;
  const [first, second, theirs] = [await create(owner.token), await create(owner.token), await create(other.token)];
  const post = (token: string, base: number, title: string) => small.api('POST', `/api/knowledge-bases/${base}/documents`, { token, body: { title, content: `${title} text.` } });
  const ids = [];
  for (const title of ['One', 'Two', 'Three']) {
    const res = await post(owner.token, first, title);
    t.equal(res.status, 201, title);
    ids.push(res.body.document.id as number);
  }
  const over = await post(owner.token, first, 'Four');
  t.equal(over.status, 403);
  t.same(over.body.error, { code: 'QUOTA_EXCEEDED', message: over.body.error.message, details: [{ field: 'documents', message: 'limit 3' }] });
  const upload = multipart({ name: 'four.md', bytes: '# Four' });
  t.equal((await small.api('POST', `/api/knowledge-bases/${first}/documents`, { token: owner.token, rawBody: upload.body, headers: { 'content-type': upload.contentType } })).status, 403, 'an upload too');
  t.equal((await small.api('GET', `/api/knowledge-bases/${first}/documents`, { token: owner.token })).body.total, 3, 'nothing stored past the limit');
  t.equal((await post(owner.token, second, 'Elsewhere')).status, 201, 'per base: another base of the company takes documents');
  t.equal((await post(other.token, theirs, 'Theirs')).status, 201, 'another company is not counted');

  t.equal((await small.api('DELETE', `/api/knowledge-bases/${first}/documents/${ids[0]}`, { token: owner.token })).status, 204);
  const racing = await Promise.all(['A', 'B', 'C', 'D'].map((title) => post(owner.token, first, title)));
  t.same(racing.map((r) => r.status).sort(), [201, 403, 403, 403], 'four at once for the one free place: one is taken');
  t.equal((await small.api('GET', `/api/knowledge-bases/${first}/documents`, { token: owner.token })).body.total, 3);
});
