import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import autocannon, { type Result } from 'autocannon';
import { jetstreamManager } from '@nats-io/jetstream';
import { streamNames } from '../../lib/streams.js';
import { CpuMeter, spawnChild, type Child } from '../lib/children.js';
import { channelsFromEnv, startChannelSandboxes, telegramWebhooks, whatsappWebhooks, type ChannelSandboxes, type ChannelWebhooks } from '../lib/channels.js';
import { CHILD_BASE_ENV, NATS_URL, newScenario, RUN_ID } from '../lib/env.js';
import { inboxBody, QUESTIONS, signBody } from '../lib/payloads.js';
import { collectProfile, nowUs, type Window } from '../lib/profiles.js';
import { note, progress } from '../lib/progress.js';
import { createChannelIntegration, createTenant, profileDirOf, startGatewayChild } from '../lib/setup.js';
import { fmt, median, round } from '../lib/stats.js';
import type { BenchContext, Row, SectionResult } from './types.js';

/**
 * Ingress: the gateway (`npm run gateway`, a child with its own database and prefix) against
 * the floor (bench/floor-server.ts: node:http + HMAC + one awaited JetStream publish), with
 * the same load generator (autocannon, N connections, fixed duration) sending the same kind
 * of bodies: a Chat2Desk inbox webhook with a unique message_id, signed with the
 * integration's secret. Both are warmed up first; then rounds alternate between them (ABBA
 * order) and the table shows the medians. CPU time per request of each process is read from
 * /proc (steadier than req/s on a shared machine).
 *
 * The direct channels (contract.md § Direct channels): the same gateway child also takes
 * WhatsApp Cloud API webhooks (Meta's body, X-Hub-Signature-256 with the app secret, a unique
 * wamid each) and Telegram updates (X-Telegram-Bot-Api-Secret-Token, a unique update_id each)
 * of integrations of the same company, as targets of their own in the same alternating rounds;
 * each is compared with the helpdesk's webhooks (target "gateway") round by round (the promise:
 * ≥ 0.9×). BENCH_INGRESS_CHANNELS=helpdesk,whatsapp,telegram chooses them (default all).
 */
type ChannelTarget = 'whatsapp' | 'telegram';
type Target = 'gateway' | 'floor' | 'gateway-notraces' | 'floor-notraces' | 'floor-coalesced' | 'gateway-traced' | ChannelTarget;
/**
 * --experiments: both sides with the NATS client's noAsyncTraces (bench/ingress-variant.ts),
 * and the floor holding its publishes to the end of the loop's turn as the gateway does.
 */
const EXPERIMENTS = ['gateway-notraces', 'floor-notraces', 'floor-coalesced'] as const;
/** --tracing: the gateway exporting OpenTelemetry spans (every webhook traced) to a collector stand-in answering 200. */
const TRACED = 'gateway-traced';

interface Round {
  target: Target;
  round: number;
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  non2xx: number;
  errors: number;
  /** CPU ms of the server process per 1,000 requests. */
  cpuPer1k: number;
  /** CPU ms of nats-server per 1,000 requests (the whole server: other users of it count too). */
  natsCpuPer1k: number;
  /** CPU ms of the bench process (autocannon, building and signing the bodies) per 1,000 requests: it shares the cores. */
  benchCpuPer1k: number;
  /** CPU ms of the PostgreSQL backends of the gateway's database (the acceptance journal) per 1,000 requests; ~0 for the floor. */
  pgCpuPer1k: number;
}

export async function runIngress(ctx: BenchContext): Promise<SectionResult> {
  const { args } = ctx;
  const s = newScenario('ingress');
  const floorScenario = newScenario('ingfloor');
  note('ingress', `starting the gateway (database ${s.databaseName}) and the floor`);
  const channels = channelsFromEnv('BENCH_INGRESS_CHANNELS').filter((c): c is ChannelTarget => c !== 'helpdesk');
  // The Telegram integration's create calls setWebhook at TELEGRAM_API_URL: the sandbox.
  const sandboxes: ChannelSandboxes | null = channels.length ? await startChannelSandboxes() : null;
  const gateway = await startGatewayChild(s, 'ingress-gateway', { partitions: args.partitions, profile: args.profile, nodeFlags: args.childFlags, env: sandboxes?.env });
  const tenant = await createTenant(gateway.url, ctx.standIn);
  const floor: Child = await spawnChild({
    file: 'bench/floor-server.ts',
    label: 'ingress-floor',
    env: { ...CHILD_BASE_ENV, PORT: '0', NATS_URL, NATS_PREFIX: floorScenario.natsPrefix, SECRET: tenant.webhookSecret },
    profileDir: args.profile ? profileDirOf('ingress-floor') : null,
  });
  const floorUrl = String((await floor.waitForLog((l) => l.msg === 'floor listening', 60_000)).url);
  const jsm = await jetstreamManager(ctx.nc);
  const streams = { gateway: streamNames(s.natsPrefix).inboundStream, floor: streamNames(floorScenario.natsPrefix).inboundStream };

  const path = `/api/webhook/helpdesk/${tenant.integrationId}`;
  let seq = 0;
  const secret = tenant.webhookSecret;
  const setupRequest = (req: { method?: string; path?: string; headers?: Record<string, string>; body?: string | Buffer }) => {
    const n = seq++;
    const body = inboxBody(`${RUN_ID}-i${n}`, 100_000 + (n % 1000), QUESTIONS[n % QUESTIONS.length]!, n);
    return { ...req, method: 'POST', path, body, headers: { 'content-type': 'application/json', 'x-webhook-signature': signBody(secret, body) } };
  };

  type RequestParts = { method?: string; path?: string; headers?: Record<string, string>; body?: string | Buffer };
  type SetupRequest = (req: RequestParts) => RequestParts;
  const targets: Partial<Record<Target, { url: string; child: Child; stream: string; setupRequest?: SetupRequest }>> = {
    gateway: { url: gateway.url, child: gateway, stream: streams.gateway },
    floor: { url: floorUrl, child: floor, stream: streams.floor },
  };
  // The direct channels: integrations of the same company (same agent) on the same gateway.
  for (const channel of channels) {
    const ci = await createChannelIntegration(gateway.url, tenant, channel, { whatsapp: sandboxes!.whatsapp, botToken: sandboxes!.botToken });
    const hooks: ChannelWebhooks = channel === 'whatsapp' ? whatsappWebhooks(ci.integrationId, ci.secret, ci.account!) : telegramWebhooks(ci.integrationId, ci.secret);
    let n = 0;
    const channelRequest: SetupRequest = (req) => {
      const i = n++;
      const body = hooks.body(i, 100_000 + (i % 1000), QUESTIONS[i % QUESTIONS.length]!);
      return { ...req, method: 'POST', path: hooks.path, body, headers: hooks.headers(body) };
    };
    targets[channel] = { url: gateway.url, child: gateway, stream: streams.gateway, setupRequest: channelRequest };
    note('ingress', `${channel} integration ${ci.integrationId} on the same gateway`);
  }
  if (args.experiments) {
    for (const variant of EXPERIMENTS) {
      const isFloor = variant.startsWith('floor');
      const child = await spawnChild({
        file: isFloor ? 'bench/floor-server.ts' : 'bench/ingress-variant.ts',
        label: `ingress-${variant}`,
        env: isFloor
          ? { ...CHILD_BASE_ENV, PORT: '0', NATS_URL, NATS_PREFIX: floorScenario.natsPrefix, SECRET: tenant.webhookSecret, ...(variant === 'floor-coalesced' ? { COALESCE: '1' } : { NO_ASYNC_TRACES: '1' }) }
          : { ...CHILD_BASE_ENV, DATABASE_URL: s.databaseUrl, NATS_PREFIX: s.natsPrefix, PARTITIONS: String(args.partitions), PORT: '0', HOST: '127.0.0.1' },
        profileDir: args.profile ? profileDirOf(`ingress-${variant}`) : null,
      });
      const url = String((await child.waitForLog((l) => l.msg === (isFloor ? 'floor listening' : 'variant listening'), 60_000)).url);
      targets[variant] = { url, child, stream: isFloor ? streams.floor : streams.gateway };
    }
  }
  let collector: { close: () => Promise<void>; posts: number } | null = null;
  if (args.tracing) {
    const posts = { n: 0 };
    const server = createServer((req, res) => {
      posts.n++;
      req.resume().on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    collector = { close: () => new Promise<void>((r) => server.close(() => r())), get posts() { return posts.n; } };
    const child = await startGatewayChild(s, 'ingress-gateway-traced', { partitions: args.partitions, profile: args.profile, nodeFlags: args.childFlags, env: { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint } });
    targets[TRACED] = { url: child.url, child, stream: streams.gateway };
  }
  const names = Object.keys(targets) as Target[];
  const natsCpu = CpuMeter.named('nats-server');
  const pgCpu = CpuMeter.postgres(s.databaseName);

  async function load(target: Target, seconds: number, label: string): Promise<{ result: Result; cpuMs: number; natsMs: number; benchMs: number; pgMs: number }> {
    const { url, child } = targets[target]!;
    const cpu0 = child.cpuMs();
    const bench0 = process.cpuUsage();
    await Promise.all([natsCpu.start(1000), pgCpu.start(1000)]);
    const inst = autocannon({ url, connections: args.connections, duration: seconds, timeout: 10, requests: [{ setupRequest: targets[target]!.setupRequest ?? setupRequest }] });
    let ticks = 0;
    let count = 0;
    inst.on('response', () => count++);
    inst.on('tick', () => {
      ticks++;
      progress('ingress', `${label}: ${ticks}/${seconds} s, ${fmt(count / ticks)} req/s`);
    });
    const result = await inst;
    const natsMs = await natsCpu.stop();
    const pgMs = await pgCpu.stop();
    const bench = process.cpuUsage(bench0);
    return { result, cpuMs: child.cpuMs() - cpu0, natsMs, benchMs: (bench.user + bench.system) / 1000, pgMs };
  }

  for (const target of names) {
    note('ingress', `warm-up ${target} ${args.warmup} s`);
    await load(target, args.warmup, `warm-up ${target}`);
  }

  const rounds: Round[] = [];
  const window: Window = { fromUs: nowUs(), toUs: 0 };
  for (let r = 0; r < args.rounds; r++) {
    // Alternate the order (ABBA...) so a drift of the machine does not favour one target.
    const order = r % 2 === 0 ? names : [...names].reverse();
    for (const target of order) {
      // Same starting point for every target: an empty stream.
      await jsm.streams.purge(targets[target]!.stream);
      const { result, cpuMs, natsMs, benchMs, pgMs } = await load(target, args.duration, `round ${r + 1}/${args.rounds} ${target}`);
      const ok = result['2xx'];
      const stored = (await jsm.streams.info(targets[target]!.stream)).state.messages;
      const row: Round = {
        target,
        round: r + 1,
        rps: result.requests.average,
        p50: result.latency.p50,
        p99: result.latency.p99,
        requests: ok + result.non2xx,
        non2xx: result.non2xx,
        errors: result.errors,
        cpuPer1k: (cpuMs / Math.max(1, ok)) * 1000,
        natsCpuPer1k: (natsMs / Math.max(1, ok)) * 1000,
        benchCpuPer1k: (benchMs / Math.max(1, ok)) * 1000,
        pgCpuPer1k: (pgMs / Math.max(1, ok)) * 1000,
      };
      rounds.push(row);
      note('ingress', `round ${r + 1} ${target}: ${fmt(row.rps)} req/s, p50 ${row.p50} ms, p99 ${row.p99} ms, ${fmt(row.cpuPer1k)} CPU ms / 1k req${row.non2xx || row.errors ? `, ${row.non2xx} non-2xx, ${row.errors} errors` : ''}; ${fmt(stored)} messages stored`);
      if (stored < ok * 0.99) note('ingress', `WARNING: ${target} answered ${ok} × 2xx but the stream holds ${stored}`);
    }
  }
  window.toUs = nowUs();

  const profiles: Record<string, unknown> = {};
  // The channels' targets share the gateway child: its profile is the helpdesk target's.
  for (const t of names.filter((n) => !(channels as Target[]).includes(n))) {
    await targets[t]!.child.stop();
    profiles[t] = (await collectProfile(targets[t]!.child, window, args.profileTop)) ?? undefined;
  }
  await sandboxes?.close();
  await s.dispose();
  await floorScenario.dispose();
  if (collector) note('ingress', `the collector stand-in received ${collector.posts} OTLP exports`);
  await collector?.close();

  const med = (t: Target, k: keyof Round) => median(rounds.filter((r) => r.target === t).map((r) => r[k] as number));
  const g = { rps: med('gateway', 'rps'), p50: med('gateway', 'p50'), p99: med('gateway', 'p99'), cpu: med('gateway', 'cpuPer1k'), nats: med('gateway', 'natsCpuPer1k') };
  const f = { rps: med('floor', 'rps'), p50: med('floor', 'p50'), p99: med('floor', 'p99'), cpu: med('floor', 'cpuPer1k'), nats: med('floor', 'natsCpuPer1k') };
  // Ratio per round pair, then the median (a disturbance hits one pair, not the whole figure).
  const ratios: number[] = [];
  for (let r = 1; r <= args.rounds; r++) {
    const gr = rounds.find((x) => x.round === r && x.target === 'gateway');
    const fr = rounds.find((x) => x.round === r && x.target === 'floor');
    if (gr && fr && fr.rps > 0) ratios.push(gr.rps / fr.rps);
  }
  const ratio = median(ratios);
  const errors = rounds.reduce((n, r) => n + r.non2xx + r.errors, 0);
  const label = `${args.connections} conn, ${args.duration} s × ${args.rounds}`;
  const rows: Row[] = [
    { section: 'ingress', metric: `gateway req/s (${label}, median)`, value: fmt(g.rps) },
    { section: 'ingress', metric: 'floor req/s (node:http + HMAC + JetStream publish)', value: fmt(f.rps) },
    { section: 'ingress', metric: 'ratio gateway / floor (median of rounds)', value: fmt(ratio, 2), target: '≥ 0.8 (goal 0.9)', ok: ratio >= 0.8 },
    { section: 'ingress', metric: 'gateway latency p50 / p99 (ms)', value: `${fmt(g.p50)} / ${fmt(g.p99)}` },
    { section: 'ingress', metric: 'floor latency p50 / p99 (ms)', value: `${fmt(f.p50)} / ${fmt(f.p99)}` },
    { section: 'ingress', metric: 'CPU ms per 1k requests: gateway / floor', value: `${fmt(g.cpu)} / ${fmt(f.cpu)}` },
    { section: 'ingress', metric: 'nats-server CPU ms per 1k requests: gateway / floor (shared server)', value: `${fmt(g.nats)} / ${fmt(f.nats)}` },
  ];
  const variants: Record<string, unknown> = {};
  for (const v of [...EXPERIMENTS, TRACED] as const) {
    if (!targets[v]) continue;
    const vr: number[] = [];
    // The no-traces gateway is compared with the no-traces floor (the same client setting on both sides).
    const base: Target = v === 'gateway-notraces' ? 'floor-notraces' : 'floor';
    // The coalescing floor is the gateway's yardstick: the ratio is the gateway's to it.
    const [over, under]: [Target, Target] = v === 'floor-coalesced' ? ['gateway', v] : [v, base];
    for (let r = 1; r <= args.rounds; r++) {
      const a = rounds.find((x) => x.round === r && x.target === over);
      const fr = rounds.find((x) => x.round === r && x.target === under);
      if (a && fr && fr.rps > 0) vr.push(a.rps / fr.rps);
    }
    variants[v] = { rps: round(med(v, 'rps')), p50: med(v, 'p50'), p99: med(v, 'p99'), cpuMsPer1k: round(med(v, 'cpuPer1k'), 1), ratio: round(median(vr), 3), ratioOf: `${over} / ${under}` };
    const what = v === TRACED ? 'tracing on' : `experiment "${v}"`;
    rows.push({ section: 'ingress', metric: `${what}: req/s, ratio ${over} / ${under}, CPU ms / 1k req`, value: `${fmt(med(v, 'rps'))}, ${fmt(median(vr), 2)}, ${fmt(med(v, 'cpuPer1k'))}` });
  }
  // The direct channels against the helpdesk's webhooks of the same gateway, round by round.
  const perChannel: Record<string, unknown> = {};
  for (const c of channels) {
    const cr: number[] = [];
    for (let r = 1; r <= args.rounds; r++) {
      const a = rounds.find((x) => x.round === r && x.target === c);
      const h = rounds.find((x) => x.round === r && x.target === 'gateway');
      if (a && h && h.rps > 0) cr.push(a.rps / h.rps);
    }
    const cRatio = median(cr);
    const cpuRatio = med(c, 'cpuPer1k') / g.cpu;
    perChannel[c] = {
      rps: round(med(c, 'rps')), p50: med(c, 'p50'), p99: med(c, 'p99'), cpuMsPer1k: round(med(c, 'cpuPer1k'), 1), natsCpuMsPer1k: round(med(c, 'natsCpuPer1k'), 1),
      benchCpuMsPer1k: round(med(c, 'benchCpuPer1k'), 1), postgresCpuMsPer1k: round(med(c, 'pgCpuPer1k'), 1),
      helpdesk: { cpuMsPer1k: round(g.cpu, 1), benchCpuMsPer1k: round(med('gateway', 'benchCpuPer1k'), 1), postgresCpuMsPer1k: round(med('gateway', 'pgCpuPer1k'), 1) },
      ratioToHelpdesk: round(cRatio, 3), ratiosToHelpdesk: cr.map((x) => round(x, 3)), cpuRatioToHelpdesk: round(cpuRatio, 3),
    };
    rows.push(
      {
        section: 'ingress',
        metric: `${c} req/s; p50 / p99 (ms); CPU ms per 1k: gateway / PostgreSQL / load generator (helpdesk: ${fmt(g.cpu)} / ${fmt(med('gateway', 'pgCpuPer1k'))} / ${fmt(med('gateway', 'benchCpuPer1k'))})`,
        value: `${fmt(med(c, 'rps'))}; ${fmt(med(c, 'p50'))} / ${fmt(med(c, 'p99'))}; ${fmt(med(c, 'cpuPer1k'))} / ${fmt(med(c, 'pgCpuPer1k'))} / ${fmt(med(c, 'benchCpuPer1k'))}`,
      },
      { section: 'ingress', metric: `ratio ${c} / helpdesk req/s (median of rounds; CPU per 1k ${fmt(cpuRatio, 2)}×)`, value: fmt(cRatio, 2), target: '≥ 0.9', ok: cRatio >= 0.9 },
    );
  }
  if (errors) rows.push({ section: 'ingress', metric: 'non-2xx + errors (all rounds)', value: fmt(errors) });
  return {
    rows,
    data: {
      connections: args.connections,
      durationSeconds: args.duration,
      warmupSeconds: args.warmup,
      rounds,
      gateway: { rps: round(g.rps), p50: g.p50, p99: g.p99, cpuMsPer1k: round(g.cpu, 1), natsCpuMsPer1k: round(g.nats, 1) },
      floor: { rps: round(f.rps), p50: f.p50, p99: f.p99, cpuMsPer1k: round(f.cpu, 1), natsCpuMsPer1k: round(f.nats, 1) },
      ratio: round(ratio, 3),
      ratios: ratios.map((r) => round(r, 3)),
      channels: perChannel,
      variants,
      profiles,
    },
  };
}
