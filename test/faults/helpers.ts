import { spawn, type ChildProcess } from 'node:child_process';
import { chown, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer, connect as netConnect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import type { Test } from 'tap';
import { freePort } from '../support/local-server.js';
import { natsServerBinary } from '../support/nats-binary.js';
import { startNatsCluster as startCluster } from '../support/nats-cluster.js';

/** Shared helpers of the fault suite: worker child processes, a restartable nats-server, a cuttable TCP proxy. */

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export { freePort };

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function waitUntil(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(50);
  }
}

export interface WorkerProcess {
  child: ChildProcess;
  pid: number;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  signal: (s: NodeJS.Signals) => void;
}

/** `node --import tsx actors/main.ts` as a real child process (killed by its pid at teardown). */
export function startWorkerProcess(t: Test, env: Record<string, string>): WorkerProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'actors/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'warn', ALLOW_PRIVATE_URLS: 'true', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const keep = (b: Buffer) => {
    out += b.toString('utf8');
    if (out.length > 2_000_000) out = out.slice(-1_000_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  return { child, pid: child.pid!, output: () => out, exited, signal: (s) => child.kill(s) };
}

export interface RestartableNats {
  url: string;
  port: number;
  stop: () => Promise<void>;
  start: () => Promise<void>;
}

/** A nats-server with JetStream on its own port and store directory, stopped and started again by the test. */
export async function startRestartableNats(t: Test): Promise<RestartableNats> {
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'mas-faults-nats-'));
  const url = `nats://127.0.0.1:${port}`;
  let child: ChildProcess | null = null;
  let exited: Promise<void> = Promise.resolve();
  const stop = async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
    child = null;
  };
  const start = async () => {
    const c = spawn(natsServerBinary(), ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', dir], { stdio: 'ignore' });
    child = c;
    exited = new Promise<void>((resolve) => c.once('exit', () => resolve()));
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        const probe = await connect({ servers: url, timeout: 500, reconnect: false });
        await jetstreamManager(probe);
        await probe.close();
        return;
      } catch (err) {
        if (Date.now() > deadline) throw new Error(`nats-server did not start on ${url}: ${(err as Error).message}`);
        await sleep(100);
      }
    }
  };
  t.teardown(async () => {
    await stop();
    await rm(dir, { recursive: true, force: true });
  });
  await start();
  return { url, port, stop, start };
}

export interface TcpProxy {
  port: number;
  /** Destroys every open connection and refuses new ones (each is closed at once). */
  cut: () => void;
  restore: () => void;
  close: () => Promise<void>;
}

/** A tiny TCP proxy to `target`, for simulating a PostgreSQL outage without touching the shared server. */
export async function startTcpProxy(t: Test, targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let down = false;
  const server: Server = createServer((client) => {
    if (down) {
      client.destroy();
      return;
    }
    const upstream = netConnect(targetPort, targetHost);
    sockets.add(client);
    sockets.add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const close = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });
  t.teardown(close);
  return {
    port,
    cut: () => {
      down = true;
      for (const s of sockets) s.destroy();
      sockets.clear();
    },
    restore: () => {
      down = false;
    },
    close,
  };
}

/** Runs `fn` over `items` with at most `n` at a time. */
export async function pool<T>(items: T[], n: number, fn: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i]!, i);
      }
    }),
  );
}

export interface PrivatePostgres {
  /** `postgresql://root@127.0.0.1:<port>` (no database). */
  baseUrl: string;
  port: number;
  stop: () => Promise<void>;
  start: () => Promise<void>;
}

/** The uid and gid of a system account, from /etc/passwd. */
async function account(name: string): Promise<{ uid: number; gid: number }> {
  const line = (await readFile('/etc/passwd', 'utf8')).split('\n').find((l) => l.startsWith(`${name}:`));
  if (!line) throw new Error(`no ${name} account on this machine`);
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

function run(cmd: string, args: string[], opts: { uid: number; gid: number }): Promise<void> {
  return new Promise((resolve, reject) => {
    const c = spawn(cmd, args, { uid: opts.uid, gid: opts.gid, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    c.stderr!.on('data', (b: Buffer) => (err += b.toString()));
    c.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(' ')} exited with ${code}: ${err.slice(-500)}`))));
  });
}

/**
 * A PostgreSQL instance of the test's own (the installed server's initdb and pg_ctl, run as
 * the `postgres` account, which PostgreSQL requires), on a free port, stopped and started
 * again by the test; removed at teardown. Trust auth for `root`, like the machine's own.
 */
export async function startPrivatePostgres(t: Test): Promise<PrivatePostgres> {
  const versions = (await readdir('/usr/lib/postgresql')).sort((a, b) => Number(a) - Number(b));
  const bin = `/usr/lib/postgresql/${versions.at(-1)}/bin`;
  const owner = await account('postgres');
  const dir = await mkdtemp(join(tmpdir(), 'mas-faults-pg-'));
  await chown(dir, owner.uid, owner.gid);
  const data = join(dir, 'data');
  const port = await freePort();
  await run(`${bin}/initdb`, ['-D', data, '-U', 'root', '--auth=trust', '-E', 'UTF8', '--no-sync'], owner);
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`;
  const start = () => run(`${bin}/pg_ctl`, ['-D', data, '-o', options, '-w', '-t', '30', '-l', join(dir, 'log'), 'start'], owner);
  const stop = () => run(`${bin}/pg_ctl`, ['-D', data, '-m', 'fast', '-w', 'stop'], owner);
  t.teardown(async () => {
    await stop().catch(() => {});
    await rm(dir, { recursive: true, force: true });
  });
  await start();
  return { baseUrl: `postgresql://root@127.0.0.1:${port}`, port, stop, start };
}

export type { NatsCluster } from '../support/nats-cluster.js';

/** A JetStream cluster of `size` nats-server nodes for this test (support/nats-cluster.ts), removed at teardown. */
export function startNatsCluster(t: Test, size = 3) {
  return startCluster((step) => t.teardown(step), size);
}
