import t from 'tap';
import { signUp, startTestService } from '../support/service.js';
import { join } from '../support/team.js';

/**
 * Canned replies (.scratch/team-api.md § Canned replies): admins write them, every user lists
 * and searches them (by shortcut, case ignored, in the shortcut or the text); a shortcut is one
 * word, unique in the company; the quota; another company's are not there.
 */
const QUOTA = 3;
const svc = await startTestService(t, 'canned_replies', { env: { QUOTA_CANNED_REPLIES: String(QUOTA) } });
const { api } = svc;
const owner = await signUp(api, 'Canned Co');
const operator = await join(api, owner.token, 'operator');

const create = (body: Record<string, unknown>, token = owner.token) => api('POST', '/api/canned-replies', { token, body });
const list = async (query = '', token = owner.token) => {
  const res = await api('GET', `/api/canned-replies${query}`, { token });
  if (res.status !== 200) throw new Error(`list: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
};

t.test('made by an admin, listed by shortcut for everyone, searched, changed, deleted', async (t) => {
  const hours = await create({ shortcut: 'hours', text: 'We open at nine, Monday to Saturday.' });
  t.equal(hours.status, 201, JSON.stringify(hours.body));
  t.match(hours.body.cannedReply, { id: Number, shortcut: 'hours', text: 'We open at nine, Monday to Saturday.', createdAt: /Z$/, updatedAt: /Z$/ });
  t.equal((await create({ shortcut: 'Доставка_2', text: 'Доставка за 2 дня; 100% гарантия.' })).status, 201, 'a shortcut of letters of any script, digits and _');
  t.equal((await create({ shortcut: 'address', text: 'Main street 1' })).status, 201);

  const all = await list('', operator.token);
  t.same(all.cannedReplies.map((r: any) => r.shortcut), ['address', 'hours', 'Доставка_2'], 'an operator lists them, by shortcut');
  t.match(all, { total: 3, limit: 50, offset: 0 });
  t.same((await list('?q=HOUR')).cannedReplies.map((r: any) => r.shortcut), ['hours'], 'q matches the shortcut, case ignored');
  t.same((await list('?q=saturday')).cannedReplies.map((r: any) => r.shortcut), ['hours'], 'and the text');
  t.same((await list('?q=100%25')).cannedReplies.map((r: any) => r.shortcut), ['Доставка_2'], '% is a character, not a wildcard');
  t.same((await list('?q=_')).cannedReplies.map((r: any) => r.shortcut), ['Доставка_2'], 'so is _');
  t.same((await list('?q=nothing')).cannedReplies, []);
  t.match(await list('?limit=1&offset=1'), { cannedReplies: [{ shortcut: 'hours' }], total: 3, limit: 1, offset: 1 });

  const id = hours.body.cannedReply.id;
  const changed = await api('PATCH', `/api/canned-replies/${id}`, { token: owner.token, body: { text: 'We open at ten.' } });
  t.match(changed, { status: 200, body: { cannedReply: { id, shortcut: 'hours', text: 'We open at ten.' } } });
  t.ok(changed.body.cannedReply.updatedAt >= hours.body.cannedReply.updatedAt);
  t.match(await api('PATCH', `/api/canned-replies/${id}`, { token: owner.token, body: { shortcut: 'opening' } }), { status: 200, body: { cannedReply: { shortcut: 'opening', text: 'We open at ten.' } } });
  t.equal((await api('DELETE', `/api/canned-replies/${id}`, { token: owner.token })).status, 204);
  t.equal((await api('DELETE', `/api/canned-replies/${id}`, { token: owner.token })).status, 404, 'deleted once');
  t.equal((await api('PATCH', `/api/canned-replies/${id}`, { token: owner.token, body: { text: 'x' } })).status, 404);
  t.equal((await list()).total, 2);
});

t.test('operators read only; a taken shortcut is 409; bad input is 400', async (t) => {
  const [reply] = (await list()).cannedReplies;
  for (const [method, path, body] of [['POST', '/api/canned-replies', { shortcut: 'op', text: 'x' }], ['PATCH', `/api/canned-replies/${reply.id}`, { text: 'x' }], ['DELETE', `/api/canned-replies/${reply.id}`, undefined]] as const) {
    t.match(await api(method, path, { token: operator.token, body }), { status: 403, body: { error: { code: 'FORBIDDEN' } } }, `${method} by an operator`);
  }
  t.match(await create({ shortcut: 'address', text: 'again' }), { status: 409, body: { error: { code: 'CONFLICT' } } }, 'a taken shortcut');
  const other = (await list()).cannedReplies.find((r: any) => r.shortcut !== 'address');
  t.match(await api('PATCH', `/api/canned-replies/${other.id}`, { token: owner.token, body: { shortcut: 'address' } }), { status: 409 }, 'renamed onto a taken one');

  const bad = [
    {}, { shortcut: 'a b', text: 'x' }, { shortcut: '/hi', text: 'x' }, { shortcut: '', text: 'x' }, { shortcut: 'x'.repeat(33), text: 'x' },
    { shortcut: 'ok', text: '' }, { shortcut: 'ok', text: '   ' }, { shortcut: 'ok', text: 'x'.repeat(4097) }, { shortcut: 'ok', text: 'a\u0000' },
    { shortcut: 'ok', text: '\ud800' }, { shortcut: 7, text: 'x' }, { shortcut: 'ok', text: 'x', extra: 1 },
  ];
  for (const body of bad) t.match(await create(body), { status: 400, body: { error: { code: 'VALIDATION_ERROR' } } }, JSON.stringify(body).slice(0, 60));
  t.match(await api('PATCH', `/api/canned-replies/${reply.id}`, { token: owner.token, body: { shortcut: 'with space' } }), { status: 400 });
  for (const q of ['?q=' + 'x'.repeat(201), '?q=a&q=b', '?q=%00', '?limit=0']) {
    t.match(await api('GET', `/api/canned-replies${q}`, { token: owner.token }), { status: 400, body: { error: { code: 'VALIDATION_ERROR' } } }, q.slice(0, 30));
  }
  for (const path of ['/api/canned-replies/abc', '/api/canned-replies/0', '/api/canned-replies/99999999999']) {
    t.equal((await api('DELETE', path, { token: owner.token })).status, 404, path);
  }
  t.equal((await list()).total, 2, 'nothing was stored');
});

t.test("another company's canned replies are not there; the quota is per company", async (t) => {
  const other = await signUp(api, 'Other Co');
  t.same((await list('', other.token)).cannedReplies, [], 'none of the first company');
  const [mine] = (await list()).cannedReplies;
  t.equal((await api('PATCH', `/api/canned-replies/${mine.id}`, { token: other.token, body: { text: 'stolen' } })).status, 404);
  t.equal((await api('DELETE', `/api/canned-replies/${mine.id}`, { token: other.token })).status, 404);
  t.equal((await create({ shortcut: 'address', text: 'their own' }, other.token)).status, 201, 'the same shortcut in another company');

  t.equal((await create({ shortcut: 'third', text: 'x' })).status, 201);
  t.match(await create({ shortcut: 'fourth', text: 'x' }), { status: 403, body: { error: { code: 'QUOTA_EXCEEDED', details: [{ field: 'cannedReplies', message: `limit ${QUOTA}` }] } } });
  t.equal((await list()).total, QUOTA);
  t.equal((await list('', other.token)).total, 1);
});
