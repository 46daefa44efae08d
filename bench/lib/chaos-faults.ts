import { performance } from 'node:perf_hooks';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsCluster } from '../../test/support/nats-cluster.js';
import type { ChaosFault } from './args.js';
import type { Child } from './children.js';
import { between, sleep } from './chaos-load.js';
import type { Scenario } from './env.js';
import type { NatsConnection } from '../../lib/nats.js';
import { note } from './progress.js';
import { startGatewayChild, startWorkerChild, type GatewayChild, type RoleOptions, type WorkerChild } from './setup.js';

/**
 * The chaos soak's processes and its faults. Each gateway and worker runs under a small
 * supervisor (`Supervised`): a fault's kill is followed by a restart a few seconds later, and
 * a child that exits on its own is restarted too (recorded as an unplanned exit). Faults:
 * - worker-kill: SIGKILL a worker, restart it after 3–5 s;
 * - gateway-kill: SIGKILL a gateway, restart it on the same port after 3–5 s;
 * - nats-leader-kill: SIGKILL the nats-server node leading the inbound stream (found with
 *   streams.info(name).cluster.leader), restart it after 5–10 s, wait until it caught up;
 * - worker-term: SIGTERM a worker (its graceful stop; SIGKILL after 30 s), restart it 2–4 s
 *   after it exited.
 */
export interface RoleEvent {
  /** performance.now() */
  at: number;
  role: string;
  event: 'unplanned exit' | 'restart failed';
  detail: string;
}

export class Supervised<T extends Child> {
  child: T | null = null;
  #generation = 0;
  #planned = false;
  #stopping = false;

  constructor(
    readonly name: string,
    readonly spawn: (label: string) => Promise<T>,
    readonly events: RoleEvent[],
    readonly signal: AbortSignal,
  ) {}

  /** Starts it (a restart gets the label `<name>-r<k>`, so each log file stays); tries three times. */
  async start(): Promise<T | null> {
    for (let attempt = 1; ; attempt++) {
      const label = this.#generation === 0 ? this.name : `${this.name}-r${this.#generation}`;
      this.#generation++;
      try {
        const child = await this.spawn(label);
        this.child = child;
        this.#planned = false;
        void child.exited.then((code) => this.#exited(child, code));
        return child;
      } catch (err) {
        const detail = (err as Error).message.split('\n')[0]!;
        this.events.push({ at: performance.now(), role: this.name, event: 'restart failed', detail });
        note('chaos', `${label} did not start (attempt ${attempt}): ${detail}`);
        if (attempt >= 3 || this.signal.aborted || this.#stopping) return null;
        await sleep(3_000, this.signal);
      }
    }
  }

  #exited(child: T, code: number | null): void {
    if (this.child !== child) return;
    this.child = null;
    if (this.#planned || this.#stopping || this.signal.aborted) return;
    // As a supervisor would: a child that died on its own is started again.
    this.events.push({ at: performance.now(), role: this.name, event: 'unplanned exit', detail: `code ${code}` });
    note('chaos', `${child.label} exited on its own (code ${code}); restarting it in 3 s`);
    void sleep(3_000, this.signal).then(() => (this.signal.aborted || this.#stopping || this.child ? null : this.start()));
  }

  /** Kills it with `sig` (SIGTERM: waits for its graceful exit, SIGKILL after 30 s). */
  async kill(sig: 'SIGKILL' | 'SIGTERM'): Promise<{ exitedAt: number; code: number | null; forced: boolean } | null> {
    const child = this.child;
    if (!child) return null;
    this.#planned = true;
    let forced = false;
    if (sig === 'SIGKILL') child.proc.kill('SIGKILL');
    else {
      const t = performance.now();
      await child.stop(30_000);
      forced = performance.now() - t >= 29_900;
    }
    const code = await child.exited;
    return { exitedAt: performance.now(), code, forced };
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    await this.child?.stop(15_000);
  }
}

export class ChaosRoles {
  readonly gateways: Supervised<GatewayChild>[] = [];
  readonly workers: Supervised<WorkerChild>[] = [];
  readonly events: RoleEvent[] = [];
  /** Each gateway's port: a restart listens on the same one (the load keeps its URLs). */
  readonly #ports: number[] = [];

  constructor(
    readonly scenario: Scenario,
    readonly options: RoleOptions,
    readonly signal: AbortSignal,
    count = { gateways: 2, workers: 2 },
  ) {
    for (let g = 0; g < count.gateways; g++) {
      this.gateways.push(
        new Supervised(`chaos-gateway${g + 1}`, (label) => startGatewayChild(scenario, label, { ...options, port: this.#ports[g] ?? 0 }), this.events, signal),
      );
    }
    for (let w = 0; w < count.workers; w++) {
      this.workers.push(new Supervised(`chaos-worker${w + 1}`, (label) => startWorkerChild(scenario, label, options), this.events, signal));
    }
  }

  /** The first gateway alone (it migrates the new database), then the other gateways. */
  async startGateways(): Promise<string[]> {
    const urls: string[] = [];
    for (const [g, slot] of this.gateways.entries()) {
      const child = await slot.start();
      if (!child) throw new Error(`${slot.name} did not start`);
      this.#ports[g] = Number(new URL(child.url).port);
      urls.push(child.url);
    }
    return urls;
  }

  async startWorkers(): Promise<void> {
    const started = await Promise.all(this.workers.map((w) => w.start()));
    if (started.some((c) => c === null)) throw new Error('a worker did not start');
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.workers, ...this.gateways].map((s) => s.stop().catch(() => {})));
  }
}

export interface FaultRecord {
  index: number;
  kind: ChaosFault;
  /** What was hit: chaos-worker2, chaos-gateway1, n3. */
  target: string;
  /** performance.now() of the signal. */
  at: number;
  wallTime: string;
  /** worker-term: when it had exited, whether it needed the SIGKILL, its exit code. */
  exitedAt: number | null;
  forced: boolean;
  exitCode: number | null;
  /** When the restart began and when the restarted process was ready (logged it / answered JetStream). */
  restartedAt: number | null;
  readyAt: number | null;
  /** nats-leader-kill: the new leader of the inbound stream and when it was seen; when the restarted node had caught up. */
  leaderAfter: string | null;
  leaderElectedAt: number | null;
  caughtUpAt: number | null;
  error: string | null;
}

export const FAULT_TEXT: Record<ChaosFault, string> = {
  'worker-kill': 'SIGKILL worker',
  'gateway-kill': 'SIGKILL gateway',
  'nats-leader-kill': 'SIGKILL NATS stream leader',
  'worker-term': 'SIGTERM worker',
};

export interface FaultDeps {
  roles: ChaosRoles;
  cluster: NatsCluster;
  /** The bench's connection to the cluster (all node URLs). */
  nc: NatsConnection;
  stream: string;
  random: () => number;
  signal: AbortSignal;
  /** performance.now() of the load's start, for the notes. */
  t0: number;
}

const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

async function streamInfo(jsm: JetStreamManager, stream: string) {
  return jsm.streams.info(stream);
}

/** The inbound stream's leader, asked until it answers (up to 15 s: an election may be under way). */
async function leaderOf(jsm: JetStreamManager, stream: string, signal: AbortSignal, notName?: string): Promise<string | null> {
  const until = performance.now() + 15_000;
  while (!signal.aborted && performance.now() < until) {
    try {
      const leader = (await streamInfo(jsm, stream)).cluster?.leader;
      if (leader && leader !== notName) return leader;
    } catch {
      /* no answer during an election */
    }
    await sleep(250, signal);
  }
  return null;
}

export async function injectFault(d: FaultDeps, kind: ChaosFault, index: number): Promise<FaultRecord> {
  const record: FaultRecord = {
    index, kind, target: '', at: 0, wallTime: '', exitedAt: null, forced: false, exitCode: null, restartedAt: null, readyAt: null,
    leaderAfter: null, leaderElectedAt: null, caughtUpAt: null, error: null,
  };
  const rel = (t: number | null) => (t === null ? '–' : secs(t - record.at));
  const pick = <T>(list: T[]): T => list[Math.floor(d.random() * list.length) % list.length]!;
  try {
    if (kind === 'nats-leader-kill') {
      const jsm = await jetstreamManager(d.nc, { timeout: 3_000 });
      const leader = await leaderOf(jsm, d.stream, d.signal);
      if (!leader) throw new Error('the inbound stream has no leader to kill');
      record.target = leader;
      record.at = performance.now();
      record.wallTime = new Date().toISOString();
      await d.cluster.kill(leader);
      note('chaos', `fault ${index + 1} at ${secs(record.at - d.t0)}: SIGKILL ${leader}, the leader of the inbound stream`);
      const downFor = between(d.random, 5_000, 10_000);
      await Promise.all([
        (async () => {
          const after = await leaderOf(jsm, d.stream, d.signal, leader);
          record.leaderAfter = after;
          record.leaderElectedAt = after ? performance.now() : null;
        })(),
        (async () => {
          await sleep(downFor, d.signal);
          if (d.signal.aborted) return;
          record.restartedAt = performance.now();
          await d.cluster.start(leader);
          await d.cluster.ready(leader, 60_000);
          record.readyAt = performance.now();
        })(),
      ]);
      // Caught up: the restarted node is a current replica of the inbound stream again.
      for (const until = performance.now() + 60_000; !d.signal.aborted && performance.now() < until; await sleep(500, d.signal)) {
        try {
          const info = await streamInfo(jsm, d.stream);
          const cluster = info.cluster;
          const replica = cluster?.replicas?.find((r) => r.name === leader);
          if (cluster?.leader === leader || replica?.current) {
            record.caughtUpAt = performance.now();
            break;
          }
        } catch {
          /* asked again */
        }
      }
      note('chaos', `  new leader ${record.leaderAfter ?? 'none seen'} after ${rel(record.leaderElectedAt)}; ${leader} restarted after ${rel(record.restartedAt)}, answering after ${rel(record.readyAt)}, caught up after ${rel(record.caughtUpAt)}`);
      return record;
    }

    const gateway = kind === 'gateway-kill';
    const slots: Supervised<Child>[] = (gateway ? d.roles.gateways : d.roles.workers).filter((s) => s.child !== null);
    if (slots.length === 0) throw new Error(`no ${gateway ? 'gateway' : 'worker'} is running`);
    const slot = pick(slots);
    record.target = slot.name;
    record.at = performance.now();
    record.wallTime = new Date().toISOString();
    const sig = kind === 'worker-term' ? 'SIGTERM' : 'SIGKILL';
    note('chaos', `fault ${index + 1} at ${secs(record.at - d.t0)}: ${sig} ${slot.child?.label ?? slot.name}`);
    const exit = await slot.kill(sig);
    if (exit) {
      record.exitedAt = exit.exitedAt;
      record.exitCode = exit.code;
      record.forced = exit.forced;
    }
    await sleep(kind === 'worker-term' ? between(d.random, 2_000, 4_000) : between(d.random, 3_000, 5_000), d.signal);
    if (d.signal.aborted) return record;
    record.restartedAt = performance.now();
    const child = await slot.start();
    record.readyAt = child ? performance.now() : null;
    note(
      'chaos',
      `  ${sig === 'SIGTERM' ? `exited after ${rel(record.exitedAt)} (code ${record.exitCode}${record.forced ? ', needed SIGKILL' : ''}); ` : ''}restarted after ${rel(record.restartedAt)}, ready after ${rel(record.readyAt)}`,
    );
  } catch (err) {
    record.error = (err as Error).message;
    if (record.at === 0) record.at = performance.now();
    note('chaos', `fault ${index + 1} (${kind}) failed: ${record.error}`);
  }
  return record;
}

export interface FaultPlan {
  /** performance.now() of the next fault; null: none before the load ends. */
  nextAt: number | null;
  nextKind: ChaosFault | null;
}

/**
 * One fault every 60–90 s (seeded), in rotation, from the load's start until 30 s before its
 * end (so every fault has load after it); each fault's restart is done before the next one.
 */
export async function runFaults(d: FaultDeps, kinds: ChaosFault[], loadEnd: number, plan: FaultPlan): Promise<FaultRecord[]> {
  const records: FaultRecord[] = [];
  let at = d.t0;
  for (let i = 0; !d.signal.aborted; i++) {
    at += between(d.random, 60_000, 90_000);
    if (at + 30_000 > loadEnd) break;
    plan.nextAt = at;
    plan.nextKind = kinds[i % kinds.length]!;
    await sleep(at - performance.now(), d.signal);
    if (d.signal.aborted) break;
    plan.nextAt = null;
    records.push(await injectFault(d, kinds[i % kinds.length]!, i));
  }
  plan.nextAt = null;
  plan.nextKind = null;
  return records;
}
