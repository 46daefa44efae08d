import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { freePort } from './local-server.js';
import { natsServerBinary } from './nats-binary.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface NatsCluster {
  /** Client URLs of the nodes, in node order. */
  urls: string[];
  names: string[];
  /** The nats-server binary the nodes run. */
  binary: string;
  kill: (name: string) => Promise<void>;
  start: (name: string) => Promise<void>;
  /** The client URL of a node. */
  urlOf: (name: string) => string;
  /** Whether the node's process is running (started and not exited). */
  running: (name: string) => boolean;
  /** Resolves once the node answers a JetStream request itself (e.g. after `start`); rejects after `timeoutMs`. */
  ready: (name: string, timeoutMs?: number) => Promise<void>;
}

export interface NatsClusterOptions {
  /** Nodes (3). */
  size?: number;
  /** The nats-server to run (default natsServerBinary(): NATS_SERVER_BIN, the newest in .cache/, else the one on PATH). */
  binary?: string;
}

/**
 * Nodes of a JetStream cluster (nats-server processes on free loopback ports, each with its
 * own store directory), killed with SIGKILL and started again by the test. The second
 * argument is the options, or (as before) the size.
 */
export async function startNatsCluster(onTeardown: (step: () => Promise<void>) => void, options: NatsClusterOptions | number = {}): Promise<NatsCluster> {
  const { size = 3, binary = natsServerBinary() } = typeof options === 'number' ? { size: options } : options;
  // Forming the cluster is the test's setup, not what it tests: a cluster that did not form
  // (once in a suite's run, under load: "no suitable peers for placement" for 30 s) is
  // reported with its nodes' logs and formed once more on new ports.
  try {
    return await formCluster(onTeardown, size, binary);
  } catch (err) {
    process.stderr.write(`# ${(err as Error).message}\n# forming the NATS cluster again\n`);
    return formCluster(onTeardown, size, binary);
  }
}

async function formCluster(onTeardown: (step: () => Promise<void>) => void, size: number, binary: string): Promise<NatsCluster> {
  const dir = await mkdtemp(join(tmpdir(), 'mas-faults-cluster-'));
  const nodes = await Promise.all(
    Array.from({ length: size }, async (_, i) => ({ name: `n${i + 1}`, port: await freePort(), clusterPort: await freePort(), child: null as ChildProcess | null, error: null as Error | null, exited: Promise.resolve() })),
  );
  const routes = nodes.map((n) => `nats://127.0.0.1:${n.clusterPort}`).join(',');
  const start = async (name: string) => {
    const node = nodes.find((n) => n.name === name)!;
    const child = spawn(
      binary,
      ['-js', '-a', '127.0.0.1', '-p', String(node.port), '-sd', join(dir, node.name), '-n', node.name, '--cluster_name', 'mas-test', '--cluster', `nats://127.0.0.1:${node.clusterPort}`, '--routes', routes, '-l', join(dir, `${node.name}.log`)],
      { stdio: 'ignore' },
    );
    node.child = child;
    node.error = null;
    // A binary that cannot be started (a wrong --chaos-nats-server path) is an error of the node, not of the process.
    child.once('error', (err) => {
      node.error = err;
    });
    node.exited = new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.once('error', () => resolve());
    });
  };
  const kill = async (name: string) => {
    const node = nodes.find((n) => n.name === name)!;
    if (node.child && node.child.exitCode === null && node.child.signalCode === null && !node.error) {
      node.child.kill('SIGKILL');
      await node.exited;
    }
    node.child = null;
  };
  const removeAll = async () => {
    for (const n of nodes) await kill(n.name);
    await rm(dir, { recursive: true, force: true });
  };
  // A test process that ends on an uncaught error runs no teardown: its nodes go with it.
  const killOnExit = () => {
    for (const n of nodes) n.child?.kill('SIGKILL');
  };
  process.once('exit', killOnExit);
  const urlOf = (name: string) => `nats://127.0.0.1:${nodes.find((n) => n.name === name)!.port}`;
  const running = (name: string) => {
    const node = nodes.find((n) => n.name === name);
    const child = node?.child;
    return Boolean(child && !node?.error && child.exitCode === null && child.signalCode === null);
  };
  const ready = async (name: string, timeoutMs = 30_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        if (!running(name)) {
          const error = nodes.find((n) => n.name === name)?.error;
          throw new Error(error ? `${binary} could not be started: ${error.message}` : `node ${name} is not running`);
        }
        const probe = await connect({ servers: urlOf(name), timeout: 500, reconnect: false });
        try {
          await (await jetstreamManager(probe)).getAccountInfo();
        } finally {
          await probe.close();
        }
        return;
      } catch (err) {
        if (nodes.find((n) => n.name === name)?.error) throw err;
        if (Date.now() > deadline) throw new Error(`NATS node ${name} did not answer JetStream within ${timeoutMs} ms: ${(err as Error).message}`);
        await sleep(200);
      }
    }
  };
  for (const n of nodes) await start(n.name);
  // Ready when JetStream answers through every node (the cluster has a meta leader).
  try {
    for (const n of nodes) await ready(n.name, 30_000);
    await placesReplicas(urlOf(nodes[0]!.name), nodes.length, 30_000);
  } catch (err) {
    const logs = await logTails(dir, nodes.map((n) => n.name));
    await removeAll();
    process.off('exit', killOnExit);
    throw new Error(`the NATS cluster did not form: ${(err as Error).message}\n${logs}`);
  }
  onTeardown(async () => {
    await removeAll();
    process.off('exit', killOnExit);
  });
  return { urls: nodes.map((n) => urlOf(n.name)), names: nodes.map((n) => n.name), binary, kill, start, urlOf, running, ready };
}

/** The last lines of each node's log: why a cluster did not form. */
async function logTails(dir: string, names: string[], lines = 15): Promise<string> {
  const tails = await Promise.all(
    names.map(async (name) => {
      const text = await readFile(join(dir, `${name}.log`), 'utf8').catch((err: Error) => `(no log: ${err.message})`);
      return `--- ${name}\n${text.trimEnd().split('\n').slice(-lines).join('\n')}`;
    }),
  );
  return tails.join('\n');
}

/**
 * Waits until the cluster can place a stream on all its nodes: JetStream answers on every node
 * a moment before the meta leader knows every peer (2.10 then refuses an R3 stream with "no
 * suitable peers for placement"). A probe stream is created and deleted.
 */
async function placesReplicas(url: string, replicas: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const name = `cluster_probe_${process.pid}_${Date.now()}`;
  const nc = await connect({ servers: url, timeout: 1000 });
  try {
    const jsm = await jetstreamManager(nc);
    for (;;) {
      try {
        await jsm.streams.add({ name, subjects: [`${name}.>`], num_replicas: replicas });
        await jsm.streams.delete(name);
        return;
      } catch (err) {
        if (Date.now() > deadline) throw new Error(`no stream of ${replicas} replicas could be placed within ${timeoutMs} ms: ${(err as Error).message}`);
        await sleep(250);
      }
    }
  } finally {
    await nc.close();
  }
}
