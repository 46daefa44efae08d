import { randomUUID } from 'node:crypto';
import t from 'tap';
import { ERRORS } from '../../lib/errors.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { addDocument } from '../support/knowledge.js';
import { seededRandom } from '../support/random.js';
import { signUp, startTestService } from '../support/service.js';
import { createHelpdeskIntegration, messageEnvelope, publishEnvelope, sql, startTestWorker, untilIdle, waitForPartitions } from '../support/worker.js';

/**
 * Fuzzing every route of the OpenAPI document from its own schemas (issue #26 finding 8: 53
 * answers 500 in 5,320 such requests). Each request is built from the operation's documented
 * parameters and body (a valid-ish value generated from the schema), then mutated: U+0000,
 * lone surrogates, numbers a column cannot hold (1e-46, 1e999, 2^53), wrong types, deep
 * nesting, long strings, missing or unknown fields, bad path ids, odd content types. No answer
 * may be a 500 INTERNAL_ERROR, none may take longer than a generous bound, every status is one
 * the operation documents, and every error is one of the catalog. A fixed seed replays exactly
 * (FUZZ_SEED, FUZZ_COUNT). First, what makes that hold everywhere: every input the document
 * describes is bounded.
 */
const SEED = Number(process.env.FUZZ_SEED ?? 0x26f0cc);
const COUNT = Number(process.env.FUZZ_COUNT ?? 3000);
/** Far above any answer here (most take milliseconds); a slower one is a stall. */
const SLOW_MS = 5000;

const rnd = seededRandom(SEED);
const int = (n: number) => Math.floor(rnd() * n);
const chance = (p: number) => rnd() < p;
const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;

const stub = await startChat2DeskStub(t);
const svc = await startTestService(t, 'api-fuzz', {
  env: {
    PARTITIONS: '1',
    // Outside services: the Chat2Desk stand-in for both helpdesk instances; a model that does not answer is not waited for.
    HELPDESK_GLOBAL_URL: stub.url,
    HELPDESK_EUROPE_URL: stub.url,
    MODEL_RETRY_BUDGET_MS: '0',
  },
  overrides: {
    rateLimits: {
      loginPerEmail: { limit: 1_000_000, windowSeconds: 60 },
      loginPerIp: { limit: 1_000_000, windowSeconds: 60 },
      registerPerIp: { limit: 1_000_000, windowSeconds: 60 },
      refreshPerIp: { limit: 1_000_000, windowSeconds: 60 },
    },
  },
});
const worker = await startTestWorker(t, svc);
await waitForPartitions([worker], 1);

// What the requests act on: one company with one of each.
const owner = await signUp(svc.api, 'Fuzz Target Co');
const apiToken = (await svc.api('POST', '/api/api-tokens', { token: owner.token, body: { name: 'fuzz' } })).body.apiToken;
const kb = (await svc.api('POST', '/api/knowledge-bases', { token: owner.token, body: { name: 'Help centre', language: 'english' } })).body.knowledgeBase;
const document = await addDocument(svc.api, owner.token, kb.id, { title: 'Hours', content: '# Hours\n\nWe open at nine.' });
const agent = (await svc.api('POST', '/api/agents', { token: owner.token, body: { name: 'Support', knowledgeBaseId: kb.id } })).body.agent;
const desk = await createHelpdeskIntegration(svc, owner, stub, 'Desk', agent.id);
const chat = (await svc.api('POST', '/api/integrations', { token: owner.token, body: { type: 'webchat', name: 'Chat', agentId: agent.id } })).body.integration;
await publishEnvelope(svc.nc, svc.config, messageEnvelope(desk, 'fuzz-customer', 'When do you open?'));
await untilIdle(svc, 30_000);
const [conversation] = await sql(svc.orm, 'select id from conversations where company_id = ?', [owner.companyId]);
const [lead] = await sql(svc.orm, 'select id from leads where company_id = ?', [owner.companyId]);

type Json = any;
const doc: Json = await (await fetch(`${svc.url}/api/openapi.json`)).json();
const resolve = (s: Json): Json => {
  let out = s;
  while (out && typeof out.$ref === 'string') out = out.$ref.replace(/^#\//, '').split('/').reduce((n: Json, k: string) => n?.[decodeURIComponent(k).replace(/~1/g, '/').replace(/~0/g, '~')], doc);
  return out;
};

interface Operation {
  method: string;
  path: string;
  op: Json;
}
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];
const operations: Operation[] = Object.entries(doc.paths).flatMap(([path, item]: [string, Json]) =>
  Object.entries(item)
    .filter(([m]) => METHODS.includes(m))
    .map(([method, op]) => ({ method: method.toUpperCase(), path, op })),
);

// ---------------------------------------------------------------- every input is bounded

/** Whether a pattern, anchored at both ends, can only match a bounded length (no *, + or {n,}). */
const boundedPattern = (p: unknown) => typeof p === 'string' && p.startsWith('^') && p.endsWith('$') && !/(?<!\\)[*+]|\{\d+,\}/.test(p);

/**
 * Every unbounded string, number and array in a schema, as the paths where they are. An array
 * may go without maxItems where its operation answers QUOTA_EXCEEDED: a configured quota
 * (QUOTA_*) bounds it, which a schema compiled once cannot state.
 */
function unbounded(schema: Json, at: string, out: string[], quota = false, seen = new Set<Json>()): string[] {
  const s = resolve(schema);
  if (!s || typeof s !== 'object' || seen.has(s)) return out;
  seen.add(s);
  for (const alternative of [...(s.anyOf ?? []), ...(s.oneOf ?? []), ...(s.allOf ?? [])]) unbounded(alternative, at, out, quota, seen);
  const types: string[] = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  const constrained = s.enum !== undefined || s.const !== undefined;
  if (types.includes('string') && !constrained && s.maxLength === undefined && !boundedPattern(s.pattern) && !['uuid', 'date', 'date-time'].includes(s.format)) out.push(`${at}: a string without maxLength`);
  if ((types.includes('number') || types.includes('integer')) && !constrained && (s.maximum === undefined || s.minimum === undefined)) out.push(`${at}: a number without minimum and maximum`);
  if (types.includes('number') && !constrained && s.format !== 'float' && s.maximum !== undefined && s.minimum !== undefined && s.minimum <= 0 && s.maximum > 0 && !types.includes('string')) {
    out.push(`${at}: a fractional number without format float (1e-46 cannot be stored in a real)`);
  }
  if (types.includes('array') && s.maxItems === undefined && !quota) out.push(`${at}: an array without maxItems`);
  for (const [name, property] of Object.entries(s.properties ?? {})) unbounded(property, `${at}.${name}`, out, quota, seen);
  if (s.items) unbounded(s.items, `${at}[]`, out, quota, seen);
  return out;
}

t.test('every body field and query parameter the API takes is bounded (maxLength, minimum and maximum, maxItems)', async (t) => {
  const problems: string[] = [];
  for (const o of operations) {
    // The webhook body is the helpdesk's own payload: bounded by its size, cleaned rather than refused.
    if (o.path.startsWith('/api/webhook/')) continue;
    const name = `${o.method} ${o.path}`;
    const quota = Object.keys(resolve(o.op.responses?.['403'])?.content?.['application/json']?.examples ?? {}).includes('QUOTA_EXCEEDED');
    for (const p of o.op.parameters ?? []) if (p.in === 'query') unbounded(p.schema, `${name} ?${p.name}`, problems);
    for (const [type, media] of Object.entries(o.op.requestBody?.content ?? {}) as [string, Json][]) {
      if (type === 'application/json') unbounded(media.schema, `${name} body`, problems, quota);
    }
  }
  t.same(problems, [], 'no unbounded input');
});

// ---------------------------------------------------------------- generating requests

const LONG = [300, 5_000, 25_000, 300_000];
/** Raw JSON spliced into a body where a placeholder string stands (what JSON.stringify cannot write). */
const RAW: Record<string, () => string> = {
  infinity: () => '1e999',
  negativeInfinity: () => '-1e999',
  underflow: () => '1e-400',
  bigInteger: () => '123456789012345678901234567890',
  deepArray: () => '['.repeat(5000) + ']'.repeat(5000),
  deepObject: () => '{"a":'.repeat(3000) + '1' + '}'.repeat(3000),
};
const WEIRD: (() => unknown)[] = [
  () => '\u0000',
  () => `a\u0000b`,
  () => '\ud800',
  () => 'x\udfff',
  () => '\udc00\ud800',
  () => 1e-46,
  () => -1e-46,
  () => 1e-40,
  () => 1e308,
  () => -1e308,
  () => 2 ** 31,
  () => 2 ** 53,
  () => -1,
  () => 0,
  () => -0,
  () => 1.5,
  () => '',
  () => ' ',
  () => 'x'.repeat(pick(LONG)),
  () => null,
  () => true,
  () => [],
  () => ({}),
  () => ['\u0000'],
  () => ({ '\u0000': 1 }),
  () => '12345678901234567890',
  () => '2147483648',
  () => '<script>alert(1)</script>',
  () => "' or 1=1 --",
  () => '💥'.repeat(50),
  () => `__RAW_${pick(Object.keys(RAW))}__`,
];

/** Strings that satisfy the patterns the API's schemas use, tried in order. */
const PATTERN_SAMPLES = ['When do you open?', 'https://shop.example.com', '0.15', '2.50', '09:00', '2026-03-01', 'english', 'sha256=' + 'ab'.repeat(32), 'x'.repeat(40)];
const FORMAT_SAMPLES: Record<string, () => string> = {
  // Local addresses only: nothing waits on a name lookup or the outside world.
  uri: () => pick(['http://127.0.0.1:9/v1', `${stub.url}`, 'http://localhost:9/x']),
  email: () => `fuzz-${int(1e9)}@example.com`,
  'date-time': () => new Date(Date.UTC(2026, 2, 1 + int(20))).toISOString(),
  date: () => '2026-03-01',
  uuid: () => randomUUID(),
};

function genString(s: Json): string {
  if (s.format && FORMAT_SAMPLES[s.format]) return FORMAT_SAMPLES[s.format]!();
  const min = s.minLength ?? 0;
  const max = s.maxLength ?? 60;
  const candidates = s.pattern ? PATTERN_SAMPLES.filter((c) => new RegExp(s.pattern, 'u').test(c)) : [pick(PATTERN_SAMPLES), `text ${int(1000)}`];
  const chosen = candidates.length ? pick(candidates) : 'text';
  if (chosen.length > max) return chosen.slice(0, max);
  return chosen.length < min ? chosen.padEnd(min, 'x') : chosen;
}

/** A valid-ish value of a schema (resolved, alternatives picked at random). */
function gen(schema: Json, depth = 0): unknown {
  const s = resolve(schema);
  if (!s || typeof s !== 'object' || depth > 8) return null;
  const alternatives = s.anyOf ?? s.oneOf;
  if (alternatives) return gen(pick(alternatives), depth + 1);
  if (s.const !== undefined) return s.const;
  if (s.enum) return pick(s.enum);
  const types: string[] = Array.isArray(s.type) ? s.type : s.type ? [s.type] : s.properties ? ['object'] : ['string'];
  const nonNull = types.filter((ty) => ty !== 'null');
  const type = nonNull.length && !chance(0.1) ? pick(nonNull) : pick(types);
  switch (type) {
    case 'null':
      return null;
    case 'boolean':
      return chance(0.5);
    case 'integer': {
      const lo = s.minimum ?? 0;
      const hi = Math.min(s.maximum ?? 1000, lo + 1000);
      return pick([lo, hi, lo + int(hi - lo + 1)]);
    }
    case 'number': {
      const lo = s.minimum ?? 0;
      const hi = s.maximum ?? 100;
      return pick([lo, hi, lo + rnd() * (hi - lo)]);
    }
    case 'string':
      return genString(s);
    case 'array': {
      const n = Math.max(s.minItems ?? 0, Math.min(s.maxItems ?? 3, int(3)));
      return Array.from({ length: n }, () => gen(s.items ?? {}, depth + 1));
    }
    default: {
      const out: Record<string, unknown> = {};
      const required = new Set<string>(s.required ?? []);
      for (const [name, property] of Object.entries(s.properties ?? {})) if (required.has(name) || chance(0.5)) out[name] = gen(property, depth + 1);
      return out;
    }
  }
}

/** Every path inside a value (the value itself first), for a mutation to land on. */
function paths(value: unknown, at: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  out.push(at);
  if (Array.isArray(value)) value.forEach((v, i) => paths(v, [...at, i], out));
  else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) paths(v, [...at, k], out);
  return out;
}

function setAt(root: unknown, at: (string | number)[], v: unknown): unknown {
  if (at.length === 0) return v;
  let node = root as Record<string | number, unknown>;
  for (const k of at.slice(0, -1)) node = node[k] as Record<string | number, unknown>;
  node[at.at(-1)!] = v;
  return root;
}

function mutate(body: unknown): unknown {
  let out = body;
  const n = pick([0, 0, 1, 1, 2, 3]);
  for (let i = 0; i < n; i++) {
    const where = pick(paths(out));
    const kind = int(10);
    if (kind < 6) out = setAt(out, where, pick(WEIRD)());
    else if (kind < 8 && out && typeof out === 'object' && !Array.isArray(out)) {
      const keys = Object.keys(out);
      if (keys.length) delete (out as Record<string, unknown>)[pick(keys)];
    } else if (out && typeof out === 'object' && !Array.isArray(out)) (out as Record<string, unknown>)[pick(['extra', 'na\u0000me', '__proto__', '\ud800'])] = pick(WEIRD)();
  }
  return out;
}

/** The JSON text of a body, with raw placeholders spliced in. */
const jsonText = (body: unknown): string => JSON.stringify(body).replace(/"__RAW_(\w+)__"/g, (_m, name: string) => RAW[name]!());

const BAD_IDS = ['0', '-1', 'abc', '%00', 'a%00', '%ED%A0%80', '%E0%A4%A', '%', '99999999999999999999', '2147483648', '1e3', '1.5', '%20', 'x'.repeat(3000), '..%2F..%2Fetc', '%F0%9F%92%A5'];

/** A valid id for a path parameter of this path, when the fixtures have one. */
function validId(path: string, name: string): string | undefined {
  if (name === 'docId') return String(document.id);
  if (name === 'connectorType') return pick(['helpdesk', 'webchat']);
  if (name === 'integrationId') return String(pick([desk.id, chat.id]));
  if (name === 'version') return pick(['0123456789ab', 'current']);
  if (name === 'file') return pick(['swagger-ui.css', 'init.js', 'nope.js']);
  if (path.startsWith('/api/agents/')) return String(agent.id);
  if (path.startsWith('/api/knowledge-bases/')) return String(kb.id);
  if (path.startsWith('/api/integrations/')) return String(pick([desk.id, chat.id]));
  if (path.startsWith('/api/conversations/')) return String(conversation.id);
  if (path.startsWith('/api/leads/')) return String(lead.id);
  if (path.startsWith('/api/api-tokens/')) return String(apiToken.id);
  return undefined;
}

function queryValue(schema: Json, example?: unknown): string {
  if (example !== undefined && chance(0.4)) return encodeURIComponent(String(example));
  if (chance(0.5)) {
    const v = gen(schema);
    return encodeURIComponent(typeof v === 'string' ? v : JSON.stringify(v));
  }
  return pick(['%00', 'a%00b', '%ED%A0%80', '-1', '1e-46', '99999999999999999999', '2147483648', '9999999999', '', 'x'.repeat(5000), '%', '%zz', '0', '201', 'null', '[]']);
}

interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
  label: string;
}

function generate(o: Operation): FuzzRequest {
  const headers: Record<string, string> = {};
  let path = o.path.replace(/\{(\w+)\}/g, (_m, name: string) => {
    const valid = validId(o.path, name);
    // DELETE never gets a fixture's id: the fixtures must live through the run.
    return valid !== undefined && o.method !== 'DELETE' && chance(0.75) ? encodeURIComponent(valid) : pick(BAD_IDS);
  });
  const query: string[] = [];
  for (const p of o.op.parameters ?? []) {
    if (p.in === 'query' && chance(0.6)) query.push(`${p.name}=${queryValue(p.schema, p.example)}`);
    if (p.in === 'query' && chance(0.05)) query.push(`${p.name}=${queryValue(p.schema, p.example)}`);
  }
  if (chance(0.05)) query.push(`${pick(['unknown', 'limit', 'q', '%00'])}=${queryValue({ type: 'string' })}`);
  if (query.length) path += `?${query.join('&')}`;

  // Credentials: mostly the right kind (never the live session for logout, which would end it).
  const security: Json[] = o.op.security ?? [];
  const logout = o.path === '/api/auth/logout';
  if (security.length && !chance(0.05)) {
    const session = security.some((r) => 'sessionToken' in r) && !logout;
    const token = session && (!security.some((r) => 'apiToken' in r) || chance(0.5)) ? owner.token : apiToken.token;
    headers.authorization = `Bearer ${chance(0.03) ? 'mas_not-a-token' : token}`;
  }

  let body: string | undefined;
  const media = o.op.requestBody?.content?.['application/json'];
  const shape = int(20);
  if (media && shape < 16) {
    // From the documented example (a valid body) or generated from the schema, then mutated.
    const base = media.example !== undefined && chance(0.4) ? structuredClone(media.example) : gen(media.schema);
    body = jsonText(mutate(base));
    headers['content-type'] = 'application/json';
  } else if (shape === 16) {
    body = pick(['{', '{"a":1,}', '"just a string"', '[1,2]', 'null', '1e999', '{"a":"\\u0000"}', '{"a":"\\ud800"}', '\u0000']);
    headers['content-type'] = 'application/json';
  } else if (shape === 17) {
    body = 'name=x&systemPrompt=%00';
    headers['content-type'] = pick(['application/x-www-form-urlencoded', 'text/plain', 'application/json; charset=latin1', 'application/vnd.api+json']);
  } else if (shape === 18 && o.method !== 'GET') {
    body = `--b\r\nContent-Disposition: form-data; name="file"; filename="a\u0000.md"\r\nContent-Type: text/markdown\r\n\r\n# T\u0000\r\n--b--\r\n`;
    headers['content-type'] = 'multipart/form-data; boundary=b';
  } else if (shape === 19 && o.method !== 'GET') {
    body = JSON.stringify({ name: 'x'.repeat(2_100_000) });
    headers['content-type'] = 'application/json';
  }
  if (o.method === 'GET' || o.method === 'DELETE') {
    // Bodies on GET and DELETE only now and then (fetch cannot send one with GET).
    if (o.method === 'GET' || !chance(0.2)) {
      body = undefined;
      delete headers['content-type'];
    }
  }
  return { method: o.method, path, headers, body, label: `${o.method} ${o.path}` };
}

interface Outcome {
  status: number;
  ms: number;
  text: string;
}

async function send(r: FuzzRequest): Promise<Outcome> {
  const started = performance.now();
  const controller = new AbortController();
  const res = await fetch(svc.url + r.path, { method: r.method, headers: r.headers, body: r.body, signal: controller.signal, redirect: 'manual' });
  // An event stream never ends by itself: its first answer is enough.
  if ((res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    controller.abort();
    return { status: res.status, ms: performance.now() - started, text: '' };
  }
  const text = await res.text();
  return { status: res.status, ms: performance.now() - started, text };
}

// The WebSocket upgrade has its own fuzz (test/security/webchat-fuzz.test.ts); without an Upgrade header it is a plain GET and stays in.
t.test(`${COUNT} requests generated from the OpenAPI document (seed ${SEED}): never a 500, never slow`, async (t) => {
  const failures: string[] = [];
  const byOperation = new Map<string, number>();
  const succeeded = new Set<string>();
  const statuses = new Map<number, number>();
  let slowest = { ms: 0, label: '' };
  const codes = new Set(Object.keys(ERRORS));
  for (let i = 0; i < COUNT; i++) {
    const o = operations[i % operations.length]!;
    const r = generate(o);
    let out: Outcome;
    try {
      out = await send(r);
    } catch (err) {
      failures.push(`#${i} ${r.label} ${r.path.slice(0, 200)}: no answer (${(err as Error).message})`);
      continue;
    }
    byOperation.set(r.label, (byOperation.get(r.label) ?? 0) + 1);
    if (out.status < 300) succeeded.add(r.label);
    statuses.set(out.status, (statuses.get(out.status) ?? 0) + 1);
    if (out.ms > slowest.ms) slowest = { ms: out.ms, label: `${r.label} → ${out.status}` };
    const what = `#${i} ${r.method} ${r.path.slice(0, 200)} body ${(r.body ?? '').slice(0, 200)}`;
    let code: unknown;
    try {
      code = out.status >= 400 ? JSON.parse(out.text)?.error?.code : undefined;
    } catch {
      code = undefined;
    }
    // A 5xx the operation documents is an answer (502 a helpdesk that refused, 503 a queue that is down,
    // interface.md's 500 USER_CREATION_FAILED for a taken email); INTERNAL_ERROR, or an undocumented status, is a failure.
    if (code === 'INTERNAL_ERROR' || (out.status >= 500 && !o.op.responses?.[String(out.status)])) failures.push(`${what} → ${out.status} ${out.text.slice(0, 300)}`);
    else if (out.ms > SLOW_MS) failures.push(`${what} → ${out.status} after ${Math.round(out.ms)} ms`);
    // What the document says is what happens: every status answered is one it lists (save a body's refusal on a DELETE, which documents none).
    else if (!o.op.responses?.[String(out.status)] && !(r.method === 'DELETE' && r.body !== undefined)) failures.push(`${what} → ${out.status} not documented: ${out.text.slice(0, 200)}`);
    else if (out.status >= 400 && r.path.startsWith('/api/') && !codes.has(String(code))) failures.push(`${what} → ${out.status} without an error of the catalog: ${out.text.slice(0, 200)}`);
  }
  t.comment(`answers by status: ${JSON.stringify(Object.fromEntries([...statuses].sort(([a], [b]) => a - b)))}; slowest ${Math.round(slowest.ms)} ms (${slowest.label})`);
  t.comment(`operations that answered 2xx at least once: ${succeeded.size} of ${operations.length}; never: ${operations.map((o) => `${o.method} ${o.path}`).filter((l) => !succeeded.has(l)).join(', ')}`);
  t.equal(byOperation.size, operations.length, `every documented operation was called (${operations.length})`);
  t.same(failures.slice(0, 30), [], `no INTERNAL_ERROR, no answer over ${SLOW_MS} ms, every status documented, every error from the catalog (${failures.length} failures)`);

  // The service is still whole: the owner's session and data answer as before.
  t.equal((await svc.api('GET', `/api/agents/${agent.id}`, { token: owner.token })).status, 200);
  t.equal((await svc.api('GET', '/readyz')).status, 200);
});
