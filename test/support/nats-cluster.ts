import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { freePort } from './local-server.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface NatsCluster {
  /** Client URLs of the nodes, in node order. */
  urls: string[];
  names: string[];
  kill: (name: string) => Promise<void>;
  start: (name: string) => Promise<void>;
}

/**
 * Nodes of a JetStream cluster (nats-server processes on free loopback ports, each with its
 * own store directory), killed with SIGKILL and started again by the test.
 */
export async function startNatsCluster(onTeardown: (step: () => Promise<void>) => void, size = 3): Promise<NatsCluster> {
  const dir = await mkdtemp(join(tmpdir(), 'mas-faults-cluster-'));
  const nodes = await Promise.all(
    Array.from({ length: size }, async (_, i) => ({ name: `n${i + 1}`, port: await freePort(), clusterPort: await freePort(), child: null as ChildProcess | null, exited: Promise.resolve() })),
  );
  const routes = nodes.map((n) => `nats://127.0.0.1:${n.clusterPort}`).join(',');
  const start = async (name: string) => {
    const node = nodes.find((n) => n.name === name)!;
    const child = spawn(
      'nats-server',
      ['-js', '-a', '127.0.0.1', '-p', String(node.port), '-sd', join(dir, node.name), '-n', node.name, '--cluster_name', 'mas-test', '--cluster', `nats://127.0.0.1:${node.clusterPort}`, '--routes', routes],
      { stdio: 'ignore' },
    );
    node.child = child;
    node.exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  };
  const kill = async (name: string) => {
    const node = nodes.find((n) => n.name === name)!;
    if (node.child && node.child.exitCode === null && node.child.signalCode === null) {
      node.child.kill('SIGKILL');
      await node.exited;
    }
    node.child = null;
  };
  onTeardown(async () => {
    for (const n of nodes) await kill(n.name);
    await rm(dir, { recursive: true, force: true });
  });
  for (const n of nodes) await start(n.name);
  // Ready when JetStream answers through every node (the cluster has a meta leader).
  const urls = nodes.map((n) => `nats://127.0.0.1:${n.port}`);
  const deadline = Date.now() + 30_000;
  for (const url of urls) {
    for (;;) {
      try {
        const probe = await connect({ servers: url, timeout: 500, reconnect: false });
        try {
          await (await jetstreamManager(probe)).getAccountInfo();
        } finally {
          await probe.close();
        }
        break;
      } catch (err) {
        if (Date.now() > deadline) throw new Error(`the NATS cluster did not form: ${(err as Error).message}`);
        await sleep(200);
      }
    }
  }
  return { urls, names: nodes.map((n) => n.name), kill, start };
}
