import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WebSocket } from 'ws';
import { ROOT, type Child } from '../lib/children.js';
import { newScenario } from '../lib/env.js';
import { inboxBody, signBody } from '../lib/payloads.js';
import { note } from '../lib/progress.js';
import { createTenant, httpRequest, startGatewayChild, startWorkerChild } from '../lib/setup.js';
import type { BenchContext, Row, SectionResult } from './types.js';

/**
 * The trip of one helpdesk message: which of the project's files run for it, from the
 * webhook route to the send at the helpdesk. The gateway and a worker run as children with
 * the inspector on; after a warm-up (three messages answered, so nothing is loaded lazily in
 * the window), V8's precise coverage is taken twice over windows of the same length: once
 * while nothing arrives (what pollers, leases and timers run by themselves), once while one
 * new customer's message is received, answered and sent. A file is on the trip when a function
 * of it ran in the message window that did not run in the idle one.
 */
const WINDOW_MS = 1500;

interface CoverageScript {
  url: string;
  functions: { functionName: string; ranges: { startOffset: number; count: number }[] }[];
}

/** The inspector's WebSocket of a child started with --inspect=127.0.0.1:0. */
function inspectorUrl(child: Child): string {
  const url = child.inspectorUrl();
  if (!url) throw new Error(`${child.label}: no inspector address in its output`);
  return url;
}

class Inspector {
  readonly #ws: WebSocket;
  #next = 1;
  readonly #pending = new Map<number, { resolve: (r: unknown) => void; reject: (e: Error) => void }>();

  private constructor(ws: WebSocket) {
    this.#ws = ws;
    ws.on('message', (data) => {
      const msg = JSON.parse(data.toString()) as { id?: number; result?: unknown; error?: { message: string } };
      const p = msg.id === undefined ? undefined : this.#pending.get(msg.id);
      if (!p) return;
      this.#pending.delete(msg.id!);
      if (msg.error) p.reject(new Error(msg.error.message));
      else p.resolve(msg.result);
    });
  }

  static async open(url: string): Promise<Inspector> {
    const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 512 * 1024 * 1024 });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return new Inspector(ws);
  }

  call<T>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    const id = this.#next++;
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { resolve: resolve as (r: unknown) => void, reject });
      this.#ws.send(JSON.stringify({ id, method, params }));
    });
  }

  close(): void {
    this.#ws.close();
  }
}

/** Functions of the project's own files (not node_modules) that ran since the last take, as `file#offset`. */
async function ran(inspector: Inspector): Promise<Map<string, Set<string>>> {
  const { result } = await inspector.call<{ result: CoverageScript[] }>('Profiler.takePreciseCoverage');
  const out = new Map<string, Set<string>>();
  for (const script of result) {
    if (!script.url.startsWith('file://')) continue;
    const path = fileURLToPath(script.url.split('?')[0]!);
    if (!path.startsWith(ROOT) || path.includes('/node_modules/')) continue;
    const file = relative(ROOT, path);
    for (const fn of script.functions) {
      // A function's first range is its whole body; count > 0: it was called in the window.
      const whole = fn.ranges[0];
      if (!whole || whole.count === 0) continue;
      let set = out.get(file);
      if (!set) out.set(file, (set = new Set()));
      set.add(`${fn.functionName}@${whole.startOffset}`);
    }
  }
  return out;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function runTrip(ctx: BenchContext): Promise<SectionResult> {
  const { args, standIn } = ctx;
  const s = newScenario('trip');
  const flags = ['--inspect=127.0.0.1:0', ...args.childFlags];
  const gateway = await startGatewayChild(s, 'trip-gateway', { partitions: args.partitions, profile: false, nodeFlags: flags });
  const tenant = await createTenant(gateway.url, standIn);
  const worker = await startWorkerChild(s, 'trip-worker', { partitions: args.partitions, profile: false, nodeFlags: flags });
  for (const deadline = performance.now() + 30_000; worker.acquired.length < args.partitions && performance.now() < deadline; ) await sleep(50);
  const url = `${gateway.url}/api/webhook/helpdesk/${tenant.integrationId}`;
  const send = async (client: number, n: number) => {
    const body = inboxBody(`trip-${client}-${n}`, `trip-${client}`, 'How long does delivery take?', client);
    const res = await httpRequest(url, 'POST', body, { 'content-type': 'application/json', 'x-webhook-signature': signBody(tenant.webhookSecret, body) });
    if (res.status !== 200) throw new Error(`webhook: HTTP ${res.status} ${res.body}`);
  };
  standIn.reset();
  for (let c = 1; c <= 3; c++) await send(c, 1);
  if (!(await standIn.waitForCount(3, { stallMs: 20_000 }))) throw new Error('trip: the warm-up messages were not answered');
  await sleep(1000);

  const inspectors = await Promise.all([Inspector.open(inspectorUrl(gateway)), Inspector.open(inspectorUrl(worker))]);
  for (const i of inspectors) {
    await i.call('Profiler.enable');
    await i.call('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
  }
  const take = () => Promise.all(inspectors.map(ran));
  await take();
  await sleep(WINDOW_MS);
  const idle = await take();
  const before = standIn.count();
  await send(4, 1);
  await sleep(WINDOW_MS);
  const trip = await take();
  const answered = standIn.count() > before;
  for (const i of inspectors) i.close();
  await worker.stop();
  await gateway.stop();
  await s.dispose();
  if (!answered) throw new Error('trip: the measured message was not answered within the window');

  const roles = ['gateway', 'worker'] as const;
  const files = new Map<string, Set<string>>();
  const ranAtAll = new Set<string>();
  trip.forEach((byFile, r) => {
    for (const [file, fns] of byFile) {
      ranAtAll.add(file);
      const quiet = idle[r]!.get(file) ?? new Set();
      if ([...fns].some((f) => !quiet.has(f))) {
        const roleSet = files.get(file) ?? new Set<string>();
        roleSet.add(roles[r]!);
        files.set(file, roleSet);
      }
    }
  });
  const list = [...files.keys()].sort();
  const byArea = (prefix: string) => list.filter((f) => f.startsWith(prefix)).length;
  note('trip', `${list.length} files run for one message (${ranAtAll.size} ran in the window at all):\n  ${list.map((f) => `${f} (${[...files.get(f)!].join(', ')})`).join('\n  ')}`);
  const rows: Row[] = [
    { section: 'trip', metric: 'files run for one helpdesk message, webhook route → helpdesk send', value: String(list.length), target: '≤ 25', ok: list.length <= 25 },
    {
      section: 'trip',
      metric: '  of which gateway/ / actors/ / machines/ / schema/ / lib/ (lib/knowledge, lib/agents: the answer)',
      value: `${byArea('gateway/')} / ${byArea('actors/')} / ${byArea('machines/')} / ${byArea('schema/')} / ${byArea('lib/')} (${byArea('lib/knowledge/')}, ${byArea('lib/agents/')})`,
    },
  ];
  return { rows, data: { files: list, ranInWindow: [...ranAtAll].sort(), windowMs: WINDOW_MS } };
}
