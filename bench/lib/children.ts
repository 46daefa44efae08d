import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync, type WriteStream } from 'node:fs';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { onCleanup } from './env.js';

/**
 * The processes under test run as children, exactly as their npm scripts start them
 * (`npm run gateway` = `node --import tsx gateway/main.ts`, read from package.json), with
 * `node` replaced by this Node binary and optional profiler flags inserted after it. Their
 * stdout / stderr (pino JSON lines) go to bench/results/logs/<label>.log; the bench watches
 * them for readiness ("gateway listening", "worker started") and lease events. Children
 * started during a `--baseline` pass (another code root) get the label `<label>-baseline`
 * (log, profile directory and summary), so this checkout's pass does not overwrite them.
 */
export const ROOT = resolve(import.meta.dirname, '..', '..');
export const RESULTS_DIR = join(ROOT, 'bench', 'results');
export const LOG_DIR = join(RESULTS_DIR, 'logs');

const ACCESS_LINE_END = '"msg":"request"}';

/**
 * The checkout whose roles (`npm run gateway`, `npm run worker`) the children run: this one,
 * or another one given by `--baseline` (the same sections measured against other code in the
 * same run). The bench's own helper files always come from this checkout.
 */
let codeRoot = ROOT;
export function useCodeRoot(dir: string): void {
  codeRoot = dir;
}

const packageScripts = (): Record<string, string> => (JSON.parse(readFileSync(join(codeRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;

/** The argv of an npm script that starts with `node` (only plain `node ...` scripts are supported). */
export function scriptArgv(script: string): string[] {
  const cmd = packageScripts()[script];
  if (!cmd) throw new Error(`package.json has no "${script}" script`);
  const parts = cmd.trim().split(/\s+/);
  if (parts[0] !== 'node') throw new Error(`the "${script}" script does not start with node: ${cmd}`);
  return parts.slice(1);
}

export interface LogLine {
  msg?: string;
  level?: number;
  [k: string]: unknown;
}

export interface Child {
  label: string;
  pid: number;
  proc: ChildProcess;
  /** The directory its CPU profile goes to (when profiled). */
  profileDir: string | null;
  /** Resolves with the first log line for which `match` holds (rejects when the child exits first). */
  waitForLog: (match: (line: LogLine) => boolean, timeoutMs?: number) => Promise<LogLine>;
  /** Called for every JSON log line. */
  onLog: (fn: (line: LogLine) => void) => void;
  /** The inspector's WebSocket address, when the child runs with --inspect (node prints it at start). */
  inspectorUrl: () => string | null;
  rssBytes: () => number;
  /** Peak RSS so far (VmHWM). */
  peakRssBytes: () => number;
  /** User + system CPU time consumed so far, in ms. */
  cpuMs: () => number;
  /** SIGTERM, wait for the exit (SIGKILL after `timeoutMs`). Idempotent. */
  stop: (timeoutMs?: number) => Promise<void>;
  exited: Promise<number | null>;
}

export interface SpawnOptions {
  /** npm script (`gateway`, `worker`) or a file to run with `node --import tsx`. */
  script?: string;
  file?: string;
  label: string;
  env: Record<string, string>;
  /** Extra node flags (e.g. --expose-gc). */
  nodeFlags?: string[];
  /** Profile into this directory (created). */
  profileDir?: string | null;
  /** Give the child a stdin pipe (proc.stdin). */
  stdin?: boolean;
}

const CLK_TCK = 100;

/** Pids of every child the bench started (for the foreign-load estimate). */
export const childPids = new Set<number>();

function procStatus(pid: number, field: string): number {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

function procCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields[11] = utime, fields[12] = stime (0-based after the command name)
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
  } catch {
    return NaN;
  }
}

/** CPU ms of any process (e.g. nats-server, PostgreSQL backends) for accounting. */
export const cpuMsOf = procCpuMs;

export async function spawnChild(o: SpawnOptions): Promise<Child> {
  await mkdir(LOG_DIR, { recursive: true });
  // The baseline pass reuses the sections' labels: keep its log and profile apart.
  const baseline = codeRoot !== ROOT;
  const label = baseline ? `${o.label}-baseline` : o.label;
  const profileDir = o.profileDir ? (baseline ? `${o.profileDir}-baseline` : o.profileDir) : null;
  const argv = o.script ? scriptArgv(o.script) : ['--import', 'tsx', o.file!];
  const flags = [...(o.nodeFlags ?? [])];
  if (profileDir) {
    // Profiles of an earlier run must not be mistaken for this one's.
    await rm(profileDir, { recursive: true, force: true });
    await mkdir(profileDir, { recursive: true });
    flags.push('--cpu-prof', `--cpu-prof-dir=${profileDir}`);
  }
  const log: WriteStream = createWriteStream(join(LOG_DIR, `${label}.log`));
  const proc = spawn(process.execPath, [...flags, ...argv], {
    cwd: o.script ? codeRoot : ROOT,
    env: { ...process.env, ...o.env },
    stdio: [o.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
  });
  const pid = proc.pid!;
  childPids.add(pid);
  const listeners: ((line: LogLine) => void)[] = [];
  let inspectorUrl: string | null = null;
  const tail: string[] = [];
  let exitCode: number | null | undefined;
  const exited = new Promise<number | null>((res) => {
    proc.once('exit', (code, signal) => {
      exitCode = code ?? (signal ? -1 : null);
      res(exitCode);
    });
  });
  for (const stream of [proc.stdout!, proc.stderr!]) {
    const rl = createInterface({ input: stream });
    rl.on('line', (text) => {
      log.write(`${text}\n`);
      tail.push(text);
      if (tail.length > 30) tail.shift();
      if (!inspectorUrl && text.startsWith('Debugger listening on ')) inspectorUrl = text.slice('Debugger listening on '.length).trim();
      // The access line (one per request, pino writes `msg` last) goes to the log file only:
      // no section waits for it, and parsing thousands a second here would take the CPU the
      // measured child shares on a 2-core machine.
      if (text.startsWith('{') && !text.endsWith(ACCESS_LINE_END)) {
        let line: LogLine;
        try {
          line = JSON.parse(text) as LogLine;
        } catch {
          return;
        }
        for (const fn of listeners) fn(line);
      }
    });
  }
  void exited.then(() => log.end());

  let stopping: Promise<void> | null = null;
  const stop = (timeoutMs = 30_000) =>
    (stopping ??= (async () => {
      if (exitCode !== undefined) return;
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
      await exited;
      clearTimeout(timer);
    })());
  onCleanup(`child ${label}`, () => stop(10_000));

  return {
    label,
    pid,
    proc,
    profileDir,
    exited,
    onLog: (fn) => listeners.push(fn),
    inspectorUrl: () => inspectorUrl,
    waitForLog: (match, timeoutMs = 60_000) =>
      new Promise<LogLine>((res, rej) => {
        const timer = setTimeout(() => rej(new Error(`${label}: no matching log line within ${timeoutMs} ms\n${tail.join('\n')}`)), timeoutMs);
        listeners.push((line) => {
          if (match(line)) {
            clearTimeout(timer);
            res(line);
          }
        });
        void exited.then((code) => {
          clearTimeout(timer);
          rej(new Error(`${label} exited (code ${code}) before it was ready:\n${tail.join('\n')}`));
        });
      }),
    rssBytes: () => procStatus(pid, 'VmRSS'),
    peakRssBytes: () => procStatus(pid, 'VmHWM'),
    cpuMs: () => procCpuMs(pid),
    stop,
  };
}

/** Pids of processes whose command name is exactly `name` (e.g. nats-server, postgres), for CPU accounting. */
export async function pidsNamed(name: string): Promise<number[]> {
  const out: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === name) out.push(Number(entry));
    } catch {
      /* gone */
    }
  }
  return out;
}

/** Sum of CPU ms of processes by name; PostgreSQL backends come and go, so compare totals taken close together. */
export async function cpuMsByName(name: string): Promise<number> {
  let total = 0;
  for (const pid of await pidsNamed(name)) {
    const v = procCpuMs(pid);
    if (Number.isFinite(v)) total += v;
  }
  return total;
}

/** Files a profiled child wrote. */
export async function profilesIn(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).filter((f) => f.endsWith('.cpuprofile')).map((f) => join(dir, f));
  } catch {
    return [];
  }
}

/**
 * CPU accounting of a phase for a set of processes that may come and go (PostgreSQL
 * backends): samples every `everyMs`, keeps each pid's last reading, so a backend that exits
 * mid-phase keeps the CPU it had used until its last sample.
 */
export class CpuMeter {
  readonly #seen = new Map<number, { first: number; last: number }>();
  readonly #find: () => Promise<number[]>;
  #timer: NodeJS.Timeout | null = null;
  #baseline = true;

  constructor(find: () => Promise<number[]>) {
    this.#find = find;
  }

  static postgres(database: string): CpuMeter {
    return new CpuMeter(async () => {
      const out: number[] = [];
      for (const pid of await pidsNamed('postgres')) {
        try {
          if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(` ${database} `)) out.push(pid);
        } catch {
          /* gone */
        }
      }
      return out;
    });
  }

  static named(name: string): CpuMeter {
    return new CpuMeter(() => pidsNamed(name));
  }

  async sample(): Promise<void> {
    for (const pid of await this.#find()) {
      const v = procCpuMs(pid);
      if (!Number.isFinite(v)) continue;
      const s = this.#seen.get(pid);
      if (s) s.last = v;
      // A process first seen after the baseline (a new backend) started within the phase: count from 0.
      else this.#seen.set(pid, { first: this.#baseline ? v : 0, last: v });
    }
  }

  /** Starts sampling; the first sample is the baseline of every pid alive now. */
  async start(everyMs = 500): Promise<void> {
    // A meter started again (the ingress rounds) counts from this start, not from the first.
    this.#seen.clear();
    this.#baseline = true;
    await this.sample();
    this.#baseline = false;
    this.#timer = setInterval(() => void this.sample(), everyMs);
  }

  /** Stops and returns the CPU ms used by the processes since start. */
  async stop(): Promise<number> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.sample();
    let total = 0;
    for (const s of this.#seen.values()) total += s.last - s.first;
    return total;
  }
}
