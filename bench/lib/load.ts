import { readFileSync } from 'node:fs';
import { CpuMeter, childPids, pidsNamed } from './children.js';

/**
 * How busy the machine was with work that is not the bench's: total CPU time used on the
 * machine (/proc/stat) minus the CPU of the bench, its children, nats-server and the
 * PostgreSQL backends of the bench databases, over a section. Reported in cores (1.0 = one
 * core busy all the time): other engineers' test suites share this machine.
 */
const CLK_TCK = 100;

function machineBusyMs(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
  const [, user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).map(Number) as number[];
  return ((user! + nice! + system! + irq! + softirq! + (steal ?? 0)) * 1000) / CLK_TCK;
}

export class ForeignLoad {
  #meter = new CpuMeter(async () => {
    const pids = [process.pid, ...childPids, ...(await pidsNamed('nats-server'))];
    for (const pid of await pidsNamed('postgres')) {
      try {
        if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(' mas_bench_')) pids.push(pid);
      } catch {
        /* gone */
      }
    }
    return pids;
  });
  #busy0 = 0;
  #t0 = 0;

  async start(): Promise<void> {
    this.#busy0 = machineBusyMs();
    this.#t0 = performance.now();
    await this.#meter.start(1000);
  }

  /** Average cores used by other work during the section. */
  async stop(): Promise<{ foreignCores: number; benchCores: number }> {
    const ours = await this.#meter.stop();
    const wall = performance.now() - this.#t0;
    const busy = machineBusyMs() - this.#busy0;
    return { foreignCores: Math.max(0, (busy - ours) / wall), benchCores: ours / wall };
  }
}
