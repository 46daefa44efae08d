import { createServer } from 'node:http';
import t from 'tap';
import { listenLocal } from '../support/local-server.js';
import { addUpload, upload, waitForDocument } from '../support/knowledge.js';
import { makePdf } from '../support/pdf.js';
import { signUp, startTestService } from '../support/service.js';

// Documents in: uploads of each format, pages by URL, every bad input, background progress,
// and what happens to a document whose process died mid-way.
const svc = await startTestService(t, 'knowledge_ingest', { knowledge: { sweepMs: 200, leaseMs: 2000, pageDeadlineMs: 700 } });
const { api } = svc;
const user = await signUp(api, 'Ingest Co');
const token = user.token;
const kb = (await api('POST', '/api/knowledge-bases', { token, body: { name: 'Help', language: 'english' } })).body.knowledgeBase;
const docPath = `/api/knowledge-bases/${kb.id}/documents`;
const chunksOf = async (docId: number) => (await api('GET', `${docPath}/${docId}/chunks`, { token })).body.chunks as { heading: string; content: string }[];
const topOf = async (q: string) => (await api('GET', `/api/knowledge-bases/${kb.id}/search?q=${encodeURIComponent(q)}`, { token })).body.results[0];

const GUIDE_PDF = makePdf([
  [{ text: 'Shipping guide', size: 20 }, { text: 'Orders ship within two working days.' }, { text: 'Express shipping costs 9.90 euros.' }, { text: 'Returns', size: 16 }, { text: 'Items can be sent back within 30 days.' }],
  [{ text: 'Warranty', size: 16 }, { text: 'Every kettle has a two-year warranty.' }],
]);

// A local site the documents are fetched from.
let slowMs = 0;
const site = createServer((req, res) => {
  const path = req.url ?? '/';
  if (path === '/help') {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><html><head><title>Loyalty programme</title></head><body><header>Menu</header><main><h1>Loyalty programme</h1><p>Every purchase earns one bonus point per euro.</p><h2>Redeeming points</h2><p>Points are redeemed at the checkout.</p></main></body></html>');
  } else if (path === '/ru') {
    res.writeHead(200, { 'content-type': 'text/html; charset=windows-1251' });
    res.end(Buffer.from([...'<h1>'].map((c) => c.charCodeAt(0)).concat([0xc1, 0xee, 0xed, 0xf3, 0xf1, 0xfb], [...'</h1><p>'].map((c) => c.charCodeAt(0)), [0xc1, 0xee, 0xed, 0xf3, 0xf1, 0xfb, 0x20, 0xed, 0xe0, 0xf7, 0xe8, 0xf1, 0xeb, 0xff, 0xfe, 0xf2, 0xf1, 0xff], [...'</p>'].map((c) => c.charCodeAt(0)))));
  } else if (path === '/guide.pdf') {
    res.writeHead(200, { 'content-type': 'application/pdf' });
    res.end(GUIDE_PDF);
  } else if (path === '/moved') {
    res.writeHead(302, { location: '/help' });
    res.end();
  } else if (path.startsWith('/loop')) {
    res.writeHead(302, { location: `/loop${path.length}` });
    res.end();
  } else if (path === '/slow') {
    setTimeout(() => {
      if (!res.destroyed) res.writeHead(200, { 'content-type': 'text/html' }).end('<p>late</p>');
    }, slowMs);
  } else if (path === '/image') {
    res.writeHead(200, { 'content-type': 'image/png' });
    res.end(Buffer.from([0x89, 0x50, 0x4e, 0x47]));
  } else {
    res.writeHead(404, { 'content-type': 'text/html' });
    res.end('<h1>Not found</h1>');
  }
});
const { url: siteUrl } = await listenLocal(site, t);

t.test('uploads: .txt, .md, .html, .pdf', async (t) => {
  const posted = await upload(api, token, kb.id, { name: 'hours.txt', type: 'text/plain', bytes: 'We are open from 8 to 20.\n\nOn Sundays we rest.' });
  t.equal(posted.status, 201);
  t.match(posted.body.document, { title: 'hours', status: 'processing', progress: 0, chunks: 0 }, 'answered at once, read in the background');
  const txt = await waitForDocument(api, token, kb.id, posted.body.document.id);
  t.match(txt, { title: 'hours', status: 'ready', progress: 100, chunks: 1, source: { type: 'text', filename: 'hours.txt', bytes: 46 } });

  const md = await addUpload(api, token, kb.id, { name: 'faq.md', bytes: '# FAQ\n\n## Gift wrapping\n\nGift wrapping is **free** for [every order](https://x.example).' }, { title: 'Frequently asked' });
  t.match(md, { title: 'Frequently asked', status: 'ready', source: { type: 'markdown' } });
  t.same((await chunksOf(md.id)).map((c) => [c.heading, c.content]), [['FAQ › Gift wrapping', 'Gift wrapping is free for every order.']], 'markdown syntax left out');

  const html = await addUpload(api, token, kb.id, { name: 'care.html', bytes: '<h1>Care</h1><p>Descale the kettle&nbsp;monthly.</p><script>var x = "never indexed";</script>' });
  t.match(html, { status: 'ready', source: { type: 'html' } });
  t.same((await chunksOf(html.id)).map((c) => [c.heading, c.content]), [['Care', 'Descale the kettle monthly.']]);

  const pdf = await upload(api, token, kb.id, { name: 'guide.pdf', type: 'application/pdf', bytes: GUIDE_PDF });
  t.equal(pdf.status, 201);
  const done = await waitForDocument(api, token, kb.id, pdf.body.document.id);
  t.match(done, { status: 'ready', source: { type: 'pdf', filename: 'guide.pdf' }, error: null });
  t.same((await chunksOf(done.id)).map((c) => [c.heading, c.content]), [
    ['Shipping guide', 'Orders ship within two working days. Express shipping costs 9.90 euros.'],
    ['Shipping guide › Returns', 'Items can be sent back within 30 days.'],
    ['Shipping guide › Warranty', 'Every kettle has a two-year warranty.'],
  ], 'the PDF text, its larger lines as headings');
  const found = await topOf('how long is the warranty on a kettle');
  t.match(found, { documentId: done.id, title: 'guide' });
});

t.test('bad uploads: a clear 4xx, or a failed document with the reason', async (t) => {
  const unsupported = await upload(api, token, kb.id, { name: 'report.docx', bytes: 'PK\u0003\u0004 not really' });
  t.equal(unsupported.status, 415);
  t.equal(unsupported.body.error.code, 'UNSUPPORTED_MEDIA_TYPE');
  t.match(unsupported.body.error.message, /\.docx.*\.txt, \.md, \.html or \.pdf/);

  const empty = await upload(api, token, kb.id, { name: 'empty.txt', bytes: '' });
  t.equal(empty.status, 400);
  t.same(empty.body.error.details, [{ field: 'file', message: 'is empty' }]);

  const noText = await upload(api, token, kb.id, { name: 'blank.txt', bytes: '   \n\n\t  ' });
  t.equal(noText.status, 201);
  t.match(await waitForDocument(api, token, kb.id, noText.body.document.id), { status: 'failed', error: 'the document has no text to index' });

  const scan = await upload(api, token, kb.id, { name: 'scan.pdf', bytes: makePdf([[]]) });
  t.match(await waitForDocument(api, token, kb.id, scan.body.document.id), { status: 'failed', error: /no text layer/ }, 'a PDF without text fails with the reason');

  const fake = await upload(api, token, kb.id, { name: 'fake.pdf', bytes: 'this is not a pdf at all' });
  t.match(await waitForDocument(api, token, kb.id, fake.body.document.id), { status: 'failed', error: 'the file is not a PDF' });
  const broken = await upload(api, token, kb.id, { name: 'broken.pdf', bytes: Buffer.concat([Buffer.from('%PDF-1.4\n'), Buffer.alloc(2000, 0x41)]) });
  t.match(await waitForDocument(api, token, kb.id, broken.body.document.id), { status: 'failed', error: /PDF/ }, 'a corrupt PDF fails, the gateway carries on');

  const big = await upload(api, token, kb.id, { name: 'big.txt', bytes: Buffer.alloc(10 * 1024 * 1024 + 10, 0x61) });
  t.equal(big.status, 413);
  t.equal(big.body.error.code, 'PAYLOAD_TOO_LARGE');

  const boundary = 'b0undary';
  const twoFiles = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\none\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="b.txt"\r\n\r\ntwo\r\n--${boundary}--\r\n`);
  const two = await api('POST', docPath, { token, rawBody: twoFiles, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } });
  t.equal(two.status, 400);
  t.same(two.body.error.details, [{ field: 'file', message: 'send one file at a time' }]);
  const noFile = await api('POST', docPath, { token, rawBody: Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="title"\r\n\r\nx\r\n--${boundary}--\r\n`), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } });
  t.equal(noFile.status, 400);
  t.same(noFile.body.error.details, [{ field: 'file', message: 'is required' }]);
  const noBoundary = await api('POST', docPath, { token, rawBody: 'x', headers: { 'content-type': 'multipart/form-data' } });
  t.equal(noBoundary.status, 400);
  t.equal(noBoundary.body.error.code, 'VALIDATION_ERROR');
});

t.test('a large upload is processed in the background: progress to ready', async (t) => {
  const sections = Array.from({ length: 400 }, (_, i) => `## Article ${i}\n\n${`Article ${i} explains model ${i} of the coffee machine in detail. `.repeat(12)}`);
  const res = await upload(api, token, kb.id, { name: 'manual.md', bytes: sections.join('\n\n') });
  t.equal(res.status, 201);
  t.match(res.body.document, { status: 'processing', progress: 0, chunks: 0 });
  const seen = new Set<number>();
  let doc;
  for (;;) {
    doc = (await api('GET', `${docPath}/${res.body.document.id}`, { token })).body.document;
    seen.add(doc.progress);
    if (doc.status !== 'processing') break;
    await new Promise((r) => setTimeout(r, 20));
  }
  t.match(doc, { status: 'ready', progress: 100, chunks: 400 });
  t.ok([...seen].every((p) => p >= 0 && p <= 100), `progress seen: ${[...seen].sort((x, y) => x - y).join(', ')}`);
  t.equal((await topOf('model 321 coffee machine')).documentId, doc.id);
});

t.test('pages by URL', async (t) => {
  const add = async (body: Record<string, unknown>) => {
    const res = await api('POST', docPath, { token, body });
    t.equal(res.status, 201, `POST ${JSON.stringify(body)}`);
    t.equal(res.body.document.status, 'processing', 'a page is always fetched in the background');
    return waitForDocument(api, token, kb.id, res.body.document.id);
  };
  const page = await add({ url: `${siteUrl}/help` });
  t.match(page, { status: 'ready', title: 'Loyalty programme', source: { type: 'url', url: `${siteUrl}/help` } });
  t.same((await chunksOf(page.id)).map((c) => c.heading), ['Loyalty programme', 'Loyalty programme › Redeeming points'], 'the page header is left out');
  t.equal((await topOf('how do I redeem bonus points')).documentId, page.id);

  t.match(await add({ url: `${siteUrl}/moved`, title: 'Loyalty (moved)' }), { status: 'ready', title: 'Loyalty (moved)' }, 'a redirect is followed; a given title is kept');
  t.match(await add({ url: `${siteUrl}/guide.pdf` }), { status: 'ready', title: 'Shipping guide' }, 'a PDF by URL');
  const ru = await add({ url: `${siteUrl}/ru` });
  t.match(ru, { status: 'ready', title: 'Бонусы' }, 'a windows-1251 page is decoded by its declared charset');

  t.match(await add({ url: `${siteUrl}/missing` }), { status: 'failed', error: 'the page answered HTTP 404' });
  t.match(await add({ url: `${siteUrl}/image` }), { status: 'failed', error: 'the page is image/png, not HTML, text, markdown or PDF' });
  t.match(await add({ url: `${siteUrl}/loop` }), { status: 'failed', error: 'the page redirects more than 3 times' });
  slowMs = 3000;
  t.match(await add({ url: `${siteUrl}/slow` }), { status: 'failed', error: 'the page did not answer within 0.7 s' }, 'a page that times out fails, never stays processing');
  t.match(await add({ url: 'http://127.0.0.1:1/nothing-listens' }), { status: 'failed', error: 'the page could not be reached' });
});

t.test('a process that died mid-way: its document is resumed, or failed after 3 leases', async (t) => {
  const em = svc.orm.em.fork();
  const insert = async (title: string, attempts: number, leaseSql: string) => {
    const [row] = await em.execute<{ id: number }[]>(
      `insert into knowledge_documents (company_id, knowledge_base_id, title, content, format, source, status, progress, raw, attempts, lease_until)
       values (?, ?, ?, null, 'markdown', '{"type":"markdown","filename":"x.md"}', 'processing', 40, ?, ?, ${leaseSql}) returning id`,
      [user.companyId, kb.id, title, Buffer.from(`# ${title}\n\nThe espresso machine needs a new filter every ${title.length} weeks.`), attempts],
    );
    return row!.id;
  };
  // As a crashed gateway leaves them: lease expired, bytes still there.
  const crashed = await insert('Crashed once', 1, "now() - interval '1 second'");
  const poison = await insert('Crashed thrice', 3, "now() - interval '1 second'");
  const held = await insert('Held by a live process', 1, "now() + interval '1 hour'");
  t.match(await waitForDocument(api, token, kb.id, crashed), { status: 'ready', progress: 100, chunks: 1 }, 'resumed by the sweep');
  t.match(await waitForDocument(api, token, kb.id, poison), { status: 'failed', error: /interrupted 3 times/ }, 'not tried forever');
  await new Promise((r) => setTimeout(r, 600));
  const live = (await api('GET', `${docPath}/${held}`, { token })).body.document;
  t.match(live, { status: 'processing', progress: 40 }, 'a document whose lease is live is left to its process');
  const [{ raw }] = await em.execute<{ raw: Buffer | null }[]>('select raw from knowledge_documents where id = ?', [crashed]);
  t.equal(raw, null, 'the uploaded bytes are dropped once indexed');
});

t.test('document URLs to internal addresses are refused without ALLOW_PRIVATE_URLS', async (t) => {
  const strict = await startTestService(t, 'knowledge_ssrf', { env: { ALLOW_PRIVATE_URLS: 'false' } });
  const u = await signUp(strict.api, 'Strict Co');
  const base = (await strict.api('POST', '/api/knowledge-bases', { token: u.token, body: { name: 'KB' } })).body.knowledgeBase;
  for (const url of [`${siteUrl}/help`, siteUrl.replace('127.0.0.1', 'localhost') + '/help', 'http://169.254.169.254/latest/meta-data/', 'http://[::1]/x']) {
    const res = await strict.api('POST', `/api/knowledge-bases/${base.id}/documents`, { token: u.token, body: { url } });
    t.equal(res.status, 400, url);
    t.match(res.body.error, { code: 'VALIDATION_ERROR', details: [{ field: 'url', message: /private, loopback, link-local|internal/ }] });
  }
  t.equal((await strict.api('GET', `/api/knowledge-bases/${base.id}/documents`, { token: u.token })).body.total, 0, 'nothing stored, nothing fetched');
});
