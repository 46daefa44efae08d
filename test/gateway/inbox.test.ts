import t from 'tap';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { startRepeatingModel } from '../support/repeating-model.js';
import { signUp, startTestService } from '../support/service.js';
import { readEvents } from '../support/sse.js';
import { join, login } from '../support/team.js';
import { createHelpdeskIntegration, eventually, messageEnvelope, publishEnvelope, sql, startTestWorker, untilIdle, waitForPartitions } from '../support/worker.js';

/**
 * A team works the inbox (contract.md § A team works the conversations): take-over by
 * replying, assignment and the inbox's filters, what a listed conversation shows (last
 * message, the caller's unread count, the customer's name), notes that never reach the
 * customer, labels, reads, and the live event stream of the company's conversations, each
 * viewer with their own unread counts. Another company's conversation is 404 everywhere.
 */
const svc = await startTestService(t, 'inbox', { env: { PARTITIONS: '2' } });
const { api } = svc;
const stub = await startChat2DeskStub(t);
const model = await startRepeatingModel(t);
const alice = await signUp(api, 'Inbox Co');
const bob = await signUp(api, 'Other Co');
const integration = await createHelpdeskIntegration(svc, alice, stub, 'Desk', await model.createAgent(api, alice.token));
const worker = await startTestWorker(t, svc, { workerId: 'inbox' });
await waitForPartitions([worker], 2);
const olga = await join(api, alice.token, 'operator', 'Olga');
const apiToken: string = (await api('POST', '/api/api-tokens', { token: alice.token, body: { name: 'inbox' } })).body.apiToken.token;

const sentTo = (clientId: string) => stub.sent().filter((b) => b.client_id === clientId);

/** A customer's message, answered (or not) before it returns: the service is idle after it. */
async function customerSays(clientId: string, text: string): Promise<void> {
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, clientId, text));
  await eventually(async () => (await sql(svc.orm, 'select 1 from conversation_messages where text = ?', [text])).length > 0, 10_000, `"${text}" stored`);
  await untilIdle(svc);
}

async function conversationOf(clientId: string): Promise<number> {
  const [row] = await sql<{ id: number }>(svc.orm, 'select id from conversations where integration_id = ? and client_id = ?', [integration.id, clientId]);
  return row!.id;
}

/** The ids a list query answers, for a credential. */
async function listed(query: string, token = alice.token): Promise<number[]> {
  const res = await api('GET', `/api/conversations${query}`, { token });
  if (res.status !== 200) throw new Error(`GET /api/conversations${query}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.conversations.map((c: { id: number }) => c.id);
}

const item = async (id: number, token = alice.token) => (await api('GET', `/api/conversations/${id}`, { token })).body.conversation;

interface Sse {
  events: { event: string; data: any; at: number }[];
  /** The first event at or after index `from` that matches (waits up to 5 s). */
  next: (match: (e: { event: string; data: any }) => boolean, from?: number) => Promise<{ event: string; data: any; at: number; index: number }>;
  close: () => void;
}

/** GET /api/conversations/events, its events collected as they come. */
async function openEvents(token: string): Promise<Sse> {
  const ac = new AbortController();
  const res = await fetch(`${svc.url}/api/conversations/events`, { headers: { authorization: `Bearer ${token}` }, signal: ac.signal });
  t.equal(res.status, 200, 'the events stream opens');
  const events: Sse['events'] = [];
  void readEvents(res.body!, (e) => events.push({ ...e, at: Date.now() }));
  const next: Sse['next'] = async (match, from = 0) => {
    const deadline = Date.now() + 5_000;
    for (;;) {
      const index = events.findIndex((e, i) => i >= from && match(e));
      if (index >= 0) return { ...events[index]!, index };
      if (Date.now() > deadline) throw new Error(`no such event within 5 s; got ${JSON.stringify(events.slice(from))}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  t.teardown(() => ac.abort());
  return { events, next, close: () => ac.abort() };
}

await customerSays('take-1', 'hello there');
await customerSays('quiet-1', 'my parcel never arrived');
await customerSays('quiet-2', 'refund for the broken kettle please');
const takeId = await conversationOf('take-1');
const parcelId = await conversationOf('quiet-1');
const kettleId = await conversationOf('quiet-2');

t.test('take-over: a person replying pauses the bot, has the conversation, and the bot stays silent', async (t) => {
  t.equal(sentTo('take-1').length, 1, 'the bot answered the first message');
  const reply = await api('POST', `/api/conversations/${takeId}/messages`, { token: olga.token, body: { text: 'Hi, Olga here.' } });
  t.equal(reply.status, 200);
  t.match(reply.body.conversation, { id: takeId, status: 'paused', state: { paused: 'operator' }, assigneeId: olga.id, lastMessage: { role: 'operator', text: 'Hi, Olga here.' } });
  await stub.waitFor(() => sentTo('take-1').length === 2);
  t.equal(sentTo('take-1')[1].text, 'Hi, Olga here.');

  await customerSays('take-1', 'thanks, are you still there?');
  t.equal(sentTo('take-1').length, 2, 'no bot reply after the take-over');
  t.same(model.askedAbout('thanks, are you still there?'), [], 'the model was not even asked');

  const transitions = (await api('GET', `/api/conversations/${takeId}/transitions`, { token: alice.token })).body.transitions;
  t.match(transitions.find((tr: any) => tr.event === 'operator.pause'), { payload: { by: olga.id }, to: { paused: 'operator' } }, 'the pause names who took over');
  const messages = (await api('GET', `/api/conversations/${takeId}/messages`, { token: alice.token })).body.messages;
  t.match(messages.find((m: any) => m.text === 'Hi, Olga here.'), { role: 'operator', kind: 'message', authorId: olga.id, author: { id: olga.id, displayName: 'Olga' } });
  t.match(messages[0], { role: 'customer', authorId: null, author: null });

  // Somebody has it now: another teammate's reply does not take it from them.
  const second = await api('POST', `/api/conversations/${takeId}/messages`, { token: alice.token, body: { text: 'Alice too.' } });
  t.equal(second.body.conversation.assigneeId, olga.id, 'still Olga\'s');
  await customerSays('take-1', 'ok, waiting');
  t.equal(sentTo('take-1').length, 3, 'the two replies went out, the bot said nothing');
  // An API token is nobody: its reply to an unassigned conversation assigns nobody.
  const viaToken = await api('POST', `/api/conversations/${kettleId}/messages`, { token: apiToken, body: { text: 'Checking the kettle.' } });
  t.equal(viaToken.status, 200);
  t.equal(viaToken.body.conversation.assigneeId, null);
  await untilIdle(svc);
});

t.test('what a listed conversation shows: last message, the caller\'s unread count, the customer\'s name', async (t) => {
  await customerSays('shown-1', 'first question');
  await customerSays('shown-1', 'second question');
  const id = await conversationOf('shown-1');
  const listedItem = (await api('GET', '/api/conversations?clientId=shown-1', { token: alice.token })).body.conversations[0];
  t.match(listedItem, { id, status: 'active', lastMessage: { role: 'agent', text: 'echo: second question', at: /Z$/ }, assigneeId: null, assignee: null, labels: [], customerMessages: 2, unread: 2, customer: { name: null } });
  t.same(await item(id), listedItem, 'GET one shows what the list shows');

  const lead = (await api('GET', '/api/leads', { token: alice.token })).body.leads.find((l: any) => l.clientId === 'shown-1');
  t.equal((await api('PATCH', `/api/leads/${lead.id}`, { token: alice.token, body: { name: 'Maria Lopez' } })).status, 200);
  t.same((await item(id)).customer, { name: 'Maria Lopez', email: null, phone: null }, 'the customer by their lead\'s name');

  t.equal((await api('POST', `/api/conversations/${id}/read`, { token: alice.token })).status, 204);
  t.equal((await item(id)).unread, 0, 'read: nothing unread for Alice');
  t.equal((await item(id, olga.token)).unread, 2, 'Olga has not read it');
  t.equal((await item(id, apiToken)).unread, 0, 'an API token reads nothing: 0');
  const tokenRead = await api('POST', `/api/conversations/${id}/read`, { token: apiToken });
  t.equal(tokenRead.status, 401, 'reading needs a user');

  await customerSays('shown-1', 'third question');
  t.match(await item(id), { unread: 1, customerMessages: 3, lastMessage: { role: 'agent', text: 'echo: third question' } }, 'one new since Alice read it');
  t.equal((await item(id, olga.token)).unread, 3);
});

t.test('notes: kept with the messages as kind note, never sent to the helpdesk', async (t) => {
  const before = stub.sent().length;
  const lastBefore = (await item(parcelId)).lastMessage;
  const note = await api('POST', `/api/conversations/${parcelId}/notes`, { token: olga.token, body: { text: 'Courier says depot in Leeds.' } });
  t.equal(note.status, 201);
  t.match(note.body.message, { role: 'operator', kind: 'note', text: 'Courier says depot in Leeds.', delivery: null, authorId: olga.id, author: { id: olga.id, displayName: 'Olga' }, createdAt: /Z$/ });
  await untilIdle(svc);
  t.equal(stub.sent().length, before, 'nothing went to the helpdesk');
  t.notOk(stub.requests.some((r) => JSON.stringify(r.body ?? '').includes('depot in Leeds')), 'the note text never reached it');
  const messages = (await api('GET', `/api/conversations/${parcelId}/messages`, { token: alice.token })).body.messages;
  t.match(messages.at(-1), { id: note.body.message.id, kind: 'note', role: 'operator', author: { displayName: 'Olga' } });
  const after = await item(parcelId);
  t.same(after.lastMessage, lastBefore, 'the inbox\'s last message is what the customer sees, not the note');
  t.equal(after.status, 'active', 'a note does not take the conversation over');

  for (const [body, what] of [[{ text: '' }, 'empty'], [{ text: '   ' }, 'blank'], [{ text: 'x'.repeat(4097) }, 'too long'], [{ text: 'a\u0000b' }, 'a NUL'], [{ text: '\ud800' }, 'a lone surrogate'], [{ text: 5 }, 'a number'], [{}, 'missing']] as const) {
    const bad = await api('POST', `/api/conversations/${parcelId}/notes`, { token: alice.token, body });
    t.equal(bad.status, 400, what);
    t.equal(bad.body.error.code, 'VALIDATION_ERROR', what);
  }
});

t.test('labels: trimmed, deduplicated in order, checked', async (t) => {
  const set = await api('PUT', `/api/conversations/${parcelId}/labels`, { token: olga.token, body: { labels: [' vip ', 'delivery', 'vip', 'Délai'] } });
  t.equal(set.status, 200);
  t.same(set.body.conversation.labels, ['vip', 'delivery', 'Délai']);
  t.same((await item(parcelId)).labels, ['vip', 'delivery', 'Délai']);
  const bad: [unknown, string][] = [
    [{ labels: ['a,b'] }, 'labels.0'],
    [{ labels: ['ok', ' '] }, 'labels.1'],
    [{ labels: ['x'.repeat(41)] }, 'labels.0'],
    [{ labels: Array.from({ length: 21 }, (_, i) => `l${i}`) }, 'labels'],
    [{ labels: 'vip' }, 'labels'],
    [{ labels: [7] }, 'labels.0'],
    [{ labels: ['x'.repeat(100_000)] }, 'labels.0'],
    [{ labels: ['a\u0000'] }, 'labels.0'],
    [{}, 'labels'],
  ];
  for (const [body, field] of bad) {
    const res = await api('PUT', `/api/conversations/${parcelId}/labels`, { token: alice.token, body });
    t.equal(res.status, 400, JSON.stringify(body).slice(0, 60));
    t.match(res.body.error, { code: 'VALIDATION_ERROR', details: [{ field }] }, `names ${field}`);
  }
  t.same((await item(parcelId)).labels, ['vip', 'delivery', 'Délai'], 'unchanged by the refused ones');
  t.same((await api('PUT', `/api/conversations/${kettleId}/labels`, { token: alice.token, body: { labels: ['refund'] } })).body.conversation.labels, ['refund']);
});

t.test('assignment and the inbox filters', async (t) => {
  const assigned = await api('PATCH', `/api/conversations/${parcelId}`, { token: alice.token, body: { assigneeId: alice.userId } });
  t.equal(assigned.status, 200);
  t.equal(assigned.body.conversation.assigneeId, alice.userId);
  t.match(await item(parcelId), { assigneeId: alice.userId, assignee: { id: alice.userId, displayName: null } });

  const urn = `urn:uuid:${olga.id}`;
  for (const [assigneeId, what] of [[bob.userId, 'a user of another company'], ['00000000-0000-4000-8000-000000000000', 'nobody'], ['olga', 'not an id'], [urn, 'a URN (no uuid for PostgreSQL)'], [7, 'a number']] as const) {
    const bad = await api('PATCH', `/api/conversations/${parcelId}`, { token: alice.token, body: { assigneeId } });
    t.equal(bad.status, 400, what);
    t.match(bad.body.error, { code: 'VALIDATION_ERROR', details: [{ field: 'assigneeId' }] }, `${what}: names assigneeId`);
  }
  t.equal((await item(parcelId)).assigneeId, alice.userId, 'unchanged');

  // take-1: Olga's (paused, the customer wrote last); quiet-1: Alice's; the rest nobody's.
  const shownId = await conversationOf('shown-1');
  t.same(await listed('?assignee=me'), [parcelId], 'Alice\'s');
  t.same(await listed('?assignee=me', olga.token), [takeId], 'Olga\'s');
  t.same(await listed(`?assignee=${olga.id}`), [takeId], 'by user id');
  t.same(await listed(`?assignee=${olga.id.toUpperCase()}`), [takeId], 'a user id in capitals');
  t.same((await listed('?assignee=none')).sort(), [kettleId, shownId].sort(), 'unassigned');
  t.same(await listed('?needsHuman=true'), [takeId], 'paused and the customer wrote last');
  t.same((await listed('?status=paused')).sort(), [takeId, kettleId].sort(), 'both taken over (the kettle by an API token\'s reply)');
  t.same(await listed('?label=vip'), [parcelId]);
  t.same(await listed('?label=%20delivery%20'), [parcelId], 'a label filter is trimmed too');
  t.same(await listed('?label=refund'), [kettleId]);
  t.same(await listed('?q=parcel'), [parcelId], 'a word the customer wrote');
  t.same(await listed('?q=PARCEL%20arrived'), [parcelId], 'all the words, any case');
  t.same(await listed('?q=leeds'), [parcelId], 'notes are searched too');
  t.same(await listed('?q=kettle'), [kettleId]);
  t.same(await listed('?q=banana'), [], 'no message has it');
  t.same(await listed('?q=question&assignee=none'), [shownId], 'filters combine');
  t.same(await listed('?q=parcel&assignee=none'), []);
  t.same(await listed('?q=parcel', bob.token), [], 'another company\'s messages are not searched');

  const page = await api('GET', '/api/conversations?limit=2&offset=1', { token: alice.token });
  t.equal(page.body.total, 4);
  t.equal(page.body.conversations.length, 2);
  const all = await listed('');
  t.same(page.body.conversations.map((c: any) => c.id), all.slice(1, 3), 'most recently updated first, paged');
  const past = await api('GET', '/api/conversations?offset=10', { token: alice.token });
  t.same([past.body.conversations, past.body.total], [[], 4], 'past the end: no items, the total still');

  const bad: [string, string, string?][] = [
    ['?assignee=olga', 'assignee'],
    ['?assignee=', 'assignee'],
    ['?assignee=me', 'assignee', apiToken],
    ['?needsHuman=yes', 'needsHuman'],
    ['?label=a,b', 'label'],
    ['?label=%20', 'label'],
    [`?label=${'x'.repeat(41)}`, 'label'],
    [`?q=${'w'.repeat(201)}`, 'q'],
    ['?q=%20', 'q'],
    ['?q=a&q=b', 'q'],
    ['?status=opened', 'status'],
  ];
  for (const [query, field, token] of bad) {
    const res = await api('GET', `/api/conversations${query}`, { token: token ?? alice.token });
    t.equal(res.status, 400, query);
    t.match(res.body.error, { code: 'VALIDATION_ERROR', details: [{ field }] }, `${query}: names ${field}`);
  }

  t.equal((await api('PATCH', `/api/conversations/${parcelId}`, { token: olga.token, body: { assigneeId: null } })).body.conversation.assigneeId, null, 'unassigned');
  t.same((await listed('?assignee=none')).sort(), [parcelId, kettleId, shownId].sort());

  // The inbox's default view: what is not closed.
  t.equal((await api('POST', `/api/conversations/${shownId}/close`, { token: alice.token })).status, 200);
  t.same((await listed('?status=open')).sort(), all.filter((id) => id !== shownId).sort(), 'open: every one but the closed');
  t.same(await listed('?status=closed'), [shownId]);
  t.same((await listed('?status=open&assignee=none')).sort(), [parcelId, kettleId].sort(), 'open combines');
});

t.test('the events stream: messages, assignments and reads, within a second, each viewer with their unread count', async (t) => {
  const aliceStream = await openEvents(alice.token);
  const olgaStream = await openEvents(olga.token);
  const tokenStream = await openEvents(apiToken);
  const bobStream = await openEvents(bob.token);
  const clientId = 'live-1';

  const sentAt = Date.now();
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, clientId, 'where is my order'));
  const first = await aliceStream.next((e) => e.event === 'conversation.updated' && e.data.clientId === clientId);
  t.ok(first.at - sentAt < 1_000, `the new message's update came within 1 s (${first.at - sentAt} ms)`);
  const id: number = first.data.id;
  t.same(Object.keys(first.data).sort(), ['assigneeId', 'channel', 'clientId', 'id', 'integrationId', 'labels', 'lastMessage', 'needsHuman', 'status', 'transport', 'unread', 'updatedAt'].sort(), 'the documented fields');
  t.match(first.data, { id, status: 'active', channel: 'helpdesk', integrationId: integration.id, assigneeId: null, labels: [], needsHuman: false, lastMessage: { role: 'customer', text: 'where is my order' }, unread: 1 });
  const answered = await aliceStream.next((e) => e.data.id === id && e.data.lastMessage?.text === 'echo: where is my order');
  t.equal(answered.data.unread, 1, 'the bot\'s answer is not a customer message');
  t.equal((await tokenStream.next((e) => e.data.id === id)).data.unread, 0, 'an API token\'s stream: unread 0');
  await untilIdle(svc);

  // Alice reads it: her stream says 0; Olga's stream hears nothing of Alice's read.
  let mark = aliceStream.events.length;
  const olgaMark = olgaStream.events.length;
  t.equal((await api('POST', `/api/conversations/${id}/read`, { token: alice.token })).status, 204);
  // (The reply's delivery may still be told after it, with the unread count of then.)
  t.ok(await aliceStream.next((e) => e.data.id === id && e.data.unread === 0, mark), 'Alice\'s read reaches her stream: unread 0');

  // Assigned to Olga: every stream sees it; Olga's unread is still hers (1), Alice's 0.
  mark = aliceStream.events.length;
  const assignedAt = Date.now();
  t.equal((await api('PATCH', `/api/conversations/${id}`, { token: alice.token, body: { assigneeId: olga.id } })).status, 200);
  const seen = await aliceStream.next((e) => e.data.id === id && e.data.assigneeId === olga.id, mark);
  t.ok(seen.at - assignedAt < 1_000, `the assignment came within 1 s (${seen.at - assignedAt} ms)`);
  t.equal(seen.data.unread, 0);
  const olgaSeen = await olgaStream.next((e) => e.data.id === id && e.data.assigneeId === olga.id, olgaMark);
  t.equal(olgaSeen.data.unread, 1, 'Olga sees the assignment with her own unread count');
  t.same(olgaStream.events.slice(olgaMark).filter((e) => e.data.unread === 0), [], 'Alice\'s read changed nothing on Olga\'s stream');

  // A second customer message: 1 unread for Alice, 2 for Olga; labels reach all.
  mark = aliceStream.events.length;
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, clientId, 'hello again'));
  t.equal((await aliceStream.next((e) => e.data.id === id && e.data.lastMessage?.text === 'hello again', mark)).data.unread, 1);
  t.equal((await olgaStream.next((e) => e.data.id === id && e.data.lastMessage?.text === 'hello again')).data.unread, 2);
  await untilIdle(svc);
  mark = aliceStream.events.length;
  await api('PUT', `/api/conversations/${id}/labels`, { token: olga.token, body: { labels: ['urgent'] } });
  t.match((await aliceStream.next((e) => e.data.id === id && e.data.labels.includes('urgent'), mark)).data, { unread: 1, assigneeId: olga.id });

  // Olga takes it over by replying: paused, then the customer writes: needs a human.
  mark = aliceStream.events.length;
  await api('POST', `/api/conversations/${id}/messages`, { token: olga.token, body: { text: 'On it.' } });
  t.match((await aliceStream.next((e) => e.data.id === id && e.data.status === 'paused', mark)).data, { needsHuman: false });
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, clientId, 'thank you'));
  t.match((await aliceStream.next((e) => e.data.id === id && e.data.lastMessage?.text === 'thank you', mark)).data, { status: 'paused', needsHuman: true, unread: 2 });
  await untilIdle(svc);

  t.same(bobStream.events.filter((e) => e.event === 'conversation.updated'), [], 'another company\'s stream heard nothing');
  for (const s of [aliceStream, olgaStream, tokenStream, bobStream]) s.close();
});

t.test('the events stream ends with its credential', async (t) => {
  const token = await login(api, olga.email, olga.password);
  const stream = await openEvents(token);
  const loggedOutAt = Date.now();
  t.equal((await api('POST', '/api/auth/logout', { token })).status, 204);
  const end = await stream.next((e) => e.event === 'end');
  t.same(end.data, { reason: 'credential_revoked' });
  t.ok(end.at - loggedOutAt < 5_000, `within 5 s of the logout (${end.at - loggedOutAt} ms)`);
  stream.close();
});

t.test('another company: 404 everywhere, nothing changed', async (t) => {
  const before = await sql(svc.orm, 'select assignee_id, labels, status, message_seq from conversations where id = ?', [parcelId]);
  const reads = await sql(svc.orm, 'select count(*)::int as n from conversation_reads where conversation_id = ?', [parcelId]);
  const routes: [string, string, unknown?][] = [
    ['GET', `/api/conversations/${parcelId}`],
    ['PATCH', `/api/conversations/${parcelId}`, { assigneeId: bob.userId }],
    ['PATCH', `/api/conversations/${parcelId}`, { assigneeId: null }],
    ['PUT', `/api/conversations/${parcelId}/labels`, { labels: ['mine'] }],
    ['POST', `/api/conversations/${parcelId}/read`],
    ['POST', `/api/conversations/${parcelId}/notes`, { text: 'intrusion' }],
    ['POST', `/api/conversations/${parcelId}/messages`, { text: 'intrusion' }],
    ['GET', `/api/conversations/${parcelId}/messages`],
  ];
  for (const [method, path, body] of routes) {
    const res = await api(method, path, { token: bob.token, body });
    t.equal(res.status, 404, `${method} ${path}`);
    t.equal(res.body.error.code, 'NOT_FOUND');
  }
  t.same(await listed('', bob.token), []);
  t.same(await listed(`?assignee=${alice.userId}`, bob.token), []);
  t.same(await sql(svc.orm, 'select assignee_id, labels, status, message_seq from conversations where id = ?', [parcelId]), before, 'unchanged');
  t.same(await sql(svc.orm, 'select count(*)::int as n from conversation_reads where conversation_id = ?', [parcelId]), reads, 'no read recorded');
  for (const path of ['/api/conversations/abc/read', '/api/conversations/0', '/api/conversations/events/x']) {
    t.equal((await api(path.endsWith('read') ? 'POST' : 'GET', path, { token: alice.token })).status, 404, path);
  }
  const closed = await api('POST', `/api/conversations/${kettleId}/close`, { token: alice.token });
  t.equal(closed.status, 200);
  const late = await api('POST', `/api/conversations/${kettleId}/notes`, { token: alice.token, body: { text: 'after closing' } });
  t.equal(late.status, 409, 'no note on a closed conversation');
});

t.test('a take-over that finds the conversation paused meanwhile leaves no hold: the bot answers again once resumed', async (t) => {
  await customerSays('race-1', 'is the shop open today');
  const id = await conversationOf('race-1');
  t.equal((await api('POST', `/api/conversations/${id}/pause`, { token: alice.token })).status, 200);
  // What a reply's take-over leaves when it saw the conversation active and the agent handed it off before the worker took the reply.
  await sql(svc.orm, 'update conversations set hold_requested_at = now() where id = ?', [id]);
  t.equal((await api('POST', `/api/conversations/${id}/messages`, { token: apiToken, body: { text: 'Yes, until six.' } })).status, 200);
  t.same(await sql(svc.orm, 'select hold_requested_at from conversations where id = ?', [id]), [{ hold_requested_at: null }], 'the hold is gone with the reply');
  t.equal((await api('POST', `/api/conversations/${id}/resume`, { token: alice.token })).status, 200);
  await customerSays('race-1', 'and tomorrow');
  await eventually(async () => sentTo('race-1').some((b) => b.text === 'echo: and tomorrow') || null, 10_000, 'the bot answers after the resume');
  t.pass('answered');
});
