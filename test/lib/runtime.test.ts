import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { createTestDatabase } from '../support/database.js';
import { TEST_NATS_URL } from '../support/service.js';
import { ROOT } from '../faults/helpers.js';

/**
 * The process-level safety net of every entry point (lib/runtime.ts): an error nothing caught
 * is logged and the process stops in order (its shutdown steps run) with exit code 1; a stop
 * that cannot finish ends at SHUTDOWN_TIMEOUT_MS. Real child processes.
 */
const { url } = await createTestDatabase(t, 'runtime');

function run(fault: string, extra: Record<string, string> = {}) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/runtime-child.ts'], {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'info', DATABASE_URL: url, NATS_URL: TEST_NATS_URL, NATS_PREFIX: `t${randomBytes(4).toString('hex')}`, RUNTIME_CHILD_FAULT: fault, ...extra },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (out += b.toString()));
  const started = Date.now();
  const exited = new Promise<{ code: number | null; ms: number }>((resolve) => child.once('exit', (code) => resolve({ code, ms: Date.now() - started })));
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  return { child, exited, output: () => out };
}

t.test('an uncaught exception: logged, shutdown steps run, exit 1', async (t) => {
  const p = run('throw');
  const { code } = await p.exited;
  t.equal(code, 1);
  t.match(p.output(), /"level":60.*uncaught exception: stopping/, 'logged as fatal');
  t.match(p.output(), /an error nothing caught/);
  t.match(p.output(), /shutdown step done/, 'the orderly stop ran');
});

t.test('an unhandled rejection: the same', async (t) => {
  const p = run('reject');
  const { code } = await p.exited;
  t.equal(code, 1);
  t.match(p.output(), /unhandled promise rejection: stopping/);
  t.match(p.output(), /shutdown step done/);
});

t.test('SIGTERM with a step that never finishes: exit 1 at SHUTDOWN_TIMEOUT_MS', async (t) => {
  const p = run('hang', { SHUTDOWN_TIMEOUT_MS: '1500' });
  while (!p.output().includes('ready')) await new Promise((r) => setTimeout(r, 20));
  const signalled = Date.now();
  p.child.kill('SIGTERM');
  const { code } = await p.exited;
  const took = Date.now() - signalled;
  t.equal(code, 1, 'cut short');
  t.ok(took >= 1400 && took < 5000, `stopped at the deadline (${took} ms)`);
  t.match(p.output(), /shutdown did not finish in time/);
});

t.test('SIGTERM when everything stops: exit 0', async (t) => {
  const p = run('none');
  while (!p.output().includes('ready')) await new Promise((r) => setTimeout(r, 20));
  p.child.kill('SIGTERM');
  const { code } = await p.exited;
  t.equal(code, 0);
  t.match(p.output(), /shutdown step done/);
  t.match(p.output(), /"msg":"stopped"/, 'the last line before exit is written (stdout is written asynchronously)');
});
