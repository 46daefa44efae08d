import { WebSocket } from 'ws';
import { DEFAULT_WEBCHAT_MAX_SOCKETS_PER_IP } from '../../lib/config.js';
import { CpuMeter, spawnChild, type Child } from '../lib/children.js';
import { newScenario } from '../lib/env.js';
import { ForeignLoad } from '../lib/load.js';
import { collectProfile, nowUs } from '../lib/profiles.js';
import { note, progress } from '../lib/progress.js';
import { createWebchatTenant, startGatewayChild, startWorkerChild } from '../lib/setup.js';
import { fmt, mib, percentile, round, steadyRate, summarise } from '../lib/stats.js';
import type { BenchContext, Row, SectionResult } from './types.js';

/**
 * Webchat capacity: can one gateway process hold the visitors of one busy widget?
 *
 * `npm run gateway` (child) with its default webchat limits; a company with one webchat
 * integration. The bench opens N sockets to that integration from M loopback source
 * addresses (127.1.x.y; Linux routes all of 127.0.0.0/8 to lo), N / M from each, at most
 * WEBCHAT_MAX_SOCKETS_PER_IP: many visitors behind their own addresses, as real traffic
 * looks. Every socket sends `hello` (a new visitor: token, no session) and waits for its
 * `welcome`. The gateway's RSS is read from /proc before (after a warm-up of a few sockets,
 * opened and closed) and 3 s after the last welcome; the difference over N is the memory
 * per visitor. The same is done against bench/ws-floor-server.ts (bare `ws` sockets that
 * answer a frame), in the same run: the ratio says what the gateway holds per socket beyond
 * the WebSocket itself (the visitor's state, its NATS subscription, buffers).
 *
 * Then the crowd asks (issue #28): with a worker (child) running, every held socket sends one
 * `message` at once, and the bench waits for each visitor's reply (`message` with role agent
 * or operator). Figures: visitors answered, send → reply p50 / p99 / max, replies per second,
 * CPU ms per message of the gateway, the worker, PostgreSQL's backends of the scenario's
 * database, nats-server and the bench process (the 5,000 clients), and the other load on the
 * machine meanwhile. With `--profile` the gateway and the worker write CPU profiles, summarised
 * over the ask window.
 */
const OPEN_PARALLEL = 100;
const WARMUP_SOCKETS = 20;
const SETTLE_MS = 3000;
const WELCOME_TIMEOUT_MS = 30_000;
/** The ask ends when no reply came for this long. */
const ASK_IDLE_MS = 30_000;
const QUESTION = 'Hello! Where is my order?';

interface OpenResult {
  sockets: WebSocket[];
  /** Open → welcome, per welcomed socket (ms). */
  welcomeMs: number[];
  refused: number;
  failed: number;
  seconds: number;
}

/** The i-th loopback source address (127.1.0.1 … 127.1.0.250, 127.1.1.1 …). */
const addressOf = (i: number) => `127.1.${Math.floor(i / 250)}.${(i % 250) + 1}`;

function openOne(url: string, localAddress: string): Promise<{ ws: WebSocket; ms: number } | 'refused' | 'failed'> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const ws = new WebSocket(url, { localAddress, perMessageDeflate: false });
    const timer = setTimeout(() => {
      ws.terminate();
      resolve('failed');
    }, WELCOME_TIMEOUT_MS);
    ws.once('open', () => ws.send(JSON.stringify({ type: 'hello' })));
    ws.once('message', (data) => {
      clearTimeout(timer);
      const frame = JSON.parse(data.toString()) as { type?: string };
      if (frame.type === 'welcome') resolve({ ws, ms: performance.now() - t0 });
      else {
        ws.terminate();
        resolve('failed');
      }
    });
    ws.once('unexpected-response', (_req, res) => {
      clearTimeout(timer);
      res.resume();
      resolve('refused');
    });
    ws.on('error', () => {
      clearTimeout(timer);
      resolve('failed');
    });
  });
}

async function openAll(label: string, url: string, count: number, addresses: number): Promise<OpenResult> {
  const out: OpenResult = { sockets: [], welcomeMs: [], refused: 0, failed: 0, seconds: 0 };
  const t0 = performance.now();
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const i = next++;
      const r = await openOne(url, addressOf(i % addresses));
      if (r === 'refused') out.refused++;
      else if (r === 'failed') out.failed++;
      else {
        out.sockets.push(r.ws);
        out.welcomeMs.push(r.ms);
      }
      if (i % 250 === 0) progress(label, `${fmt(out.sockets.length)}/${fmt(count)} sockets welcomed`);
    }
  };
  await Promise.all(Array.from({ length: OPEN_PARALLEL }, lane));
  out.seconds = (performance.now() - t0) / 1000;
  return out;
}

async function closeAll(sockets: WebSocket[]): Promise<void> {
  await Promise.all(
    sockets.map(
      (ws) =>
        new Promise<void>((resolve) => {
          if (ws.readyState === WebSocket.CLOSED) return resolve();
          ws.once('close', () => resolve());
          ws.terminate();
        }),
    ),
  );
}

interface HoldResult {
  sockets: number;
  welcomed: number;
  refused: number;
  failed: number;
  openSeconds: number;
  welcomeP50Ms: number;
  welcomeP99Ms: number;
  rssBeforeMiB: number;
  rssAfterMiB: number;
  peakRssMiB: number;
  kibPerSocket: number;
}

/** Warm-up, RSS before, N sockets with hello, settle, RSS after; the sockets stay open (the caller closes them). */
async function hold(label: string, child: Child, wsUrl: string, count: number, addresses: number): Promise<HoldResult & { open: WebSocket[] }> {
  const warm = await openAll(label, wsUrl, WARMUP_SOCKETS, 1);
  await closeAll(warm.sockets);
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  const before = child.rssBytes();
  const run = await openAll(label, wsUrl, count, addresses);
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  const after = child.rssBytes();
  const peak = child.peakRssBytes();
  const result: HoldResult = {
    sockets: count,
    welcomed: run.sockets.length,
    refused: run.refused,
    failed: run.failed,
    openSeconds: round(run.seconds, 1),
    welcomeP50Ms: round(percentile(run.welcomeMs, 50), 1),
    welcomeP99Ms: round(percentile(run.welcomeMs, 99), 1),
    rssBeforeMiB: round(mib(before), 1),
    rssAfterMiB: round(mib(after), 1),
    peakRssMiB: round(mib(peak), 1),
    kibPerSocket: round((after - before) / 1024 / Math.max(1, run.sockets.length), 1),
  };
  note(
    label,
    `${fmt(result.welcomed)}/${fmt(count)} welcomed (${result.refused} refused, ${result.failed} failed) in ${result.openSeconds} s; ` +
      `RSS ${result.rssBeforeMiB} → ${result.rssAfterMiB} MiB: ${result.kibPerSocket} KiB per socket`,
  );
  return Object.assign(result, { open: run.sockets });
}

interface AskResult {
  asked: number;
  answered: number;
  acked: number;
  errors: number;
  /** Send → reply (ms). */
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Replies / (last reply − first send). */
  rate: number;
  steadyRate: number;
  seconds: number;
  cpuMsPerMessage: { gateway: number; worker: number; postgres: number; nats: number; bench: number };
  otherLoadCores: number;
}

/** Every socket sends one message at once; resolves when all are answered or replies stop coming. */
async function ask(label: string, sockets: WebSocket[], meters: { gateway: Child; worker: Child; database: string }): Promise<AskResult> {
  const sentAt = new Map<WebSocket, number>();
  const replyMs: number[] = [];
  const repliedAt: number[] = [];
  let acked = 0;
  let errors = 0;
  for (const ws of sockets) {
    ws.on('message', (data) => {
      const frame = JSON.parse(data.toString()) as { type?: string; role?: string };
      if (frame.type === 'ack') acked++;
      else if (frame.type === 'error') errors++;
      else if (frame.type === 'message' && (frame.role === 'agent' || frame.role === 'operator') && sentAt.has(ws)) {
        const now = performance.now();
        replyMs.push(now - sentAt.get(ws)!);
        repliedAt.push(now);
        sentAt.delete(ws);
      }
    });
  }
  const load = new ForeignLoad();
  await load.start();
  const pgCpu = CpuMeter.postgres(meters.database);
  const natsCpu = CpuMeter.named('nats-server');
  await Promise.all([pgCpu.start(500), natsCpu.start(1000)]);
  const gateway0 = meters.gateway.cpuMs();
  const worker0 = meters.worker.cpuMs();
  const bench0 = process.cpuUsage();
  const t0 = performance.now();
  sockets.forEach((ws, i) => {
    sentAt.set(ws, performance.now());
    ws.send(JSON.stringify({ type: 'message', clientMessageId: `ask-${i}`, text: QUESTION }));
  });
  for (let last = -1, lastChange = performance.now(); replyMs.length < sockets.length; ) {
    await new Promise((r) => setTimeout(r, 100));
    progress(label, `${fmt(replyMs.length)}/${fmt(sockets.length)} answered, ${fmt(acked)} acked`);
    if (replyMs.length !== last) {
      last = replyMs.length;
      lastChange = performance.now();
    } else if (performance.now() - lastChange > ASK_IDLE_MS) break;
  }
  const tLast = repliedAt.length ? Math.max(...repliedAt) : performance.now();
  const answered = Math.max(1, replyMs.length);
  const gatewayMs = meters.gateway.cpuMs() - gateway0;
  const workerMs = meters.worker.cpuMs() - worker0;
  const benchUsage = process.cpuUsage(bench0);
  const pgMs = await pgCpu.stop();
  const natsMs = await natsCpu.stop();
  const machine = await load.stop();
  const lat = summarise(replyMs);
  const per = (ms: number) => round(ms / answered, 2);
  const result: AskResult = {
    asked: sockets.length,
    answered: replyMs.length,
    acked,
    errors,
    p50Ms: round(lat.p50),
    p99Ms: round(lat.p99),
    maxMs: round(lat.max),
    seconds: round((tLast - t0) / 1000, 2),
    rate: round(replyMs.length / Math.max(0.001, (tLast - t0) / 1000)),
    steadyRate: round(steadyRate(repliedAt)),
    cpuMsPerMessage: { gateway: per(gatewayMs), worker: per(workerMs), postgres: per(pgMs), nats: per(natsMs), bench: per((benchUsage.user + benchUsage.system) / 1000) },
    otherLoadCores: round(machine.foreignCores, 2),
  };
  const c = result.cpuMsPerMessage;
  note(
    label,
    `${fmt(result.answered)}/${fmt(result.asked)} answered (${fmt(acked)} acked, ${errors} errors) in ${result.seconds} s: ${fmt(result.rate)} msg/s; ` +
      `send → reply p50 ${fmt(result.p50Ms)} / p99 ${fmt(result.p99Ms)} / max ${fmt(result.maxMs)} ms; CPU ms per message: gateway ${c.gateway}, worker ${c.worker}, ` +
      `PostgreSQL ${c.postgres}, nats-server ${c.nats}, bench ${c.bench}; other load ${result.otherLoadCores} cores`,
  );
  return result;
}

export async function runWebchat(ctx: BenchContext): Promise<SectionResult> {
  const { args } = ctx;
  const count = args.webchatSockets;
  const addresses = Math.min(args.webchatAddresses, count);
  const perAddress = Math.ceil(count / addresses);
  if (perAddress > DEFAULT_WEBCHAT_MAX_SOCKETS_PER_IP) {
    throw new Error(`${count} sockets from ${addresses} addresses is ${perAddress} per address, over WEBCHAT_MAX_SOCKETS_PER_IP (${DEFAULT_WEBCHAT_MAX_SOCKETS_PER_IP}): give more --webchat-addresses`);
  }

  const s = newScenario('webchat');
  note('webchat', `setting up (database ${s.databaseName}); ${fmt(count)} sockets from ${addresses} addresses, ${perAddress} each`);
  const gateway = await startGatewayChild(s, 'webchat-gateway', { partitions: args.partitions, profile: args.profile, nodeFlags: args.childFlags });
  const tenant = await createWebchatTenant(gateway.url);
  const worker = await startWorkerChild(s, 'webchat-worker', { partitions: args.partitions, profile: args.profile, nodeFlags: args.childFlags });
  for (const deadline = performance.now() + 30_000; worker.acquired.length < args.partitions && performance.now() < deadline; ) await new Promise((r) => setTimeout(r, 50));
  const gatewayWs = `${gateway.url.replace(/^http/, 'ws')}/api/webchat/${tenant.integrationId}/ws`;
  const gw = await hold('webchat', gateway, gatewayWs, count, addresses);
  const fromUs = nowUs();
  const asked = await ask('webchat-ask', gw.open, { gateway, worker, database: s.databaseName });
  const toUs = nowUs();
  await closeAll(gw.open);
  await worker.stop();
  await gateway.stop();
  await collectProfile(gateway, { fromUs, toUs }, args.profileTop);
  await collectProfile(worker, { fromUs, toUs }, args.profileTop);
  await s.dispose();

  const floor = await spawnChild({ file: 'bench/ws-floor-server.ts', label: 'webchat-ws-floor', env: { PORT: '0' } });
  const line = await floor.waitForLog((l) => l.msg === 'ws floor listening', 60_000);
  const base = await hold('webchat-floor', floor, `${String(line.url).replace(/^http/, 'ws')}/`, count, addresses);
  await closeAll(base.open);
  await floor.stop();

  const ratio = gw.kibPerSocket / base.kibPerSocket;
  const rows: Row[] = [
    {
      section: 'webchat',
      metric: `visitors held by one gateway (one widget, ${addresses} addresses × ${perAddress})`,
      value: `${fmt(gw.welcomed)} / ${fmt(count)}`,
      target: `${fmt(count)}`,
      ok: gw.welcomed === count,
    },
    { section: 'webchat', metric: 'gateway RSS before → after (MiB)', value: `${gw.rssBeforeMiB} → ${gw.rssAfterMiB}` },
    { section: 'webchat', metric: 'gateway memory per socket (KiB)', value: fmt(gw.kibPerSocket, 1) },
    { section: 'webchat', metric: 'bare ws memory per socket (KiB, same run)', value: fmt(base.kibPerSocket, 1) },
    { section: 'webchat', metric: 'ratio gateway / bare ws, per socket', value: Number.isFinite(ratio) ? ratio.toFixed(2) : '–' },
    { section: 'webchat', metric: 'open + hello → welcome, p50 / p99 (ms)', value: `${fmt(gw.welcomeP50Ms, 1)} / ${fmt(gw.welcomeP99Ms, 1)}` },
    { section: 'webchat', metric: 'all asked at once: visitors answered', value: `${fmt(asked.answered)} / ${fmt(asked.asked)}`, target: fmt(asked.asked), ok: asked.answered === asked.asked },
    { section: 'webchat', metric: 'all asked at once: send → reply p50 / p99 / max (ms)', value: `${fmt(asked.p50Ms)} / ${fmt(asked.p99Ms)} / ${fmt(asked.maxMs)}`, target: 'p99 ≤ 3,000', ok: asked.p99Ms <= 3000 },
    { section: 'webchat', metric: 'all asked at once: replies/s (steady)', value: `${fmt(asked.rate)} (${fmt(asked.steadyRate)})` },
    {
      section: 'webchat',
      metric: 'CPU ms per message: gateway / worker / PostgreSQL / nats-server / bench',
      value: [asked.cpuMsPerMessage.gateway, asked.cpuMsPerMessage.worker, asked.cpuMsPerMessage.postgres, asked.cpuMsPerMessage.nats, asked.cpuMsPerMessage.bench].map((v) => fmt(v, 2)).join(' / '),
    },
  ];
  const { open: _gwOpen, ...gwHeld } = gw;
  const { open: _baseOpen, ...baseHeld } = base;
  return { rows, data: { sockets: count, addresses, perAddress, gateway: gwHeld, bareWs: baseHeld, ratio: round(ratio, 2), ask: asked } };
}
