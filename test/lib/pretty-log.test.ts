import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { browsableHost } from '../../gateway/server.js';
import { createLogger } from '../../lib/logger.js';
import { prettyDestination, prettyLine } from '../../lib/pretty-log.js';
import { ROOT, waitUntil } from '../faults/helpers.js';
import { createTestDatabase } from '../support/database.js';
import { freePort } from '../support/local-server.js';
import { removeNatsPrefix, TEST_NATS_URL } from '../support/service.js';

/** `LOG_FORMAT=pretty` (what scripts/run.sh sets on a terminal): lines a person reads, secrets still redacted. */
function captured() {
  const lines: string[] = [];
  const logger = createLogger('info', prettyDestination({ write: (s: string) => lines.push(s) })).child({ role: 'gateway' });
  return { logger, text: () => lines.join('') };
}

t.test('an entry reads as time, level, role, message and its fields', async (t) => {
  const { logger, text } = captured();
  logger.info({ url: 'http://127.0.0.1:3000', partitions: 16 }, 'dashboard: open http://127.0.0.1:3000/ in a browser');
  t.match(text(), /^\d\d:\d\d:\d\d INFO  gateway  dashboard: open http:\/\/127\.0\.0\.1:3000\/ in a browser  url=http:\/\/127\.0\.0\.1:3000 partitions=16\n$/);
  t.notMatch(text(), /"level"|pid=/, 'no JSON, no pid');
});

t.test('secrets are redacted before a line is made readable', async (t) => {
  const { logger, text } = captured();
  logger.warn({ apiToken: 'tok-SECRET-1', headers: { authorization: 'Bearer SECRET-2' } }, 'helpdesk refused');
  t.notMatch(text(), /SECRET/);
  t.match(text(), /WARN .*apiToken=\[redacted\]/);
});

t.test('an error shows its message, then its stack indented', async (t) => {
  const { logger, text } = captured();
  logger.error({ err: new Error('connection refused') }, 'could not publish');
  t.match(text(), /ERROR gateway  could not publish  err="connection refused"\n {4}Error: connection refused\n {8}at /);
});

t.test('a line that is not pino JSON passes as written; long values are cut', async (t) => {
  t.equal(prettyLine('plain text'), 'plain text\n');
  const line = prettyLine(JSON.stringify({ level: 30, time: 0, msg: 'big', body: 'x'.repeat(5000) }));
  t.ok(line.length < 400, `cut to ${line.length} characters`);
});

t.test('the dashboard address a browser opens', async (t) => {
  t.equal(browsableHost('0.0.0.0'), 'localhost');
  t.equal(browsableHost('::'), 'localhost');
  t.equal(browsableHost('127.0.0.1'), '127.0.0.1');
  t.equal(browsableHost('::1'), '[::1]');
});

t.test('a process started with LOG_FORMAT=pretty logs readable lines, a fatal one included', async (t) => {
  const { url } = await createTestDatabase(t, 'prettylog');
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/runtime-child.ts'], {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'info', LOG_FORMAT: 'pretty', DATABASE_URL: url, NATS_URL: TEST_NATS_URL, NATS_PREFIX: `t${randomBytes(4).toString('hex')}`, RUNTIME_CHILD_FAULT: 'throw' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  t.equal(code, 1);
  t.match(out, /^\d\d:\d\d:\d\d FATAL .*uncaught exception: stopping/m, 'the fatal line is readable');
  t.notMatch(out, /^\{"level"/m, 'no JSON line');
});

t.test('`npm run gateway` as scripts/run.sh starts it on a terminal: one line says where to open the dashboard, and that address opens it', async (t) => {
  const { url } = await createTestDatabase(t, 'startline');
  const prefix = `t${randomBytes(4).toString('hex')}`;
  t.teardown(() => removeNatsPrefix(TEST_NATS_URL, prefix));
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'gateway/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'info', LOG_FORMAT: 'pretty', DATABASE_URL: url, NATS_URL: TEST_NATS_URL, NATS_PREFIX: prefix, PORT: String(port), HOST: '0.0.0.0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  t.teardown(async () => {
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
  });
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  const DASHBOARD_LINE = /dashboard: open (\S+) in a browser/;
  await waitUntil(() => DASHBOARD_LINE.test(out), 30_000, 'the start-up line');
  const line = DASHBOARD_LINE.exec(out)![1]!;
  // Listening on every address, it names one a browser on this machine opens.
  t.equal(line, `http://localhost:${port}/`);
  const dashboard = await fetch(line);
  t.equal(dashboard.status, 200);
  t.match(dashboard.headers.get('content-type'), /^text\/html/);
  t.notMatch(out, /^\{"level"/m, 'readable lines, no JSON');
  child.kill('SIGTERM');
  t.equal(await exited, 0, 'stops cleanly on SIGTERM');
});
