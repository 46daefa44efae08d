import t from 'tap';
import { startEmbeddingsStub } from '../support/embeddings-stub.js';
import { waitForDocument } from '../support/knowledge.js';
import { signUp, startTestService } from '../support/service.js';

// Vectors from an embedding server (a deterministic stand-in) fused with the lexical lists.
// The stand-in maps some words to shared "concepts", so a question can be close to a passage
// it shares no word with: only the vector signal can find it.
const CONCEPTS: Record<string, string> = { parcel: 'shipment', parcels: 'shipment', arrive: 'shipment', delivery: 'shipment', delivered: 'shipment', courier: 'shipment', money: 'refund', refund: 'refund', reimbursed: 'refund' };
const svc = await startTestService(t, 'knowledge_vectors', { knowledge: { sweepMs: 200 } });
const stub = await startEmbeddingsStub(t, CONCEPTS);
const { api } = svc;
const user = await signUp(api, 'Vector Co');
const token = user.token;

const created = await api('POST', '/api/knowledge-bases', { token, body: { name: 'Semantic', language: 'english', embedding: { baseUrl: stub.baseUrl, name: 'stand-in-embed', apiKey: 'sk-embed-secret' } } });
const kb = created.body.knowledgeBase;
const add = async (title: string, content: string) => {
  const res = await api('POST', `/api/knowledge-bases/${kb.id}/documents`, { token, body: { title, content } });
  // Every document is indexed in the background.
  if (res.status !== 201 || res.body.document.status !== 'processing') throw new Error(`add ${title}: ${res.status} ${JSON.stringify(res.body)}`);
  return waitForDocument(api, token, kb.id, res.body.document.id);
};
const search = async (q: string) => (await api('GET', `/api/knowledge-bases/${kb.id}/search?q=${encodeURIComponent(q)}`, { token })).body.results;

const shipping = await add('Shipping times', 'Orders are delivered by courier within three working days.');
const refunds = await add('Refunds', 'Returned items are reimbursed to the original card.');
const opening = await add('Opening hours', 'The shop opens at nine.');

t.test('the embedding model: shown without its key, chunks embedded in batches', async (t) => {
  t.equal(created.status, 201);
  t.same(kb.embedding, { baseUrl: stub.baseUrl, name: 'stand-in-embed', hasApiKey: true, dimensions: null });
  t.notMatch(JSON.stringify(created.body), /sk-embed-secret/);
  const again = (await api('GET', `/api/knowledge-bases/${kb.id}`, { token })).body.knowledgeBase;
  t.equal(again.embedding.dimensions, 64, 'learnt from the server');
  for (const d of [shipping, refunds, opening]) t.match(d, { status: 'ready', chunks: 1 });
  const chunks = (await api('GET', `/api/knowledge-bases/${kb.id}/documents/${shipping.id}/chunks`, { token })).body.chunks;
  t.equal(chunks[0].embedded, true);
  const req = stub.requests.find((r) => Array.isArray(r.body?.input));
  t.equal(req?.headers.authorization, 'Bearer sk-embed-secret', 'the key goes to the server only');
  t.equal(req?.body.model, 'stand-in-embed');
});

t.test('vector fusion: a question sharing no word with the answer is found by its vector', async (t) => {
  const [first] = await search('when will my parcel arrive');
  t.match(first, { documentId: shipping.id, matchedBy: ['vector'] });
  t.ok(first.relevance > 0.2 && first.relevance <= 1, `relevance is the cosine similarity: ${first.relevance}`);
  const both = await search('shipping times for orders');
  t.equal(both[0].documentId, shipping.id);
  t.same(both[0].matchedBy, ['fulltext', 'vector'], 'found by both lists, fused (RRF)');
  t.ok(both[0].score > (both[1]?.score ?? 0));
  const money = await search('can I get my money back');
  t.equal(money[0].documentId, refunds.id);
  const queried = stub.requests.filter((r) => r.body?.input?.[0] === 'can I get my money back');
  t.equal(queried.length, 1, 'the question itself is embedded once');
});

t.test('the embedding server fails: documents fail with the reason, search goes on without vectors', async (t) => {
  stub.fail(500);
  t.teardown(() => stub.fail(null));
  const failed = await add('Gift cards', 'Gift cards never expire.');
  t.match(failed, { status: 'failed', error: 'the embedding server answered HTTP 500', chunks: 0 });
  const results = await search('shipping times');
  t.equal(results[0].documentId, shipping.id);
  t.same(results[0].matchedBy, ['fulltext'], 'lexical results only');
  stub.fail(401);
  t.match(await add('Vouchers', 'Vouchers are personal.'), { status: 'failed', error: 'the embedding server answered HTTP 401' });
});

t.test('changing the model: the key must come again for a new address; removing it re-indexes without vectors', async (t) => {
  const moved = await api('PATCH', `/api/knowledge-bases/${kb.id}`, { token, body: { embedding: { baseUrl: 'http://127.0.0.1:9/v1', name: 'other' } } });
  t.equal(moved.status, 400);
  t.same(moved.body.error.details.map((d: { field: string }) => d.field), ['embedding.apiKey']);
  const off = await api('PATCH', `/api/knowledge-bases/${kb.id}`, { token, body: { embedding: null } });
  t.equal(off.status, 200);
  t.equal(off.body.knowledgeBase.embedding, null);
  const doc = await waitForDocument(api, token, kb.id, shipping.id);
  t.equal(doc.status, 'ready');
  const chunks = (await api('GET', `/api/knowledge-bases/${kb.id}/documents/${shipping.id}/chunks`, { token })).body.chunks;
  t.equal(chunks[0].embedded, false, 're-indexed without vectors');
  t.same(await search('when will my parcel arrive'), [], 'and without vectors that question finds nothing');
});
