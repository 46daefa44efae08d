// The Telegram channel against the local Bot API sandbox (scripts/sandbox/telegram.ts): the
// webhook normaliser, splitting, sending, how failures are judged, setWebhook, and that the
// bot token (it is in the URL) never shows up in an error.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import t from 'tap';
import { callBotApi, setWebhook, TELEGRAM_SECRET_RE, TelegramApiError } from '../../lib/channels/telegram/bot-api.js';
import { splitTelegramText, telegramSending } from '../../lib/channels/telegram/sending.js';
import { telegramWebhook } from '../../lib/channels/telegram/webhook.js';
import type { SendFailure, SendTarget } from '../../lib/channels/types.js';
import { AppError } from '../../lib/errors.js';
import { startTelegramStub, TEST_BOT_TOKEN } from '../support/telegram-stub.js';

const RECEIVED = '2026-01-02T03:04:05.000Z';
const raw = new Uint8Array();
const normalise = (payload: unknown) => telegramWebhook.normalise(payload, raw, RECEIVED);

const tg = await startTelegramStub(t);
const channel = telegramSending({ apiUrl: tg.url });
const target = (clientId: string, token = TEST_BOT_TOKEN): SendTarget => ({ integrationId: 1, clientId, channelId: null, transport: 'telegram', apiUrl: null, token, phoneNumberId: null });
const sendOptions = { outboxId: '1' };

/** Every error the tests see, checked at the end for the token. */
const seen: unknown[] = [];
const failureOf = async (p: Promise<unknown>): Promise<{ err: TelegramApiError; judged: SendFailure }> => {
  try {
    await p;
  } catch (err) {
    seen.push(err);
    if (!(err instanceof TelegramApiError)) throw err;
    const judged = channel.classify(err);
    seen.push(judged);
    return { err, judged };
  }
  throw new Error('expected a TelegramApiError');
};

t.test('normalise: a private text message is a customer message', async (t) => {
  t.equal(telegramWebhook.type, 'telegram');
  t.same(telegramWebhook.proof, { kind: 'secret_header', header: 'x-telegram-bot-api-secret-token' });
  t.equal(telegramWebhook.probe, undefined);
  const body = tg.update({ updateId: 901, chatId: 4242, text: 'Hello there', firstName: 'Ada', lastName: 'Lovelace', username: 'ada', messageId: 77, date: 1_767_225_600 });
  t.same(normalise(body), {
    items: [
      {
        kind: 'message',
        idempotencyKey: 'tg:901',
        message: {
          messageId: '77',
          text: 'Hello there',
          clientId: '4242',
          channelId: null,
          transport: 'telegram',
          requestId: null,
          dialogId: null,
          attachments: [],
          sentAt: '2026-01-01T00:00:00.000Z',
          contact: { name: 'Ada Lovelace', email: null, phone: null, source: 'telegram' },
        },
      },
    ],
  });
});

t.test('normalise: names fall back to the username, then the chat; hostile names are cleaned', async (t) => {
  const nameOf = (payload: unknown) => {
    const [item] = normalise(payload).items;
    return item?.kind === 'message' ? (item.message.contact?.name ?? null) : 'not a message';
  };
  t.equal(nameOf(tg.update({ updateId: 1, chatId: 5, text: 'hi', firstName: 'Ada' })), 'Ada');
  t.equal(nameOf(tg.update({ updateId: 2, chatId: 5, text: 'hi', username: 'ada_l' })), 'ada_l', 'username when no first / last name');
  const noFrom = { update_id: 3, message: { message_id: 1, date: 1, text: 'hi', chat: { id: 5, type: 'private', first_name: 'Chat', last_name: 'Name' } } };
  t.equal(nameOf(noFrom), 'Chat Name', "the chat's names when the message has no from");
  const chatUsername = { update_id: 4, message: { message_id: 1, date: 1, text: 'hi', chat: { id: 5, type: 'private', username: 'only_user' } } };
  t.equal(nameOf(chatUsername), 'only_user');
  t.equal(nameOf(tg.update({ updateId: 5, chatId: 5, text: 'hi', firstName: 'Eve\u202e\n', lastName: 'x'.repeat(1000) })), `Eve ${'x'.repeat(196)}`, 'control characters out, cut at 200');
  const nameless = normalise({ update_id: 6, message: { message_id: 1, date: 1, text: 'hi', chat: { id: 5, type: 'private' } } });
  t.equal(nameless.items.length, 1);
  t.notOk(nameless.items[0].kind === 'message' && nameless.items[0].message.contact, 'no contact when there is no name');
  const [noDate] = normalise({ update_id: 7, message: { message_id: 1, text: 'hi', chat: { id: 5, type: 'private' } } }).items;
  t.equal(noDate.kind === 'message' && noDate.message.sentAt, RECEIVED, 'sentAt: received time when there is no date');
});

t.test('normalise: everything but a private text message from a person is ignored', async (t) => {
  for (const chatType of ['group', 'supergroup', 'channel'] as const) {
    t.same(normalise(tg.update({ updateId: 10, chatId: -1001234567890, text: 'hi all', firstName: 'A', chatType })), { items: [] }, chatType);
  }
  const message = { message_id: 1, date: 1, chat: { id: 5, type: 'private', first_name: 'A' }, from: { id: 5, is_bot: false, first_name: 'A' } };
  t.same(normalise({ update_id: 11, message: { ...message, photo: [{ file_id: 'x', width: 1, height: 1 }] } }), { items: [] }, 'a photo');
  t.same(normalise({ update_id: 12, message: { ...message, sticker: { file_id: 'x' } } }), { items: [] }, 'a sticker');
  t.same(normalise({ update_id: 13, edited_message: { ...message, text: 'edited' } }), { items: [] }, 'an edited message');
  t.same(normalise({ update_id: 14, channel_post: { ...message, chat: { id: -100, type: 'channel' }, text: 'post' } }), { items: [] }, 'a channel post');
  t.same(normalise({ update_id: 15, callback_query: { id: 'q', from: message.from, data: 'x' } }), { items: [] }, 'a callback query');
  t.same(normalise({ update_id: 16, message: { ...message, text: 'beep', from: { id: 9, is_bot: true, first_name: 'Bot' } } }), { items: [] }, 'from a bot');
  t.same(normalise({ update_id: 17 }), { items: [] }, 'no message at all');
});

t.test('normalise: ids as ids, malformed updates are 400', async (t) => {
  const [big] = normalise(tg.update({ updateId: 0, chatId: 9_007_199_254_740_991, text: 'hi', firstName: 'A' })).items;
  t.equal(big.kind === 'message' && big.message.clientId, '9007199254740991', 'chat.id as its decimal string');
  t.equal(big.idempotencyKey, 'tg:0');
  const [negative] = normalise(tg.update({ updateId: 20, chatId: -42, text: 'hi', firstName: 'A' })).items;
  t.equal(negative.kind === 'message' && negative.message.clientId, '-42', 'a negative id is kept with its sign');

  const rejects = (payload: unknown, field: string, name: string) => {
    try {
      normalise(payload);
      t.fail(`${name}: expected a 400`);
    } catch (err) {
      t.ok(err instanceof AppError, name);
      t.match(err, { code: 'VALIDATION_ERROR', status: 400, details: [{ field }] }, name);
    }
  };
  for (const body of [null, [], 'update', 42]) rejects(body, '(body)', `body ${JSON.stringify(body)}`);
  for (const id of [undefined, -1, 1.5, '12', 2 ** 53, null]) rejects({ update_id: id, message: { message_id: 1, text: 'x', chat: { id: 1, type: 'private' } } }, 'update_id', `update_id ${String(id)}`);
  const text = (chat: unknown, extra: object = {}) => ({ update_id: 30, message: { message_id: 1, date: 1, text: 'hi', chat, ...extra } });
  rejects(text({ id: '4242', type: 'private' }), 'message.chat.id', 'chat.id as a string');
  rejects(text({ id: 1.5, type: 'private' }), 'message.chat.id', 'chat.id not an integer');
  rejects(text({ id: 2 ** 60, type: 'private' }), 'message.chat.id', 'chat.id not a safe integer');
  rejects(text(undefined), 'message.chat', 'no chat');
  rejects(text({ id: 1, type: 'private' }, { message_id: 'x' }), 'message.message_id', 'message_id not an integer');
});

t.test('split: parts of at most 4096, soft breaks, surrogate pairs kept whole', async (t) => {
  t.same(splitTelegramText(''), [''], 'at least one part');
  t.same(channel.split('a'.repeat(4096)), ['a'.repeat(4096)]);
  t.same(channel.split('a'.repeat(4097)), ['a'.repeat(4096), 'a']);
  const words = `${'a'.repeat(4000)} ${'b'.repeat(200)}`;
  t.same(channel.split(words), [`${'a'.repeat(4000)} `, 'b'.repeat(200)], 'at the last space of the last fifth');
  const lines = `${'a'.repeat(3500)}\n${'c'.repeat(300)} ${'d'.repeat(400)}`;
  t.same(channel.split(lines), [`${'a'.repeat(3500)}\n`, `${'c'.repeat(300)} ${'d'.repeat(400)}`], 'a newline first');
  const early = `${'a'.repeat(100)} ${'b'.repeat(5000)}`;
  t.same(channel.split(early).map((p) => p.length), [4096, 1005], 'a space early in the window is not used');
  const emoji = `${'a'.repeat(4095)}😀tail`;
  t.same(channel.split(emoji), ['a'.repeat(4095), '😀tail'], 'the pair is not cut');
  const allEmoji = '😀'.repeat(5000);
  const parts = channel.split(allEmoji);
  t.ok(parts.every((p) => p.length <= 4096 && p.isWellFormed()), 'every part well formed');
  t.equal(parts.join(''), allEmoji);
  t.same(channel.split(`${'a'.repeat(4096)}   `), ['a'.repeat(4096)], 'trailing whitespace is not a part of its own');
});

t.test('send: sendMessage {chat_id, text}, the message_id back, onWritten before the answer', async (t) => {
  t.teardown(() => tg.setLatency([5, 20]));
  tg.setLatency([150, 150]);
  const events: string[] = [];
  const first = channel.send(target('700'), 'Hi, how can I help?', { ...sendOptions, onWritten: () => events.push(`written(in flight ${tg.inFlight()})`) });
  void first.then(() => events.push('answered'));
  t.same(await first, { externalId: '1' });
  t.equal(events[0]?.startsWith('written'), true, 'onWritten first');
  t.equal(events.at(-1), 'answered');
  t.same(await channel.send(target('700'), 'Second', sendOptions), { externalId: '2' }, 'message ids increase per chat');
  t.same(await channel.send(target('-100777'), 'Group', sendOptions), { externalId: '1' });
  t.same(await channel.send(target('@somechannel'), 'Channel', sendOptions), { externalId: '1' });
  const bodies = tg.requests.filter((r) => r.method === 'sendMessage').map((r) => r.body);
  t.same(bodies.slice(-4), [
    { chat_id: 700, text: 'Hi, how can I help?' },
    { chat_id: 700, text: 'Second' },
    { chat_id: -100777, text: 'Group' },
    { chat_id: '@somechannel', text: 'Channel' },
  ], 'integer ids go out as numbers');
  t.match(tg.requests.at(-1), { httpMethod: 'POST', token: TEST_BOT_TOKEN, headers: { 'content-type': 'application/json' } });
  t.same(tg.delivered(700).map((m) => m.text), ['Hi, how can I help?', 'Second']);
});

t.test('the sandbox delivers when a send arrives: 40 in flight, all delivered before any answer', async (t) => {
  t.teardown(() => tg.setLatency([5, 20]));
  tg.setLatency([400, 400]);
  const before = tg.sent.length;
  const sends = Array.from({ length: 40 }, (_, i) => channel.send(target(String(8000 + (i % 4))), `m${i}`, sendOptions));
  await tg.waitForInFlight(40);
  t.equal(tg.sent.length - before, 40, 'delivered while no answer was written');
  const ids = await Promise.all(sends);
  t.equal(tg.inFlight(), 0);
  t.same(tg.delivered(8001).map((m) => m.message_id), Array.from({ length: 10 }, (_, i) => i + 1));
  t.equal(new Set(ids.map((r) => r.externalId)).size, 10, 'ids per chat');
});

t.test('classify: 429 waits retry_after, 403 closes, 5xx later, 4xx never', async (t) => {
  tg.floodOnce(7);
  const before = tg.sent.length;
  const flood = await failureOf(channel.send(target('900'), 'x', sendOptions));
  t.match(flood.err, { errorCode: 429, status: 429, retryAfterMs: 7000 });
  t.same(flood.judged, { retry: 'later', code: '429', message: flood.judged.message, retryAfterMs: 7000, effect: null });
  t.match(flood.judged.message, /429/);

  tg.blockChat(901);
  const blocked = await failureOf(channel.send(target('901'), 'x', sendOptions));
  t.match(blocked.judged, { retry: 'never', code: '403', effect: 'blocked', retryAfterMs: null });
  t.match(blocked.judged.message, /403.*blocked the bot/);
  t.notMatch(blocked.judged.message, /Forbidden: bot was blocked by the user/, 'not Telegram\'s words');
  t.equal(blocked.err.description, 'Forbidden: bot was blocked by the user', 'kept for us');
  t.notMatch(blocked.err.message, /Forbidden/);
  tg.unblockChat(901);

  for (const status of [500, 502] as const) {
    tg.failNext(1, status);
    const failed = await failureOf(channel.send(target('902'), 'x', sendOptions));
    t.match(failed.judged, { retry: 'later', code: String(status), effect: null }, `${status}`);
  }
  t.equal(tg.sent.length, before, 'none of these delivered');

  const tooLong = await failureOf(channel.send(target('903'), 'x'.repeat(4097), sendOptions));
  t.match(tooLong.judged, { retry: 'never', code: '400', effect: null });
  t.match(tooLong.judged.message, /too long/);

  tg.answer((r) => (r.method === 'sendMessage' ? { status: 400, body: { ok: false, error_code: 400, description: 'Bad Request: chat not found' } } : undefined));
  const notFound = await failureOf(channel.send(target('904'), 'x', sendOptions));
  tg.answer(null);
  t.match(notFound.judged, { retry: 'never', code: '400' });
  t.match(notFound.judged.message, /chat was not found/);

  const wrongToken = await failureOf(channel.send(target('905', '999:wrong-token'), 'x', sendOptions));
  t.match(wrongToken.judged, { retry: 'never', code: '401' });
});

t.test('classify: a timeout or a cut after the request left is unknown; refused is later', async (t) => {
  t.teardown(() => tg.answer(null));
  const impatient = telegramSending({ apiUrl: tg.url, timeoutMs: 100 });
  tg.answer((r) => (r.method === 'sendMessage' ? { status: 200, delayMs: 600, deliver: true, body: { ok: true, result: { message_id: 1 } } } : undefined));
  let written = false;
  const slow = await failureOf(impatient.send(target('910'), 'slow', { ...sendOptions, onWritten: () => (written = true) }));
  t.match(impatient.classify(slow.err), { retry: 'unknown', code: 'timeout', retryAfterMs: null, effect: null });
  t.ok(written, 'it had left');
  t.equal(tg.delivered(910).length, 1, 'and Telegram delivered it');

  tg.answer((r) => (r.method === 'sendMessage' ? { status: 200, delayMs: 10, deliver: true, raw: (res) => res.socket?.destroy() } : undefined));
  const cut = await failureOf(channel.send(target('911'), 'cut', sendOptions));
  t.match(cut.judged, { retry: 'unknown', code: 'network' });
  tg.answer(null);

  const closed = createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const port = (closed.address() as AddressInfo).port;
  await new Promise((r) => closed.close(r));
  let calledBack = false;
  const refused = await failureOf(telegramSending({ apiUrl: `http://127.0.0.1:${port}` }).send(target('912'), 'x', { ...sendOptions, onWritten: () => (calledBack = true) }));
  t.match(refused.judged, { retry: 'later', code: 'network', effect: null });
  t.equal(refused.err.maybeDelivered, false);
  t.notOk(calledBack, 'a refused connection is not written');

  const before = tg.requests.length;
  const badToken = await failureOf(channel.send(target('913', `${TEST_BOT_TOKEN}/../getMe`), 'x', sendOptions));
  t.match(badToken.judged, { retry: 'never' });
  t.equal(tg.requests.length, before, 'a token with characters a token cannot have is not sent');
});

t.test('setWebhook: url, secret and allowed_updates; a bad secret is refused', async (t) => {
  const url = 'https://example.test/api/webhook/telegram/12';
  t.equal(await setWebhook(tg.url, TEST_BOT_TOKEN, { url, secretToken: 'Abc_123-xyz' }), true);
  t.match(tg.webhooks.at(-1), { token: TEST_BOT_TOKEN, url, secret_token: 'Abc_123-xyz', allowed_updates: ['message'] });
  t.ok(TELEGRAM_SECRET_RE.test('a'.repeat(256)));
  t.notOk(TELEGRAM_SECRET_RE.test('a'.repeat(257)));
  const count = tg.webhooks.length;
  const bad = await failureOf(setWebhook(tg.url, TEST_BOT_TOKEN, { url, secretToken: 'not secret!' }));
  t.match(bad.err, { errorCode: 400, status: 400, permanent: true, method: 'setWebhook' });
  t.equal(tg.webhooks.length, count, 'not recorded');
  t.same(await callBotApi(tg.url, TEST_BOT_TOKEN, 'getMe', {}), { id: 123456789, is_bot: true, first_name: 'Sandbox Bot', username: 'sandbox_bot', can_join_groups: true, can_read_all_group_messages: false, supports_inline_queries: false });
  const unknown = await failureOf(callBotApi(tg.url, TEST_BOT_TOKEN, 'noSuchMethod', {}));
  t.match(unknown.err, { errorCode: 404 });
});

t.test('deliverUpdate posts an Update with the secret header, as Telegram does', async (t) => {
  const got: { headers: Record<string, unknown>; body: string }[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      got.push({ headers: req.headers, body });
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise((r) => server.close(r)));
  const update = tg.update({ updateId: 55, chatId: 4242, text: 'hi', firstName: 'Ada' });
  const res = await tg.deliverUpdate(`http://127.0.0.1:${(server.address() as AddressInfo).port}/api/webhook/telegram/1`, 'Abc_123', update);
  t.same(res, { status: 200, body: { ok: true } });
  t.equal(got[0].headers['x-telegram-bot-api-secret-token'], 'Abc_123');
  t.same(JSON.parse(got[0].body), update);
  t.equal(normalise(JSON.parse(got[0].body)).items[0].idempotencyKey, 'tg:55');
});

t.test('the bot token never appears in an error', async (t) => {
  const texts = seen.filter((e) => e !== null);
  t.ok(texts.length >= 12, `${texts.length} errors and verdicts seen`);
  for (const e of texts) {
    const shown = `${inspect(e, { depth: 10 })} ${e instanceof Error ? e.message : ''} ${JSON.stringify(e)}`;
    t.notOk(shown.includes(TEST_BOT_TOKEN), inspect(e instanceof Error ? e.message : e));
    t.notOk(shown.includes(TEST_BOT_TOKEN.split(':')[1]), 'nor its secret half');
  }
});
