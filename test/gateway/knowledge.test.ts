import { createHash } from 'node:crypto';
import t from 'tap';
import { searchKnowledge } from '../../lib/knowledge.js';
import { tenantScope } from '../../lib/tenancy.js';
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
const RU_HOURS = {
  title: 'Часы работы',
  content: 'Мы работаем ежедневно с 9:00 до 21:00 без выходных. В праздничные дни магазин закрыт.',
};

async function apiToken(api: ApiClient, sessionToken: string): Promise<string> {
  const res = await api('POST', '/api/api-tokens', { token: sessionToken, body: { name: 'script' } });
  if (res.status !== 201) throw new Error(`api token: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.apiToken.token as string;
}

t.test('knowledge bases and documents', async (t) => {
  const svc = await startTestService(t, 'knowledge');
  const { api } = svc;
  const a = await signUp(api, 'Alpha');
  const b = await signUp(api, 'Beta');
  const aApi = await apiToken(api, a.token);
  const bApi = await apiToken(api, b.token);

  const createBase = async (token: string, name: string) => {
    const res = await api('POST', '/api/knowledge-bases', { token, body: { name } });
    t.equal(res.status, 201, `create knowledge base ${name}`);
    return res.body.knowledgeBase as { id: number; name: string; createdAt: string };
  };
  const addDoc = async (token: string, kbId: number, doc: { title: string; content: string }) => {
    const res = await api('POST', `/api/knowledge-bases/${kbId}/documents`, { token, body: doc });
    t.equal(res.status, 201, `add document ${doc.title}`);
    return res.body.document as { id: number; title: string; content: string; createdAt: string };
  };
  const search = (token: string, kbId: number, q: string) => api('GET', `/api/knowledge-bases/${kbId}/search?q=${encodeURIComponent(q)}`, { token });

  const kb = await createBase(a.token, '  Help centre ');
  const hours = await addDoc(a.token, kb.id, HOURS);
  const delivery = await addDoc(aApi, kb.id, DELIVERY);
  const returns = await addDoc(a.token, kb.id, RETURNS);
  const ruHours = await addDoc(a.token, kb.id, RU_HOURS);

  t.test('CRUD shapes', async (t) => {
    t.same(Object.keys(kb).sort(), ['createdAt', 'id', 'name']);
    t.equal(kb.name, 'Help centre', 'name is trimmed');
    t.match(kb.createdAt, ISO_MS);
    t.same(Object.keys(hours).sort(), ['content', 'createdAt', 'id', 'title']);
    t.equal(hours.title, HOURS.title);
    t.equal(hours.content, HOURS.content, 'content is stored as sent');
    t.match(hours.createdAt, ISO_MS);

    const list = await api('GET', '/api/knowledge-bases', { token: aApi });
    t.equal(list.status, 200);
    t.same(list.body, { knowledgeBases: [kb] });

    const one = await api('GET', `/api/knowledge-bases/${kb.id}`, { token: a.token });
    t.same(one.body, { knowledgeBase: kb });

    const patched = await api('PATCH', `/api/knowledge-bases/${kb.id}`, { token: aApi, body: { name: 'FAQ' } });
    t.equal(patched.status, 200);
    t.same(patched.body.knowledgeBase, { ...kb, name: 'FAQ' });
    t.equal((await api('GET', `/api/knowledge-bases/${kb.id}`, { token: a.token })).body.knowledgeBase.name, 'FAQ');

    const docs = await api('GET', `/api/knowledge-bases/${kb.id}/documents`, { token: a.token });
    t.equal(docs.status, 200);
    t.same(docs.body, { documents: [hours, delivery, returns, ruHours] }, 'listed in creation order');

    const doc = await api('GET', `/api/knowledge-bases/${kb.id}/documents/${delivery.id}`, { token: aApi });
    t.same(doc.body, { document: delivery });

    // A document and a whole knowledge base go away.
    const other = await createBase(a.token, 'Scratch');
    const scratch = await addDoc(a.token, other.id, { title: 'Opening hours draft', content: 'We open at nine.' });
    t.equal((await api('GET', `/api/knowledge-bases/${kb.id}/documents/${scratch.id}`, { token: a.token })).status, 404, 'a document is reached through its own knowledge base only');
    t.equal((await api('DELETE', `/api/knowledge-bases/${other.id}/documents/${scratch.id}`, { token: a.token })).status, 204);
    t.equal((await api('GET', `/api/knowledge-bases/${other.id}/documents/${scratch.id}`, { token: a.token })).status, 404);
    t.equal((await api('DELETE', `/api/knowledge-bases/${other.id}/documents/${scratch.id}`, { token: a.token })).status, 404, 'deleting twice is 404');
    await addDoc(a.token, other.id, { title: 'Opening hours draft 2', content: 'We open at nine.' });
    t.equal((await api('DELETE', `/api/knowledge-bases/${other.id}`, { token: aApi })).status, 204);
    t.equal((await api('GET', `/api/knowledge-bases/${other.id}`, { token: a.token })).status, 404);
    t.equal((await api('GET', `/api/knowledge-bases/${other.id}/documents`, { token: a.token })).status, 404);
    const [{ n }] = await svc.orm.em.fork().getConnection().execute<{ n: number }[]>(`select count(*)::int as n from knowledge_documents where knowledge_base_id = ${other.id}`);
    t.equal(n, 0, "a deleted knowledge base's documents are deleted with it");
    t.same((await api('GET', '/api/knowledge-bases', { token: a.token })).body.knowledgeBases.map((k: { id: number }) => k.id), [kb.id]);

    t.equal((await api('GET', '/api/knowledge-bases/abc', { token: a.token })).status, 404);
    t.equal((await api('GET', `/api/knowledge-bases/${kb.id}/documents/0`, { token: a.token })).status, 404);
    t.equal((await api('GET', '/api/knowledge-bases')).status, 401, 'no credential');
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
    await bad('PATCH', `/api/knowledge-bases/${kb.id}`, { name: 42 }, ['name']);
    await bad('POST', `/api/knowledge-bases/${kb.id}/documents`, { title: 'No content' }, ['content']);
    await bad('POST', `/api/knowledge-bases/${kb.id}/documents`, { title: '', content: 'x' }, ['title']);
    await bad('POST', `/api/knowledge-bases/${kb.id}/documents`, { title: 't'.repeat(501), content: 'x' }, ['title']);
    await bad('POST', `/api/knowledge-bases/${kb.id}/documents`, { title: 'Too big', content: 'é'.repeat(600_000) }, ['content']);

    for (const qs of ['', '?q=', '?q=%20%20', '?q=a&q=b', `?q=${'x'.repeat(1001)}`]) {
      const res = await api('GET', `/api/knowledge-bases/${kb.id}/search${qs}`, { token: a.token });
      t.equal(res.status, 400, `search${qs.slice(0, 20)} → 400`);
      t.equal(res.body.error?.code, 'VALIDATION_ERROR');
      t.same(res.body.error.details.map((d: { field: string }) => d.field), ['q']);
    }
    const badLimit = await api('GET', `/api/knowledge-bases/${kb.id}/search?q=hours&limit=0`, { token: a.token });
    t.equal(badLimit.status, 400);
    t.same(badLimit.body.error.details.map((d: { field: string }) => d.field), ['limit']);

    const nothingAdded = await api('GET', `/api/knowledge-bases/${kb.id}/documents`, { token: a.token });
    t.equal(nothingAdded.body.documents.length, 4, 'invalid documents were not stored');
  });

  t.test('a document of about 1 MB', async (t) => {
    // 1,000,000 bytes in short lines: the JSON body (each newline escaped) is over 1 MB.
    let content = '';
    while (content.length + 13 <= 1_000_000 - 12) content += 'Spare parts\n\n';
    content += 'carburettor';
    const big = await addDoc(a.token, kb.id, { title: 'Parts catalogue', content });
    t.equal(big.content.length, content.length);
    const found = await search(a.token, kb.id, 'carburettor');
    t.same(found.body.results.map((r: { documentId: number }) => r.documentId), [big.id], 'the end of a large document is searchable');
    t.ok(found.body.results[0].snippet.length < 400, 'the snippet is an excerpt, not the document');
    t.equal((await api('DELETE', `/api/knowledge-bases/${kb.id}/documents/${big.id}`, { token: a.token })).status, 204);

    // ~1 MB of distinct words makes a tsvector over PostgreSQL's 1 MB limit: a clear 400, not a 500.
    const tokens = Array.from({ length: 30_000 }, (_, i) => createHash('md5').update(String(i)).digest('hex')).join(' ');
    const unindexable = await api('POST', `/api/knowledge-bases/${kb.id}/documents`, { token: a.token, body: { title: 'Hashes', content: tokens } });
    t.equal(unindexable.status, 400);
    t.equal(unindexable.body.error?.code, 'VALIDATION_ERROR');
    t.same(unindexable.body.error.details.map((d: { field: string }) => d.field), ['content']);

    const huge = await api('POST', `/api/knowledge-bases/${kb.id}/documents`, { token: a.token, body: { title: 'Huge', content: 'x '.repeat(1_100_000) } });
    t.equal(huge.status, 413);
    t.equal(huge.body.error.code, 'PAYLOAD_TOO_LARGE');
  });

  t.test('search: ranking, natural questions, snippets', async (t) => {
    const res = await search(a.token, kb.id, 'opening hours');
    t.equal(res.status, 200);
    const results = res.body.results as { documentId: number; title: string; snippet: string; score: number }[];
    t.same(Object.keys(results[0]!).sort(), ['documentId', 'score', 'snippet', 'title']);
    t.equal(results[0]!.documentId, hours.id, 'the opening-hours document comes first');
    t.equal(results[0]!.title, HOURS.title);
    t.ok(results.some((r) => r.documentId === delivery.id), 'a document mentioning "hours" is found too');
    t.notOk(results.some((r) => r.documentId === returns.id), 'a document without the words is not');
    for (let i = 1; i < results.length; i++) t.ok(results[i - 1]!.score >= results[i]!.score, 'sorted by score');
    t.ok(results[0]!.score > results.find((r) => r.documentId === delivery.id)!.score, 'the more relevant document scores higher');

    const question = await search(aApi, kb.id, 'What are your opening hours?');
    t.equal(question.body.results[0]?.documentId, hours.id, 'a natural question finds the document');
    const snippet = question.body.results[0].snippet as string;
    t.match(snippet, /9:00 to 18:00|open/i, 'the snippet shows the matching text');
    t.notMatch(snippet, /<\/?b>|<|>/, 'no highlight markers');
    t.notMatch(snippet, /\n/, 'one line');

    const refund = await search(a.token, kb.id, 'how do I get my money back? refund');
    t.equal(refund.body.results[0]?.documentId, returns.id);

    const ru = await search(a.token, kb.id, 'Какие у вас часы работы?');
    t.equal(ru.body.results[0]?.documentId, ruHours.id, 'Russian question, Russian document');
    const ruInflected = await search(a.token, kb.id, 'когда вы работаете в праздничный день');
    t.equal(ruInflected.body.results[0]?.documentId, ruHours.id, 'inflected Russian words match (stemming)');

    const phrase = await search(a.token, kb.id, '"express delivery"');
    t.equal(phrase.body.results[0]?.documentId, delivery.id, 'websearch syntax: quoted phrase');

    const limited = await api('GET', `/api/knowledge-bases/${kb.id}/search?q=hours&limit=1`, { token: a.token });
    t.equal(limited.body.results.length, 1);

    t.same((await search(a.token, kb.id, 'what are your')).body, { results: [] }, 'stop words only: no results');
    t.same((await search(a.token, kb.id, '?!')).body, { results: [] });
    t.same((await search(a.token, kb.id, 'bicycle')).body, { results: [] }, 'nothing matches');
  });

  t.test('tenant isolation', async (t) => {
    const bKb = await createBase(b.token, 'Beta help');
    const bDoc = await addDoc(b.token, bKb.id, { title: 'Opening hours of Beta', content: 'Beta is open around the clock.' });

    for (const token of [b.token, bApi]) {
      const routes: [string, string, unknown?][] = [
        ['GET', `/api/knowledge-bases/${kb.id}`],
        ['PATCH', `/api/knowledge-bases/${kb.id}`, { name: 'stolen' }],
        ['DELETE', `/api/knowledge-bases/${kb.id}`],
        ['POST', `/api/knowledge-bases/${kb.id}/documents`, { title: 'Injected', content: 'Opening hours: never' }],
        ['GET', `/api/knowledge-bases/${kb.id}/documents`],
        ['GET', `/api/knowledge-bases/${kb.id}/documents/${hours.id}`],
        ['DELETE', `/api/knowledge-bases/${kb.id}/documents/${hours.id}`],
        ['GET', `/api/knowledge-bases/${bKb.id}/documents/${hours.id}`],
        ['DELETE', `/api/knowledge-bases/${bKb.id}/documents/${hours.id}`],
        ['GET', `/api/knowledge-bases/${kb.id}/search?q=hours`],
      ];
      for (const [method, path, body] of routes) {
        const res = await api(method, path, { token, body });
        t.equal(res.status, 404, `other company: ${method} ${path}`);
        t.equal(res.body.error?.code, 'NOT_FOUND');
      }
      const list = await api('GET', '/api/knowledge-bases', { token });
      t.same(list.body.knowledgeBases.map((k: { id: number }) => k.id), [bKb.id], "another company's knowledge bases are not listed");
    }

    // Nothing happened to Alpha's data.
    const aKb = await api('GET', `/api/knowledge-bases/${kb.id}`, { token: a.token });
    t.equal(aKb.body.knowledgeBase.name, 'FAQ');
    const aDocs = await api('GET', `/api/knowledge-bases/${kb.id}/documents`, { token: a.token });
    t.same(aDocs.body.documents.map((d: { id: number }) => d.id), [hours.id, delivery.id, returns.id, ruHours.id]);

    // Beta's search sees only Beta's documents, though Alpha's match better.
    const bSearch = await search(bApi, bKb.id, 'What are your opening hours?');
    t.same(bSearch.body.results.map((r: { documentId: number }) => r.documentId), [bDoc.id]);

    // The SQL itself is scoped: Beta's company id with Alpha's knowledge base finds nothing.
    const { em } = tenantScope(svc.orm, b.companyId);
    t.same(await searchKnowledge(em, { companyId: b.companyId, knowledgeBaseId: kb.id, query: 'opening hours' }), []);
    const own = await searchKnowledge(em, { companyId: a.companyId, knowledgeBaseId: kb.id, query: 'opening hours' });
    t.equal(own[0]?.documentId, hours.id, 'the same call with the owner company finds it');
  });
});
