import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, resolve } from 'node:path';
import { parseArgs, USAGE, type BenchArgs, type Section } from './lib/args.js';
import { ROOT, useCodeRoot } from './lib/children.js';
import { chaosComparisonRows } from './lib/chaos-measure.js';
import { COMPARED, comparisonRows } from './lib/compare.js';
import { benchNats, keepResources, runCleanups, RUN_ID } from './lib/env.js';
import { ForeignLoad } from './lib/load.js';
import { note } from './lib/progress.js';
import { startStandIn } from './lib/stand-in.js';
import { runActions } from './sections/actions.js';
import { runActors } from './sections/actors.js';
import { runChaos } from './sections/chaos.js';
import { runDrain, runScaleOut } from './sections/drain.js';
import { runIngestion } from './sections/ingestion.js';
import { runInbox } from './sections/inbox.js';
import { runIngress } from './sections/ingress.js';
import { runKnowledge } from './sections/knowledge.js';
import { runLatency } from './sections/latency.js';
import { runReplay } from './sections/replay.js';
import { runReplicas } from './sections/replicas.js';
import { runModels } from './sections/models.js';
import { runTrip } from './sections/trip.js';
import { runTrust } from './sections/trust.js';
import { runWebchat } from './sections/webchat.js';
import type { BenchContext, Row, SectionResult } from './sections/types.js';

/**
 * `npm run bench`: the benchmark suite (issues #8, #17, #19, #30, #31). Runs the chosen sections against real
 * NATS and PostgreSQL with the roles as child processes, prints a table (stdout), writes
 * bench/results/latest.json, removes its databases and streams. Progress goes to stderr.
 * See bench/README.md.
 */
let args: BenchArgs;
try {
  args = parseArgs(process.argv.slice(2));
} catch (err) {
  process.stderr.write(`${(err as Error).message}\n`);
  process.exit(2);
}
if (args.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
keepResources(args.keep);

let interrupted = false;
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    if (interrupted) process.exit(130);
    interrupted = true;
    note('bench', `${sig}: stopping children and removing databases / streams`);
    void runCleanups().finally(() => process.exit(130));
  });
}

const gitCommit = (() => {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
  } catch {
    return null;
  }
})();

const runners: Record<Section, (ctx: BenchContext) => Promise<SectionResult>> = {
  ingress: runIngress,
  drain: runDrain,
  latency: runLatency,
  actors: runActors,
  scaleout: runScaleOut,
  webchat: runWebchat,
  knowledge: runKnowledge,
  ingestion: runIngestion,
  replicas: runReplicas,
  models: runModels,
  trust: runTrust,
  trip: runTrip,
  inbox: runInbox,
  actions: runActions,
  replay: runReplay,
  chaos: runChaos,
};
/** Sections --baseline runs twice: those with key figures (lib/compare.ts), and the chaos soak (lost / doubled side by side). */
const comparedWithBaseline = (section: Section) => COMPARED.includes(section) || section === 'chaos';

const startedAt = new Date();
const loadBefore = loadavg();
const results: Partial<Record<Section, SectionResult['data'] & { error?: string }>> = {};
const rows: Row[] = [];
const foreign: string[] = [];
let failed = false;

try {
  const standIn = await startStandIn();
  const nc = await benchNats();
  const ctx: BenchContext = { args, standIn, nc };
  note('bench', `run ${RUN_ID}: ${args.sections.join(', ')} on ${cpus().length} CPUs (load average ${loadBefore.map((l) => l.toFixed(2)).join(' ')})`);
  for (const section of args.sections) {
    if (interrupted) break;
    const t0 = Date.now();
    note(section, 'start');
    const load = new ForeignLoad();
    await load.start();
    try {
      // With --baseline, the other checkout's roles first, then this one's, in the same run.
      let before: SectionResult | null = null;
      if (args.baseline && comparedWithBaseline(section)) {
        note(section, `baseline: the roles of ${args.baseline}`);
        useCodeRoot(resolve(args.baseline));
        try {
          before = await runners[section](ctx);
        } finally {
          useCodeRoot(ROOT);
        }
        note(section, 'this checkout');
      }
      const r = await runners[section](ctx);
      const machine = await load.stop();
      foreign.push(`${section} ${machine.foreignCores.toFixed(2)}`);
      if (before) rows.push(...before.rows.map((row) => ({ ...row, section: `${row.section} (baseline)` })));
      rows.push(...r.rows);
      if (before) rows.push(...(section === 'chaos' ? chaosComparisonRows(before.data, r.data) : comparisonRows(section, before.data, r.data)));
      results[section] = {
        ...r.data,
        ...(before ? { baseline: { root: resolve(args.baseline!), ...before.data } } : {}),
        seconds: Math.round((Date.now() - t0) / 1000),
        otherLoadCores: Number(machine.foreignCores.toFixed(2)),
        benchCores: Number(machine.benchCores.toFixed(2)),
      };
      note(section, `done in ${Math.round((Date.now() - t0) / 1000)} s (other work on the machine meanwhile: ${machine.foreignCores.toFixed(2)} cores)`);
    } catch (err) {
      await load.stop().catch(() => null);
      failed = true;
      const message = (err as Error).stack ?? String(err);
      note(section, `FAILED: ${message}`);
      results[section] = { error: message };
      rows.push({ section, metric: 'FAILED', value: (err as Error).message.split('\n')[0]!.slice(0, 80) });
    }
  }
} finally {
  await runCleanups();
}

const loadAfter = loadavg();
const out = {
  runId: RUN_ID,
  startedAt: startedAt.toISOString(),
  finishedAt: new Date().toISOString(),
  gitCommit,
  machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? null, memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version, loadBefore, loadAfter },
  args,
  rows,
  sections: results,
};
const file = resolve(ROOT, args.out);
await mkdir(dirname(file), { recursive: true });
await writeFile(file, `${JSON.stringify(out, null, 2)}\n`);

// ---- the table ---------------------------------------------------------------------------
const headers = ['section', 'figure', 'value', 'target', 'met'];
const body = rows.map((r) => [r.section, r.metric, r.value, r.target ?? '', r.ok === undefined ? '' : r.ok ? 'yes' : 'NO']);
const widths = headers.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
const line = (cells: string[]) => cells.map((c, i) => (i === 2 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd();
process.stdout.write(`\n${line(headers)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}\n${body.map(line).join('\n')}\n`);
const busy = Object.values(results).some((r) => (r?.otherLoadCores as number | undefined) !== undefined && (r!.otherLoadCores as number) > 0.25);
process.stdout.write(
  `\n${cpus().length} CPUs; load average ${loadBefore[0]!.toFixed(2)} before the run. CPU used by other work during each section (cores): ${foreign.join(', ') || '–'}` +
    `${busy ? '\nThe machine was shared with other work during the run: rerun before trusting a figure that looks off.' : ''}\n` +
    `JSON: ${args.out}\n`,
);
process.exit(failed || interrupted ? 1 : 0);
