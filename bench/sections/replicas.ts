import autocannon from 'autocannon';
import { jetstreamManager } from '@nats-io/jetstream';
import { connectNats } from '../../lib/nats.js';
import { streamNames } from '../../lib/streams.js';
import { startNatsCluster } from '../../test/support/nats-cluster.js';
import { newScenario, onCleanup, RUN_ID } from '../lib/env.js';
import { inboxBody, QUESTIONS, signBody } from '../lib/payloads.js';
import { note, progress } from '../lib/progress.js';
import { createTenant, startGatewayChild, type GatewayChild, type Tenant } from '../lib/setup.js';
import { fmt, median, round } from '../lib/stats.js';
import type { BenchContext, Row, SectionResult } from './types.js';

/**
 * What replication costs at the door: a three-node NATS cluster (nats-server processes on
 * this machine), and two gateways on it that differ only in NATS_REPLICAS (1 and 3), each
 * with its own database and prefix. The same load (autocannon, signed Chat2Desk webhooks
 * with unique message ids) in alternating rounds (ABBA); the figure is R3 / R1 req/s, the
 * median of the per-round ratios, with latencies beside it. A 200 means the webhook is
 * durable: with R3, written to a quorum of two nodes first.
 */
type Target = 'r1' | 'r3';

export async function runReplicas(ctx: BenchContext): Promise<SectionResult> {
  const { args } = ctx;
  note('replicas', 'starting a three-node NATS cluster');
  const cluster = await startNatsCluster((step) => void onCleanup('nats cluster', step));
  const natsUrl = cluster.urls.join(',');
  const gateways = {} as Record<Target, { gw: GatewayChild; tenant: Tenant; stream: string }>;
  for (const [target, replicas] of [['r1', 1], ['r3', 3]] as const) {
    const s = newScenario(`repl${replicas}`);
    const gw = await startGatewayChild(s, `replicas-${target}`, { partitions: args.partitions, profile: false, env: { NATS_URL: natsUrl, NATS_REPLICAS: String(replicas) } });
    gateways[target] = { gw, tenant: await createTenant(gw.url, ctx.standIn), stream: streamNames(s.natsPrefix).inboundStream };
  }
  const nc = await connectNats(natsUrl, `bench-replicas-${RUN_ID}`);
  const jsm = await jetstreamManager(nc);
  for (const target of ['r1', 'r3'] as const) {
    const got = (await jsm.streams.info(gateways[target].stream)).config.num_replicas;
    note('replicas', `${target}: the inbound stream has ${got} replica(s)`);
  }

  let seq = 0;
  async function load(target: Target, seconds: number, label: string) {
    const { gw, tenant } = gateways[target];
    const path = `/api/webhook/helpdesk/${tenant.integrationId}`;
    const setupRequest = (req: { method?: string; path?: string; headers?: Record<string, string>; body?: string | Buffer }) => {
      const n = seq++;
      const body = inboxBody(`${RUN_ID}-r${n}`, 100_000 + (n % 1000), QUESTIONS[n % QUESTIONS.length]!, n);
      return { ...req, method: 'POST', path, body, headers: { 'content-type': 'application/json', 'x-webhook-signature': signBody(tenant.webhookSecret, body) } };
    };
    const inst = autocannon({ url: gw.url, connections: args.connections, duration: seconds, timeout: 10, requests: [{ setupRequest }] });
    let ticks = 0;
    inst.on('tick', () => progress('replicas', `${label}: ${++ticks}/${seconds} s`));
    return inst;
  }

  for (const target of ['r1', 'r3'] as const) await load(target, args.warmup, `warm-up ${target}`);
  const rounds: { target: Target; round: number; rps: number; p50: number; p99: number; non2xx: number }[] = [];
  for (let r = 0; r < args.rounds; r++) {
    const order: Target[] = r % 2 === 0 ? ['r1', 'r3'] : ['r3', 'r1'];
    for (const target of order) {
      await jsm.streams.purge(gateways[target].stream);
      const result = await load(target, args.duration, `round ${r + 1}/${args.rounds} ${target}`);
      rounds.push({ target, round: r + 1, rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, non2xx: result.non2xx + result.errors });
      note('replicas', `round ${r + 1} ${target}: ${fmt(result.requests.average)} req/s, p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms`);
    }
  }
  await nc.close();
  for (const target of ['r1', 'r3'] as const) await gateways[target].gw.stop();

  const med = (t: Target, k: 'rps' | 'p50' | 'p99') => median(rounds.filter((x) => x.target === t).map((x) => x[k]));
  const ratios: number[] = [];
  for (let r = 1; r <= args.rounds; r++) {
    const a = rounds.find((x) => x.round === r && x.target === 'r3');
    const b = rounds.find((x) => x.round === r && x.target === 'r1');
    if (a && b && b.rps > 0) ratios.push(a.rps / b.rps);
  }
  const ratio = median(ratios);
  const errors = rounds.reduce((n, x) => n + x.non2xx, 0);
  const rows: Row[] = [
    { section: 'replicas', metric: `R1 req/s on the 3-node cluster (${args.connections} conn, median)`, value: fmt(med('r1', 'rps')) },
    { section: 'replicas', metric: 'R3 req/s on the same cluster', value: fmt(med('r3', 'rps')) },
    { section: 'replicas', metric: 'ratio R3 / R1 (median of rounds)', value: fmt(ratio, 2) },
    { section: 'replicas', metric: 'latency p50 / p99 (ms): R1 / R3', value: `${fmt(med('r1', 'p50'))} / ${fmt(med('r1', 'p99'))}  —  ${fmt(med('r3', 'p50'))} / ${fmt(med('r3', 'p99'))}` },
  ];
  if (errors) rows.push({ section: 'replicas', metric: 'non-2xx + errors (all rounds)', value: fmt(errors) });
  return { rows, data: { rounds, ratio: round(ratio, 3), ratios: ratios.map((x) => round(x, 3)) } };
}
