import { Agent, request as httpRequest } from 'node:http';
import t from 'tap';
import { signBody } from '../../gateway/webhook/signature.js';
import { signUp, startTestService } from '../support/service.js';
import { createAgent, createIntegration, dropNatsPrefixAtEnd } from '../support/webhooks.js';
import { seededRandom } from '../support/random.js';

/**
 * Fuzzing the webhook endpoint with a fixed seed: thousands of generated requests (wrong
 * types, deep nesting, huge strings, invalid UTF-8, missing fields, odd content types,
 * signature edge cases). The gateway must never answer 5xx nor crash: a clear 4xx with the
 * error shape, or 200 `{"ok":true}` (queued or a recorded ignore).
 */
const SEED = Number(process.env.FUZZ_SEED ?? 0x5eed);
const COUNT = Number(process.env.FUZZ_COUNT ?? 2500);

const rnd = seededRandom(SEED);
const int = (n: number) => Math.floor(rnd() * n);
const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;

const svc = await startTestService(t, 'fuzz');
dropNatsPrefixAtEnd(t, svc);
const owner = await signUp(svc.api, 'Fuzz Co');
const agentId = await createAgent(svc.api, owner.token);
const integration = await createIntegration(svc.api, owner.token, { name: 'Fuzzed', agentId });
const inactive = await createIntegration(svc.api, owner.token, { name: 'Off', agentId });
await svc.api('PATCH', `/api/integrations/${inactive.id}`, { token: owner.token, body: { active: false } });
const secret: string = integration.webhookSecret;
const port = new URL(svc.url).port;

function deep(depth: number, kind: 'array' | 'object'): string {
  return kind === 'array' ? '['.repeat(depth) + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
}

const weird: unknown[] = [
  null, true, false, 0, -1, 1.5, 1e308, -0, '', ' ', 'x'.repeat(300), '\u0000', '\ud800', '💥', [], {}, [1, 2], { a: 1 },
  Number.MAX_SAFE_INTEGER, '12345678901234567890', '<script>alert(1)</script>', "' or 1=1 --", '__proto__', { __proto__: { polluted: 1 } },
];

const base = () => ({
  hook_type: 'inbox',
  type: 'from_client',
  message_id: int(1e9),
  text: 'hello',
  client_id: `c-${int(50)}`,
  channel_id: 17,
  transport: 'telegram',
  request_id: int(1e6),
  dialog_id: int(1e6),
});

interface Case {
  body: Buffer;
  contentType?: string | undefined;
  signature?: { header: string; value: string } | 'none' | 'valid';
  id?: string;
  label: string;
}

function genBody(): { body: Buffer; label: string } {
  const r = int(12);
  const p: Record<string, unknown> = base();
  switch (r) {
    case 0: {
      // wrong types in known fields
      for (const k of Object.keys(p)) if (rnd() < 0.4) p[k] = pick(weird);
      return { body: Buffer.from(JSON.stringify(p)), label: 'wrong types' };
    }
    case 1: {
      // missing fields
      for (const k of Object.keys(p)) if (rnd() < 0.5) delete p[k];
      return { body: Buffer.from(JSON.stringify(p)), label: 'missing fields' };
    }
    case 2: {
      // deep nesting, inside a known field or as the whole body
      const d = pick([100, 1000, 5000, 20000, 100000]);
      const nested = deep(d, rnd() < 0.5 ? 'array' : 'object');
      if (rnd() < 0.5) return { body: Buffer.from(nested), label: `deep body ${d}` };
      const field = pick(['attachments', 'text', 'client', 'extra', 'client_id']);
      return { body: Buffer.from(JSON.stringify(p).replace(/}$/, `,"${field}":${nested}}`)), label: `deep ${field} ${d}` };
    }
    case 3: {
      // huge strings (some over the 1 MiB body limit)
      const n = pick([10_000, 200_000, 1_000_000, 1_100_000]);
      p[pick(['text', 'client_id', 'transport', 'channel_id', 'junk'])] = 'y'.repeat(n);
      return { body: Buffer.from(JSON.stringify(p)), label: `huge ${n}` };
    }
    case 4: {
      // invalid UTF-8 inside strings
      const bad = pick([Buffer.from([0xff, 0xfe]), Buffer.from([0xc3, 0x28]), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from([0xf0, 0x28, 0x8c, 0x28]), Buffer.from([0x80])]);
      const json = JSON.stringify(p);
      const at = json.indexOf('hello') + 2;
      return { body: Buffer.concat([Buffer.from(json.slice(0, at)), bad, Buffer.from(json.slice(at))]), label: 'invalid utf-8' };
    }
    case 5: {
      // not JSON at all / truncated / odd top-level values
      return { body: Buffer.from(pick(['', 'null', '[]', '"x"', '42', 'true', '{', '{"text":', 'hello=world', '<xml/>', '\u0000\u0001', JSON.stringify(p).slice(0, int(40))])), label: 'not json' };
    }
    case 6: {
      // status events with odd values
      const s: Record<string, unknown> = { hook_type: pick(['close_dialog', 'close_request', 'dialog_transferred']), request_id: pick([int(1e6), ...weird]), dialog_id: pick([int(1e6), ...weird]) };
      if (rnd() < 0.3) delete s.request_id;
      return { body: Buffer.from(JSON.stringify(s)), label: 'status' };
    }
    case 7: {
      // other hook types and message types: ignored with 200
      p.hook_type = pick(['outbox', 'new_client', 'new_request', 'weird', '', 'INBOX']);
      if (rnd() < 0.5) p.type = pick(['to_client', 'system', 'comment', 5]);
      return { body: Buffer.from(JSON.stringify(p)), label: 'other hooks' };
    }
    case 8: {
      // many keys, prototype pollution attempts
      const many: Record<string, unknown> = { ...p };
      for (let i = 0; i < pick([10, 1000, 20000]); i++) many[`k${i}`] = i;
      const json = JSON.stringify(many).replace(/}$/, ',"__proto__":{"isAdmin":true},"constructor":{"prototype":{"x":1}}}');
      return { body: Buffer.from(json), label: 'many keys' };
    }
    case 9: {
      // numbers at the edges
      p.request_id = pick([1e21, -5, 2 ** 53 + 1, 1.0000001, '007', '1e5', '-1', '99999999999999999999']);
      p.dialog_id = pick([1e21, -5, 2 ** 63, '12', 'abc']);
      p.client_id = pick([0, -0, 1e300, 'c', '']);
      return { body: Buffer.from(JSON.stringify(p).replace('"message_id":', '"message_id": ')), label: 'numbers' };
    }
    case 10: {
      // attachments of every shape
      p.attachments = pick([[{}], [null], 'x', { a: 1 }, Array.from({ length: 5000 }, (_, i) => i), [[[[[]]]]]]);
      return { body: Buffer.from(JSON.stringify(p)), label: 'attachments' };
    }
    default:
      return { body: Buffer.from(JSON.stringify(p)), label: 'valid' };
  }
}

function genCase(): Case {
  const { body, label } = genBody();
  const c: Case = { body, label, signature: 'valid' };
  const s = int(10);
  if (s === 0) c.signature = 'none';
  else if (s === 1) {
    const digest = signBody(secret, body).slice(7);
    c.signature = {
      header: pick(['x-webhook-signature', 'x-hub-signature-256', 'X-Webhook-Signature']),
      value: pick([
        digest, `sha256=${digest.toUpperCase()}`, ` sha256=${digest} `, `sha1=${digest}`, 'sha256=', '', `sha256=${digest.slice(1)}`,
        `sha256=${digest}00`, `sha256=${'0'.repeat(64)}`, `sha256=${'z'.repeat(64)}`, 'x'.repeat(8000), `sha256=${digest},sha256=${digest}`,
        signBody('wrong secret', body), signBody(secret, Buffer.concat([body, Buffer.from(' ')])),
      ]),
    };
  }
  const ct = int(10);
  if (ct === 0) c.contentType = undefined;
  else if (ct === 1) c.contentType = pick(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=latin1', 'application/json; charset=utf-16', '*/*', 'application/xml', ';;;']);
  else c.contentType = 'application/json';
  const idc = int(30);
  if (idc === 0) c.id = pick(['0', '-1', '1.5', 'abc', '99999999999999999999', `${integration.id}abc`, '%00', '..%2f..', String(inactive.id), '1e3', '%201']);
  return c;
}

function send(c: Case): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { 'content-length': c.body.length };
    if (c.contentType !== undefined) headers['content-type'] = c.contentType;
    if (c.signature === 'valid') headers['x-webhook-signature'] = signBody(secret, c.body);
    else if (c.signature && c.signature !== 'none') headers[c.signature.header] = c.signature.value;
    const req = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: `/api/webhook/helpdesk/${c.id ?? integration.id}`, headers, agent: keepAlive }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), headers: res.headers }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(c.body);
  });
}

const keepAlive = new Agent({ keepAlive: true, maxSockets: 8 });
t.teardown(() => keepAlive.destroy());

t.test(`${COUNT} generated requests (seed ${SEED}): never a 5xx, always a clear answer`, async (t) => {
  const cases = Array.from({ length: COUNT }, genCase);
  const byStatus = new Map<number, number>();
  const failures: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < cases.length) {
        const c = cases[next++]!;
        let res;
        try {
          res = await send(c);
        } catch (err) {
          failures.push(`${c.label}: connection error ${(err as Error).message}`);
          continue;
        }
        byStatus.set(res.status, (byStatus.get(res.status) ?? 0) + 1);
        if (![200, 400, 401, 403, 404, 413, 415].includes(res.status)) {
          failures.push(`${c.label}: ${res.status} ${res.body.slice(0, 200)}`);
          continue;
        }
        let parsed: any;
        try {
          parsed = JSON.parse(res.body);
        } catch {
          failures.push(`${c.label}: ${res.status} with a body that is not JSON`);
          continue;
        }
        if (res.status === 200 && parsed.ok !== true) failures.push(`${c.label}: 200 without ok:true`);
        if (res.status !== 200 && (typeof parsed?.error?.code !== 'string' || typeof parsed?.error?.message !== 'string')) failures.push(`${c.label}: ${res.status} without the error shape`);
      }
    }),
  );
  t.comment(`statuses: ${JSON.stringify(Object.fromEntries([...byStatus].sort()))}`);
  t.same(failures.slice(0, 20), [], 'every answer is a 200 or a clear 4xx');
  t.ok((byStatus.get(200) ?? 0) > COUNT / 10, 'many were accepted');
  t.ok((byStatus.get(400) ?? 0) > 0 && (byStatus.get(401) ?? 0) > 0 && (byStatus.get(413) ?? 0) > 0, 'and many refused');
  t.equal((await svc.api('GET', '/healthz')).status, 200, 'the gateway is alive');
  t.equal((await svc.api('GET', '/readyz')).status, 200, 'and ready');
  // Nothing leaked onto Object.prototype.
  t.equal(({} as any).isAdmin, undefined);
  t.equal(({} as any).polluted, undefined);
});

t.test('a valid payload after the storm is queued', async (t) => {
  const body = Buffer.from(JSON.stringify({ ...base(), message_id: 'after-storm' }));
  const res = await send({ body, contentType: 'application/json', signature: 'valid', label: 'after' });
  t.equal(res.status, 200);
  t.same(JSON.parse(res.body), { ok: true });
});
