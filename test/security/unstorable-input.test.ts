// Bad characters and numbers (issue #26 finding 8; contract.md § No tenant slows another
// down): a JSON string holding U+0000 or a lone surrogate is 400 VALIDATION_ERROR naming the
// field, in every body and query string (document content excepted: those characters are
// removed); a number PostgreSQL cannot store is 400, never 500; free text has maximum lengths.
// Before, each of these reached the database and answered 500.
import { gzipSync } from 'node:zlib';
import t, { type Test } from 'tap';
import { waitForDocument } from '../support/knowledge.js';
import { signUp, startTestService, type ApiResponse } from '../support/service.js';
import { sql } from '../support/worker.js';

const svc = await startTestService(t, 'unstorable');
const owner = await signUp(svc.api, 'Bad Input Co');
const { api } = svc;
const token = owner.token;

const NUL = 'a\u0000b';
const LONE_HIGH = 'a\ud800b';
const LONE_LOW = '\udc00';

/** 400 VALIDATION_ERROR whose details name `field` with `message`. */
function refuses(t: Test, res: ApiResponse, field: string, message: RegExp, what: string): void {
  t.equal(res.status, 400, `${what}: 400`);
  t.equal(res.body?.error?.code, 'VALIDATION_ERROR', `${what}: VALIDATION_ERROR`);
  t.ok(res.body?.error?.details?.some((d: { field: string; message: string }) => d.field === field && message.test(d.message)), `${what}: names ${field} (${JSON.stringify(res.body?.error?.details)})`);
}
const UNSTORABLE = /U\+0000 or an unpaired surrogate/;

const agentId = (await api('POST', '/api/agents', { token, body: { name: 'Support' } })).body.agent.id as number;
const kbId = (await api('POST', '/api/knowledge-bases', { token, body: { name: 'Help' } })).body.knowledgeBase.id as number;

t.test('U+0000 and lone surrogates in bodies: 400 naming the field, nothing stored', async (t) => {
  for (const bad of [NUL, LONE_HIGH, LONE_LOW]) {
    const label = JSON.stringify(bad);
    refuses(t, await api('POST', '/api/agents', { token, body: { name: bad } }), 'name', UNSTORABLE, `agent name ${label}`);
    refuses(t, await api('PATCH', `/api/agents/${agentId}`, { token, body: { systemPrompt: `Be brief.${bad}` } }), 'systemPrompt', UNSTORABLE, `agent prompt ${label}`);
    refuses(t, await api('PATCH', `/api/agents/${agentId}`, { token, body: { hours: { timezone: 'UTC', weekly: {}, outside: 'message', outsideMessage: bad } } }), 'hours.outsideMessage', UNSTORABLE, `nested ${label}`);
    refuses(t, await api('POST', '/api/api-tokens', { token, body: { name: bad } }), 'name', UNSTORABLE, `token name ${label}`);
    refuses(t, await api('POST', '/api/knowledge-bases', { token, body: { name: bad } }), 'name', UNSTORABLE, `base name ${label}`);
    refuses(t, await api('PATCH', `/api/knowledge-bases/${kbId}`, { token, body: { synonyms: [['esim', bad]] } }), 'synonyms.0.1', UNSTORABLE, `a synonym ${label}`);
    refuses(t, await api('POST', '/api/integrations', { token, body: { type: 'webchat', name: bad, agentId } }), 'name', UNSTORABLE, `integration name ${label}`);
    refuses(t, await api('POST', `/api/agents/${agentId}/evaluations`, { token, body: { cases: [{ question: bad, expect: [] }] } }), 'cases.0.question', UNSTORABLE, `evaluation question ${label}`);
    refuses(t, await api('POST', `/api/knowledge-bases/${kbId}/documents`, { token, body: { title: bad, content: 'Fine text.' } }), 'title', UNSTORABLE, `document title ${label}`);
    refuses(t, await api('POST', '/api/auth/register', { body: { email: `x${bad}@example.com`, password: 'correct horse', companyName: 'X' } }), 'email', UNSTORABLE, `register email ${label}`);
    refuses(t, await api('POST', '/api/auth/register', { body: { email: 'fine@example.com', password: 'correct horse', companyName: bad } }), 'companyName', UNSTORABLE, `company name ${label}`);
  }
  refuses(t, await api('POST', '/api/agents', { token, body: { name: 'ok', 'na\u0000me': 1 } }), 'na\\u0000me', UNSTORABLE, 'a key holding U+0000, named as JSON escapes it');
  const names = (await sql(svc.orm, 'select name from agents where company_id = ?', [owner.companyId])).map((r) => r.name);
  t.same(names, ['Support'], 'nothing was stored');
});

t.test('the same characters sent as UTF-16 or compressed JSON: 400 naming the field, nothing stored', async (t) => {
  // The API's parser looks for these escapes in the raw bytes before walking a body's values
  // (gateway/http/json-body.ts); UTF-16 spells them in other bytes, and gzip hides them.
  const send = (rawBody: Buffer, headers: Record<string, string>) => api('POST', '/api/agents', { token, rawBody, headers });
  for (const bad of [NUL, LONE_HIGH]) {
    const json = JSON.stringify({ name: bad });
    refuses(t, await send(Buffer.from(json, 'utf16le'), { 'content-type': 'application/json; charset=utf-16le' }), 'name', UNSTORABLE, `UTF-16 ${JSON.stringify(bad)}`);
    refuses(t, await send(gzipSync(json), { 'content-type': 'application/json', 'content-encoding': 'gzip' }), 'name', UNSTORABLE, `gzip ${JSON.stringify(bad)}`);
  }
  refuses(t, await send(Buffer.from('{"name":"a\\uD800b"}'), { 'content-type': 'application/json' }), 'name', UNSTORABLE, 'an upper-case escape');
  const names = (await sql(svc.orm, 'select name from agents where company_id = ?', [owner.companyId])).map((r) => r.name);
  t.same(names, ['Support'], 'nothing was stored');
});

t.test('the login email with a lone surrogate or U+0000: 400, not 500 (login-limits counted nothing)', async (t) => {
  for (const bad of [LONE_HIGH, LONE_LOW, NUL]) {
    refuses(t, await api('POST', '/api/auth/login', { body: { email: `ann${bad}@example.com`, password: 'whatever password' } }), 'email', UNSTORABLE, `login ${JSON.stringify(bad)}`);
  }
  refuses(t, await api('POST', '/api/auth/login', { body: { email: owner.email, password: `pass${LONE_HIGH}` } }), 'password', UNSTORABLE, 'a password with a lone surrogate');
  t.equal((await api('POST', '/api/auth/login', { body: { email: owner.email, password: owner.password } })).status, 200, 'the real login still works');
});

t.test('document content: U+0000 and lone surrogates are removed, the document kept', async (t) => {
  const res = await api('POST', `/api/knowledge-bases/${kbId}/documents`, { token, body: { title: 'Opening hours', content: `We open at nine\u0000.\n\nClosed on Sundays\ud800.`, format: 'text' } });
  t.equal(res.status, 201);
  const doc = await waitForDocument(api, token, kbId, res.body.document.id);
  t.equal(doc.status, 'ready');
  t.notOk(/\u0000/.test(doc.content), 'no U+0000 kept');
  t.ok(doc.content.isWellFormed(), 'no lone surrogate kept');
  t.match(doc.content, /We open at nine\./);
  const html = await api('POST', `/api/knowledge-bases/${kbId}/documents`, { token, body: { title: 'Page', content: `<h1>Hi\u0000</h1><p>There\udfff</p>`, format: 'html' } });
  t.equal(html.status, 201, 'an HTML document with U+0000 is kept too');
  refuses(t, await api('POST', `/api/knowledge-bases/${kbId}/documents`, { token, body: { title: 'Nothing', content: '\u0000\u0000' } }), 'content', /empty|blank/, 'content of only U+0000 is empty once cleaned');
});

t.test('query strings: a parameter holding U+0000 is 400 naming it', async (t) => {
  refuses(t, await api('GET', '/api/conversations?clientId=a%00b', { token }), 'clientId', UNSTORABLE, 'conversation filter');
  refuses(t, await api('GET', `/api/knowledge-bases/${kbId}/search?q=hours%00`, { token }), 'q', UNSTORABLE, 'search question');
  refuses(t, await api('GET', '/api/agents?limit=%00', { token }), 'limit', UNSTORABLE, 'a page parameter');
  refuses(t, await api('GET', '/api/leads?unknown=%00', { token }), 'unknown', UNSTORABLE, 'a parameter no route reads');
  t.equal((await api('GET', `/api/knowledge-bases/${kbId}/search?q=%F0%9F%92%A5%20hours`, { token })).status, 200, 'a well-formed emoji is fine');
});

t.test('numbers the database cannot store: 400 naming the field', async (t) => {
  const patch = (body: unknown) => api('PATCH', `/api/agents/${agentId}`, { token, body });
  refuses(t, await patch({ relevanceThreshold: 1e-46 }), 'relevanceThreshold', /single-precision/, 'relevanceThreshold 1e-46 (rounds to 0 in a real)');
  refuses(t, await patch({ relevanceThreshold: -1e-46 }), 'relevanceThreshold', /./, 'relevanceThreshold -1e-46');
  refuses(t, await patch({ relevanceThreshold: 2 }), 'relevanceThreshold', /./, 'relevanceThreshold over 1');
  for (const ok of [0, 1, 0.35, 1e-6]) t.equal((await patch({ relevanceThreshold: ok })).body.agent?.relevanceThreshold !== undefined, true, `relevanceThreshold ${ok} is stored`);
  const raw = (text: string) => api('PATCH', `/api/agents/${agentId}`, { token, rawBody: text, headers: { 'content-type': 'application/json' } });
  refuses(t, await raw('{"relevanceThreshold":1e999}'), 'relevanceThreshold', /./, 'a number that parses to Infinity');
  refuses(t, await raw('{"debounceMs":1e300}'), 'debounceMs', /./, 'a huge integer');
  refuses(t, await raw('{"knowledgeBaseId":100000000000000000000}'), 'knowledgeBaseId', /./, 'an id beyond int');
  refuses(t, await raw('{"knowledgeBaseId":2147483648}'), 'knowledgeBaseId', /./, 'an id one past int');
  refuses(t, await patch({ model: { maxConcurrency: 2 ** 53 } }), 'model.maxConcurrency', /./, 'a concurrency beyond int');
  refuses(t, await patch({ model: { pricing: { inputUsdPerMTok: 1e-46, outputUsdPerMTok: 1 } } }), 'model.pricing.inputUsdPerMTok', /./, 'a price of 1e-46');
  refuses(t, await api('POST', '/api/integrations', { token, body: { type: 'helpdesk', name: 'Desk', agentId: 2 ** 40 } }), 'agentId', /./, 'integration agentId beyond int');
  refuses(t, await api('PATCH', '/api/leads/1', { token, body: { stageId: 1e20 } }), 'stageId', /./, 'a lead stage beyond int');
  refuses(t, await api('GET', '/api/conversations?integrationId=9999999999', { token }), 'integrationId', /positive integer/, 'a query id beyond int');
  refuses(t, await api('GET', '/api/leads?stageId=2147483648', { token }), 'stageId', /positive integer/, 'a query id one past int');
  refuses(t, await api('GET', '/api/agents?offset=9999999999', { token }), 'offset', /./, 'an offset of ten digits');
  const [row] = await sql(svc.orm, 'select relevance_threshold from agents where id = ?', [agentId]);
  t.ok(row.relevance_threshold > 0, 'the agent kept a storable threshold');
});

t.test('free text has maximum lengths: a system prompt of 20000 characters, not one more', async (t) => {
  t.equal((await api('PATCH', `/api/agents/${agentId}`, { token, body: { systemPrompt: 'p'.repeat(20_000) } })).status, 200);
  refuses(t, await api('PATCH', `/api/agents/${agentId}`, { token, body: { systemPrompt: 'p'.repeat(20_001) } }), 'systemPrompt', /at most 20000 characters/, 'a prompt of 20001');
  refuses(t, await api('POST', '/api/agents', { token, body: { name: 'n'.repeat(201) } }), 'name', /at most 200/, 'an agent name of 201');
  refuses(t, await api('POST', '/api/api-tokens', { token, body: { name: 'n'.repeat(101) } }), 'name', /at most 100/, 'a token name of 101');
  refuses(t, await api('PATCH', `/api/agents/${agentId}`, { token, body: { fallbackMessage: 'f'.repeat(1001) } }), 'fallbackMessage', /at most 1000/, 'a fallback text of 1001');
});
