// The WhatsApp Cloud API channel (lib/channels/whatsapp): the webhook's normaliser and probe,
// and the sending half against the local Graph sandbox (scripts/sandbox/whatsapp.ts), which
// delivers a message when the request arrives and answers later, like Meta.
import { createHmac } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { AppError } from '../../lib/errors.js';
import { MAX_WHATSAPP_ITEMS, whatsappWebhook } from '../../lib/channels/whatsapp/webhook.js';
import { splitWhatsAppText, whatsappSending, WhatsAppSendError } from '../../lib/channels/whatsapp/sending.js';
import type { SendTarget } from '../../lib/channels/types.js';
import { startWhatsAppStub } from '../support/whatsapp-stub.js';

const RECEIVED = '2026-12-01T10:00:00.000Z';
const raw = new Uint8Array();
const normalise = (payload: unknown) => whatsappWebhook.normalise(payload, raw, RECEIVED).items;
const meta = { display_phone_number: '15550001234', phone_number_id: 'PN1' };
const body = (...values: Record<string, unknown>[]) => ({
  object: 'whatsapp_business_account',
  entry: [{ id: 'WABA', changes: values.map((value) => ({ field: 'messages', value: { messaging_product: 'whatsapp', metadata: meta, ...value } })) }],
});
const textMessage = (id: string, from: string, text: string, timestamp = '1764583200') => ({ from, id, timestamp, type: 'text', text: { body: text } });
const validationError = (fn: () => unknown): AppError => {
  try {
    fn();
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error('expected a VALIDATION_ERROR');
};

t.test('normalise: a text message with its contact', async (t) => {
  const items = normalise(body({ contacts: [{ profile: { name: 'Ann\u0000 \n Lee' }, wa_id: '15551112222' }], messages: [textMessage('wamid.A1', '15551112222', '  hello\nthere ')] }));
  t.same(items, [
    {
      kind: 'message',
      idempotencyKey: 'wa:wamid.A1',
      message: {
        messageId: 'wamid.A1',
        text: '  hello\nthere ',
        clientId: '15551112222',
        channelId: 'PN1',
        transport: 'whatsapp',
        requestId: null,
        dialogId: null,
        attachments: [],
        sentAt: new Date(1764583200 * 1000).toISOString(),
        contact: { name: 'Ann Lee', email: null, phone: '15551112222', source: 'whatsapp' },
      },
    },
  ]);
  t.notOk(items[0]!.kind === 'message' && 'unsupported' in items[0]!.message, 'a text is not unsupported');
});

t.test('normalise: the name is the sender’s, the time falls back to receivedAt', async (t) => {
  const [item] = normalise(body({ contacts: [{ profile: { name: 'Someone Else' }, wa_id: '999' }], messages: [{ ...textMessage('wamid.B', '111', 'hi'), timestamp: 'soon' }] }));
  t.equal(item!.kind === 'message' && item!.message.contact!.name, null);
  t.equal(item!.kind === 'message' && item!.message.sentAt, RECEIVED);
});

t.test('normalise: non-text messages are unsupported, reactions are not items', async (t) => {
  const items = normalise(
    body({
      messages: [
        { from: '1', id: 'wamid.I', timestamp: '1764583200', type: 'image', image: { id: 'MEDIA', mime_type: 'image/jpeg', sha256: 'x' } },
        { from: '1', id: 'wamid.L', timestamp: '1764583200', type: 'location', location: { latitude: 1, longitude: 2 } },
        { from: '1', id: 'wamid.X', timestamp: '1764583200', type: 'Evil<script>' },
        { from: '1', id: 'wamid.N', timestamp: '1764583200' },
        { from: '1', id: 'wamid.R', timestamp: '1764583200', type: 'reaction', reaction: { message_id: 'wamid.OURS', emoji: '👍' } },
      ],
    }),
  );
  t.same(
    items.map((i) => i.kind === 'message' && [i.idempotencyKey, i.message.text, i.message.unsupported]),
    [
      ['wa:wamid.I', '[image]', 'image'],
      ['wa:wamid.L', '[location]', 'location'],
      ['wa:wamid.X', '[unsupported]', 'unsupported'],
      ['wa:wamid.N', '[unsupported]', 'unsupported'],
    ],
  );
});

t.test('normalise: every entry and every change, messages and statuses, each with its own key', async (t) => {
  const change = (n: string) => ({
    field: 'messages',
    value: {
      messaging_product: 'whatsapp',
      metadata: { phone_number_id: `PN${n}` },
      messages: [textMessage(`wamid.M${n}`, `10${n}`, `text ${n}`)],
      statuses: [{ id: `wamid.S${n}`, status: 'delivered', timestamp: '1764583300', recipient_id: `20${n}` }],
    },
  });
  const items = normalise({ object: 'whatsapp_business_account', entry: [{ id: 'W1', changes: [change('1'), change('2')] }, { id: 'W2', changes: [change('3'), change('4')] }] });
  t.same(
    items.map((i) => i.idempotencyKey),
    ['wa:wamid.M1', 'ws:wamid.S1:delivered', 'wa:wamid.M2', 'ws:wamid.S2:delivered', 'wa:wamid.M3', 'ws:wamid.S3:delivered', 'wa:wamid.M4', 'ws:wamid.S4:delivered'],
  );
  t.same(
    items.filter((i) => i.kind === 'message').map((i) => i.kind === 'message' && i.message.channelId),
    ['PN1', 'PN2', 'PN3', 'PN4'],
  );
});

t.test('normalise: statuses, with failed errors and our outbox id', async (t) => {
  const items = normalise(
    body({
      statuses: [
        { id: 'wamid.S', status: 'sent', timestamp: '1764583300', recipient_id: '15551112222', biz_opaque_callback_data: '4711' },
        { id: 'wamid.S', status: 'read', recipient_id: '15551112222', biz_opaque_callback_data: 'not-ours' },
        {
          id: 'wamid.F',
          status: 'failed',
          timestamp: 1764583301,
          recipient_id: '15551112222',
          biz_opaque_callback_data: '123456789012345678901',
          errors: [{ code: 131026, title: 'Message\u0007 undeliverable', message: 'ignored', error_data: { details: 'Message Undeliverable.' } }, { code: 1 }],
        },
        { id: 'wamid.G', status: 'failed', timestamp: '1764583301', recipient_id: '1', errors: [{ code: 131047, message: 'x'.repeat(1000) }] },
        { id: 'wamid.H', status: 'failed', recipient_id: '1' },
        { id: 'wamid.U', status: 'deleted', recipient_id: '1' },
        { id: 'wamid.V', status: 'sent' },
        { status: 'sent', recipient_id: '1' },
      ],
    }),
  );
  t.same(items[0], {
    kind: 'delivery',
    idempotencyKey: 'ws:wamid.S:sent',
    delivery: { externalId: 'wamid.S', outboxId: '4711', status: 'sent', error: null, effect: null, clientId: '15551112222', at: new Date(1764583300_000).toISOString() },
  });
  t.same(items[1], {
    kind: 'delivery',
    idempotencyKey: 'ws:wamid.S:read',
    delivery: { externalId: 'wamid.S', outboxId: null, status: 'read', error: null, effect: null, clientId: '15551112222', at: RECEIVED },
  });
  t.match(items[2], { idempotencyKey: 'ws:wamid.F:failed', delivery: { outboxId: null, error: { code: '131026', message: 'Message undeliverable' }, effect: null, at: new Date(1764583301_000).toISOString() } });
  const long = items[3]!.kind === 'delivery' ? items[3]!.delivery.error! : null;
  t.equal(long?.code, '131047');
  t.equal(items[3]!.kind === 'delivery' && items[3]!.delivery.effect, 'window_closed', "131047 in a status: the closed window's effect, as a refused send's");
  t.equal(long?.message.length, 300, 'an error text is cut to 300 characters');
  t.same(items[4]!.kind === 'delivery' && items[4]!.delivery.error, { code: 'unknown', message: 'WhatsApp gave no reason' });
  t.equal(items.length, 5, 'unknown statuses and statuses without recipient or id are not items');
});

t.test('normalise: what is not acted on is no items', async (t) => {
  t.same(normalise({}), [], 'no entry');
  t.same(normalise({ object: 'page', entry: [{ changes: [{ field: 'messages', value: { messages: [textMessage('wamid.P', '1', 'x')] } }] }] }), [], 'another object');
  t.same(normalise({ object: 'whatsapp_business_account', entry: [{ changes: [{ field: 'account_update', value: { messages: [textMessage('wamid.Q', '1', 'x')] } }] }] }), [], 'another field');
  t.same(
    normalise({ entry: [null, 'x', { changes: 'no' }, { changes: [null, { field: 'messages' }, { field: 'messages', value: [] }, { field: 'messages', value: { messages: 'no', statuses: {} } }] }] }),
    [],
    'malformed entries and changes',
  );
  t.same(
    normalise(
      body({
        messages: [
          null,
          { id: 'wamid.1', type: 'text', text: { body: 'no sender' } },
          { from: '1', type: 'text', text: { body: 'no id' } },
          { from: 1, id: 'wamid.2', type: 'text', text: { body: 'a numeric sender' } },
          { from: '1', id: 'wamid.3', type: 'text', text: {} },
          { from: '1', id: 'w'.repeat(300), type: 'text', text: { body: 'a huge id' } },
          textMessage('wamid.OK', '1', 'the good one'),
        ],
      }),
    ).map((i) => i.idempotencyKey),
    ['wa:wamid.OK'],
    'malformed messages are skipped, the good one of the batch is kept',
  );
});

t.test('normalise: a body that is not an object, or whose entry is not a list, is refused', async (t) => {
  for (const payload of [null, [], 'text', 42]) {
    const err = validationError(() => normalise(payload));
    t.equal(err.code, 'VALIDATION_ERROR');
    t.same(err.details, [{ field: 'body', message: 'must be a JSON object' }]);
  }
  t.same(validationError(() => normalise({ object: 'whatsapp_business_account', entry: {} })).details, [{ field: 'entry', message: 'must be an array' }]);
});

t.test(`normalise: at most ${MAX_WHATSAPP_ITEMS} messages and statuses per body`, async (t) => {
  const messages = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => textMessage(`wamid.${prefix}${i}`, '1', 'x'));
  const statuses = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `wamid.s${i}`, status: 'sent', recipient_id: '1' }));
  t.equal(normalise(body({ messages: messages(600, 'a') }, { statuses: statuses(400) })).length, 1000);
  const err = validationError(() => normalise(body({ messages: messages(600, 'a') }, { statuses: statuses(401) })));
  t.equal(err.code, 'VALIDATION_ERROR');
  t.match(err.details, [{ field: 'entry[0].changes[1].value.statuses', message: /more than 1000/ }]);
  t.throws(() => normalise({ entry: Array.from({ length: 3 }, () => ({ changes: Array.from({ length: 400 }, () => ({ field: 'other' })) })) }), { code: 'VALIDATION_ERROR' }, 'changes are bounded too');
});

t.test('probe: Meta’s subscription check', async (t) => {
  const probe = (q: string, verifyToken: string | null = 'verify-me') => whatsappWebhook.probe!(new URLSearchParams(q), { verifyToken });
  t.same(probe('hub.mode=subscribe&hub.verify_token=verify-me&hub.challenge=1158201444'), { status: 200, text: '1158201444' });
  t.same(probe('hub.mode=subscribe&hub.verify_token=verify-mE&hub.challenge=1'), { status: 403, text: 'verification failed' }, 'wrong token');
  t.same(probe('hub.mode=subscribe&hub.verify_token=verify&hub.challenge=1'), { status: 403, text: 'verification failed' }, 'shorter token');
  t.same(probe('hub.mode=subscribe&hub.verify_token=verify-me'), { status: 403, text: 'verification failed' }, 'no challenge');
  t.same(probe('hub.mode=subscribe&hub.verify_token=verify-me&hub.challenge='), { status: 403, text: 'verification failed' }, 'empty challenge');
  t.same(probe(`hub.mode=subscribe&hub.verify_token=verify-me&hub.challenge=${'1'.repeat(257)}`), { status: 403, text: 'verification failed' }, 'long challenge');
  t.same(probe('hub.mode=unsubscribe&hub.verify_token=verify-me&hub.challenge=1'), { status: 403, text: 'verification failed' }, 'another mode');
  t.same(probe('hub.mode=subscribe&hub.verify_token=&hub.challenge=1', ''), { status: 403, text: 'verification failed' }, 'no token of ours');
  t.same(probe('hub.mode=subscribe&hub.verify_token=x&hub.challenge=1', null), { status: 403, text: 'verification failed' });
  t.equal(probe('hub.verify_token=verify-me&hub.challenge=1'), null, 'not Meta’s probe');
  t.equal(probe(''), null);
});

t.test('split: 4096 at most, at a newline or space near the end, never inside a surrogate pair', async (t) => {
  t.same(splitWhatsAppText(''), ['']);
  t.same(splitWhatsAppText('short'), ['short']);
  const exact = 'a'.repeat(4096);
  t.same(splitWhatsAppText(exact), [exact]);
  t.same(splitWhatsAppText(exact + 'b'), [exact, 'b'], 'a long word is cut at 4096');
  const words = `${'a'.repeat(3500)} ${'b'.repeat(500)}\n${'c'.repeat(200)}`;
  t.same(splitWhatsAppText(words), [`${'a'.repeat(3500)} ${'b'.repeat(500)}`, 'c'.repeat(200)], 'the newline in the last 20 % wins');
  const spaced = `${'a'.repeat(4000)} ${'b'.repeat(200)}`;
  t.same(splitWhatsAppText(spaced), ['a'.repeat(4000), 'b'.repeat(200)]);
  const early = `${'a'.repeat(100)} ${'b'.repeat(5000)}`;
  t.same(splitWhatsAppText(early).map((p) => p.length), [4096, 1005], 'a space early in the window is not used');
  const emoji = 'x' + '😀'.repeat(3000);
  const parts = splitWhatsAppText(emoji);
  t.equal(parts.join(''), emoji, 'nothing lost');
  t.equal(parts[0]!.length, 4095, 'the pair across the boundary goes to the next part');
  for (const p of parts) {
    t.ok(p.length <= 4096);
    t.ok(p.isWellFormed(), 'no lone surrogate');
  }
  const big = 'word '.repeat(5000);
  const many = splitWhatsAppText(big);
  t.ok(many.every((p) => p.length <= 4096 && p.length > 0));
  t.equal(many.join(' ').replace(/\s+/g, ' ').trim(), big.trim(), 'only the separators at the cuts are dropped');
});

const stub = await startWhatsAppStub(t);
const channel = whatsappSending({ graphUrl: stub.url, graphVersion: 'v21.0' });
const target = (over: Partial<SendTarget> = {}): SendTarget => ({
  integrationId: 1,
  clientId: '15551112222',
  channelId: null,
  transport: 'whatsapp',
  apiUrl: null,
  token: stub.token,
  phoneNumberId: stub.account.phoneNumberId,
  ...over,
});
const failureOf = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (err) {
    return { err, failure: channel.classify(err) };
  }
  throw new Error('expected the send to fail');
};

t.test('send: the Graph request, the wamid, onWritten before the answer', async (t) => {
  stub.handle((req) => (req.body?.text?.body === 'slow' ? { status: 200, deliver: true, delayMs: 400 } : undefined));
  t.teardown(() => stub.handle(null));
  const result = await channel.send(target(), 'Hello 👋', { outboxId: '4711' });
  const req = stub.requests.at(-1)!;
  t.equal(req.path, `/v21.0/${stub.account.phoneNumberId}/messages`);
  t.equal(req.headers.authorization, `Bearer ${stub.token}`);
  t.match(req.headers['content-type'], /^application\/json/);
  t.equal(
    req.raw,
    JSON.stringify({ messaging_product: 'whatsapp', recipient_type: 'individual', to: '15551112222', type: 'text', text: { preview_url: false, body: 'Hello 👋' }, biz_opaque_callback_data: '4711' }),
  );
  t.match(result.externalId, /^wamid\./);
  t.match(stub.sent.at(-1), { wamid: result.externalId, to: '15551112222', body: 'Hello 👋', bizOpaqueCallbackData: '4711', phoneNumberId: stub.account.phoneNumberId });

  let writtenAt = 0;
  let writtenCalls = 0;
  let answered = false;
  const started = Date.now();
  const pending = channel.send(target(), 'slow', {
    outboxId: '4712',
    onWritten: () => {
      writtenCalls += 1;
      writtenAt = Date.now();
      t.notOk(answered, 'onWritten comes before the answer');
    },
  });
  const slow = await pending.then((r) => {
    answered = true;
    return r;
  });
  t.equal(writtenCalls, 1, 'called once');
  t.ok(writtenAt - started < 350, 'called as the request left');
  t.ok(Date.now() - writtenAt >= 300, 'the answer came about 400 ms later');
  t.match(slow.externalId, /^wamid\./);
});

t.test('send: a connection never made does not call onWritten; a failure classifies as later', async (t) => {
  const closed = createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
  const port = (closed.address() as AddressInfo).port;
  await new Promise<void>((r) => closed.close(() => r()));
  const refused = whatsappSending({ graphUrl: `http://127.0.0.1:${port}`, graphVersion: 'v21.0' });
  let written = false;
  try {
    await refused.send(target(), 'hi', { outboxId: '1', onWritten: () => (written = true) });
    t.fail('expected a failure');
  } catch (err) {
    t.ok(err instanceof WhatsAppSendError);
    t.same(refused.classify(err), { retry: 'later', code: 'network', message: 'WhatsApp could not be reached (network); it will be tried again', retryAfterMs: null, effect: null });
  }
  t.notOk(written);
});

t.test('classify: Graph errors', async (t) => {
  const cases: [Parameters<typeof stub.failNext>[1], Partial<ReturnType<typeof channel.classify>>][] = [
    ['rate_limit', { retry: 'later', code: '130429', effect: null }],
    ['pair_rate_limit', { retry: 'later', code: '131056', effect: null }],
    ['window_closed', { retry: 'never', code: '131047', effect: 'window_closed' }],
    ['undeliverable', { retry: 'never', code: '131026', effect: null, message: 'WhatsApp refused the message (131026: the number cannot receive it)' }],
    ['server_error', { retry: 'later', code: '131000' }],
    ['unavailable', { retry: 'later', code: '2' }],
    ['http_429', { retry: 'later', code: '130429', retryAfterMs: 1000 }],
    ['bad_request', { retry: 'never', code: '100' }],
  ];
  for (const [kind, expected] of cases) {
    const before = stub.sent.length;
    stub.failNext(1, kind);
    const { err, failure } = await failureOf(channel.send(target(), `fault ${kind}`, { outboxId: '9' }));
    t.match(failure, expected, kind);
    t.match(failure.message, new RegExp(`\\(${failure.code}`), `${kind}: the code is in the message`);
    t.notMatch(failure.message, /Rate limit hit|Re-engagement|Something went wrong|Invalid parameter|#/, `${kind}: not Meta's words`);
    t.equal(stub.sent.length, before, `${kind}: not delivered`);
    t.ok(err instanceof WhatsAppSendError && (err.graphCode === Number(failure.code)), `${kind}: the Graph code is kept`);
    if (kind === 'rate_limit') t.notOk((err as WhatsAppSendError).permanent, 'a rate limit answered 400 is not permanent');
  }
  const { failure } = await failureOf(channel.send(target({ token: 'stale-token' }), 'hi', { outboxId: '9' }));
  t.match(failure, { retry: 'never', code: '190', effect: null });
  t.notMatch(failure.message, /stale-token/, 'never the token');
  stub.handle(() => ({ status: 502, body: '<html>bad gateway</html>' }));
  const gateway = await failureOf(channel.send(target(), 'hi', { outboxId: '9' }));
  stub.handle(null);
  t.match(gateway.failure, { retry: 'later', code: 'http_502' });
  stub.handle(() => ({ status: 404, body: {} }));
  const notFound = await failureOf(channel.send(target(), 'hi', { outboxId: '9' }));
  stub.handle(null);
  t.match(notFound.failure, { retry: 'never', code: 'http_404', message: 'WhatsApp refused the message (http_404)' });
});

t.test('classify: a timeout or a cut after the request left may have delivered it', async (t) => {
  const impatient = whatsappSending({ graphUrl: stub.url, graphVersion: 'v21.0', timeoutMs: 200 });
  const before = stub.sent.length;
  stub.failNext(1, 'timeout');
  let written = false;
  const timedOut = await failureOf(impatient.send(target(), 'held', { outboxId: '10', onWritten: () => (written = true) }));
  t.match(timedOut.failure, { retry: 'unknown', code: 'timeout', effect: null });
  t.ok(written, 'the request had left');
  t.equal(stub.sent.length, before + 1, 'and WhatsApp delivered it');
  stub.failNext(1, 'cut');
  const cut = await failureOf(channel.send(target(), 'cut', { outboxId: '11' }));
  t.match(cut.failure, { retry: 'unknown', code: 'network' });
  t.equal(stub.sent.length, before + 2);
  t.match(channel.classify(new Error('boom')), { retry: 'unknown', code: 'internal' });
  const noNumber = await failureOf(channel.send(target({ phoneNumberId: null }), 'hi', { outboxId: '12' }));
  t.match(noNumber.failure, { retry: 'never', code: 'no_phone_number' });
});

t.test('channel shape', async (t) => {
  t.equal(channel.type, 'whatsapp');
  t.equal(channel.replyWindowMs, 24 * 3600_000);
  t.notOk('reconcile' in channel);
  t.same(whatsappWebhook.proof, { kind: 'signature', headers: ['x-hub-signature-256'] });
});

t.test('sandbox: sends in flight are counted until answered', async (t) => {
  const slow = await startWhatsAppStub(t, { latencyMs: [400, 400] });
  const ch = whatsappSending({ graphUrl: slow.url, graphVersion: 'v21.0' });
  const all = Array.from({ length: 40 }, (_, i) => ch.send(target({ token: slow.token }), `m${i}`, { outboxId: String(i) }));
  await slow.waitForInFlight(40, 5000);
  t.equal(slow.inFlight(), 40);
  t.equal(slow.sent.length, 40, 'all delivered before any answer');
  await Promise.all(all);
  await new Promise((r) => setTimeout(r, 20));
  t.equal(slow.inFlight(), 0);
  t.equal(slow.received(), 40);
  const bad = await fetch(`${slow.url}/v21.0/1/messages`, { method: 'POST', headers: { authorization: `Bearer ${slow.token}` }, body: JSON.stringify({ messaging_product: 'whatsapp', to: '1', type: 'image' }) });
  t.equal(bad.status, 400);
  t.match(await bad.json(), { error: { code: 100, type: 'OAuthException', fbtrace_id: String } });
});

t.test('sandbox: signed status webhooks of each send, normalised by the channel', async (t) => {
  const appSecret = 'app-secret-for-tests';
  const received: { body: string; signature: string | undefined }[] = [];
  let refuseFirst = true;
  const hook = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    if (refuseFirst) {
      refuseFirst = false;
      res.writeHead(503).end();
      return;
    }
    received.push({ body: Buffer.concat(chunks).toString('utf8'), signature: req.headers['x-hub-signature-256'] as string | undefined });
    res.writeHead(200).end('{}');
  });
  await new Promise<void>((r) => hook.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => hook.close(() => r())));
  const sandbox = await startWhatsAppStub(t);
  sandbox.connect(`http://127.0.0.1:${(hook.address() as AddressInfo).port}/api/webhook/whatsapp/1`, appSecret, { read: true, outOfOrder: true, duplicate: true });
  const ch = whatsappSending({ graphUrl: sandbox.url, graphVersion: 'v21.0' });
  const { externalId } = await ch.send(target({ token: sandbox.token, phoneNumberId: sandbox.account.phoneNumberId }), 'hello', { outboxId: '77' });
  await sandbox.webhooksIdle();
  await new Promise((r) => setTimeout(r, 150));
  await sandbox.webhooksIdle();
  t.equal(received.length, 4, 'sent, delivered twice, read');
  t.same(sandbox.webhooks()[0]!.statuses.slice(0, 2), [503, 200], 'a refused webhook is tried again');
  const deliveries = received.flatMap((r) => {
    t.equal(r.signature, `sha256=${createHmac('sha256', appSecret).update(r.body).digest('hex')}`, 'signed with the app secret');
    return normalise(JSON.parse(r.body));
  });
  t.same(
    deliveries.map((d) => d.kind === 'delivery' && [d.delivery.status, d.delivery.externalId, d.delivery.outboxId, d.delivery.clientId]).sort(),
    [
      ['delivered', externalId, '77', '15551112222'],
      ['delivered', externalId, '77', '15551112222'],
      ['read', externalId, '77', '15551112222'],
      ['sent', externalId, '77', '15551112222'],
    ],
    'each status of the send, with our outbox id',
  );
  t.same(
    sandbox.webhooks().map((d) => JSON.parse(d.body).entry[0].changes[0].value.statuses[0].status),
    ['read', 'delivered', 'delivered', 'sent'],
    'posted out of order and duplicated, as Meta may',
  );
  const inbound = sandbox.inboundText({ from: '15553334444', name: 'Bo', text: 'hi there', wamid: 'wamid.IN1', timestamp: 1764583200 });
  t.equal(inbound.signature, `sha256=${createHmac('sha256', appSecret).update(inbound.body).digest('hex')}`);
  t.match(normalise(JSON.parse(inbound.body)), [
    { kind: 'message', idempotencyKey: 'wa:wamid.IN1', message: { text: 'hi there', clientId: '15553334444', channelId: sandbox.account.phoneNumberId, contact: { name: 'Bo' } } },
  ]);
  const failed = sandbox.statusBody({ wamid: 'wamid.X', status: 'failed', recipientId: '1', bizOpaqueCallbackData: '5' });
  t.match(normalise(JSON.parse(failed.body)), [{ kind: 'delivery', delivery: { status: 'failed', outboxId: '5', error: { code: '131026' } } }]);
  const posted = await sandbox.postInbound({ from: '15553334444', text: 'again' });
  t.ok(posted.delivered);
});
