import t from 'tap';
import { startTestService, signUp } from '../support/service.js';

const svc = await startTestService(t, 'account');
const { api } = svc;

t.test('a new company has 5.00 USD of credit from a signup_bonus entry', async (t) => {
  const s = await signUp(api);
  const res = await api('GET', '/api/billing', { token: s.token });
  t.equal(res.status, 200);
  t.equal(res.body.billing.balanceUsd, '5.00');
  t.equal(res.body.billing.ledger.length, 1);
  t.match(res.body.billing.ledger[0], { id: Number, kind: 'signup_bonus', amountUsd: '5.00', balanceAfterUsd: '5.00', at: /Z$/ });
});

t.test('a new company has the default Sales pipeline with 6 ordered stages', async (t) => {
  const s = await signUp(api);
  const res = await api('GET', '/api/pipelines', { token: s.token });
  t.equal(res.status, 200);
  t.equal(res.body.pipelines.length, 1);
  const p = res.body.pipelines[0];
  t.match(p, { id: Number, name: 'Sales', isDefault: true });
  t.same(
    p.stages.map((x: any) => [x.name, x.position, x.isWon, x.isLost]),
    [['New lead', 0, false, false], ['Contacted', 1, false, false], ['Qualified', 2, false, false], ['Proposal', 3, false, false], ['Won', 4, true, false], ['Lost', 5, false, true]],
  );
  const other = await signUp(api);
  const theirs = await api('GET', '/api/pipelines', { token: other.token });
  t.not(theirs.body.pipelines[0].id, p.id, 'each company has its own');
});

t.test('billing and pipelines need a credential', async (t) => {
  t.equal((await api('GET', '/api/billing')).status, 401);
  t.equal((await api('GET', '/api/pipelines')).status, 401);
});
