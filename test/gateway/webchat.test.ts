import { SignJWT } from 'jose';
import t from 'tap';
import { signUp, startTestService } from '../support/service.js';
import { dropNatsPrefixAtEnd, startPeerGateway } from '../support/webhooks.js';
import { startRepeatingModel } from '../support/repeating-model.js';
import { join } from '../support/team.js';
import { eventually, sql, startTestWorker, waitForPartitions } from '../support/worker.js';
import { streamNames } from '../../lib/streams.js';
import { publishWebchatPush } from '../../lib/webchat-pushes.js';
import { createWebchatIntegration, openChat, startWebchatGateway, UpgradeRefused, type ChatClient, type Frame, type OpenChatOptions } from '../support/webchat.js';

const svc = await startTestService(t, 'webchat', { env: { PARTITIONS: '4' } });
dropNatsPrefixAtEnd(t, svc);
const user = await signUp(svc.api, 'Webchat Co');
const model = await startRepeatingModel(t, { delayMs: (text) => (text.startsWith('slow') ? 250 : 0) });
const chat = await createWebchatIntegration(svc.api, user.token, { agentId: await model.createAgent(svc.api, user.token) });
const worker = await startTestWorker(t, svc, { workerId: 'webchat-1' });
await waitForPartitions([worker], 4);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** A connected, welcomed visitor. */
async function visitor(tt: Parameters<typeof openChat>[0], hello: Record<string, unknown> = {}, url = svc.url, integrationId = chat.id) {
  const c = await openChat(tt, url, integrationId);
  const welcome = await c.hello(hello);
  return { c, welcome };
}

async function say(c: ChatClient, clientMessageId: string, text: string) {
  c.send({ type: 'message', clientMessageId, text });
  const ack = await c.next('ack');
  return ack;
}

t.test('hello, welcome, message, ack, the agent reply', async (t) => {
  const { c, welcome } = await visitor(t);
  t.match(welcome, { type: 'welcome', visitorId: UUID, visitorToken: String, conversationId: null }, 'no session before the first message');

  c.send({ type: 'ping' });
  t.same(await c.next(), { type: 'pong' });

  c.send({ type: 'message', clientMessageId: 'm-1', text: 'hello there' });
  const session = await c.next();
  t.match(session, { type: 'welcome', visitorId: welcome.visitorId, visitorToken: String, conversationId: Number }, 'the session the message opened is announced');
  const conversationId = session.conversationId;
  t.same(await c.next(), { type: 'ack', clientMessageId: 'm-1', seq: 1, conversationId }, 'ack once stored, with its seq and session');
  const [conv] = await sql(svc.orm, 'select * from conversations where id = ?', [conversationId]);
  t.match(conv, { channel: 'webchat', client_id: welcome.visitorId, status: 'active', integration_id: chat.id, company_id: chat.companyId });
  const reply = await c.next();
  t.match(reply, { type: 'message', seq: 2, role: 'agent', text: 'echo: hello there' });
  t.ok(!Number.isNaN(Date.parse(reply.at)), 'at is a timestamp');
  t.same(Object.keys(reply).sort(), ['at', 'name', 'role', 'seq', 'text', 'type']);
  t.equal(reply.name, null, "the agent's message names no one");
  t.same(await c.drain(300), [], 'the own message is not echoed back');

  const [receipt] = await sql(svc.orm, 'select * from inbound_receipts where integration_id = ? and idempotency_key = ?', [chat.id, `webchat:${welcome.visitorId}:m-1`]);
  t.equal(receipt?.conversation_id, conversationId, 'processed through the engine with the clientMessageId as idempotency key');
  const msgs = await sql(svc.orm, 'select seq, role, external_id, delivery from conversation_messages where conversation_id = ? order by seq', [conversationId]);
  t.same(msgs, [
    { seq: 1, role: 'customer', external_id: 'm-1', delivery: null },
    { seq: 2, role: 'agent', external_id: null, delivery: 'sent' },
  ]);

  const again = await visitor(t, { visitorToken: welcome.visitorToken });
  t.equal(again.welcome.visitorId, welcome.visitorId, 'the token resumes the same visitor');
  t.equal(again.welcome.conversationId, conversationId, 'and the same open session');
  t.same((await again.c.drain(500)).map((f) => [f.seq, f.role, f.text]), [[1, 'customer', 'hello there'], [2, 'agent', 'echo: hello there']], 'no lastSeq: the whole session is replayed');
});

t.test('resume: what an operator wrote while the visitor was away, exactly once', async (t) => {
  const { c, welcome: first } = await visitor(t);
  const { conversationId } = await say(c, 'r-1', 'first');
  const welcome: Frame = { ...first, conversationId };
  t.match(await c.next('message'), { seq: 2, role: 'agent' });
  await c.close();

  for (const text of ['an operator here', 'still there?']) {
    const res = await svc.api('POST', `/api/conversations/${welcome.conversationId}/messages`, { token: user.token, body: { text } });
    t.equal(res.status, 200);
  }
  await eventually(async () => (await sql(svc.orm, `select 1 from conversation_messages where conversation_id = ? and role = 'operator' and delivery = 'sent'`, [welcome.conversationId])).length === 2);

  const back = await visitor(t, { visitorToken: welcome.visitorToken, lastSeq: 2, conversationId: welcome.conversationId });
  t.equal(back.welcome.conversationId, welcome.conversationId);
  t.same(
    (await back.c.drain(600)).map((f) => (f.type === 'message' ? [f.type, f.seq, f.role, f.text] : [f.type, f.status])),
    [['message', 3, 'operator', 'an operator here'], ['message', 4, 'operator', 'still there?'], ['status', 'paused']],
    'exactly the missed messages, in order, once; then the status (the operator took the conversation over)',
  );

  // Live: an operator reply reaches the open socket.
  await svc.api('POST', `/api/conversations/${welcome.conversationId}/messages`, { token: user.token, body: { text: 'live one' } });
  t.match(await back.c.next(), { type: 'message', seq: 5, role: 'operator', text: 'live one' });

  // Status frames: resume, pause, resume, close; then a message opens a new session.
  t.equal((await svc.api('POST', `/api/conversations/${welcome.conversationId}/resume`, { token: user.token })).status, 200);
  t.same(await back.c.next(), { type: 'status', status: 'active' });
  t.equal((await svc.api('POST', `/api/conversations/${welcome.conversationId}/pause`, { token: user.token })).status, 200);
  t.same(await back.c.next(), { type: 'status', status: 'paused' });
  await say(back.c, 'r-2', 'anyone?');
  t.same(await back.c.drain(500), [], 'paused: stored, no bot reply');
  t.equal((await svc.api('POST', `/api/conversations/${welcome.conversationId}/resume`, { token: user.token })).status, 200);
  t.same(await back.c.next(), { type: 'status', status: 'active' });
  t.equal((await svc.api('POST', `/api/conversations/${welcome.conversationId}/close`, { token: user.token })).status, 200);
  t.same(await back.c.next(), { type: 'status', status: 'closed' });

  back.c.send({ type: 'message', clientMessageId: 'r-3', text: 'new question' });
  const rewelcome = await back.c.next();
  t.match(rewelcome, { type: 'welcome', visitorId: welcome.visitorId, conversationId: Number }, 'a new session is announced');
  t.not(rewelcome.conversationId, welcome.conversationId);
  t.same(await back.c.next(), { type: 'ack', clientMessageId: 'r-3', seq: 1, conversationId: rewelcome.conversationId }, 'seqs start again in the new session');
  t.match(await back.c.next(), { type: 'message', seq: 2, role: 'agent', text: 'echo: new question' });

  // A lastSeq of the closed session does not hide the new session's messages.
  const later = await visitor(t, { visitorToken: welcome.visitorToken, lastSeq: 6, conversationId: welcome.conversationId });
  t.equal(later.welcome.conversationId, rewelcome.conversationId);
  t.same((await later.c.drain(500)).map((f) => f.seq), [1, 2]);
  // A paused session is announced after the replay.
  await svc.api('POST', `/api/conversations/${rewelcome.conversationId}/pause`, { token: user.token });
  const paused = await visitor(t, { visitorToken: welcome.visitorToken, lastSeq: 2 });
  t.same(await paused.c.drain(500), [{ type: 'status', status: 'paused' }]);
});

t.test('two tabs: a replay racing live messages neither duplicates nor skips', async (t) => {
  const { c: a, welcome } = await visitor(t);
  for (let i = 1; i <= 5; i++) {
    a.send({ type: 'message', clientMessageId: `tab-${i}`, text: `slow q${i}` });
  }
  // Tab B joins while A's messages and their (slow) replies are being processed.
  const { conversationId } = await a.next('ack');
  const b = await visitor(t, { visitorToken: welcome.visitorToken });
  t.equal(b.welcome.conversationId, conversationId, 'B joins the session A opened');
  t.ok(b.c.frames.length < 10 || (await sql(svc.orm, 'select message_seq from conversations where id = ?', [conversationId]))[0].message_seq < 10, 'B joined mid-stream');
  await eventually(async () => b.c.frames.filter((f) => f.type === 'message').length >= 10 || null, 15_000, 'tab B sees all ten messages');
  await b.c.drain(400);
  const seqs = b.c.frames.filter((f) => f.type === 'message').map((f) => f.seq);
  t.same(seqs, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 'every seq once, in order');
  const texts = b.c.frames.filter((f) => f.type === 'message').map((f) => `${f.role}:${f.text}`);
  t.same(texts.filter((x) => x.startsWith('customer:')), ['customer:slow q1', 'customer:slow q2', 'customer:slow q3', 'customer:slow q4', 'customer:slow q5']);
  const acks = a.frames.filter((f) => f.type === 'ack').map((f) => f.clientMessageId);
  t.same(acks.sort(), ['tab-1', 'tab-2', 'tab-3', 'tab-4', 'tab-5']);
  t.same(a.frames.filter((f) => f.type === 'message').map((f) => f.role), ['agent', 'agent', 'agent', 'agent', 'agent'], 'tab A: replies only, its own messages were acked');
});

t.test("welcome.greeting: the integration's agent's greeting, else the default", async (t) => {
  const { c, welcome } = await visitor(t);
  t.equal(welcome.greeting, 'Hi! How can we help you today?', 'an agent without a greeting: the default');
  const widget = await (await fetch(`${svc.url}/widget.js`)).text();
  t.ok(widget.includes("'Hi! How can we help you today?'"), 'the widget shows the same text until the server answers');
  c.ws.terminate();

  const agent = await svc.api('POST', '/api/agents', { token: user.token, body: { name: 'Greeter', greeting: 'Welcome to Webchat Co! Ask me about your order.' } });
  t.equal(agent.status, 201);
  const greeted = await createWebchatIntegration(svc.api, user.token, { name: 'Greeting site', agentId: agent.body.agent.id });
  const g = await visitor(t, {}, svc.url, greeted.id);
  t.equal(g.welcome.greeting, 'Welcome to Webchat Co! Ask me about your order.', "the agent's own greeting");
  g.c.send({ type: 'message', clientMessageId: 'g-1', text: 'where is my parcel?' });
  t.match(await g.c.next('welcome'), { conversationId: Number, greeting: 'Welcome to Webchat Co! Ask me about your order.' }, 'the welcome of the new session carries it too');
  t.match(await g.c.next('message'), { role: 'agent' }, 'answered');
  const back = await visitor(t, { visitorToken: g.welcome.visitorToken }, svc.url, greeted.id);
  t.match(back.welcome, { conversationId: Number, greeting: 'Welcome to Webchat Co! Ask me about your order.' }, 'and a returning visitor’s');
  t.equal((await sql(svc.orm, `select count(*)::int as n from conversation_messages m join conversations c on c.id = m.conversation_id where c.integration_id = ? and m.text like 'Welcome to Webchat Co%'`, [greeted.id]))[0].n, 0, 'the greeting is not stored as a message');

  // A new greeting greets the very next visitor (the change notice drops the gateway's cached one; its TTL is 10 s).
  t.equal((await svc.api('PATCH', `/api/agents/${agent.body.agent.id}`, { token: user.token, body: { greeting: 'Hello again from Webchat Co.' } })).status, 200);
  const next = await visitor(t, {}, svc.url, greeted.id);
  t.equal(next.welcome.greeting, 'Hello again from Webchat Co.', 'the changed greeting, at once');
});

t.test("an operator's reply carries their display name; a note never reaches the visitor", async (t) => {
  const maria = await join(svc.api, user.token, 'operator', 'Maria Lopez');
  const { c, welcome } = await visitor(t);
  const { conversationId } = await say(c, 'op-1', 'can a person help me?');
  t.match(await c.next('message'), { role: 'agent', name: null });

  const NOTE = 'Internal: refund approved up to 20 EUR, do not mention it first';
  const note = await svc.api('POST', `/api/conversations/${conversationId}/notes`, { token: maria.token, body: { text: NOTE } });
  t.equal(note.status, 201, 'the note is stored');
  const reply = await svc.api('POST', `/api/conversations/${conversationId}/messages`, { token: maria.token, body: { text: 'Hi, Maria here. How can I help?' } });
  t.equal(reply.status, 200);
  const frame = await c.next('message');
  t.match(frame, { type: 'message', role: 'operator', text: 'Hi, Maria here. How can I help?', name: 'Maria Lopez' }, "the operator's display name");
  const [noteRow] = await sql(svc.orm, `select seq from conversation_messages where conversation_id = ? and kind = 'note'`, [conversationId]);
  t.ok(noteRow.seq < frame.seq, 'the note came before the reply');

  // A note as the session's last message: nothing arrives.
  t.equal((await svc.api('POST', `/api/conversations/${conversationId}/notes`, { token: maria.token, body: { text: `${NOTE} (again)` } })).status, 201);
  await eventually(async () => (await sql(svc.orm, `select 1 from conversation_messages where conversation_id = ? and kind = 'note'`, [conversationId])).length === 2 || null);
  // An owner without a display name, and a name changed meanwhile.
  t.equal((await svc.api('POST', `/api/conversations/${conversationId}/messages`, { token: user.token, body: { text: 'The owner here.' } })).status, 200);
  t.match(await c.next('message'), { role: 'operator', text: 'The owner here.', name: null }, 'no display name: null (the widget says "Support")');
  t.equal((await svc.api('PATCH', `/api/users/${maria.id}`, { token: maria.token, body: { displayName: 'Maria L.' } })).status, 200);
  t.equal((await svc.api('POST', `/api/conversations/${conversationId}/messages`, { token: maria.token, body: { text: 'Still here.' } })).status, 200);
  t.match(await c.next('message'), { role: 'operator', text: 'Still here.', name: 'Maria L.' }, 'the name as it is now');
  await c.drain(300);
  t.notOk(JSON.stringify(c.frames).includes('Internal:'), 'no frame of the live socket carries a note');

  const replay = await visitor(t, { visitorToken: welcome.visitorToken });
  const replayed = (await replay.c.drain(600)).filter((f) => f.type === 'message');
  t.same(
    replayed.map((f) => [f.role, f.text, f.name]),
    [
      ['customer', 'can a person help me?', null],
      ['agent', 'echo: can a person help me?', null],
      ['operator', 'Hi, Maria here. How can I help?', 'Maria L.'],
      ['operator', 'The owner here.', null],
      ['operator', 'Still here.', 'Maria L.'],
    ],
    'the replay: every message but the notes, operators by name',
  );
  t.notOk(JSON.stringify(replay.c.frames).includes('Internal:'), 'nor of the replay');
});

t.test('an operator reply that went out after the pump gave up waiting for it still names its author', async (t) => {
  const sam = await join(svc.api, user.token, 'operator', 'Sam Okafor');
  const gw = await startWebchatGateway(t, svc, { stallMs: 300 });
  const { c, welcome } = await visitor(t, {}, gw.url);
  const { conversationId } = await say(c, 'st-1', 'anyone there?');
  t.match(await c.next('message'), { seq: 2, role: 'agent' });
  // What a dispatcher that hung leaves: the operator's reply stored, not yet sent.
  const [{ message_seq: seq }] = await sql(svc.orm, 'update conversations set message_seq = message_seq + 1 where id = ? returning message_seq', [conversationId]);
  await sql(svc.orm, `insert into conversation_messages (company_id, conversation_id, seq, role, kind, text, delivery, author_id) values (?, ?, ?, 'operator', 'message', 'Sorry for the wait!', 'pending', ?)`, [chat.companyId, conversationId, seq, sam.id]);
  await say(c, 'st-2', 'hello?');
  t.match(await c.next('message'), { seq: seq + 2, role: 'agent', text: 'echo: hello?' }, 'the stalled reply holds nothing back after stallMs');
  // It goes out after all: the dispatcher's push.
  const [{ created_at: at }] = await sql(svc.orm, `update conversation_messages set delivery = 'sent' where conversation_id = ? and seq = ? returning created_at`, [conversationId, seq]);
  publishWebchatPush(svc.nc, streamNames(svc.config.natsPrefix), { integrationId: chat.id, clientId: welcome.visitorId }, { type: 'message', conversationId, seq, role: 'operator', text: 'Sorry for the wait!', at: new Date(at).toISOString() });
  t.same(await c.next('message'), { type: 'message', seq, role: 'operator', text: 'Sorry for the wait!', at: new Date(at).toISOString(), name: 'Sam Okafor' }, 'shown once sent, with its author');
  t.same((await c.drain(300)).filter((f) => f.type === 'message'), [], 'once');
});

t.test('a socket on another gateway process gets the reply and operator messages', async (t) => {
  const peer = await startPeerGateway(t, svc);
  const { c } = await visitor(t, {}, peer.url);
  const ack = await say(c, 'p-1', 'from the peer');
  t.same(ack, { type: 'ack', clientMessageId: 'p-1', seq: 1, conversationId: ack.conversationId });
  t.match(await c.next(), { type: 'message', seq: 2, role: 'agent', text: 'echo: from the peer' });
  const res = await svc.api('POST', `/api/conversations/${ack.conversationId}/messages`, { token: user.token, body: { text: 'written on the first gateway' } });
  t.equal(res.status, 200);
  t.match(await c.next('message'), { type: 'message', seq: 3, role: 'operator', text: 'written on the first gateway' });
});

t.test('bad frames get an error frame; the socket stays usable', async (t) => {
  const c = await openChat(t, svc.url, chat.id);
  c.send({ type: 'message', clientMessageId: 'early', text: 'hi' });
  t.match(await c.next(), { type: 'error', code: 'HELLO_REQUIRED', message: String, clientMessageId: 'early' });
  c.send('this is not json');
  t.match(await c.next(), { type: 'error', code: 'INVALID_FRAME', message: String });
  c.send('[1,2]');
  t.match(await c.next(), { type: 'error', code: 'INVALID_FRAME' });
  c.send({ type: 'shout' });
  t.match(await c.next(), { type: 'error', code: 'UNKNOWN_TYPE' });
  c.send({ type: 'hello', lastSeq: -1 });
  t.match(await c.next(), { type: 'error', code: 'VALIDATION_ERROR' });
  c.ws.send(Buffer.from([1, 2, 3]), { binary: true });
  t.match(await c.next(), { type: 'error', code: 'INVALID_FRAME' });
  const welcome = await c.hello();
  t.match(welcome, { type: 'welcome' });
  c.send({ type: 'hello' });
  t.match(await c.next(), { type: 'error', code: 'ALREADY_WELCOMED' });
  c.send({ type: 'message', text: 'no id' });
  t.match(await c.next(), { type: 'error', code: 'VALIDATION_ERROR' });
  c.send({ type: 'message', clientMessageId: 'x1', text: '   ' });
  t.match(await c.next(), { type: 'error', code: 'VALIDATION_ERROR', clientMessageId: 'x1' });
  c.send({ type: 'message', clientMessageId: 'x2', text: 'y'.repeat(4097) });
  t.match(await c.next(), { type: 'error', code: 'VALIDATION_ERROR', clientMessageId: 'x2' });
  c.send({ type: 'message', clientMessageId: 'x3', text: 'still here' });
  const session = await c.next();
  t.match(session, { type: 'welcome', conversationId: Number });
  t.same(await c.next(), { type: 'ack', clientMessageId: 'x3', seq: 1, conversationId: session.conversationId }, 'still usable');
  t.match(await c.next(), { type: 'message', role: 'agent', text: 'echo: still here' });
});

t.test('an oversized frame closes with 1009, a flood with 1008', async (t) => {
  const big = await openChat(t, svc.url, chat.id);
  await big.hello();
  big.send(JSON.stringify({ type: 'message', clientMessageId: 'big', text: 'x'.repeat(64 * 1024) }));
  t.equal((await big.closed).code, 1009);

  const flood = await openChat(t, svc.url, chat.id);
  for (let i = 0; i < 200; i++) flood.send({ type: 'ping' });
  t.equal((await flood.closed).code, 1008);

  // A steady 10 frames per second is fine.
  const calm = await openChat(t, svc.url, chat.id);
  for (let i = 0; i < 15; i++) {
    calm.send({ type: 'ping' });
    await new Promise((r) => setTimeout(r, 100));
  }
  await calm.drain(100);
  t.equal(calm.frames.filter((f) => f.type === 'pong').length, 15);
  t.equal(calm.ws.readyState, calm.ws.OPEN);
});

t.test('tokens: forged, foreign or API tokens never reach another visitor', async (t) => {
  const victim = await visitor(t);
  const { conversationId: victimConversation } = await say(victim.c, 'secret-1', 'my secret');
  await victim.c.next('message');
  const other = await createWebchatIntegration(svc.api, user.token, { name: 'Other site' });
  const otherCompany = await signUp(svc.api, 'Other Co');
  const foreign = await createWebchatIntegration(svc.api, otherCompany.token, { name: 'Foreign site' });

  const onOther = await visitor(t, {}, svc.url, other.id);
  const onForeign = await visitor(t, {}, svc.url, foreign.id);
  const forged = await new SignJWT({ typ: 'visitor', iid: chat.id })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(victim.welcome.visitorId)
    .setIssuer('mas')
    .setAudience('mas-webchat')
    .setExpirationTime('1h')
    .sign(new TextEncoder().encode('not-the-secret-not-the-secret-not-the-secret'));
  const [header, payload] = victim.welcome.visitorToken.split('.');
  const tampered = `${header}.${payload}.${'A'.repeat(43)}`;
  const cases: [string, string][] = [
    ['garbage', 'garbage'],
    ['signed with another key', forged],
    ['a valid signature removed', tampered],
    ['another integration of the company', onOther.welcome.visitorToken],
    ['another company', onForeign.welcome.visitorToken],
    ['a session access token', user.token],
  ];
  for (const [what, token] of cases) {
    const c = await openChat(t, svc.url, chat.id);
    c.send({ type: 'hello', visitorToken: token, lastSeq: 0 });
    t.match(await c.next(), { type: 'error', code: 'INVALID_TOKEN' }, `${what}: refused`);
    const w = await c.next();
    t.equal(w.type, 'welcome', `${what}: a fresh visitor`);
    t.not(w.visitorId, victim.welcome.visitorId);
    t.equal(w.conversationId, null, `${what}: no session (the victim's is ${victimConversation})`);
    t.same(await c.drain(200), [], `${what}: nothing of anyone's history`);
    c.ws.terminate();
  }
  // A visitor token is no API credential.
  const api = await svc.api('GET', '/api/agents', { token: victim.welcome.visitorToken });
  t.equal(api.status, 401);
});

t.test('upgrades refused: unknown, not webchat, inactive, wrong Origin', async (t) => {
  const refused = async (id: number | string, origin?: string) => {
    try {
      const c = await openChat(t, svc.url, id, { origin });
      c.ws.terminate();
      return 101;
    } catch (err) {
      if (err instanceof UpgradeRefused) return err.status;
      throw err;
    }
  };
  t.equal(await refused(999_999), 404, 'unknown integration');
  t.equal(await refused('abc'), 404, 'not an id');
  const helpdesk = await svc.api('POST', '/api/integrations', { token: user.token, body: { type: 'helpdesk', name: 'HD', agentId: chat.agentId } });
  t.equal(await refused(helpdesk.body.integration.id), 404, 'a helpdesk integration');

  const restricted = await createWebchatIntegration(svc.api, user.token, { name: 'Restricted', allowedOrigins: ['https://shop.example.com'] });
  t.equal(await refused(restricted.id), 403, 'no Origin');
  t.equal(await refused(restricted.id, 'https://evil.example.com'), 403, 'another Origin');
  t.equal(await refused(restricted.id, 'http://shop.example.com'), 403, 'another scheme');
  t.equal(await refused(restricted.id, 'https://shop.example.com'), 101, 'the allowed Origin');
  t.equal(await refused(chat.id, 'https://anything.example'), 101, 'no allowedOrigins: any Origin');

  const patched = await svc.api('PATCH', `/api/integrations/${restricted.id}`, { token: user.token, body: { active: false } });
  t.equal(patched.status, 200);
  t.equal(await refused(restricted.id, 'https://shop.example.com'), 403, 'inactive');

  const res = await fetch(`${svc.url}/api/webchat/${chat.id}/ws`);
  t.equal(res.status, 404, 'a plain GET is not an upgrade');
  await res.arrayBuffer();
});

t.test('the same clientMessageId twice: one stored message, one reply', async (t) => {
  const { c, welcome } = await visitor(t);
  c.send({ type: 'message', clientMessageId: 'dup-1', text: 'once please' });
  c.send({ type: 'message', clientMessageId: 'dup-1', text: 'once please' });
  const first = await c.next('ack');
  const conversationId = first.conversationId;
  t.same(first, { type: 'ack', clientMessageId: 'dup-1', seq: 1, conversationId });
  t.same(await c.next('ack'), { type: 'ack', clientMessageId: 'dup-1', seq: 1, conversationId });
  t.match(await c.next('message'), { seq: 2, role: 'agent' });
  c.send({ type: 'message', clientMessageId: 'dup-1', text: 'once please' });
  t.same(await c.next('ack'), { type: 'ack', clientMessageId: 'dup-1', seq: 1, conversationId }, 'a late resend is acked from the database');
  // And again from another socket of the same visitor (a reload that resends).
  const again = await visitor(t, { visitorToken: welcome.visitorToken, lastSeq: 2 });
  again.c.send({ type: 'message', clientMessageId: 'dup-1', text: 'once please' });
  t.same(await again.c.next('ack'), { type: 'ack', clientMessageId: 'dup-1', seq: 1, conversationId });
  await new Promise((r) => setTimeout(r, 500));
  const rows = await sql(svc.orm, 'select role from conversation_messages where conversation_id = ? order by seq', [conversationId]);
  t.same(rows.map((r) => r.role), ['customer', 'agent']);
  t.equal(model.askedAbout('once please').length, 1, 'the agent ran once');
  t.same(await c.drain(100), []);
});

t.test('GET /widget.js', async (t) => {
  const res = await fetch(`${svc.url}/widget.js`);
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /javascript/);
  t.equal(res.headers.get('cross-origin-resource-policy'), 'cross-origin');
  const body = await res.text();
  t.match(body, /data-integration-id/);
  t.notMatch(body, /innerHTML/, 'no HTML sinks');
  const cached = await fetch(`${svc.url}/widget.js`, { headers: { 'if-none-match': res.headers.get('etag')! } });
  t.equal(cached.status, 304);
});

t.test('limits: sockets per process (global cap), heartbeat, hello timeout', async (t) => {
  const gw = await startWebchatGateway(t, svc, { heartbeatMs: 200, helloTimeoutMs: 400 }, 0, { webchat: { maxSockets: 2 } });
  const first = await openChat(t, gw.url, chat.id);
  const second = await openChat(t, gw.url, chat.id, { autoPong: false, localAddress: '127.0.0.9' });
  await first.hello();
  await second.hello();
  const over = await openChat(t, gw.url, chat.id, { localAddress: '127.0.0.10' }).catch((err: unknown) => err);
  t.ok(over instanceof UpgradeRefused, 'a third socket is refused, from whichever address');
  t.equal((over as UpgradeRefused).status, 429);
  t.match(JSON.parse((over as UpgradeRefused).body), { error: { code: 'RATE_LIMITED', message: String } });
  t.match((over as UpgradeRefused).headers['retry-after'], /^\d+$/, 'with Retry-After');
  const elsewhere = await openChat(t, svc.url, chat.id);
  t.ok(elsewhere, 'the cap is per gateway process');

  const dead = await second.closed;
  t.equal(dead.code, 1006, 'a socket that does not answer pings is terminated');
  await new Promise((r) => setTimeout(r, 600));
  t.equal(first.ws.readyState, first.ws.OPEN, 'a live one stays');
  const third = await openChat(t, gw.url, chat.id);
  t.ok(third, 'a freed slot is taken again');
  t.equal((await third.closed).code, 1008, 'no hello in time: closed');
});

/** The status an upgrade gets: 101 when the socket opened (closed again at once), else the refusal. */
async function upgradeStatus(t: Parameters<typeof openChat>[0], url: string, options: OpenChatOptions = {}): Promise<number> {
  try {
    const c = await openChat(t, url, chat.id, options);
    c.ws.terminate();
    return 101;
  } catch (err) {
    if (err instanceof UpgradeRefused) return err.status;
    throw err;
  }
}

t.test('hello alone creates no session; the first message does, announced by the worker after its commit', async (t) => {
  const countRows = async () => (await sql(svc.orm, 'select count(*)::int as n from conversations where integration_id = ?', [chat.id]))[0].n as number;
  const before = await countRows();
  const visitors = [];
  for (let i = 0; i < 5; i++) visitors.push(await visitor(t));
  const back = await visitor(t, { visitorToken: visitors[0]!.welcome.visitorToken, lastSeq: 0 });
  t.equal(back.welcome.visitorId, visitors[0]!.welcome.visitorId);
  t.equal(back.welcome.conversationId, null, 'a returning visitor without a session: still none');
  await new Promise((r) => setTimeout(r, 300));
  t.equal(await countRows(), before, 'six hellos, no conversation row');

  // The worker's push on the visitor's outbound subject, read straight from NATS.
  const { c, welcome } = visitors[1]!;
  const names = streamNames(svc.config.natsPrefix);
  const pushes: { push: any; rows: number }[] = [];
  const sub = svc.nc.subscribe(names.webchatOutbound(chat.id, welcome.visitorId), {
    callback: (err, msg) => {
      if (err) return;
      const push = JSON.parse(Buffer.from(msg.data).toString('utf8'));
      // What a gateway reading PostgreSQL when the push arrives would find.
      void sql(svc.orm, 'select id from conversations where client_id = ?', [welcome.visitorId]).then((rows) => pushes.push({ push, rows: rows.length }));
    },
  });
  t.teardown(() => sub.unsubscribe());
  c.send({ type: 'message', clientMessageId: 'first-1', text: 'is anyone there?' });
  const session = await c.next();
  t.match(session, { type: 'welcome', visitorId: welcome.visitorId, conversationId: Number });
  t.same(await c.next(), { type: 'ack', clientMessageId: 'first-1', seq: 1, conversationId: session.conversationId });
  t.equal(await countRows(), before + 1, 'one row, for the visitor who wrote');
  await eventually(async () => pushes.find((p) => p.push.type === 'session') ?? null, 5000, 'the session push');
  t.same(pushes.find((p) => p.push.type === 'session'), { push: { type: 'session', conversationId: session.conversationId }, rows: 1 }, 'pushed after the commit');
  // The visitor's other socket follows without writing anything.
  const tab = await visitor(t, { visitorToken: welcome.visitorToken });
  t.equal(tab.welcome.conversationId, session.conversationId);
});

t.test('per-address socket cap: the 21st socket from one address is refused (429); other addresses still connect', async (t) => {
  const gw = await startWebchatGateway(t, svc);
  const crowd: ChatClient[] = [];
  for (let i = 0; i < 20; i++) crowd.push(await openChat(t, gw.url, chat.id, { localAddress: '127.0.0.2' }));
  const over = await openChat(t, gw.url, chat.id, { localAddress: '127.0.0.2' }).catch((err: unknown) => err);
  t.ok(over instanceof UpgradeRefused, 'the 21st is refused');
  t.equal((over as UpgradeRefused).status, 429);
  t.match(JSON.parse((over as UpgradeRefused).body), { error: { code: 'RATE_LIMITED', message: /address/ } });
  t.match((over as UpgradeRefused).headers['retry-after'], /^\d+$/);
  t.equal(await upgradeStatus(t, gw.url, { localAddress: '127.0.0.3' }), 101, 'another address connects');
  const welcome = await crowd[0]!.hello();
  t.equal(welcome.type, 'welcome', 'the 20 open ones work');

  await crowd[1]!.close();
  await eventually(async () => ((await upgradeStatus(t, gw.url, { localAddress: '127.0.0.2' })) === 101) || null, 3000, 'a closed socket frees its slot');
});

t.test('the client address follows TRUST_PROXY as express does', async (t) => {
  const xff = (ip: string) => ({ localAddress: '127.0.0.4', headers: { 'x-forwarded-for': ip } });
  const untrusted = await startWebchatGateway(t, svc, {}, 0, { webchat: { maxSocketsPerIp: 2 } });
  const held: ChatClient[] = [];
  held.push(await openChat(t, untrusted.url, chat.id, xff('198.51.100.1')));
  held.push(await openChat(t, untrusted.url, chat.id, xff('198.51.100.2')));
  t.equal(await upgradeStatus(t, untrusted.url, xff('198.51.100.3')), 429, 'no trusted proxy: X-Forwarded-For does not make another client');

  const trusted = await startWebchatGateway(t, svc, {}, 0, { webchat: { maxSocketsPerIp: 2 }, trustProxy: 'loopback' });
  for (const ip of ['198.51.100.1', '198.51.100.2', '198.51.100.3']) held.push(await openChat(t, trusted.url, chat.id, xff(ip)));
  t.pass('behind a trusted proxy: three clients, one socket each');
  held.push(await openChat(t, trusted.url, chat.id, xff('198.51.100.1')));
  t.equal(await upgradeStatus(t, trusted.url, xff('198.51.100.1')), 429, 'the forwarded client is capped');
  held.push(await openChat(t, trusted.url, chat.id, xff('2001:db8:1:2::7')));
  held.push(await openChat(t, trusted.url, chat.id, xff('2001:db8:1:2::8')));
  t.equal(await upgradeStatus(t, trusted.url, xff('2001:db8:1:2:ffff::9')), 429, 'IPv6 counts per /64');
});

t.test('message rates per visitor and per address: RATE_LIMITED, nothing stored, the socket stays open', async (t) => {
  let offset = 0;
  const now = () => Date.now() + offset;
  const gw = await startWebchatGateway(t, svc, {}, 0, { webchat: { messagesPerMinutePerVisitor: 3, messagesPerMinutePerIp: 4 } }, now);
  const storedIds = async (visitorId: string) =>
    (await sql(svc.orm, `select m.external_id from conversations c join conversation_messages m on m.conversation_id = c.id where c.client_id = ? and m.role = 'customer' order by m.id`, [visitorId])).map((r) => r.external_id);
  const queued = async (visitorId: string, id: string) => (await sql(svc.orm, 'select 1 from inbound_receipts where idempotency_key = ?', [`webchat:${visitorId}:${id}`])).length;

  // Per visitor: 3 a minute.
  const a = await openChat(t, gw.url, chat.id, { localAddress: '127.0.0.6' });
  const aw = await a.hello();
  for (let i = 1; i <= 3; i++) t.match(await say(a, `va-${i}`, `question ${i}`), { type: 'ack', clientMessageId: `va-${i}` });
  a.send({ type: 'message', clientMessageId: 'va-4', text: 'one too many' });
  t.match(await a.next('error'), { type: 'error', code: 'RATE_LIMITED', message: String, clientMessageId: 'va-4' });
  a.send({ type: 'ping' });
  t.same(await a.next('pong'), { type: 'pong' }, 'the socket stays open');

  // Per address: 4 a minute from 127.0.0.6; a spent 3. Another visitor there has its own 3, but only 1 is left to the address.
  const b = await openChat(t, gw.url, chat.id, { localAddress: '127.0.0.6' });
  const bw = await b.hello();
  t.match(await say(b, 'vb-1', 'me too'), { type: 'ack', clientMessageId: 'vb-1' }, "a's rate does not hold back another visitor");
  b.send({ type: 'message', clientMessageId: 'vb-2', text: 'second' });
  t.match(await b.next('error'), { type: 'error', code: 'RATE_LIMITED', clientMessageId: 'vb-2' }, 'the address is over its rate');
  const other = await openChat(t, gw.url, chat.id, { localAddress: '127.0.0.7' });
  await other.hello();
  t.match(await say(other, 'vo-1', 'from elsewhere'), { type: 'ack', clientMessageId: 'vo-1' }, 'another address is not held back');

  await new Promise((r) => setTimeout(r, 500));
  t.same(await storedIds(aw.visitorId), ['va-1', 'va-2', 'va-3'], 'refused messages are not stored');
  t.same(await storedIds(bw.visitorId), ['vb-1']);
  t.equal((await queued(aw.visitorId, 'va-4')) + (await queued(bw.visitorId, 'vb-2')), 0, 'nor queued');

  // The buckets refill: 3 a minute is one every 20 s.
  offset += 20_000;
  t.match(await say(a, 'va-4', 'one too many'), { type: 'ack', clientMessageId: 'va-4' }, 'sent again later, it goes through');
});

t.test('ENFORCE_HTTPS covers the socket upgrade', async (t) => {
  const direct = await startWebchatGateway(t, svc, {}, 0, { enforceHttps: true });
  const plain = await openChat(t, direct.url, chat.id).catch((err: unknown) => err);
  t.ok(plain instanceof UpgradeRefused);
  t.equal((plain as UpgradeRefused).status, 403);
  t.match(JSON.parse((plain as UpgradeRefused).body), { error: { code: 'HTTPS_REQUIRED', message: String } });
  t.equal(await upgradeStatus(t, direct.url, { headers: { 'x-forwarded-proto': 'https' } }), 403, 'X-Forwarded-Proto from an untrusted peer is ignored');

  const proxied = await startWebchatGateway(t, svc, {}, 0, { enforceHttps: true, trustProxy: 'loopback' });
  t.equal(await upgradeStatus(t, proxied.url, { headers: { 'x-forwarded-proto': 'https' } }), 101, 'TLS ended at a trusted proxy');
  t.equal(await upgradeStatus(t, proxied.url, { headers: { 'x-forwarded-proto': 'http' } }), 403);
  t.equal(await upgradeStatus(t, proxied.url), 403);
});
