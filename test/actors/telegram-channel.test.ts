import t from 'tap';
import { insertChannelIntegration, postTelegram, telegramTextUpdate, tgCustomerWrites } from '../support/channel-integrations.js';
import { startRepeatingModel } from '../support/repeating-model.js';
import { signUp, startTestService } from '../support/service.js';
import { startTelegramStub, TEST_BOT_TOKEN } from '../support/telegram-stub.js';
import { dropNatsPrefixAtEnd } from '../support/webhooks.js';
import { eventually, listedConversationId, sql, startTestWorker, untilIdle, waitForPartitions } from '../support/worker.js';

/**
 * The Telegram channel end to end (contract.md § Direct channels): a real gateway, worker,
 * PostgreSQL and NATS; the Bot API is the sandbox (scripts/sandbox/telegram.ts), which
 * delivers a sendMessage when it arrives and answers later. The agent is a model agent whose
 * stand-in model repeats the question (`echo: <text>`).
 */
const bot = await startTelegramStub(t);
const svc = await startTestService(t, 'telegram_channel', { env: { PARTITIONS: '2', TELEGRAM_API_URL: bot.url } });
dropNatsPrefixAtEnd(t, svc);
const { api } = svc;
const LONG = 'word '.repeat(1000).trim(); // 4999 characters
const llm = await startRepeatingModel(t, { answer: (text) => (text.startsWith('LONG') ? LONG : undefined) });
const user = await signUp(api, 'Telegram Co');
const agentId = await llm.createAgent(api, user.token);
const integration = await insertChannelIntegration(svc, { companyId: user.companyId, agentId, type: 'telegram', apiToken: TEST_BOT_TOKEN });
const worker = await startTestWorker(t, svc, { workerId: 'tg-1' });
await waitForPartitions([worker], 2);

const token = user.token;
let chatNo = 0;
const newChat = () => 400_000_000 + (Date.now() % 1_000_000) * 10 + ++chatNo;
const sendsTo = (chatId: number) => bot.requests.filter((r) => r.method === 'sendMessage' && String(r.body?.chat_id) === String(chatId));
const messagesOf = async (conversationId: number): Promise<any[]> => {
  const res = await api('GET', `/api/conversations/${conversationId}/messages?limit=100`, { token });
  if (res.status !== 200) throw new Error(`messages: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.messages;
};
const conversation = async (id: number): Promise<any> => (await api('GET', `/api/conversations/${id}`, { token })).body.conversation;
const sentMessage = (conversationId: number, until: (m: any) => boolean, what: string, timeoutMs = 15_000) =>
  eventually(async () => (await messagesOf(conversationId)).find((m) => (m.role === 'agent' || m.role === 'operator') && until(m)), timeoutMs, what);

t.test('a private text is answered with sendMessage {chat_id, text}; the name from first/last name', async (t) => {
  const chat = newChat();
  await tgCustomerWrites(api, integration, chat, 'hello bot', { firstName: 'Ivan', lastName: 'Petrov' });
  await bot.waitFor(() => sendsTo(chat).length >= 1, 15_000);
  const [req] = sendsTo(chat);
  t.equal(req!.path, `/bot${TEST_BOT_TOKEN}/sendMessage`, 'POST {api}/bot<token>/sendMessage');
  t.same(req!.body, { chat_id: chat, text: 'echo: hello bot' }, 'chat_id as a number, the text');
  const id = await listedConversationId(api, token, String(chat));
  const conv = await conversation(id);
  t.equal(conv.channel, 'telegram');
  t.equal(conv.clientId, String(chat), 'the customer is the chat id');
  t.equal(conv.customer?.name, 'Ivan Petrov', 'first and last name');
  const m = await sentMessage(id, (x) => x.delivery === 'sent', 'the reply sent');
  t.equal(m.externalId, String(bot.delivered(chat)[0]!.message_id), 'the message_id is stored');
  t.equal(m.deliveryStatus, 'sent');
  t.equal(bot.delivered(chat).length, 1);
});

t.test('a group message is ignored: 200, no conversation, no reply', async (t) => {
  const group = -(1_000_000_000 + newChat());
  const res = await postTelegram(api, integration, telegramTextUpdate({ chatId: group, chatType: 'group', text: 'hi all', firstName: 'Member' }));
  t.equal(res.status, 200);
  const sup = await postTelegram(api, integration, telegramTextUpdate({ chatId: group - 1, chatType: 'supergroup', text: 'hi all' }));
  t.equal(sup.status, 200);
  await untilIdle(svc);
  await new Promise((r) => setTimeout(r, 300));
  t.equal(sendsTo(group).length + sendsTo(group - 1).length, 0, 'no reply');
  const rows = await sql(svc.orm, 'select id from conversations where integration_id = ? and client_id in (?, ?)', [integration.id, String(group), String(group - 1)]);
  t.same(rows, [], 'no conversation');
});

t.test('an update_id delivered again gets one reply', async (t) => {
  const chat = newChat();
  const update = telegramTextUpdate({ chatId: chat, text: 'only once please', firstName: 'Dup' });
  t.equal((await postTelegram(api, integration, update)).status, 200);
  t.equal((await postTelegram(api, integration, update)).status, 200, 'Telegram retries a delivery');
  await bot.waitFor(() => sendsTo(chat).length >= 1, 15_000);
  await untilIdle(svc);
  t.equal((await postTelegram(api, integration, update)).status, 200, 'again, after it was answered');
  await untilIdle(svc);
  await new Promise((r) => setTimeout(r, 300));
  t.equal(bot.delivered(chat).length, 1, 'one reply');
  const id = await listedConversationId(api, token, String(chat));
  t.equal((await messagesOf(id)).filter((m) => m.role === 'customer').length, 1, 'one customer message stored');
});

t.test('429 with retry_after: the resend comes no earlier than retry_after', async (t) => {
  const chat = newChat();
  bot.floodOnce(2);
  await tgCustomerWrites(api, integration, chat, 'flood me');
  await bot.waitFor(() => sendsTo(chat).length >= 2, 20_000);
  await untilIdle(svc);
  const [first, second] = sendsTo(chat);
  const gap = second!.at - first!.at;
  t.ok(gap >= 2000, `resent ${gap} ms after the 429 (retry_after 2 s)`);
  t.equal(sendsTo(chat).length, 2, 'refused once, sent once more');
  t.equal(bot.delivered(chat).length, 1, 'delivered once');
  const id = await listedConversationId(api, token, String(chat));
  t.equal((await sentMessage(id, (m) => m.delivery === 'sent', 'sent')).deliveryError, null);
});

for (const status of [500, 502] as const) {
  t.test(`${status}: retried with backoff, delivered once`, async (t) => {
    const chat = newChat();
    bot.failNext(2, status);
    await tgCustomerWrites(api, integration, chat, `after ${status}`);
    await bot.waitFor(() => bot.delivered(chat).length >= 1, 15_000);
    await untilIdle(svc);
    t.equal(sendsTo(chat).length, 3, 'refused twice, then sent');
    t.equal(bot.delivered(chat).length, 1, 'delivered once');
    t.ok(sendsTo(chat)[2]!.at - sendsTo(chat)[1]!.at >= sendsTo(chat)[1]!.at - sendsTo(chat)[0]!.at - 50, 'the second wait no shorter than the first (backoff)');
  });
}

t.test('403 (the bot was blocked): the message failed with code 403, the conversation closed', async (t) => {
  const chat = newChat();
  bot.blockChat(chat);
  t.teardown(() => bot.unblockChat(chat));
  await tgCustomerWrites(api, integration, chat, 'then I block you');
  const id = await listedConversationId(api, token, String(chat));
  const m = await sentMessage(id, (x) => x.delivery === 'failed', 'the reply failed');
  t.equal(m.deliveryError?.code, '403', JSON.stringify(m.deliveryError));
  t.equal(m.deliveryStatus, 'failed');
  const conv = await eventually(async () => {
    const c = await conversation(id);
    return c.status === 'closed' ? c : null;
  }, 10_000, 'the conversation closed');
  t.equal(conv.status, 'closed');
  const transitions = (await api('GET', `/api/conversations/${id}/transitions?limit=100`, { token })).body.transitions as any[];
  t.ok(transitions.some((x) => x.event === 'channel.blocked'), 'transition channel.blocked');
  await untilIdle(svc);
  t.equal(sendsTo(chat).length, 1, 'a 403 is not retried');
});

t.test('a 5000-character reply goes out split at 4096 as two messages in order; an operator reply over 4096 is refused by the API', async (t) => {
  const chat = newChat();
  await tgCustomerWrites(api, integration, chat, 'LONG story');
  await bot.waitFor(() => bot.delivered(chat).length >= 2, 15_000);
  await untilIdle(svc);
  const parts = bot.delivered(chat).map((m) => m.text);
  t.equal(parts.length, 2, `two messages (${parts.map((p) => p.length).join(' + ')})`);
  t.ok(parts.every((p) => p.length <= 4096));
  t.equal(parts.join(''), LONG, 'in order, nothing lost');
  t.ok(bot.delivered(chat)[0]!.message_id < bot.delivered(chat)[1]!.message_id, 'the first part first');
  const id = await listedConversationId(api, token, String(chat));
  const res = await api('POST', `/api/conversations/${id}/messages`, { token, body: { text: 'y'.repeat(5000) } });
  t.equal(res.status, 400, 'the API takes at most 4096 characters from an operator');
});

t.test('an operator reply goes out with sendMessage and takes over', async (t) => {
  const chat = newChat();
  await tgCustomerWrites(api, integration, chat, 'a question');
  await bot.waitFor(() => bot.delivered(chat).length >= 1, 15_000);
  const id = await listedConversationId(api, token, String(chat));
  await untilIdle(svc);
  const res = await api('POST', `/api/conversations/${id}/messages`, { token, body: { text: 'Operator Olga here.' } });
  t.equal(res.status, 200, JSON.stringify(res.body));
  await bot.waitFor(() => bot.delivered(chat).length >= 2, 15_000);
  t.same(sendsTo(chat)[1]!.body, { chat_id: chat, text: 'Operator Olga here.' });
  const conv = await conversation(id);
  t.equal(conv.status, 'paused');
  t.same(conv.state, { paused: 'operator' });
  await tgCustomerWrites(api, integration, chat, 'hello?');
  await untilIdle(svc);
  await new Promise((r) => setTimeout(r, 300));
  t.equal(bot.delivered(chat).length, 2, 'the bot stays silent');
});

t.test("a Telegram conversation counts in analytics and replays like any other; a replay writes to nobody's chat", async (t) => {
  const period = () => `?from=${new Date(Date.now() - 3_600_000).toISOString()}&to=${new Date(Date.now() + 60_000).toISOString()}`;
  const counted = async () => (await api('GET', `/api/analytics${period()}`, { token })).body.analytics.conversations as number;
  const before = await counted();
  const chat = newChat();
  await tgCustomerWrites(api, integration, chat, 'do you ship abroad?');
  await bot.waitFor(() => bot.delivered(chat).length >= 1, 15_000);
  const id = await listedConversationId(api, token, String(chat));
  await untilIdle(svc);
  t.equal(await counted(), before + 1, 'one more conversation in analytics');

  const sends = bot.requests.filter((r) => r.method === 'sendMessage').length;
  const started = await api('POST', `/api/agents/${agentId}/replays`, { token, body: { changes: { systemPrompt: 'Answer in one line.' }, conversations: { ids: [id] } } });
  t.equal(started.status, 201, JSON.stringify(started.body));
  const replay = await eventually(async () => {
    const r = (await api('GET', `/api/agents/${agentId}/replays/${started.body.replay.id}`, { token })).body.replay;
    return r?.status === 'done' ? r : null;
  }, 20_000, 'the replay done');
  t.same(replay.items.map((i: any) => [i.conversationId, i.question, i.after.kind]), [[id, 'do you ship abroad?', 'reply']], "the customer's Telegram question replayed and answered");
  t.match(replay.items[0].after.text, /do you ship abroad\?/, 'with the changed agent');
  t.equal(bot.requests.filter((r) => r.method === 'sendMessage').length, sends, 'the Bot API heard nothing of it');
  t.equal(bot.delivered(chat).length, 1, 'the customer got only the live answer');
});
