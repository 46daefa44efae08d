// Errors that say what to fix (issue #18): a body without Content-Type: application/json is
// told so, schema alternatives become one message per field, and every code the service can
// answer is in the one catalog (lib/errors.ts) and in the README's table.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { ERRORS, FRAME_ERRORS } from '../../lib/errors.js';
import { signUp, startTestService } from '../support/service.js';

const svc = await startTestService(t, 'errors');
const user = await signUp(svc.api, 'Errors Co');

t.test('a body that is not sent as JSON: 415 naming the Content-Type to send', async (t) => {
  const body = JSON.stringify({ name: 'Support' });
  const cases: [string, Record<string, string>, RegExp][] = [
    ["curl -d's default", { 'content-type': 'application/x-www-form-urlencoded' }, /sent as application\/x-www-form-urlencoded; send it as JSON with the header Content-Type: application\/json/],
    ['text/plain', { 'content-type': 'text/plain;charset=UTF-8' }, /sent as text\/plain;/],
    ['no Content-Type', {}, /without a Content-Type; send it as JSON with the header Content-Type: application\/json/],
  ];
  for (const [label, headers, message] of cases) {
    // A Buffer: fetch adds no Content-Type of its own.
    const res = await svc.api('POST', '/api/agents', { token: user.token, rawBody: Buffer.from(body), headers });
    t.equal(res.status, 415, label);
    t.equal(res.body.error.code, 'UNSUPPORTED_MEDIA_TYPE', label);
    t.match(res.body.error.message, message, label);
  }
  const signup = await svc.api('POST', '/api/auth/register', { rawBody: JSON.stringify({ email: 'x@example.com', password: 'long enough', companyName: 'X' }), headers: { 'content-type': 'text/plain' } });
  t.equal(signup.status, 415, 'public routes too');
  t.equal((await svc.api('POST', '/api/agents', { token: user.token, body: { name: 'Support' } })).status, 201, 'with the header it works');
  const kb = await svc.api('POST', '/api/knowledge-bases', { token: user.token, body: { name: 'Docs' } });
  const xml = await svc.api('POST', `/api/knowledge-bases/${kb.body.knowledgeBase.id}/documents`, { token: user.token, rawBody: '<doc/>', headers: { 'content-type': 'application/xml' } });
  t.equal(xml.status, 415);
  t.match(xml.body.error.message, /or multipart\/form-data with a file/, 'the documents route, which also takes files, says so itself');
  const none = await svc.api('POST', '/api/agents', { token: user.token });
  t.equal(none.status, 400, 'no body at all');
  t.match(none.body.error.message, /JSON object \(sent with Content-Type: application\/json\)/);
});

t.test('one clear message per field', async (t) => {
  const res = await svc.api('POST', '/api/integrations', { token: user.token, body: { type: 'helpdesk', name: '', agentId: 'seven', region: 'mars', allowedOrigins: 'x' } });
  t.equal(res.status, 400);
  t.same(res.body.error.details, [
    { field: 'name', message: 'must not be empty' },
    { field: 'agentId', message: 'must be an integer' },
    { field: 'region', message: 'must be one of global, europe' },
    { field: 'allowedOrigins', message: 'must be an array' },
  ]);
  const nullable = await svc.api('POST', '/api/integrations', { token: user.token, body: { type: 'helpdesk', name: 'x', agentId: 1, apiToken: 5 } });
  t.same(nullable.body.error.details, [{ field: 'apiToken', message: 'must be a string or null' }]);
});

/** Every .ts file under a folder of the project. */
function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : path.endsWith('.ts') ? [path] : [];
  });
}

t.test('every code the service answers is in the catalog and in the README', async (t) => {
  const root = new URL('../../', import.meta.url).pathname;
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const codes = Object.keys(ERRORS) as (keyof typeof ERRORS)[];
  for (const code of codes) {
    t.match(readme, new RegExp(`\\| ${ERRORS[code].status} \\| \`${code}\` \\|`), `README lists ${ERRORS[code].status} ${code}`);
  }
  // Codes written as literals anywhere an HTTP answer is made (AppError takes only catalog codes by its type).
  const used = new Set<string>();
  for (const file of [...sources(join(root, 'gateway')), ...sources(join(root, 'lib'))]) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(?:AppError\(\s*|refuse\([^,]+,\s*\d+,\s*|deny\(\s*\d+,\s*|code: |#error\(\s*|FrameError\(\s*)'([A-Za-z_]+)'/g)) used.add(m[1]!);
  }
  t.ok(['CONFLICT', 'ORIGIN_NOT_ALLOWED', 'NOT_READY', 'HELLO_REQUIRED'].every((c) => used.has(c)), 'the scan finds codes');
  // The webchat socket's `error` frames have a few codes of their own, in the catalog too (FRAME_ERRORS).
  for (const code of used) {
    if (Object.hasOwn(FRAME_ERRORS, code)) t.match(readme, new RegExp(`\`${code}\``), `webchat frame code ${code} in the README`);
    else t.ok(Object.hasOwn(ERRORS, code), `${code} is in lib/errors.ts`);
  }
});
