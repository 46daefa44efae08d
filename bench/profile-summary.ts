import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Summarises V8 CPU profiles (`node --cpu-prof`): where the samples were taken, by function
 * (self time), by package / project file / Node internal module (self time), and the
 * inclusive time of the project's own functions. Optionally only the samples inside a
 * time window (the bench passes its measurement window, so start-up and TypeScript loading
 * are left out; profile times and process.hrtime share the monotonic clock).
 *
 *   node --import tsx bench/profile-summary.ts <file.cpuprofile | directory> [--top 25] [--from µs] [--to µs]
 */
const ROOT = resolve(import.meta.dirname, '..');

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface Entry {
  name: string;
  ms: number;
  /** Share of the busy (non-idle) time, in %. */
  pct: number;
}

export interface ProfileSummary {
  file: string;
  /** Sampled wall time in the window, ms. */
  wallMs: number;
  /** Not idle (JS, native, GC, program), ms. */
  busyMs: number;
  idleMs: number;
  gcMs: number;
  topSelf: Entry[];
  byCategory: Entry[];
  /** Inclusive time of project functions (outside node_modules). */
  projectInclusive: Entry[];
}

export interface SummaryOptions {
  top?: number;
  /** Window in profile µs (process.hrtime µs of the same machine). */
  fromUs?: number;
  toUs?: number;
}

function location(url: string): { kind: 'project' | 'package' | 'node' | 'native'; label: string } {
  if (!url) return { kind: 'native', label: '(native / V8)' };
  if (url.startsWith('node:')) {
    const parts = url.slice(5).replace(/^internal\//, '').split('/');
    return { kind: 'node', label: `node:${parts.slice(0, parts[0] === 'deps' ? 2 : 1).join('/').replace(/\.js$/, '')}` };
  }
  let path = url;
  if (url.startsWith('file://')) {
    try {
      path = fileURLToPath(url);
    } catch {
      /* keep */
    }
  }
  const nm = path.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = path.slice(nm + 'node_modules/'.length).split('/');
    return { kind: 'package', label: rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]! };
  }
  return { kind: 'project', label: relative(ROOT, path) || path };
}

function frameName(f: CallFrame): string {
  const where = location(f.url);
  const fn = f.functionName || '(anonymous)';
  if (where.kind === 'native') return fn;
  // tsx's output keeps few line breaks: a line number of 1 says nothing.
  return f.lineNumber > 0 ? `${fn}  ${where.label}:${f.lineNumber + 1}` : `${fn}  ${where.label}`;
}

export function summariseProfile(file: string, options: SummaryOptions = {}): ProfileSummary {
  const top = options.top ?? 25;
  const p = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const n of p.nodes) byId.set(n.id, n);
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

  // Sample i lasts until sample i+1 (the DevTools convention).
  const times: number[] = new Array(p.samples.length);
  let t = p.startTime;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i] ?? 0;
    times[i] = t;
  }
  let from = options.fromUs ?? -Infinity;
  let to = options.toUs ?? Infinity;
  // A window that misses the profile entirely (another clock): use everything.
  if (from > p.endTime || to < p.startTime) {
    from = -Infinity;
    to = Infinity;
  }

  const self = new Map<number, number>();
  for (let i = 0; i < p.samples.length; i++) {
    if (times[i]! < from || times[i]! > to) continue;
    const dur = i + 1 < p.samples.length ? times[i + 1]! - times[i]! : 0;
    self.set(p.samples[i]!, (self.get(p.samples[i]!) ?? 0) + dur);
  }

  let wall = 0;
  let idle = 0;
  let gc = 0;
  const fnSelf = new Map<string, number>();
  const catSelf = new Map<string, number>();
  const projectIncl = new Map<string, number>();
  for (const [id, us] of self) {
    const node = byId.get(id)!;
    const f = node.callFrame;
    wall += us;
    if (f.functionName === '(idle)') {
      idle += us;
      continue;
    }
    if (f.functionName === '(garbage collector)') gc += us;
    const name = frameName(f);
    fnSelf.set(name, (fnSelf.get(name) ?? 0) + us);
    const where = location(f.url);
    const cat = where.kind === 'project' ? `project: ${where.label}` : where.kind === 'package' ? `pkg: ${where.label}` : where.kind === 'node' ? where.label : f.functionName.startsWith('(') ? f.functionName : '(native / V8)';
    catSelf.set(cat, (catSelf.get(cat) ?? 0) + us);
    // Inclusive time of project functions: each distinct one on the stack once.
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const cf = byId.get(cur)!.callFrame;
      if (location(cf.url).kind !== 'project') continue;
      const key = frameName(cf);
      if (seen.has(key)) continue;
      seen.add(key);
      projectIncl.set(key, (projectIncl.get(key) ?? 0) + us);
    }
  }
  const busy = wall - idle;
  const list = (m: Map<string, number>, n: number): Entry[] =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, us]) => ({ name, ms: Math.round(us / 100) / 10, pct: busy > 0 ? Math.round((us / busy) * 1000) / 10 : 0 }));
  return {
    file,
    wallMs: Math.round(wall / 1000),
    busyMs: Math.round(busy / 1000),
    idleMs: Math.round(idle / 1000),
    gcMs: Math.round(gc / 1000),
    topSelf: list(fnSelf, top),
    byCategory: list(catSelf, top),
    projectInclusive: list(projectIncl, top),
  };
}

export function formatSummary(s: ProfileSummary, title = s.file): string {
  const out: string[] = [];
  out.push(`== ${title}`);
  out.push(`sampled ${s.wallMs} ms: busy ${s.busyMs} ms (${s.wallMs ? Math.round((s.busyMs / s.wallMs) * 100) : 0} %), idle ${s.idleMs} ms, GC ${s.gcMs} ms`);
  const table = (heading: string, rows: Entry[]) => {
    out.push('', `-- ${heading} (% of busy time)`);
    for (const r of rows) out.push(`${r.pct.toFixed(1).padStart(6)} %  ${r.ms.toFixed(1).padStart(9)} ms  ${r.name}`);
  };
  table('self time by function', s.topSelf);
  table('self time by package / file / node module', s.byCategory);
  table('inclusive time of project functions', s.projectInclusive);
  return out.join('\n');
}

// ---- command line -----------------------------------------------------------------------

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const opt = (name: string) => {
    const i = args.indexOf(`--${name}`);
    if (i < 0) return undefined;
    const v = args[i + 1];
    args.splice(i, 2);
    return v === undefined ? undefined : Number(v);
  };
  const top = opt('top');
  const fromUs = opt('from');
  const toUs = opt('to');
  if (args.length === 0) {
    process.stderr.write('usage: node --import tsx bench/profile-summary.ts <file.cpuprofile | dir> [--top N] [--from µs] [--to µs]\n');
    process.exit(2);
  }
  for (const target of args) {
    const files = statSync(target).isDirectory()
      ? readdirSync(target).filter((f) => f.endsWith('.cpuprofile')).map((f) => join(target, f))
      : [target];
    for (const f of files) process.stdout.write(`${formatSummary(summariseProfile(f, { top, fromUs, toUs }))}\n\n`);
  }
}
