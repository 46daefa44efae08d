import t from 'tap';
import { startRepeatingModel } from '../support/repeating-model.js';
import { signUp, startTestService } from '../support/service.js';
import { dropNatsPrefixAtEnd } from '../support/webhooks.js';
import { startTestWorker, waitForPartitions } from '../support/worker.js';
import { createWebchatIntegration, openChat, startWebchatGateway, type ChatClient, type Frame } from '../support/webchat.js';
import { seededRandom } from '../support/random.js';

/**
 * Fuzzing the webchat socket with a fixed seed: thousands of generated frames (not JSON,
 * invalid UTF-8, wrong types, unknown frame types, deep nesting, huge strings, prototype
 * keys). The gateway must never crash nor fail internally: a bad frame gets an `error`
 * frame with a code and the socket stays usable, or the socket is closed with a clear
 * protocol code (1007 invalid UTF-8, 1008 policy, 1009 too big); never 1011 or INTERNAL_ERROR.
 * The flood limit and the message rates are lifted on this gateway so the fuzzer is not cut
 * off by them.
 */
const SEED = Number(process.env.FUZZ_SEED ?? 0xc0ffee);
const COUNT = Number(process.env.FUZZ_COUNT ?? 2000);
const BATCH = 50;
const CLEAR_CLOSE_CODES = [1007, 1008, 1009];

const rnd = seededRandom(SEED);
const int = (n: number) => Math.floor(rnd() * n);
const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;

const weird: unknown[] = [
  null, true, false, 0, -1, 1.5, 1e308, -0, '', ' ', 'x'.repeat(500), '\u0000', '\ud800', '💥', [], {}, [1, 2], { a: 1 },
  Number.MAX_SAFE_INTEGER, '12345678901234567890', '<script>alert(1)</script>', "' or 1=1 --", '__proto__', 'constructor',
];
const types = ['hello', 'message', 'ping', 'pong', 'welcome', 'ack', 'status', 'error', '', 'MESSAGE', '__proto__', 'constructor', 'toString'];
const fields = ['type', 'clientMessageId', 'text', 'lastSeq', 'visitorToken', 'conversationId', '__proto__', 'constructor', 'prototype'];

type Generated = { data: string | Buffer; binary?: boolean };

/** Invalid UTF-8 in a text frame: ws closes such a socket at once (1007), so it is fuzzed on its own sockets. */
const INVALID_UTF8 = Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0xc3, 0x28, 0x22, 0x7d]);

function frame(): Generated {
  switch (int(8)) {
    case 0:
      return { data: pick(['{', '[1,', 'null', '42', '"text"', 'true', '{"type":', '}{', 'undefined', '\u0000', '']) };
    case 1:
      return { data: Buffer.from(JSON.stringify({ type: 'ping' })), binary: true };
    case 2: {
      const depth = 10 + int(3000);
      return { data: int(2) ? '['.repeat(depth) + ']'.repeat(depth) : '{"type":'.repeat(depth) + '1' + '}'.repeat(depth) };
    }
    case 3:
      return { data: JSON.stringify({ type: 'message', clientMessageId: `m-${int(1e6)}`, text: 'y'.repeat(int(60_000)) }) };
    case 4:
      return { data: JSON.stringify(pick(weird)) };
    default: {
      const o: Record<string, unknown> = { type: pick(types) };
      for (let i = int(5); i > 0; i--) o[pick(fields)] = pick(weird);
      if (int(3) === 0) o.type = pick(weird);
      return { data: JSON.stringify(o) };
    }
  }
}

const svc = await startTestService(t, 'wsfuzz', { env: { PARTITIONS: '2' } });
dropNatsPrefixAtEnd(t, svc);
const user = await signUp(svc.api, 'Socket Fuzz Co');
const model = await startRepeatingModel(t);
const chat = await createWebchatIntegration(svc.api, user.token, { agentId: await model.createAgent(svc.api, user.token) });
const worker = await startTestWorker(t, svc, { workerId: 'wsfuzz' });
await waitForPartitions([worker], 2);
const gw = await startWebchatGateway(t, svc, { framesPerSecond: 1_000_000, frameBurst: 1_000_000 }, 0, {
  webchat: { messagesPerMinutePerIp: 1_000_000, messagesPerMinutePerVisitor: 1_000_000 },
});

async function welcomed(tt: Parameters<typeof openChat>[0]): Promise<ChatClient> {
  const c = await openChat(tt, gw.url, chat.id);
  await c.hello();
  return c;
}

t.test(`${COUNT} generated frames (seed ${SEED}): clear errors or clear closes, never an internal failure`, async (t) => {
  let client = await welcomed(t);
  const closes = new Map<number, number>();
  const errorCodes = new Map<string, number>();
  let badErrorFrames = 0;
  let sent = 0;
  const tally = (frames: Frame[]) => {
    for (const f of frames) {
      if (f.type !== 'error') continue;
      if (typeof f.code !== 'string' || typeof f.message !== 'string' || f.code === 'INTERNAL_ERROR') badErrorFrames++;
      errorCodes.set(f.code, (errorCodes.get(f.code) ?? 0) + 1);
    }
  };
  while (sent < COUNT) {
    for (let i = 0; i < BATCH && sent < COUNT; i++, sent++) {
      const g = frame();
      client.ws.send(g.data, { binary: g.binary ?? false });
    }
    // A ping after each batch: the socket is alive and has handled everything before it.
    client.ws.send(JSON.stringify({ type: 'ping' }));
    const alive = await client.next('pong', 10_000).then(
      () => true,
      () => false,
    );
    tally(client.frames);
    if (!alive) {
      const closed = await Promise.race([client.closed, new Promise<null>((r) => setTimeout(() => r(null), 2000))]);
      if (!closed) {
        t.fail(`the socket neither answered a ping nor closed (after frame ${sent})`);
        return;
      }
      closes.set(closed.code, (closes.get(closed.code) ?? 0) + 1);
      client = await welcomed(t);
    } else {
      client.frames.length = 0;
      await client.drain(0);
    }
  }
  t.equal(badErrorFrames, 0, 'every error frame has a code and a message, none INTERNAL_ERROR');
  for (const [code, n] of closes) t.ok(CLEAR_CLOSE_CODES.includes(code), `closed ${n}× with ${code}`);
  t.ok(errorCodes.size > 0, `error codes seen: ${JSON.stringify(Object.fromEntries(errorCodes))}`);
  t.comment(`closes: ${JSON.stringify(Object.fromEntries(closes))}`);

  // After all that, the gateway still serves a normal conversation end to end.
  const fresh = await welcomed(t);
  fresh.send({ type: 'message', clientMessageId: 'after-fuzz', text: 'still there?' });
  const ack = await fresh.next('ack', 10_000);
  t.equal(ack.clientMessageId, 'after-fuzz');
  const reply = await fresh.next('message', 15_000);
  t.match(reply, { role: 'agent', text: /still there\?/ });
  t.equal((await gw.api('GET', '/healthz')).status, 200);
});

t.test('invalid UTF-8 closes the socket with 1007; the gateway carries on', async (t) => {
  for (let i = 0; i < 5; i++) {
    const c = await welcomed(t);
    c.ws.send(INVALID_UTF8, { binary: false });
    t.equal((await c.closed).code, 1007);
  }
  const c = await welcomed(t);
  c.send({ type: 'ping' });
  t.same(await c.next('pong'), { type: 'pong' });
});

t.test('garbage as the very first frame never yields a welcome for someone else', async (t) => {
  for (let i = 0; i < 20; i++) {
    const c = await openChat(t, gw.url, chat.id);
    const g = frame();
    c.ws.send(g.data, { binary: g.binary ?? false });
    c.send({ type: 'ping' });
    const frames = await c.drain(300);
    for (const f of frames) {
      if (f.type === 'welcome') t.fail(`a welcome without a hello: ${JSON.stringify(f)}`);
    }
    c.ws.terminate();
  }
  t.pass('no welcome without a hello');
});
