import t from 'tap';
import { partitionOf } from '../../lib/streams.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { startRepeatingModel } from '../support/repeating-model.js';
import { signUp, startTestService } from '../support/service.js';
import {
  createHelpdeskIntegration,
  eventually,
  messageEnvelope,
  publishEnvelope,
  sql,
  startTestWorker,
  statusEnvelope,
  waitForPartitions,
} from '../support/worker.js';

const svc = await startTestService(t, 'engine', { env: { PARTITIONS: '8' } });
const stub = await startChat2DeskStub(t);
const user = await signUp(svc.api, 'Engine Co');
const model = await startRepeatingModel(t, { delayMs: () => Math.floor(Math.random() * 15) });
const integration = await createHelpdeskIntegration(svc, user, stub, 'Helpdesk', await model.createAgent(svc.api, user.token));
const worker = await startTestWorker(t, svc, { workerId: 'engine-1' });
await waitForPartitions([worker], 8);

const sentTo = (clientId: string) => stub.sent().filter((b) => b.client_id === clientId);
const conversationsOf = (clientId: string) =>
  sql(svc.orm, 'select * from conversations where integration_id = ? and client_id = ? order by id', [integration.id, clientId]);
const transitionsOf = (conversationId: number) =>
  sql(svc.orm, 'select * from conversation_transitions where conversation_id = ? order by seq', [conversationId]);

t.test('a customer message gets exactly one reply with the right body and header', async (t) => {
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'c-one', 'hello there', { channelId: '77', transport: 'whatsapp' }));
  await stub.waitFor(() => sentTo('c-one').length >= 1);
  await new Promise((r) => setTimeout(r, 300));
  const sent = stub.requests.filter((r) => r.method === 'POST' && r.path === '/v1/messages' && r.body?.client_id === 'c-one');
  t.equal(sent.length, 1, 'one reply');
  const [outbox] = await sql(svc.orm, `select o.id::text from outbox o join conversations c on c.id = o.conversation_id where c.client_id = 'c-one'`);
  t.same(sent[0]!.body, { client_id: 'c-one', text: 'echo: hello there', transport: 'whatsapp', channel_id: 77, type: 'to_client', external_id: outbox.id }, 'external_id is our outbox row id; a numeric channel id goes out as a number');
  t.equal(sent[0]!.headers.authorization, stub.token, 'bare token, no Bearer');
  const [conv] = await conversationsOf('c-one');
  t.equal(conv.status, 'active');
  t.same(conv.state, { active: 'idle' });
  const msgs = await sql(svc.orm, 'select seq, role, text, delivery, external_id from conversation_messages where conversation_id = ? order by seq', [conv.id]);
  t.match(msgs, [
    { seq: 1, role: 'customer', text: 'hello there' },
    { seq: 2, role: 'agent', text: 'echo: hello there', delivery: 'sent', external_id: /^\d+$/ },
  ]);
  const trans = await transitionsOf(conv.id);
  t.same(trans.map((x) => [x.event, x.to_state]), [
    ['customer.message', { active: 'answering' }],
    ['xstate.done.actor.agent', { active: 'idle' }],
  ]);
  t.equal(trans[1].actions[0].type, 'agent_reply');
});

t.test('the same envelope delivered twice (new msgID, same idempotency key) gives one reply', async (t) => {
  const env = messageEnvelope(integration, 'c-dup', 'only once please');
  await publishEnvelope(svc.nc, svc.config, env, 'first-msg-id');
  await stub.waitFor(() => sentTo('c-dup').length >= 1);
  // A late helpdesk retry, past JetStream's dedup window: new Nats-Msg-Id, same key.
  const again = await publishEnvelope(svc.nc, svc.config, { ...env, receivedAt: new Date().toISOString() }, 'late-retry-msg-id');
  t.equal(again.duplicate, false, 'JetStream did not catch it');
  await eventually(async () => (await sql(svc.orm, `select 1 from inbound_receipts where idempotency_key = ?`, [env.idempotencyKey])).length === 1);
  // and the quick retry JetStream catches
  const quick = await publishEnvelope(svc.nc, svc.config, env, 'first-msg-id');
  t.equal(quick.duplicate, true);
  await new Promise((r) => setTimeout(r, 800));
  t.equal(sentTo('c-dup').length, 1, 'exactly one reply');
  const [conv] = await conversationsOf('c-dup');
  const customer = await sql(svc.orm, `select * from conversation_messages where conversation_id = ? and role = 'customer'`, [conv.id]);
  t.equal(customer.length, 1, 'stored once');
});

t.test('per-conversation order under many messages', async (t) => {
  const n = 25;
  const clients = ['c-order-a', 'c-order-b', 'c-order-c'];
  await Promise.all(
    clients.map(async (c) => {
      for (let i = 1; i <= n; i++) await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, c, `${c} #${i}`));
    }),
  );
  for (const c of clients) {
    const conv = await eventually(async () => {
      const [row] = await conversationsOf(c);
      if (!row) return null;
      const m = await sql(svc.orm, `select seq, role, text from conversation_messages where conversation_id = ? order by seq`, [row.id]);
      return m.length === 2 * n ? { row, m } : null;
    }, 30_000, `${c} answered`);
    const customer = conv.m.filter((x) => x.role === 'customer').map((x) => x.text);
    t.same(customer, Array.from({ length: n }, (_, i) => `${c} #${i + 1}`), `${c}: customer messages stored in order`);
    t.same(conv.m.map((x) => x.role), Array.from({ length: 2 * n }, (_, i) => (i % 2 === 0 ? 'customer' : 'agent')), `${c}: each answered before the next`);
    await stub.waitFor(() => sentTo(c).length === n, 15_000);
    t.same(sentTo(c).map((b) => b.text), Array.from({ length: n }, (_, i) => `echo: ${c} #${i + 1}`), `${c}: replies sent in order`);
  }
});

t.test('close_dialog / close_request close the session; the next message opens a new one', async (t) => {
  for (const hook of ['close_dialog', 'close_request'] as const) {
    const client = `c-${hook}`;
    await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, client, 'hi', { requestId: 500 + hook.length, dialogId: 900 }));
    await stub.waitFor(() => sentTo(client).length === 1);
    await publishEnvelope(svc.nc, svc.config, statusEnvelope(integration, hook, 500 + hook.length, { dialogId: 900, clientId: client }));
    const [closed] = await eventually(async () => {
      const r = await conversationsOf(client);
      return r[0]?.status === 'closed' ? r : null;
    });
    t.equal(closed.state, 'closed');
    t.ok(closed.closed_at, 'closed_at set');
    const trans = await transitionsOf(closed.id);
    const last = trans[trans.length - 1];
    t.equal(last.event, `helpdesk.${hook}`);
    t.equal(last.to_state, 'closed');
    t.match(last.actions, [{ type: 'session_close', params: { origin: 'helpdesk', event: `helpdesk.${hook}`, requestId: 500 + hook.length } }]);

    await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, client, 'back again'));
    await stub.waitFor(() => sentTo(client).length === 2);
    const rows = await conversationsOf(client);
    t.equal(rows.length, 2, 'a new session');
    t.equal(rows[1].status, 'active');
    t.not(rows[1].id, rows[0].id);
  }
});

t.test('dialog_transferred from active and from paused → paused.transferred; no bot reply afterwards', async (t) => {
  // from active
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'c-tr-a', 'hi', { requestId: 601 }));
  await stub.waitFor(() => sentTo('c-tr-a').length === 1);
  await publishEnvelope(svc.nc, svc.config, statusEnvelope(integration, 'dialog_transferred', 601, { dialogId: 6010, clientId: 'c-tr-a' }));
  // from paused (the agent hands off when asked for a human)
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'c-tr-p', 'I want a human', { requestId: 602 }));
  await stub.waitFor(() => sentTo('c-tr-p').length === 1);
  t.equal(sentTo('c-tr-p')[0].text, 'A human colleague will take over shortly.');
  const paused = await eventually(async () => (await conversationsOf('c-tr-p'))[0]?.status === 'paused');
  t.ok(paused);
  t.same((await conversationsOf('c-tr-p'))[0].state, { paused: { handedOver: 'idle' } });
  await publishEnvelope(svc.nc, svc.config, statusEnvelope(integration, 'dialog_transferred', 602, { dialogId: 6020, clientId: 'c-tr-p' }));

  for (const [client, requestId, dialogId] of [['c-tr-a', 601, 6010], ['c-tr-p', 602, 6020]] as const) {
    const conv = await eventually(async () => {
      const [c] = await conversationsOf(client);
      return c.snapshot.context.transfers.length === 1 ? c : null;
    });
    t.same(conv.state, { paused: 'transferred' }, `${client} transferred`);
    t.match(conv.snapshot.context.transfers, [{ requestId, dialogId }]);
    t.equal(conv.snapshot.context.handoffReason, 'dialog_transferred');
    const trans = await transitionsOf(conv.id);
    t.match(trans[trans.length - 1].actions, [{ type: 'session_transfer_external', params: { origin: 'helpdesk', requestId, dialogId } }]);
    await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, client, 'anyone there?'));
  }
  await eventually(async () => {
    const r = await sql(svc.orm, `select count(*)::int as n from conversation_messages m join conversations c on c.id = m.conversation_id where c.client_id in ('c-tr-a', 'c-tr-p') and m.text = 'anyone there?'`);
    return r[0].n === 2;
  });
  await new Promise((r) => setTimeout(r, 400));
  t.equal(sentTo('c-tr-a').length, 1, 'no bot reply after the transfer');
  t.equal(sentTo('c-tr-p').length, 1, 'no bot reply after the transfer');
});

t.test('a status event with only request_id reaches the session that saw it', async (t) => {
  // Pick a client whose partition differs from the request's, so the event is re-routed.
  let client = 'c-route-0';
  for (let i = 0; partitionOf(integration.id, client, 8) === partitionOf(integration.id, 'request:777', 8); i++) client = `c-route-${i}`;
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, client, 'hello', { requestId: 777, dialogId: 7770 }));
  await stub.waitFor(() => sentTo(client).length === 1);
  await publishEnvelope(svc.nc, svc.config, statusEnvelope(integration, 'close_request', 777));
  const conv = await eventually(async () => {
    const [c] = await conversationsOf(client);
    return c.status === 'closed' ? c : null;
  });
  t.equal(conv.state, 'closed');

  // and by dialog id only, same partition or not
  let client2 = 'c-route2-0';
  for (let i = 0; partitionOf(integration.id, client2, 8) !== partitionOf(integration.id, 'request:778', 8); i++) client2 = `c-route2-${i}`;
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, client2, 'hello', { requestId: 778 }));
  await stub.waitFor(() => sentTo(client2).length === 1);
  await publishEnvelope(svc.nc, svc.config, statusEnvelope(integration, 'dialog_transferred', 778, { dialogId: 7780 }));
  const conv2 = await eventually(async () => {
    const [c] = await conversationsOf(client2);
    return c.status === 'paused' ? c : null;
  });
  t.same(conv2.state, { paused: 'transferred' });
});

t.test('unknown request / dialog ids are recorded and acked without error', async (t) => {
  const env = statusEnvelope(integration, 'close_dialog', 424242, { dialogId: 1 });
  await publishEnvelope(svc.nc, svc.config, env);
  const receipt = await eventually(async () => (await sql(svc.orm, 'select * from inbound_receipts where idempotency_key = ?', [env.idempotencyKey]))[0]);
  t.equal(receipt.outcome, 'unknown_session');
  const withClient = statusEnvelope(integration, 'close_request', 434343, { clientId: 'never-seen' });
  await publishEnvelope(svc.nc, svc.config, withClient);
  const r2 = await eventually(async () => (await sql(svc.orm, 'select * from inbound_receipts where idempotency_key = ?', [withClient.idempotencyKey]))[0]);
  t.equal(r2.outcome, 'unknown_session');
  // nothing left pending on the consumers
  await eventually(async () => {
    const { jetstreamManager } = await import('@nats-io/jetstream');
    const jsm = await jetstreamManager(svc.nc);
    const info = await jsm.streams.info(`${svc.config.natsPrefix}_INBOUND`);
    return info.state.messages === 0;
  }, 10_000, 'stream drained (work queue: every message acked)');
  t.pass('stream drained');
});

t.test('idle conversations are evicted from memory', async (t) => {
  await eventually(async () => worker.activeConversations() === 0, 5000, 'no conversation left in memory');
  t.equal(worker.activeConversations(), 0);
});
