import t from 'tap';
import { deliveredAs } from '../../lib/channels/helpdesk/history.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { startRepeatingModel } from '../support/repeating-model.js';
import { signUp, startTestService } from '../support/service.js';
import { dropNatsPrefixAtEnd } from '../support/webhooks.js';
import { createHelpdeskIntegration, eventually, messageEnvelope, publishEnvelope, sql, startTestWorker, untilIdle, waitForPartitions } from '../support/worker.js';

/**
 * A send whose outcome is unknown (the connection was cut, the answer never came, the
 * helpdesk answered 5xx) is reconciled against the helpdesk's history before anything is
 * sent again (contract.md § Delivery): a customer is never answered twice, never left
 * unanswered, even when their replies have identical texts.
 */
t.test('matching a send against the history', async (t) => {
  const at = new Date('2026-11-23T10:00:10Z');
  const row = { id: '41', text: 'A human colleague will take over shortly.', sendingAt: at };
  const msg = (id: number, created: string, extra: Record<string, unknown> = {}) => ({ id, text: row.text, type: 'to_client', created, ...extra });
  t.equal(deliveredAs(row, [msg(7, '2026-11-23T10:00:11 UTC')], new Set()), '7', 'same text, after the send began');
  t.equal(deliveredAs(row, [msg(7, '2026-11-23T10:00:06 UTC')], new Set()), '7', 'within the 5 s clock tolerance');
  t.equal(deliveredAs(row, [msg(7, '2026-11-23T10:00:01 UTC')], new Set()), null, 'too early: an older message with the same text');
  t.equal(deliveredAs(row, [msg(7, '2026-11-23T10:00:11 UTC')], new Set(['7'])), null, 'already recorded for another row');
  t.equal(deliveredAs(row, [msg(8, '2026-11-23T10:00:12 UTC'), msg(7, '2026-11-23T10:00:11 UTC')], new Set()), '7', 'the earliest candidate');
  t.equal(deliveredAs(row, [msg(7, '2026-11-23T10:00:11 UTC', { external_id: '40' })], new Set()), null, 'tagged as another row of ours');
  t.equal(deliveredAs(row, [msg(9, '2026-11-23T09:00:00 UTC', { external_id: 41 })], new Set()), '9', 'tagged as this row, whenever');
  t.equal(deliveredAs(row, [{ ...msg(7, '2026-11-23T10:00:11 UTC'), text: 'something else' }], new Set()), null, 'other text');
  t.equal(deliveredAs(row, [{ ...msg(7, '1795423211'), created: 1795423211 }], new Set()), null, 'Unix seconds are read (and this one is too early)');
});

const svc = await startTestService(t, 'reconcile', { env: { PARTITIONS: '2' } });
dropNatsPrefixAtEnd(t, svc);
const helpdesk = await startChat2DeskStub(t);
const worker = await startTestWorker(t, svc, { workerId: 'reconcile', options: { outbox: { helpdeskTimeoutMs: 800, maxReconcileAttempts: 4 } } });
await waitForPartitions([worker], 2);
const user = await signUp(svc.api, 'Reconcile Co');
// Its replies repeat the question: the same question twice gets two identical replies.
const model = await startRepeatingModel(t);
const integration = await createHelpdeskIntegration(svc, user, helpdesk, 'Helpdesk', await model.createAgent(svc.api, user.token));
const sends = (clientId: string) => helpdesk.requests.filter((r) => r.method === 'POST' && r.path === '/v1/messages' && r.body?.client_id === clientId);
const rowsOf = (clientId: string) =>
  sql(svc.orm, `select o.status, o.external_id, o.last_error, o.attempts from outbox o join conversations c on c.id = o.conversation_id where c.client_id = ? order by o.id`, [clientId]);

t.test('the connection is cut before the helpdesk carried the send out: reconciled, then sent once', async (t) => {
  let cut = 0;
  helpdesk.handle((r) => (r.path === '/v1/messages' && r.method === 'POST' && r.body?.client_id === 'cut' && cut++ === 0 ? { status: 0, raw: (res) => res.socket?.destroy() } : undefined));
  t.teardown(() => helpdesk.handle(null));
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'cut', 'hello'));
  await helpdesk.waitFor(() => helpdesk.delivered('cut').length === 1);
  await untilIdle(svc);
  t.equal(helpdesk.delivered('cut').length, 1, 'delivered once');
  t.equal(sends('cut').length, 2, 'sent again after the history showed nothing');
  t.ok(helpdesk.requests.some((r) => r.method === 'GET' && r.path === '/v1/messages' && r.query.get('client_id') === 'cut'), 'the history was read first');
  t.match(await rowsOf('cut'), [{ status: 'sent', external_id: String(helpdesk.delivered('cut')[0]!.id) }]);
});

t.test('the helpdesk carried the send out but its answer never came: not sent again, recorded with its id', async (t) => {
  helpdesk.handle((r) => (r.path === '/v1/messages' && r.method === 'POST' && r.body?.client_id === 'lost-answer' ? { status: 0, deliver: true, raw: (res) => res.socket?.destroy() } : undefined));
  t.teardown(() => helpdesk.handle(null));
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'lost-answer', 'hello'));
  const [row] = await eventually(async () => {
    const rows = await rowsOf('lost-answer');
    return rows[0]?.status === 'sent' ? rows : null;
  }, 10_000, 'the row reconciled');
  await untilIdle(svc);
  t.equal(sends('lost-answer').length, 1, 'one send');
  t.equal(helpdesk.delivered('lost-answer').length, 1, 'one message for the customer');
  t.equal(row.external_id, String(helpdesk.delivered('lost-answer')[0]!.id), 'the remote id found in the history');
});

t.test('identical texts: the earlier reply\'s message is never mistaken for the lost one', async (t) => {
  // Two replies with the same text; the second is carried out, its answer lost: found, not repeated.
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'twin', 'same question'));
  await helpdesk.waitFor(() => helpdesk.delivered('twin').length === 1);
  await untilIdle(svc);
  helpdesk.handle((r) => (r.path === '/v1/messages' && r.method === 'POST' && r.body?.client_id === 'twin' ? { status: 0, deliver: true, raw: (res) => res.socket?.destroy() } : undefined));
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'twin', 'same question'));
  await eventually(async () => (await rowsOf('twin')).filter((r) => r.status === 'sent').length === 2, 10_000, 'both rows sent');
  await untilIdle(svc);
  helpdesk.handle(null);
  const delivered = helpdesk.delivered('twin');
  t.equal(delivered.length, 2, 'two messages, as two were asked');
  t.equal(delivered[0]!.text, delivered[1]!.text, 'with identical texts');
  t.same((await rowsOf('twin')).map((r) => r.external_id), delivered.map((m) => String(m.id)), 'each row recorded with its own message');

  // A third identical reply whose send never arrived: the two earlier messages do not count for it.
  let cut = 0;
  helpdesk.handle((r) => (r.path === '/v1/messages' && r.method === 'POST' && r.body?.client_id === 'twin' && cut++ === 0 ? { status: 0, raw: (res) => res.socket?.destroy() } : undefined));
  t.teardown(() => helpdesk.handle(null));
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'twin', 'same question'));
  await helpdesk.waitFor(() => helpdesk.delivered('twin').length === 3);
  await untilIdle(svc);
  t.equal(helpdesk.delivered('twin').length, 3, 'the third arrives, once');
});

t.test('a history that cannot be read: never a blind resend; "delivery uncertain" when the budget ends', async (t) => {
  helpdesk.handle((r) => {
    if (r.body?.client_id === 'blind' && r.method === 'POST') return { status: 504 };
    if (r.method === 'GET' && r.path === '/v1/messages' && r.query.get('client_id') === 'blind') return { status: 500 };
    return undefined;
  });
  t.teardown(() => helpdesk.handle(null));
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'blind', 'hello'));
  const [row] = await eventually(async () => {
    const rows = await rowsOf('blind');
    return rows[0]?.status === 'failed' ? rows : null;
  }, 20_000, 'the row given up');
  t.match(row.last_error, /^delivery uncertain: /);
  t.equal(sends('blind').length, 1, 'sent once, never again while its fate was unknown');
  const reads = helpdesk.requests.filter((r) => r.method === 'GET' && r.query.get('client_id') === 'blind').length;
  t.ok(reads >= 3, `the history was tried ${reads} times`);
  const msgs = await svc.api('GET', `/api/conversations/${(await sql(svc.orm, `select id from conversations where client_id = 'blind'`))[0].id}/messages`, { token: user.token });
  t.match(msgs.body.messages.find((m: { role: string }) => m.role === 'agent'), { delivery: 'failed', deliveryStatus: 'failed', deliveryError: { code: 'delivery_uncertain', message: /^delivery uncertain/ } }, 'visible to operators');
});
