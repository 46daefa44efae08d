import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { randomBytes } from 'node:crypto';
import { get } from 'node:http';
import t, { type Test } from 'tap';
import { createGatewayApp, SERVER_ROUTE_DOCS } from '../../gateway/app.js';
import { openApiPath } from '../../gateway/http/openapi.js';
import { listAppRoutes } from '../../gateway/http/route-table.js';
import { API_DOCS_CSP } from '../../gateway/routes/api-docs.js';
import { DASHBOARD_CSP } from '../../gateway/routes/dashboard.js';
import { FRAME_ERROR_CODES } from '../../gateway/webchat/frames.js';
import { signBody } from '../../gateway/webhook/signature.js';
import { ERRORS, type ErrorCode } from '../../lib/errors.js';
import { createLogger } from '../../lib/logger.js';
import { startTelegramSandbox } from '../../scripts/sandbox/telegram.js';
import { waitForDocument } from '../support/knowledge.js';
import { startTestService, uniqueEmail, type ApiResponse } from '../support/service.js';
import { openChat, UpgradeRefused } from '../support/webchat.js';
import { startTestWorker, waitForPartitions } from '../support/worker.js';

/**
 * GET /api/openapi.json: a valid OpenAPI 3.1 document that names every mounted route and
 * every code of the error catalog, whose examples validate against their schemas, and whose
 * schemas describe what the routes really answer (a scenario through the running service,
 * every answer validated against the documented schema of its status).
 */
const BOT = `${3_000_000 + Math.floor(Math.random() * 1e6)}:${randomBytes(24).toString('base64url')}`;
const telegram = await startTelegramSandbox({ tokens: [BOT], latencyMs: [0, 5] });
t.teardown(() => telegram.close());
const svc = await startTestService(t, 'openapi', { env: { PARTITIONS: '1', TELEGRAM_API_URL: telegram.url } });

type Json = any;
const served = await fetch(`${svc.url}/api/openapi.json`);
const text = await served.text();
const doc: Json = JSON.parse(text);
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
/** Codes no route answers today (README § Errors: reserved in the catalog). */
const RESERVED: ErrorCode[] = [];

interface Operation {
  method: string;
  path: string;
  op: Json;
}
const operations: Operation[] = Object.entries(doc.paths ?? {}).flatMap(([path, item]: [string, Json]) =>
  Object.entries(item)
    .filter(([method]) => METHODS.includes(method))
    .map(([method, op]) => ({ method, path, op })),
);

/** A JSON pointer (as a URI fragment) from its segments. */
const pointer = (...segments: (string | number)[]) => segments.map((s) => '/' + encodeURIComponent(String(s).replace(/~/g, '~0').replace(/\//g, '~1'))).join('');
/** The segments of a local $ref (`#/components/schemas/Agent`). */
const refSegments = (ref: string): string[] => ref.replace(/^#\//, '').split('/').map((raw) => decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~'));
const nodeAt = (segments: (string | number)[]): Json => segments.reduce((node: Json, s) => node?.[s], doc);
const resolve = (ref: string): Json => nodeAt(refSegments(ref));

// The document is one schema resource (its own top-level fields registered as keywords), so
// every schema in it is compiled where it stands and its $refs resolve as they would for a client.
const DOC_ID = 'https://openapi.test/openapi.json';
const ajv = new Ajv2020({ strict: true, allErrors: true, allowUnionTypes: true });
(addFormats as unknown as (a: Ajv2020) => void)(ajv);
for (const field of Object.keys(doc)) ajv.addKeyword(field);
ajv.addSchema(doc, DOC_ID);
const compiled = new Map<string, ValidateFunction>();
function validatorAt(at: string): ValidateFunction {
  let v = compiled.get(at);
  if (!v) compiled.set(at, (v = ajv.compile({ $ref: `${DOC_ID}#${at}` })));
  return v;
}
const errorsOf = (v: ValidateFunction) => JSON.stringify(v.errors?.slice(0, 3));

/** Where a response object really is (following a components.responses $ref), as segments. */
function responseAt(o: Operation, status: string): (string | number)[] | null {
  const r = o.op.responses?.[status];
  if (!r) return null;
  if (typeof r.$ref === 'string') return refSegments(r.$ref);
  return ['paths', o.path, o.method, 'responses', status];
}

/** The error codes an operation answers (its answers' examples), each with the status it is listed under. */
function* errorCodesOf(o: Operation): Generator<{ status: string; code: ErrorCode }> {
  for (const status of Object.keys(o.op.responses)) {
    const r = nodeAt(responseAt(o, status)!);
    for (const ref of Object.values(r.content?.['application/json']?.examples ?? {}) as Json[]) {
      const code = resolve(ref.$ref ?? '')?.value?.error?.code as ErrorCode | undefined;
      if (code) yield { status, code };
    }
  }
}

/** Whether an operation may be called without a credential: `security: []`, or an empty requirement among its choices. */
const openToAnyone = (o: Operation): boolean => o.op.security.length === 0 || o.op.security.some((r: Json) => Object.keys(r).length === 0);

/** Every media type object of the document with its location: request bodies and responses. */
function* mediaTypes(): Generator<{ where: string; at: (string | number)[]; media: Json }> {
  for (const o of operations) {
    for (const [type, media] of Object.entries(o.op.requestBody?.content ?? {})) yield { where: `${o.method} ${o.path} body ${type}`, at: ['paths', o.path, o.method, 'requestBody', 'content', type], media };
    for (const [status, r] of Object.entries(o.op.responses ?? {}) as [string, Json][]) {
      if (r.$ref) continue;
      for (const [type, media] of Object.entries(r.content ?? {})) yield { where: `${o.method} ${o.path} ${status} ${type}`, at: ['paths', o.path, o.method, 'responses', status, 'content', type], media };
    }
  }
  for (const [name, r] of Object.entries(doc.components?.responses ?? {}) as [string, Json][]) {
    for (const [type, media] of Object.entries(r.content ?? {})) yield { where: `components.responses.${name} ${type}`, at: ['components', 'responses', name, 'content', type], media };
  }
}

t.test('served publicly as JSON, built once: the same bytes every time', async (t) => {
  t.equal(served.status, 200);
  t.match(served.headers.get('content-type'), /^application\/json/);
  const again = await fetch(`${svc.url}/api/openapi.json`, { headers: { authorization: 'Bearer not-a-token' } });
  t.equal(again.status, 200, 'no credential is needed (an invalid one is ignored)');
  t.equal(await again.text(), text, 'the same document');
  t.comment(`${Buffer.byteLength(text)} bytes, ${Object.keys(doc.paths).length} paths, ${operations.length} operations, ${Object.keys(doc.components.schemas).length} named schemas`);
});

t.test('a valid OpenAPI 3.1 document', async (t) => {
  t.equal(doc.openapi, '3.1.0');
  t.match(doc.info, { title: String, version: String });

  const dangling: string[] = [];
  const walk = (node: Json, at: string) => {
    if (Array.isArray(node)) return node.forEach((n, i) => walk(n, `${at}/${i}`));
    if (node === null || typeof node !== 'object') return;
    if (typeof node.$ref === 'string' && (!node.$ref.startsWith('#/') || resolve(node.$ref) === undefined)) dangling.push(`${at}: ${node.$ref}`);
    for (const [k, v] of Object.entries(node)) if (k !== 'example' && k !== 'examples' && k !== 'enum' && k !== 'const') walk(v, `${at}/${k}`);
  };
  walk(doc, '#');
  t.same(dangling, [], 'every $ref resolves');

  const ids = operations.map((o) => o.op.operationId);
  t.ok(ids.every((id) => typeof id === 'string' && /^[A-Za-z][A-Za-z0-9]*$/.test(id)), 'every operation has an operationId');
  t.same(ids.filter((id, i) => ids.indexOf(id) !== i), [], 'operationIds are unique');

  const tags = new Set(doc.tags.map((tag: Json) => tag.name));
  const schemes = new Set(Object.keys(doc.components.securitySchemes));
  const problems: string[] = [];
  for (const o of operations) {
    const name = `${o.method.toUpperCase()} ${o.path}`;
    if (!o.op.summary) problems.push(`${name}: no summary`);
    for (const tag of o.op.tags ?? []) if (!tags.has(tag)) problems.push(`${name}: undeclared tag ${tag}`);
    for (const requirement of o.op.security ?? []) for (const scheme of Object.keys(requirement)) if (!schemes.has(scheme)) problems.push(`${name}: unknown security scheme ${scheme}`);
    const templated = [...o.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]).sort();
    const params: Json[] = o.op.parameters ?? [];
    const declared = params.filter((p) => p.in === 'path');
    if (JSON.stringify(declared.map((p) => p.name).sort()) !== JSON.stringify(templated)) problems.push(`${name}: path parameters declared ${declared.map((p) => p.name)} for ${templated}`);
    if (declared.some((p) => p.required !== true)) problems.push(`${name}: a path parameter is not required`);
    const keys = params.map((p) => `${p.in}:${p.name.toLowerCase()}`);
    if (new Set(keys).size !== keys.length) problems.push(`${name}: a parameter is declared twice`);
    if (params.some((p) => !['path', 'query', 'header', 'cookie'].includes(p.in) || !p.schema)) problems.push(`${name}: a parameter without a place or a schema`);
    const statuses = Object.keys(o.op.responses ?? {});
    if (!statuses.every((s) => /^[1-5]\d\d$/.test(s))) problems.push(`${name}: bad status keys ${statuses}`);
    if (!statuses.some((s) => Number(s) < 400)) problems.push(`${name}: no successful answer`);
    for (const s of statuses) {
      const r = nodeAt(responseAt(o, s)!);
      if (typeof r?.description !== 'string') problems.push(`${name} ${s}: no description`);
    }
  }
  t.same(problems, [], 'operations are well formed');

  let schemas = 0;
  const broken: string[] = [];
  const compile = (at: (string | number)[], where: string) => {
    schemas++;
    try {
      validatorAt(pointer(...at));
    } catch (err) {
      broken.push(`${where}: ${(err as Error).message}`);
    }
  };
  for (const name of Object.keys(doc.components.schemas)) compile(['components', 'schemas', name], `components.schemas.${name}`);
  for (const { where, at, media } of mediaTypes()) if (media.schema) compile([...at, 'schema'], where);
  for (const o of operations) (o.op.parameters ?? []).forEach((p: Json, i: number) => compile(['paths', o.path, o.method, 'parameters', i, 'schema'], `${o.method} ${o.path} parameter ${p.name}`));
  t.same(broken, [], `every schema compiles under JSON Schema 2020-12, strictly (${schemas} schemas)`);
});

t.test('what a generated client needs: the server (PUBLIC_BASE_URL) and every operation\'s credentials', async (t) => {
  t.match(doc.servers, [{ url: svc.config.publicBaseUrl, description: String }], 'one server: the configured public base URL');
  t.equal(doc.servers.length, 1);
  t.match(doc.servers[0].url, /^https?:\/\/[^/]+.*[^/]$/, 'absolute, without a trailing slash (every path starts with /)');
  t.same(operations.filter((o) => !Array.isArray(o.op.security)).map((o) => `${o.method} ${o.path}`), [], 'every operation states its security');
  // Public (`security: []`) exactly when no credential is checked: such an operation never answers UNAUTHORIZED.
  const stated = operations.map((o) => {
    const checked = [...errorCodesOf(o)].some((c) => c.code === 'UNAUTHORIZED');
    return { name: `${o.method} ${o.path}`, security: o.op.security, checked };
  });
  t.same(stated.filter((o) => (o.security.length === 0) === o.checked), [], 'security: [] exactly on the operations that check no credential');
  t.same(stated.filter((o) => o.security.length > 0 && !o.checked), [], 'an operation with a credential says what its absence answers');
  t.ok(stated.filter((o) => o.security.length === 0).length >= 10, 'the public operations (webhooks, sign-up, login, health, docs, widget) have security: []');
});

t.test('LeadMove.userId is what the API returns: a user id (UUID) or null', async (t) => {
  const userId = validatorAt(pointer('components', 'schemas', 'LeadMove', 'properties', 'userId'));
  t.ok(userId('6f1c2d4e-8a3b-4c5d-9e0f-1a2b3c4d5e6f'), 'a UUID');
  t.ok(userId(null), 'null (moved by an API token or the agent)');
  t.notOk(userId(1), 'not an integer');
});

t.test('every mounted route is in the document (and only those)', async (t) => {
  const { app, close } = createGatewayApp({ config: svc.config, orm: svc.orm, nc: svc.nc, logger: createLogger('silent') });
  t.teardown(close);
  const mounted = [...listAppRoutes(app), ...SERVER_ROUTE_DOCS].map((r) => `${r.method} ${openApiPath(r.path)}`);
  const documented = new Set(operations.map((o) => `${o.method.toUpperCase()} ${o.path}`));
  const undocumented = mounted.filter((r) => !documented.has(r));
  t.same(undocumented, [], `mounted routes without docs (add a RouteDoc beside the route and register it where it is mounted, gateway/app.ts): ${undocumented.join(', ') || 'none'}`);
  const stale = [...documented].filter((r) => !mounted.includes(r));
  t.same(stale, [], `documented operations that are not mounted: ${stale.join(', ') || 'none'}`);
  t.ok(mounted.length >= 58, `${mounted.length} routes`);
});

t.test('the routes served ahead of express answer at their documented paths', async (t) => {
  const webhook = await svc.api('POST', '/api/webhook/helpdesk/2147483646', { body: { text: 'hi', client_id: 'c-1' } });
  t.equal(webhook.status, 404);
  t.equal(webhook.body.error.message, 'Integration not found.', 'the webhook path looked the integration up (not "No route for …")');
  const refused = await openChat(t, svc.url, 2147483646).then(
    () => null,
    (err: unknown) => err,
  );
  t.ok(refused instanceof UpgradeRefused, 'the upgrade was answered');
  t.equal((refused as UpgradeRefused).status, 404);
  t.equal(JSON.parse((refused as UpgradeRefused).body).error.message, 'Integration not found.', 'the webchat path looked the integration up');
});

t.test('every code of the error catalog is in the document', async (t) => {
  const codes = Object.keys(ERRORS) as ErrorCode[];
  t.same([...doc.components.schemas.ErrorCode.enum].sort(), [...codes].sort(), 'ErrorCode lists the catalog');
  const errorSchema = validatorAt(pointer('components', 'schemas', 'Error'));
  for (const code of codes) {
    const example = doc.components.examples[code];
    t.equal(example?.value?.error?.code, code, `an example of ${code}`);
    t.ok(errorSchema(example?.value), `the ${code} example is an Error ${errorsOf(errorSchema)}`);
  }
  const answered = new Set<string>();
  const misfiled: string[] = [];
  for (const o of operations) {
    for (const { status, code } of errorCodesOf(o)) {
      answered.add(code);
      if (String(ERRORS[code].status) !== status) misfiled.push(`${o.method} ${o.path}: ${code} under ${status}`);
    }
  }
  t.same(misfiled, [], "each code is listed under its catalog status");
  // Codes only the webchat socket's `error` frames carry: the upgrade's description names them.
  const upgrade = operations.find((o) => o.op.operationId === 'openWebchatSocket')!;
  const frameOnly = codes.filter((c) => !answered.has(c) && (FRAME_ERROR_CODES as readonly string[]).includes(c));
  for (const code of frameOnly) t.match(upgrade.op.description, new RegExp(`\\b${code}\\b`), `${code}: an error frame of the webchat socket`);
  t.same(codes.filter((c) => !answered.has(c) && !frameOnly.includes(c)), RESERVED, 'every code but the reserved ones is answered by some operation');
});

t.test('every example validates against its schema', async (t) => {
  let count = 0;
  const bad: string[] = [];
  const check = (v: ValidateFunction, value: unknown, where: string) => {
    count++;
    if (!v(value)) bad.push(`${where}: ${errorsOf(v)}`);
  };
  for (const { where, at, media } of mediaTypes()) {
    if (media.example !== undefined) check(validatorAt(pointer(...at, 'schema')), media.example, where);
    for (const [name, ex] of Object.entries(media.examples ?? {}) as [string, Json][]) check(validatorAt(pointer(...at, 'schema')), (ex.$ref ? resolve(ex.$ref) : ex).value, `${where} example ${name}`);
  }
  for (const o of operations) {
    (o.op.parameters ?? []).forEach((p: Json, i: number) => {
      if (p.example !== undefined) check(validatorAt(pointer('paths', o.path, o.method, 'parameters', i, 'schema')), p.in === 'path' && p.schema.type === 'integer' ? Number(p.example) : p.example, `${o.method} ${o.path} parameter ${p.name}`);
    });
  }
  t.same(bad, [], `${count} examples checked`);
  const withoutExample = [...mediaTypes()].filter(({ media, at }) => media.example === undefined && media.examples === undefined && at.includes('responses') && !at.includes('*/*')).map((m) => m.where);
  t.same(withoutExample, [], 'every answer with a body has an example');
});

t.test('real answers match the documented schemas', async (t) => {
  const worker = await startTestWorker(t, svc, { workerId: 'openapi-w' });
  await waitForPartitions([worker], 1);
  const seen = new Set<string>();

  /** Calls a documented operation and validates the answer against the schema documented for its status. */
  async function call(tt: Test, method: string, template: string, options: { params?: Record<string, unknown>; query?: string; token?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {}): Promise<ApiResponse> {
    const path = template.replace(/\{(\w+)\}/g, (_m, k: string) => encodeURIComponent(String(options.params?.[k])));
    const res = await svc.api(method, path + (options.query ?? ''), options);
    const o = operations.find((x) => x.path === template && x.method === method.toLowerCase());
    const at = o && responseAt(o, String(res.status));
    const name = `${method} ${template} → ${res.status}`;
    if (!at) {
      tt.fail(`${name} is not documented: ${JSON.stringify(res.body).slice(0, 300)}`);
      return res;
    }
    seen.add(`${method} ${template}`);
    if (!options.token && res.status < 400) tt.ok(openToAnyone(o), `${name}: answered without a credential, so documented with security: [] (or an optional one)`);
    const response = nodeAt(at);
    const types = Object.keys(response.content ?? {});
    if (types.length === 0) {
      tt.equal(res.body, '', `${name}: no body, as documented`);
      return res;
    }
    const type = types.find((ty) => ty === '*/*' || (res.headers.get('content-type') ?? '').startsWith(ty));
    tt.ok(type, `${name}: content-type ${res.headers.get('content-type')} is one of ${types}`);
    const v = validatorAt(pointer(...at, 'content', type ?? types[0]!, 'schema'));
    tt.ok(v(res.body), `${name}: the answer matches its schema ${v.errors ? errorsOf(v) : ''}`);
    return res;
  }

  const email = uniqueEmail('openapi');
  const password = 'correct horse battery';
  const register = await call(t, 'POST', '/api/auth/register', { body: { email, password, companyName: 'Docs Co' } });
  t.equal(register.status, 201);
  const login = await call(t, 'POST', '/api/auth/login', { body: { email, password } });
  const refreshed = await call(t, 'POST', '/api/auth/refresh', { body: { refresh_token: login.body.session.refresh_token } });
  const token: string = refreshed.body.session.access_token;
  await call(t, 'GET', '/api/auth/me', { token });

  // The team: an invitation accepted once, an operator refused the setup, the owner rules.
  const invited = (await call(t, 'POST', '/api/users/invitations', { token, body: { email: uniqueEmail('invitee'), role: 'operator', displayName: 'Bo' } })).body.invitation;
  await call(t, 'POST', '/api/users/invitations', { token, body: { email, role: 'operator' } });
  await call(t, 'GET', '/api/users/invitations', { token });
  const joined = await call(t, 'POST', '/api/auth/accept-invitation', { body: { token: invited.token, password } });
  await call(t, 'POST', '/api/auth/accept-invitation', { body: { token: invited.token, password } });
  const operatorToken: string = (await call(t, 'POST', '/api/auth/login', { body: { email: invited.email, password } })).body.session.access_token;
  await call(t, 'GET', '/api/users', { token: operatorToken });
  await call(t, 'PATCH', '/api/users/{id}', { token: operatorToken, params: { id: joined.body.user.id }, body: { displayName: 'Bo K.' } });
  await call(t, 'PATCH', '/api/users/{id}', { token: operatorToken, params: { id: register.body.user.id }, body: { displayName: 'Boss' } });
  await call(t, 'PATCH', '/api/users/{id}', { token, params: { id: register.body.user.id }, body: { role: 'admin' } });
  await call(t, 'GET', '/api/users/invitations', { token: operatorToken });
  await call(t, 'POST', '/api/canned-replies', { token: operatorToken, body: { shortcut: 'hours', text: 'We open at nine.' } });
  const canned = (await call(t, 'POST', '/api/canned-replies', { token, body: { shortcut: 'hours', text: 'We open at nine.' } })).body.cannedReply;
  await call(t, 'POST', '/api/canned-replies', { token, body: { shortcut: 'hours', text: 'Again.' } });
  await call(t, 'GET', '/api/canned-replies', { token: operatorToken, query: '?q=nine' });
  await call(t, 'PATCH', '/api/canned-replies/{id}', { token, params: { id: canned.id }, body: { text: 'We open at ten.' } });
  await call(t, 'DELETE', '/api/canned-replies/{id}', { token, params: { id: canned.id } });
  await call(t, 'DELETE', '/api/canned-replies/{id}', { token, params: { id: canned.id } });
  const revoked = (await call(t, 'POST', '/api/users/invitations', { token, body: { email: uniqueEmail('revoked'), role: 'admin' } })).body.invitation;
  await call(t, 'DELETE', '/api/users/invitations/{id}', { token, params: { id: revoked.id } });
  await call(t, 'DELETE', '/api/users/invitations/{id}', { token, params: { id: revoked.id } });
  await call(t, 'DELETE', '/api/users/{id}', { token, params: { id: register.body.user.id } });
  await call(t, 'DELETE', '/api/users/{id}', { token, params: { id: joined.body.user.id } });
  await call(t, 'DELETE', '/api/users/{id}', { token, params: { id: joined.body.user.id } });

  // Errors, as documented.
  await call(t, 'GET', '/api/agents');
  const invalid = await call(t, 'POST', '/api/agents', { token, body: { name: '' } });
  t.equal(invalid.body.error.code, 'VALIDATION_ERROR');
  await call(t, 'GET', '/api/agents/{id}', { token, params: { id: 2147483646 } });
  await call(t, 'POST', '/api/auth/login', { body: { email, password: 'wrong password' } });

  const apiToken = await call(t, 'POST', '/api/api-tokens', { token, body: { name: 'CI' } });
  await call(t, 'GET', '/api/api-tokens', { token });
  await call(t, 'GET', '/api/api-tokens', { token: apiToken.body.apiToken.token });

  const kb = (await call(t, 'POST', '/api/knowledge-bases', { token, body: { name: 'Help centre', language: 'english' } })).body.knowledgeBase;
  await call(t, 'GET', '/api/knowledge-bases', { token });
  await call(t, 'GET', '/api/knowledge-bases/{id}', { token, params: { id: kb.id } });
  await call(t, 'PATCH', '/api/knowledge-bases/{id}', { token, params: { id: kb.id }, body: { name: 'Help centre (EN)' } });
  const document = (await call(t, 'POST', '/api/knowledge-bases/{id}/documents', { token, params: { id: kb.id }, body: { title: 'Opening hours', content: '# Opening hours\n\nWe open at nine, Monday to Saturday.' } })).body.document;
  t.equal(document.status, 'processing', 'every document is read in the background');
  t.equal((await waitForDocument(svc.api, token, kb.id, document.id)).status, 'ready');
  await call(t, 'GET', '/api/knowledge-bases/{id}/documents', { token, params: { id: kb.id } });
  await call(t, 'GET', '/api/knowledge-bases/{id}/documents/{docId}', { token, params: { id: kb.id, docId: document.id } });
  await call(t, 'GET', '/api/knowledge-bases/{id}/documents/{docId}/chunks', { token, params: { id: kb.id, docId: document.id } });
  t.equal((await call(t, 'POST', '/api/knowledge-bases/{id}/documents/{docId}/retry', { token, params: { id: kb.id, docId: document.id } })).status, 409, 'a ready document is not retried');
  const search = await call(t, 'GET', '/api/knowledge-bases/{id}/search', { token, params: { id: kb.id }, query: '?q=when%20do%20you%20open' });
  t.ok(search.body.results.length > 0, 'the search found the document');
  await call(t, 'GET', '/api/knowledge-bases/{id}/gaps', { token, params: { id: kb.id }, query: `?from=${new Date(Date.now() - 86_400_000).toISOString()}&limit=10` });
  await call(t, 'GET', '/api/knowledge-bases/{id}/gaps', { token, params: { id: kb.id }, query: '?from=tomorrow' });

  const agent = (await call(t, 'POST', '/api/agents', { token, body: { name: 'Support', systemPrompt: 'Be brief.', model: { provider: 'openai', name: 'gpt-4o-mini', baseUrl: 'https://api.openai.com/v1', apiKey: 'sk-example' } } })).body.agent;
  const builtin = (await call(t, 'POST', '/api/agents', { token, body: { name: 'Hours', knowledgeBaseId: kb.id } })).body.agent;
  await call(t, 'GET', '/api/agents', { token });
  await call(t, 'GET', '/api/agents/{id}', { token, params: { id: agent.id } });
  await call(t, 'PATCH', '/api/agents/{id}', { token, params: { id: agent.id }, body: { onNoAnswer: 'fallback', spendCapUsdPerDay: '2.50' } });
  const evaluation = await call(t, 'POST', '/api/agents/{id}/evaluations', { token, params: { id: builtin.id }, body: { cases: [{ question: 'When do you open?', expect: ['nine'] }] } });
  t.equal(evaluation.body.evaluation.passed, 1, 'the built-in agent answered from the document');
  await call(t, 'GET', '/api/agents/{id}/evaluations', { token, params: { id: builtin.id } });

  await call(t, 'GET', '/api/billing', { token });
  await call(t, 'PATCH', '/api/billing', { token, body: { spendCapUsdPerDay: '10.00' } });
  await call(t, 'GET', '/api/billing/ledger', { token, query: '?limit=10' });
  await call(t, 'GET', '/api/billing/ledger', { token, query: '?limit=0' });
  await call(t, 'GET', '/api/pipelines', { token });

  // A helpdesk integration at the (default, trusted) global instance: creating it asks nobody.
  const desk = (await call(t, 'POST', '/api/integrations', { token, body: { type: 'helpdesk', name: 'Chat2Desk', agentId: builtin.id, apiUrl: svc.config.helpdeskGlobalUrl, apiToken: 'chat2desk-api-token' } })).body.integration;
  await call(t, 'GET', '/api/integrations/{id}', { token, params: { id: desk.id } });
  await call(t, 'PATCH', '/api/integrations/{id}', { token, params: { id: desk.id }, body: { active: false } });
  await call(t, 'POST', '/api/integrations/{id}/rotate-secret', { token, params: { id: desk.id } });
  await call(t, 'GET', '/api/webhook/{connectorType}/{integrationId}', { params: { connectorType: 'helpdesk', integrationId: desk.id } });
  const payload = JSON.stringify({ message_id: 555, type: 'from_client', text: 'When are you open?', client_id: 'c-1', channel_id: 'ch-9', transport: 'telegram' });
  await call(t, 'POST', '/api/webhook/{connectorType}/{integrationId}', { params: { connectorType: 'helpdesk', integrationId: desk.id }, rawBody: payload, headers: { 'content-type': 'application/json' } });
  const inactive = await call(t, 'POST', '/api/webhook/{connectorType}/{integrationId}', {
    params: { connectorType: 'helpdesk', integrationId: desk.id },
    rawBody: payload,
    headers: { 'content-type': 'application/json', 'x-webhook-signature': signBody(desk.webhookSecret, payload) },
  });
  t.equal(inactive.status, 403, 'signed (a rotated-out secret verifies through its grace period), refused: the integration is off');

  // The direct channels: WhatsApp (Meta's GET probe answers text/plain; a signed status) and Telegram (setWebhook on create).
  const appSecret = randomBytes(16).toString('hex');
  const wa = (await call(t, 'POST', '/api/integrations', { token, body: { type: 'whatsapp', name: 'WhatsApp', agentId: builtin.id, phoneNumberId: '106540352242922', accessToken: 'EAAG-example', appSecret } })).body.integration;
  await call(t, 'GET', '/api/integrations/{id}', { token, params: { id: wa.id } });
  const probe = (challenge: string, verifyToken: string) => `?hub.mode=subscribe&hub.verify_token=${encodeURIComponent(verifyToken)}&hub.challenge=${challenge}`;
  const challenged = await call(t, 'GET', '/api/webhook/{connectorType}/{integrationId}', { params: { connectorType: 'whatsapp', integrationId: wa.id }, query: probe('1158201444', wa.verifyToken) });
  t.equal(challenged.body, '1158201444', "Meta's probe: the challenge, as plain text");
  t.equal((await call(t, 'GET', '/api/webhook/{connectorType}/{integrationId}', { params: { connectorType: 'whatsapp', integrationId: wa.id }, query: probe('1', 'not-the-token') })).status, 403);
  const status = JSON.stringify({ object: 'whatsapp_business_account', entry: [{ id: '1', changes: [{ field: 'messages', value: { messaging_product: 'whatsapp', statuses: [{ id: 'wamid.X', status: 'read', timestamp: '1764583300', recipient_id: '15551112222' }] } }] }] });
  const waPost = (signature: string) =>
    call(t, 'POST', '/api/webhook/{connectorType}/{integrationId}', { params: { connectorType: 'whatsapp', integrationId: wa.id }, rawBody: status, headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature } });
  t.equal((await waPost(signBody(appSecret, status))).status, 200, 'signed with the app secret');
  t.equal((await waPost(signBody('another secret', status))).status, 401);
  const bot = await call(t, 'POST', '/api/integrations', { token, body: { type: 'telegram', name: 'Bot', agentId: builtin.id, botToken: BOT } });
  t.equal(bot.body.integration.webhookStatus, 'ok', 'setWebhook answered');
  await call(t, 'POST', '/api/integrations/{id}/register-webhook', { token, params: { id: bot.body.integration.id } });
  const update = JSON.stringify({ update_id: 901, message: { message_id: 1, date: 1764583300, chat: { id: 77, type: 'private', first_name: 'Ann' }, from: { id: 77, is_bot: false, first_name: 'Ann' }, text: 'hello' } });
  const tgPost = (secret: string) =>
    call(t, 'POST', '/api/webhook/{connectorType}/{integrationId}', { params: { connectorType: 'telegram', integrationId: bot.body.integration.id }, rawBody: update, headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': secret } });
  t.equal((await tgPost(bot.body.integration.webhookSecret)).status, 200, 'the secret header');
  t.equal((await tgPost('wrong')).status, 401);

  const chat = (await call(t, 'POST', '/api/integrations', { token, body: { type: 'webchat', name: 'Site chat', agentId: builtin.id } })).body.integration;
  await call(t, 'POST', '/api/integrations/{id}/register-webhook', { token, params: { id: chat.id } });
  await call(t, 'GET', '/api/integrations', { token });

  // A conversation, through the widget's socket (101), answered by the worker.
  const visitor = await openChat(t, svc.url, chat.id);
  seen.add('GET /api/webchat/{integrationId}/ws');
  await visitor.hello();
  visitor.send({ type: 'message', clientMessageId: 'm-1', text: 'When do you open?' });
  const ack = await visitor.next('ack');
  await visitor.next('message');
  const id = ack.conversationId;
  await call(t, 'GET', '/api/conversations', { token, query: `?integrationId=${chat.id}&from=2020-01-01` });
  await call(t, 'GET', '/api/conversations', { token, query: '?status=open' });
  await call(t, 'GET', '/api/conversations/{id}', { token, params: { id } });
  await call(t, 'POST', '/api/conversations/{id}/pause', { token, params: { id } });
  await call(t, 'POST', '/api/conversations/{id}/messages', { token, params: { id }, body: { text: 'A colleague will call you back today.' } });
  // The team's side: a note, labels, an assignment, a read, the inbox's filters.
  await call(t, 'POST', '/api/conversations/{id}/notes', { token, params: { id }, body: { text: 'Called her back.' } });
  await call(t, 'PUT', '/api/conversations/{id}/labels', { token, params: { id }, body: { labels: ['delivery', ' vip '] } });
  await call(t, 'PUT', '/api/conversations/{id}/labels', { token, params: { id }, body: { labels: ['a,b'] } });
  await call(t, 'PATCH', '/api/conversations/{id}', { token, params: { id }, body: { assigneeId: register.body.user.id } });
  await call(t, 'PATCH', '/api/conversations/{id}', { token, params: { id }, body: { assigneeId: '00000000-0000-4000-8000-000000000000' } });
  await call(t, 'POST', '/api/conversations/{id}/read', { token, params: { id } });
  await call(t, 'POST', '/api/conversations/{id}/read', { token, params: { id: 2147483646 } });
  const inbox = await call(t, 'GET', '/api/conversations', { token, query: '?assignee=me&label=vip&q=open' });
  t.match(inbox.body.conversations, [{ id, assignee: { id: register.body.user.id }, unread: 0, labels: ['delivery', 'vip'] }], 'the inbox item, validated above');
  await call(t, 'GET', '/api/conversations', { token: apiToken.body.apiToken.token, query: '?assignee=me' });
  await call(t, 'GET', '/api/conversations/{id}/messages', { token, params: { id } });
  await call(t, 'POST', '/api/conversations/{id}/resume', { token, params: { id } });
  await call(t, 'POST', '/api/conversations/{id}/close', { token, params: { id } });
  await call(t, 'POST', '/api/conversations/{id}/messages', { token, params: { id }, body: { text: 'Too late.' } });
  await call(t, 'POST', '/api/conversations/{id}/notes', { token, params: { id }, body: { text: 'Too late too.' } });
  const messages = await call(t, 'GET', '/api/conversations/{id}/messages', { token, params: { id } });
  t.ok(messages.body.messages.some((m: Json) => m.role === 'agent' && Array.isArray(m.sources)), 'an agent reply with its sources');
  await call(t, 'GET', '/api/conversations/{id}/transitions', { token, params: { id } });
  await call(t, 'GET', '/api/machines/conversation', { token });
  // The visitor is a lead; an operator (a session) moves it, and the move names them by their user id.
  const { pipelines } = (await call(t, 'GET', '/api/pipelines', { token })).body;
  const lead = (await call(t, 'GET', '/api/leads', { token })).body.leads[0];
  const moved = await call(t, 'PATCH', '/api/leads/{id}', { token, params: { id: lead.id }, body: { stageId: pipelines[0].stages[1].id } });
  t.match(moved.body.lead.moves, [{ by: 'operator', userId: register.body.user.id }], 'a real move, validated above, with the operator\'s UUID');
  await call(t, 'GET', '/api/leads/{id}', { token, params: { id: lead.id } });
  await call(t, 'PATCH', '/api/leads/{id}', { token, params: { id: lead.id }, body: { name: 'Maria Lopez', email: 'maria@example.com', phone: null } });
  // The event streams, read with node:http so the socket is surely closed after (else the gateway's stop waits for it).
  const firstChunk = (path: string) =>
    new Promise<{ status: number; type: string; first: string }>((resolve, reject) => {
      const req = get(`${svc.url}${path}`, { headers: { authorization: `Bearer ${token}` } }, (res) => {
        res.once('data', (chunk: Buffer) => {
          resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), first: chunk.toString() });
          req.destroy();
        });
      });
      req.on('error', reject);
    });
  for (const [path, template] of [[`/api/conversations/${id}/inspect`, '/api/conversations/{id}/inspect'], ['/api/conversations/events', '/api/conversations/events']] as const) {
    const streamed = await firstChunk(path);
    t.equal(streamed.status, 200, path);
    t.match(streamed.type, /^text\/event-stream/, `${path} is the documented event stream`);
    seen.add(`GET ${template}`);
  }

  await call(t, 'GET', '/healthz');
  await call(t, 'GET', '/readyz');
  await call(t, 'GET', '/metrics');
  await call(t, 'GET', '/widget.js');
  await call(t, 'GET', '/');
  await call(t, 'GET', '/api/openapi.json');
  const page = await call(t, 'GET', '/api/docs');
  const asset = /\/api\/docs\/assets\/([0-9a-f]+)\/swagger-ui\.css/.exec(page.body)!;
  await call(t, 'GET', '/api/docs/assets/{version}/{file}', { params: { version: asset[1], file: 'swagger-ui.css' } });
  await call(t, 'GET', '/api/docs/assets/{version}/{file}', { params: { version: asset[1], file: 'package.json' } });

  await call(t, 'DELETE', '/api/knowledge-bases/{id}/documents/{docId}', { token, params: { id: kb.id, docId: document.id } });
  await call(t, 'DELETE', '/api/knowledge-bases/{id}', { token, params: { id: kb.id } });
  await call(t, 'DELETE', '/api/integrations/{id}', { token, params: { id: desk.id } });
  await call(t, 'DELETE', '/api/agents/{id}', { token, params: { id: agent.id } });
  await call(t, 'DELETE', '/api/api-tokens/{id}', { token, params: { id: apiToken.body.apiToken.id } });
  await call(t, 'POST', '/api/auth/logout', { token });
  await call(t, 'GET', '/api/auth/me', { token });
  t.comment(`${seen.size} of ${operations.length} operations answered for real`);
});

t.test('the docs page: its own CSP, assets from the package with long cache headers; other routes keep theirs', async (t) => {
  const page = await fetch(`${svc.url}/api/docs`);
  t.equal(page.headers.get('content-security-policy'), API_DOCS_CSP);
  const html = await page.text();
  t.notMatch(html, /<script>|<script [^>]*>[^<]/, 'no inline script');
  t.notMatch(html, /https?:\/\//, 'nothing from another host');
  const assets = [...html.matchAll(/(?:src|href)="(\/api\/docs\/assets\/[^"]+)"/g)].map((m) => m[1]!);
  t.ok(assets.length >= 3, `the page loads ${assets.join(', ')}`);
  // Every body is read: an answer left unread keeps its connection busy (and the gateway's stop waiting).
  const fetched = async (path: string) => {
    const res = await fetch(svc.url + path);
    return { status: res.status, headers: res.headers, bytes: (await res.arrayBuffer()).byteLength };
  };
  for (const path of assets) {
    const res = await fetched(path);
    t.equal(res.status, 200, path);
    t.ok(res.bytes > 0, `${path} has a body`);
    t.equal(res.headers.get('cache-control'), 'public, max-age=31536000, immutable', `${path} is cached for a year`);
  }
  const stale = await fetched(assets[0]!.replace(/assets\/[0-9a-f]+\//, 'assets/000000000000/'));
  t.equal(stale.headers.get('cache-control'), 'no-cache', 'another version is revalidated');
  const traversal = await fetched('/api/docs/assets/x/..%2F..%2Fpackage.json');
  t.equal(traversal.status, 404, 'only the listed files are served');

  const agents = await fetched('/api/agents');
  t.equal(agents.headers.get('content-security-policy'), null, 'API answers keep their headers');
  t.equal(agents.headers.get('cache-control'), 'no-store');
  t.equal((await fetched('/')).headers.get('content-security-policy'), DASHBOARD_CSP, 'the dashboard keeps its CSP');
  t.equal((await fetched('/api/openapi.json')).headers.get('cache-control'), 'no-store');
});
