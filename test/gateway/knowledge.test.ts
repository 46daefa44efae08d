import t from 'tap';
import { openSqlPool } from '../../lib/db.js';
import { bestKnowledgeMatches, lexicalCandidates } from '../../lib/knowledge/search.js';
import { answeringPassage } from '../../lib/agents/decision.js';
import { waitForDocument } from '../support/knowledge.js';
import { signUp, startTestService, type ApiClient } from '../support/service.js';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const HOURS = {
  title: 'Opening hours',
  content:
    'Our shop on Main Street is open from 9:00 to 18:00 on weekdays and from 10:00 to 16:00 on Saturdays.\n\n' +
    'On public holidays the shop is closed. Opening hours of the online support are the same.',
};
const DELIVERY = {
  title: 'Delivery',
  content: 'We deliver across the country. A parcel usually arrives within 48 hours; express delivery takes 24 hours.',
};
const RETURNS = {
  title: 'Returns and refunds',
  content: 'You can return any item within 30 days. The refund is paid to the card you used.',
};
const PAYMENT = {
  title: 'Payment',
  content: '# Paying for an order\n\n## Cards\n\nWe accept Visa and Mastercard.\n\n## Invoices\n\nBusiness customers can pay by invoice within 14 days.',
};
const RU_HOURS = { title: 'Часы работы', content: 'Мы работаем ежедневно с 9:00 до 21:00 без выходных. В праздничные дни магазин закрыт.' };
const RU_DELIVERY = { title: 'Доставка', content: 'Доставка по Москве занимает один день, по России — от трёх до семи дней. Курьер звонит за час.' };

async function apiToken(api: ApiClient, sessionToken: string): Promise<string> {
  const res = await api('POST', '/api/api-tokens', { token: sessionToken, body: { name: 'script' } });
  if (res.status !== 201) throw new Error(`api token: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.apiToken.token as string;
}

t.test('knowledge bases, documents, chunks, search', async (t) => {
  const svc = await startTestService(t, 'knowledge');
  const { api } = svc;
  // The statements the worker runs, called directly (the built-in agent's lookup).
  const sql = openSqlPool({ url: svc.config.databaseUrl, poolMax: 1 });
  t.teardown(() => sql.end());
  const a = await signUp(api, 'Alpha');
  const b = await signUp(api, 'Beta');
  const aApi = await apiToken(api, a.token);
  const bApi = await apiToken(api, b.token);

  const createBase = async (token: string, body: Record<string, unknown>) => {
    const res = await api('POST', '/api/knowledge-bases', { token, body });
    t.equal(res.status, 201, `create knowledge base ${JSON.stringify(body)}`);
    return res.body.knowledgeBase;
  };
  /** The document once read (as the list shows it: no content). */
  const addDoc = async (token: string, kbId: number, doc: Record<string, unknown>) => {
    const res = await api('POST', `/api/knowledge-bases/${kbId}/documents`, { token, body: doc });
    t.equal(res.status, 201, `add document ${String(doc.title)}`);
    t.equal(res.body.document.status, 'processing', 'every document is read in the background');
    const { content: _content, ...read } = await waitForDocument(api, token, kbId, res.body.document.id);
    return read;
  };
  const search = (token: string, kbId: number, q: string) => api('GET', `/api/knowledge-bases/${kbId}/search?q=${encodeURIComponent(q)}`, { token });
  const top = async (kbId: number, q: string) => (await search(a.token, kbId, q)).body.results[0];

  const kb = await createBase(a.token, { name: '  Help centre ', language: 'english' });
  const hours = await addDoc(a.token, kb.id, HOURS);
  const delivery = await addDoc(aApi, kb.id, DELIVERY);
  const returns = await addDoc(a.token, kb.id, RETURNS);
  const payment = await addDoc(a.token, kb.id, { ...PAYMENT, format: 'markdown' });
  const ru = await createBase(a.token, { name: 'Справка', language: 'russian' });
  const ruHours = await addDoc(a.token, ru.id, RU_HOURS);
  const ruDelivery = await addDoc(a.token, ru.id, RU_DELIVERY);

  t.test('shapes', async (t) => {
    t.same(Object.keys(kb).sort(), ['chunks', 'createdAt', 'embedding', 'id', 'language', 'name', 'synonyms', 'updatedAt']);
    t.same(kb.synonyms, []);
    t.match(kb, { name: 'Help centre', language: 'english', embedding: null, chunks: 0 });
    t.match(kb.createdAt, ISO_MS);
    const plain = await createBase(a.token, { name: 'Defaults' });
    t.equal(plain.language, 'auto', 'auto (detected per document) is the default language');

    t.same(Object.keys(hours).sort(), ['chunks', 'createdAt', 'error', 'id', 'progress', 'source', 'status', 'title', 'updatedAt']);
    t.match(hours, { title: HOURS.title, status: 'ready', progress: 100, error: null, chunks: 1, source: { type: 'markdown', bytes: Buffer.byteLength(HOURS.content) } });

    const one = await api('GET', `/api/knowledge-bases/${kb.id}/documents/${hours.id}`, { token: aApi });
    t.equal(one.status, 200);
    t.equal(one.body.document.content, HOURS.content, 'the document shows its text');
    t.equal((await api('GET', `/api/knowledge-bases/${kb.id}`, { token: a.token })).body.knowledgeBase.chunks, 5, 'the base counts its chunks');

    const patched = await api('PATCH', `/api/knowledge-bases/${kb.id}`, { token: aApi, body: { name: 'FAQ' } });
    t.equal(patched.status, 200);
    t.equal(patched.body.knowledgeBase.name, 'FAQ');
    t.equal((await api('DELETE', `/api/knowledge-bases/${plain.id}`, { token: a.token })).status, 204);
  });

  t.test('document list: limit, offset, total', async (t) => {
    const all = await api('GET', `/api/knowledge-bases/${kb.id}/documents`, { token: a.token });
    t.same(all.body.documents.map((d: { id: number }) => d.id), [hours.id, delivery.id, returns.id, payment.id], 'in creation order');
    t.match(all.body, { total: 4, limit: 50, offset: 0 });
    t.notOk('content' in all.body.documents[0], 'lists carry no content');
    const page = await api('GET', `/api/knowledge-bases/${kb.id}/documents?limit=2&offset=1`, { token: a.token });
    t.same(page.body.documents.map((d: { id: number }) => d.id), [delivery.id, returns.id]);
    t.match(page.body, { total: 4, limit: 2, offset: 1 });
    for (const qs of ['limit=0', 'limit=201', 'limit=x', 'offset=-1']) {
      const bad = await api('GET', `/api/knowledge-bases/${kb.id}/documents?${qs}`, { token: a.token });
      t.equal(bad.status, 400, qs);
      t.equal(bad.body.error.code, 'VALIDATION_ERROR');
    }
  });

  t.test('chunks: headings kept, long sections split with overlap', async (t) => {
    const res = await api('GET', `/api/knowledge-bases/${kb.id}/documents/${payment.id}/chunks`, { token: a.token });
    t.equal(res.status, 200);
    t.match(res.body, { total: 2, limit: 50, offset: 0 });
    t.same(res.body.chunks.map((c: { heading: string; content: string }) => [c.heading, c.content]), [
      ['Paying for an order › Cards', 'We accept Visa and Mastercard.'],
      ['Paying for an order › Invoices', 'Business customers can pay by invoice within 14 days.'],
    ]);
    t.same(Object.keys(res.body.chunks[0]).sort(), ['content', 'embedded', 'heading', 'id', 'position', 'words']);

    const sentences = Array.from({ length: 120 }, (_, i) => `Sentence number ${i} of the warranty terms says something different.`);
    const long = await addDoc(a.token, kb.id, { title: 'Warranty', content: `# Warranty\n\n${sentences.slice(0, 60).join(' ')}\n\n${sentences.slice(60).join(' ')}` });
    const chunks = (await api('GET', `/api/knowledge-bases/${kb.id}/documents/${long.id}/chunks?limit=200`, { token: a.token })).body.chunks as { content: string; words: number; heading: string }[];
    t.ok(chunks.length >= 4, `${chunks.length} chunks of a ~1,100-word section`);
    t.ok(chunks.every((c) => c.words <= 300 && c.heading === 'Warranty'), 'a few hundred words each, under their heading');
    const lastWords = chunks[0]!.content.split(' ').slice(-5).join(' ');
    t.ok(chunks[1]!.content.includes(lastWords), 'the next chunk starts with the end of the previous one (overlap)');
    t.equal((await api('DELETE', `/api/knowledge-bases/${kb.id}/documents/${long.id}`, { token: a.token })).status, 204);
    const [{ n }] = await svc.orm.em.fork().getConnection().execute<{ n: number }[]>(`select count(*)::int as n from knowledge_chunks where document_id = ${long.id}`);
    t.equal(n, 0, "a deleted document's chunks go with it");
    t.equal((await api('GET', `/api/knowledge-bases/${kb.id}/documents/${long.id}/chunks`, { token: a.token })).status, 404);
  });

  t.test('validation', async (t) => {
    const bad = async (method: string, path: string, body: unknown, fields: string[]) => {
      const res = await api(method, path, { token: a.token, body });
      t.equal(res.status, 400, `${method} ${path} ${JSON.stringify(body).slice(0, 60)} → 400`);
      t.equal(res.body.error?.code, 'VALIDATION_ERROR');
      t.same([...new Set(res.body.error.details.map((d: { field: string }) => d.field))].sort(), fields.sort());
    };
    await bad('POST', '/api/knowledge-bases', {}, ['name']);
    await bad('POST', '/api/knowledge-bases', { name: '   ' }, ['name']);
    await bad('POST', '/api/knowledge-bases', { name: 'x', color: 'red' }, ['color']);
    await bad('POST', '/api/knowledge-bases', { name: 'x', language: 'klingon' }, ['language']);
    await bad('POST', '/api/knowledge-bases', { name: 'x', language: "english'; drop table x" }, ['language']);
    await bad('POST', '/api/knowledge-bases', { name: 'x', embedding: { baseUrl: 'ftp://x' } }, ['embedding.baseUrl', 'embedding.name']);
    await bad('PATCH', `/api/knowledge-bases/${kb.id}`, { name: 42 }, ['name']);
    await bad('POST', `/api/knowledge-bases/${kb.id}/documents`, { title: 'No content' }, ['content']);
    await bad('POST', `/api/knowledge-bases/${kb.id}/documents`, { title: '', content: 'x' }, ['title']);
    await bad('POST', `/api/knowledge-bases/${kb.id}/documents`, { title: 't'.repeat(501), content: 'x' }, ['title']);
    await bad('POST', `/api/knowledge-bases/${kb.id}/documents`, { title: 'Doc', content: 'x', format: 'docx' }, ['format']);
    await bad('POST', `/api/knowledge-bases/${kb.id}/documents`, { title: 'Too big', content: 'é'.repeat(600_000) }, ['content']);
    await bad('POST', `/api/knowledge-bases/${kb.id}/documents`, { url: 'not a url' }, ['url']);
    await bad('POST', `/api/knowledge-bases/${kb.id}/documents`, { url: 'file:///etc/passwd' }, ['url']);

    for (const qs of ['', '?q=', '?q=%20%20', '?q=a&q=b', `?q=${'x'.repeat(1001)}`]) {
      const res = await api('GET', `/api/knowledge-bases/${kb.id}/search${qs}`, { token: a.token });
      t.equal(res.status, 400, `search${qs.slice(0, 20)} → 400`);
      t.same(res.body.error.details.map((d: { field: string }) => d.field), ['q']);
    }
    const badLimit = await api('GET', `/api/knowledge-bases/${kb.id}/search?q=hours&limit=0`, { token: a.token });
    t.equal(badLimit.status, 400);
    t.equal((await api('GET', `/api/knowledge-bases/${kb.id}/documents`, { token: a.token })).body.total, 4, 'invalid documents were not stored');
    // Well-formed, but nothing to index: accepted like any document, failed with the reason once read.
    const markup = await api('POST', `/api/knowledge-bases/${kb.id}/documents`, { token: a.token, body: { title: 'Only markup', content: '<p> </p><script>alert(1)</script>', format: 'html' } });
    t.equal(markup.status, 201);
    t.match(await waitForDocument(api, a.token, kb.id, markup.body.document.id), { status: 'failed', error: 'the document has no text to index', chunks: 0 });
    t.equal((await api('DELETE', `/api/knowledge-bases/${kb.id}/documents/${markup.body.document.id}`, { token: a.token })).status, 204);
    const huge = await api('POST', `/api/knowledge-bases/${kb.id}/documents`, { token: a.token, body: { title: 'Huge', content: 'x '.repeat(1_100_000) } });
    t.equal(huge.status, 413);
    t.equal(huge.body.error.code, 'PAYLOAD_TOO_LARGE');
    const xml = await api('POST', `/api/knowledge-bases/${kb.id}/documents`, { token: a.token, rawBody: '<doc/>', headers: { 'content-type': 'application/xml' } });
    t.equal(xml.status, 415);
    t.equal(xml.body.error.code, 'UNSUPPORTED_MEDIA_TYPE');
  });

  t.test('formats in JSON: html and plain text', async (t) => {
    const scratch = await createBase(a.token, { name: 'Formats', language: 'english' });
    const html = await addDoc(a.token, scratch.id, {
      title: 'Gift cards',
      format: 'html',
      content: '<html><head><title>x</title><style>.a{}</style></head><body><nav>Home | Shop</nav><main><h1>Gift cards</h1><p>Gift cards are valid for <b>three years</b>.</p><h2>Balance</h2><ul><li>Check the balance online.</li></ul></main><footer>© Shop</footer></body></html>',
    });
    t.equal(html.status, 'ready');
    const chunks = (await api('GET', `/api/knowledge-bases/${scratch.id}/documents/${html.id}/chunks`, { token: a.token })).body.chunks;
    t.same(chunks.map((c: { heading: string; content: string }) => [c.heading, c.content]), [
      ['Gift cards', 'Gift cards are valid for three years.'],
      ['Gift cards › Balance', '- Check the balance online.'],
    ], 'headings and paragraphs of the page; navigation, styles and footer left out');
    const text = await addDoc(a.token, scratch.id, { title: 'Plain', format: 'text', content: '# Not a heading\n\nJust text.' });
    const textChunks = (await api('GET', `/api/knowledge-bases/${scratch.id}/documents/${text.id}/chunks`, { token: a.token })).body.chunks;
    t.same(textChunks.map((c: { heading: string; content: string }) => [c.heading, c.content]), [['', '# Not a heading\n\nJust text.']], 'plain text keeps its characters');
  });

  t.test('search: ranking, natural questions, snippets, typos (English)', async (t) => {
    const res = await search(a.token, kb.id, 'opening hours');
    t.equal(res.status, 200);
    const results = res.body.results;
    t.same(Object.keys(results[0]).sort(), ['chunkId', 'confidence', 'documentId', 'heading', 'matchedBy', 'relevance', 'score', 'snippet', 'title']);
    t.match(results[0], { documentId: hours.id, title: HOURS.title, matchedBy: ['fulltext'], relevance: 1 });
    t.ok(results.some((r: { documentId: number }) => r.documentId === delivery.id), 'a chunk mentioning "hours" is found too');
    t.notOk(results.some((r: { documentId: number }) => r.documentId === returns.id), 'a chunk without the words is not');
    for (let i = 1; i < results.length; i++) t.ok(results[i - 1].score >= results[i].score, 'sorted by score');

    const question = await top(kb.id, 'What are your opening hours?');
    t.equal(question.documentId, hours.id, 'a natural question finds the document');
    t.match(question.snippet, /9:00 to 18:00|open/i, 'the snippet shows the matching text');
    t.notMatch(question.snippet, /\n/, 'one line');
    t.equal((await top(kb.id, 'how do I get my money back? refund')).documentId, returns.id);
    t.equal((await top(kb.id, 'can I pay by invoice?')).heading, 'Paying for an order › Invoices', 'the chunk under the right heading');

    const typo = await top(kb.id, 'how fast is the delivry of a parcle');
    t.equal(typo.documentId, delivery.id, 'misspelt words are found through their trigram neighbours');
    t.ok(typo.matchedBy.includes('trigram'), `matchedBy ${typo.matchedBy}`);
    const typo2 = await top(kb.id, 'refnd to my card');
    t.equal(typo2.documentId, returns.id);

    t.same((await search(a.token, kb.id, 'what are your')).body, { results: [] }, 'stop words only: no results');
    t.same((await search(a.token, kb.id, '?!')).body, { results: [] });
    t.same((await search(a.token, kb.id, 'bicycle')).body, { results: [] }, 'nothing matches');
    const limited = await api('GET', `/api/knowledge-bases/${kb.id}/search?q=hours&limit=1`, { token: a.token });
    t.equal(limited.body.results.length, 1);
  });

  t.test("search: the customer's words for the help centre's (synonyms)", async (t) => {
    const receipt = await top(kb.id, 'I need a receipt');
    t.match(receipt, { documentId: payment.id, heading: 'Paying for an order › Invoices', matchedBy: ['fulltext'] }, '"receipt" finds the invoices');
    t.ok(receipt.confidence >= 0.35, `confidence ${receipt.confidence}: an agent answers it at the default threshold`);
    t.equal((await top(kb.id, 'when do I get my money back')).documentId, returns.id, '"money back" finds the refund');
    t.equal((await top(kb.id, 'where is my package')).documentId, delivery.id, '"package" finds the parcel');
    t.equal((await top(ru.id, 'когда привезут?')).documentId, ruDelivery.id, '«привезут» finds the delivery');
    const [best] = await bestKnowledgeMatches(sql, [{ companyId: a.companyId, knowledgeBaseId: kb.id, query: 'can I get a receipt for my company?' }]);
    t.match(answeringPassage(best?.passages ?? []), { documentId: payment.id, heading: 'Paying for an order › Invoices' }, 'the built-in agent finds it too');
  });

  t.test('search: of chunks holding the same words, the one about them comes first', async (t) => {
    const base = await createBase(a.token, { name: 'Frequency', language: 'english' });
    // Created first: with equal scores the older chunk would win.
    await addDoc(a.token, base.id, { title: 'Shop news', content: 'New mugs arrived. Every kettle comes with a warranty card in the box. The shop opens on Sundays now.' });
    const about = await addDoc(a.token, base.id, { title: 'Service', content: 'The warranty lasts two years. To claim the warranty, send us the receipt; warranty repairs cost nothing.' });
    t.equal((await top(base.id, 'warranty')).documentId, about.id, 'the chunk that says it three times');
    const [best] = await bestKnowledgeMatches(sql, [{ companyId: a.companyId, knowledgeBaseId: base.id, query: 'is there a warranty?' }]);
    t.equal(answeringPassage(best?.passages ?? [])?.documentId, about.id, 'the built-in agent too');
  });

  t.test("a base's own synonyms: set, shown, indexed in its language, phrases whole", async (t) => {
    const base = await createBase(a.token, { name: 'Own words', synonyms: [['  gizmo ', 'widgets', 'gizmo'], ['bank wire', 'invoice'], ['alone', 'alone']] });
    t.same(base.synonyms, [['gizmo', 'widgets'], ['bank wire', 'invoice']], 'entries trimmed, repeats and one-entry groups dropped');
    const widgets = await addDoc(a.token, base.id, { title: 'Workshop', content: 'Widgets are assembled daily.' });
    const invoices = await addDoc(a.token, base.id, { title: 'Paying', content: 'Business customers can pay by invoice within 14 days.' });
    t.match(await top(base.id, 'where is my gizmo'), { documentId: widgets.id, matchedBy: ['fulltext'] }, 'a word of the group finds the others');
    t.equal((await top(base.id, 'can I pay by bank wire?')).documentId, invoices.id, 'a phrase held whole');
    t.same((await search(a.token, base.id, 'bank')).body.results, [], 'one word of a phrase brings nothing');

    const patched = await api('PATCH', `/api/knowledge-bases/${base.id}`, { token: a.token, body: { synonyms: [['doohickey', 'widgets']] } });
    t.equal(patched.status, 200);
    t.same(patched.body.knowledgeBase.synonyms, [['doohickey', 'widgets']]);
    t.equal((await top(base.id, 'doohickey')).documentId, widgets.id, 'the new groups apply at once');
    t.same((await search(a.token, base.id, 'gizmo')).body.results, [], 'the old ones are gone');
    t.same((await api('GET', `/api/knowledge-bases/${base.id}`, { token: a.token })).body.knowledgeBase.synonyms, [['doohickey', 'widgets']]);

    // simple keeps "widgets" as it is; english stems it to "widget" in the chunks and must in the groups too.
    await api('PATCH', `/api/knowledge-bases/${base.id}`, { token: a.token, body: { language: 'english' } });
    await waitForDocument(api, a.token, base.id, widgets.id);
    t.equal((await top(base.id, 'doohickey')).documentId, widgets.id, 'a new language indexes the groups again');
    t.equal((await search(b.token, base.id, 'doohickey')).status, 404, "another company cannot search the base");

    for (const synonyms of ['gizmo', [['only one']], [['ok', '  ']], [['ok', 'x'.repeat(61)]], [Array.from({ length: 21 }, (_, i) => `w${i}`)]]) {
      const res = await api('PATCH', `/api/knowledge-bases/${base.id}`, { token: a.token, body: { synonyms } });
      t.equal(res.status, 400, `synonyms ${JSON.stringify(synonyms).slice(0, 40)}: 400`);
      t.equal(res.body.error?.code, 'VALIDATION_ERROR');
    }
    // The number of groups is the company's quota (QUOTA_SYNONYM_GROUPS_PER_BASE, 2000): 403 past it.
    const tooMany = await api('PATCH', `/api/knowledge-bases/${base.id}`, { token: a.token, body: { synonyms: Array.from({ length: 2001 }, (_, i) => [`a${i}`, `b${i}`]) } });
    t.equal(tooMany.status, 403, '2001 groups: 403');
    t.same(tooMany.body.error, { code: 'QUOTA_EXCEEDED', message: tooMany.body.error.message, details: [{ field: 'synonyms', message: 'limit 2000' }] });
    const created = await api('POST', '/api/knowledge-bases', { token: a.token, body: { name: 'Too many words', synonyms: Array.from({ length: 2001 }, (_, i) => [`a${i}`, `b${i}`]) } });
    t.equal(created.status, 403, 'a new base with 2001 groups: 403 too');
    t.same((await api('GET', `/api/knowledge-bases/${base.id}`, { token: a.token })).body.knowledgeBase.synonyms, [['doohickey', 'widgets']], 'a refused change changes nothing');

    // The most a base may hold: 2000 groups of 20 terms of 60 characters (2.5 MB of JSON).
    const longest = (g: number, i: number) => `${`g${g}t${i} `.padEnd(59, 'x')}y`;
    const most = Array.from({ length: 2000 }, (_, g) => Array.from({ length: 20 }, (_, i) => longest(g, i)));
    most[1999]![0] = 'doohickey';
    most[1999]![1] = 'widgets';
    const full = await api('PATCH', `/api/knowledge-bases/${base.id}`, { token: a.token, body: { synonyms: most } });
    t.equal(full.status, 200, 'the largest synonyms allowed are taken');
    t.equal(full.body.knowledgeBase.synonyms.length, 2000);
    t.equal(full.body.knowledgeBase.synonyms[0][0].length, 60);
    t.equal((await top(base.id, 'doohickey')).documentId, widgets.id, 'and searched');
  });

  t.test('search in Russian, with inflections and typos', async (t) => {
    t.equal((await top(ru.id, 'Какие у вас часы работы?')).documentId, ruHours.id);
    t.equal((await top(ru.id, 'когда вы работаете в праздничный день')).documentId, ruHours.id, 'inflected words match (stemming)');
    t.equal((await top(ru.id, 'сколько дней идет доставка по россии')).documentId, ruDelivery.id);
    const typo = await top(ru.id, 'доставкка по москвве');
    t.equal(typo.documentId, ruDelivery.id, 'Russian typos too');
    t.ok(typo.matchedBy.includes('trigram'));
  });

  t.test('a document of about 1 MB is indexed in the background', async (t) => {
    let content = '';
    while (content.length + 13 <= 1_000_000 - 12) content += 'Spare parts\n\n';
    content += 'carburettor';
    const posted = await api('POST', `/api/knowledge-bases/${kb.id}/documents`, { token: a.token, body: { title: 'Parts catalogue', content } });
    t.equal(posted.status, 201);
    const big = posted.body.document;
    t.equal(big.status, 'processing', 'answered at once, processed after');
    const done = await waitForDocument(api, a.token, kb.id, big.id, 60_000);
    t.match(done, { status: 'ready', progress: 100, error: null });
    t.ok(done.chunks > 100, `${done.chunks} chunks`);
    const found = await search(a.token, kb.id, 'carburettor');
    t.same(found.body.results.map((r: { documentId: number }) => r.documentId), [big.id], 'the end of a large document is searchable');
    t.ok(found.body.results[0].snippet.length < 400, 'the snippet is an excerpt, not the document');
    t.equal((await api('DELETE', `/api/knowledge-bases/${kb.id}/documents/${big.id}`, { token: a.token })).status, 204);
    t.equal((await api('GET', `/api/knowledge-bases/${kb.id}`, { token: a.token })).body.knowledgeBase.chunks, 5, 'its chunks left the count');
  });

  t.test('changing the language re-indexes the base', async (t) => {
    const base = await createBase(a.token, { name: 'Lang', language: 'simple' });
    // Words of no synonym group (lib/knowledge/synonyms.ts lists forms of the words it knows).
    const doc = await addDoc(a.token, base.id, { title: 'Workshop', content: 'Widgets are assembled daily.' });
    // The local sentence model finds it by meaning as well (`vector`); of the lexical signals:
    const lexical = (r: { matchedBy: string[] }) => r.matchedBy.filter((m) => m !== 'vector');
    t.same(lexical(await top(base.id, 'widget assembling')), ['trigram'], 'simple: no stemming, "widget" ≠ "widgets" for full text; only trigram similarity finds it');
    const patched = await api('PATCH', `/api/knowledge-bases/${base.id}`, { token: a.token, body: { language: 'english' } });
    t.equal(patched.body.knowledgeBase.language, 'english');
    await waitForDocument(api, a.token, base.id, doc.id);
    const after = await top(base.id, 'widget assembling');
    t.equal(after.documentId, doc.id);
    t.same(lexical(after), ['fulltext'], 'english: stems match in full text');
  });

  t.test('the SQL names the tenant: another company id with this base finds nothing', async (t) => {
    const q = { knowledgeBaseId: kb.id, query: 'opening hours' };
    t.same(await lexicalCandidates(sql, [{ ...q, companyId: b.companyId }]), [{ candidates: [], terms: [], facts: null }]);
    t.same(await bestKnowledgeMatches(sql, [{ ...q, companyId: b.companyId }]), [null]);
    const own = await bestKnowledgeMatches(sql, [{ ...q, companyId: a.companyId }, { ...q, companyId: b.companyId }, { ...q, query: 'what?', companyId: a.companyId }]);
    t.equal(own[0]?.passages[0]?.documentId, hours.id, 'the owner finds it; a batch answers each question apart');
    t.same(own.slice(1), [null, null]);
  });

  t.test('tenant isolation', async (t) => {
    const bKb = await createBase(b.token, { name: 'Beta help' });
    const bDoc = await addDoc(b.token, bKb.id, { title: 'Opening hours of Beta', content: 'Beta is open around the clock.' });
    for (const token of [b.token, bApi]) {
      const routes: [string, string, unknown?][] = [
        ['GET', `/api/knowledge-bases/${kb.id}`],
        ['PATCH', `/api/knowledge-bases/${kb.id}`, { name: 'stolen' }],
        ['DELETE', `/api/knowledge-bases/${kb.id}`],
        ['POST', `/api/knowledge-bases/${kb.id}/documents`, { title: 'Injected', content: 'Opening hours: never' }],
        ['GET', `/api/knowledge-bases/${kb.id}/documents`],
        ['GET', `/api/knowledge-bases/${kb.id}/documents/${hours.id}`],
        ['GET', `/api/knowledge-bases/${kb.id}/documents/${hours.id}/chunks`],
        ['DELETE', `/api/knowledge-bases/${kb.id}/documents/${hours.id}`],
        ['GET', `/api/knowledge-bases/${bKb.id}/documents/${hours.id}`],
        ['GET', `/api/knowledge-bases/${bKb.id}/documents/${hours.id}/chunks`],
        ['DELETE', `/api/knowledge-bases/${bKb.id}/documents/${hours.id}`],
        ['GET', `/api/knowledge-bases/${kb.id}/search?q=hours`],
      ];
      for (const [method, path, body] of routes) {
        const res = await api(method, path, { token, body });
        t.equal(res.status, 404, `other company: ${method} ${path}`);
        t.equal(res.body.error?.code, 'NOT_FOUND');
      }
      t.same((await api('GET', '/api/knowledge-bases', { token })).body.knowledgeBases.map((k: { id: number }) => k.id), [bKb.id]);
    }
    t.equal((await api('GET', `/api/knowledge-bases/${kb.id}/documents`, { token: a.token })).body.total, 4, "Alpha's documents are all there");
    const bSearch = await search(bApi, bKb.id, 'What are your opening hours?');
    t.same(bSearch.body.results.map((r: { documentId: number }) => r.documentId), [bDoc.id], "Beta's search sees only Beta's chunks");
  });
});
