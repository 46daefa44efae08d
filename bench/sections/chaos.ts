import { execFileSync } from 'node:child_process';
import type pg from 'pg';
import { performance } from 'node:perf_hooks';
import { jetstreamManager } from '@nats-io/jetstream';
import { connectNats, type NatsConnection } from '../../lib/nats.js';
import { streamNames } from '../../lib/streams.js';
import { natsServerBinary } from '../../test/support/nats-binary.js';
import { startNatsCluster } from '../../test/support/nats-cluster.js';
import { ChaosRoles, FAULT_TEXT, runFaults, type FaultPlan, type FaultRecord } from '../lib/chaos-faults.js';
import { seeded, sleep, WebhookLoad, type ChaosTenant } from '../lib/chaos-load.js';
import { analyse, chaosRows, lostCauses, ReplyLog } from '../lib/chaos-measure.js';
import { newScenario, onCleanup, pgClient, RUN_ID } from '../lib/env.js';
import { startModelStandIn } from '../lib/model-stand-in.js';
import { inboxBody, QUESTIONS, signBody } from '../lib/payloads.js';
import { note, progress } from '../lib/progress.js';
import { createTenant, httpRequest } from '../lib/setup.js';
import { startStandIn } from '../lib/stand-in.js';
import { fmt, round } from '../lib/stats.js';
import type { BenchContext, SectionResult } from './types.js';

/**
 * Chaos (`npm run bench -- --only chaos`): a soak under faults, not a test. A three-node NATS
 * cluster (`--chaos-nats-server`, default the newest nats-server in .cache/), two gateways and
 * two workers on it (NATS_URL listing the three nodes, NATS_REPLICAS=3), one database and
 * prefix. Two companies with a helpdesk integration each: one answered by the built-in agent
 * from its knowledge base, one by a model agent whose model is the model stand-in
 * (`--chaos-model-latency`, 300 ms). Their helpdesk is a Chat2Desk stand-in of this section
 * that refuses 2 % of the replies with a 503 (not delivered: the worker reconciles against
 * the history the stand-in keeps, then sends again) and records every reply it keeps.
 *
 * Load: `--chaos-rate` webhooks/s from `--chaos-customers` customers for `--chaos-minutes`,
 * through both gateways in turn, 5 % delivered twice, anything but a 200 retried every 1–2 s
 * for up to 2 min (bench/lib/chaos-load.ts). Faults: one every 60–90 s (seeded by
 * `--chaos-seed`, printed), in rotation: SIGKILL a worker, SIGKILL a gateway, SIGKILL the NATS
 * node leading the inbound stream, SIGTERM a worker; each restarted a few seconds later
 * (bench/lib/chaos-faults.ts).
 *
 * After the load, replies are waited for until they stop (up to 2 min); then each
 * acknowledged message id is matched with the replies it got through the outbox row id each
 * reply carries (bench/lib/chaos-measure.ts): lost (acknowledged, never answered), doubled
 * (answered twice or more), and per fault when replies flowed again.
 */
const DRAIN_MAX_MS = 120_000;
/** Replies have stopped when none came for this long (all acknowledged ones answered: a shorter quiet). */
const QUIET_MS = 30_000;
const QUIET_ALL_ANSWERED_MS = 10_000;
/** The progress line counts an acknowledged message as lost so far once it waited this long. */
const LOST_AFTER_MS = 60_000;

function versionOf(binary: string): string {
  try {
    return /v?(\d+\.\d+\.\d+\S*)/.exec(execFileSync(binary, ['--version'], { encoding: 'utf8' }))?.[1] ?? 'unknown';
  } catch (err) {
    throw new Error(`${binary} does not run: ${(err as Error).message.split('\n')[0]}`);
  }
}

export async function runChaos(ctx: BenchContext): Promise<SectionResult> {
  const { args } = ctx;
  const seed = args.chaosSeed;
  const binary = args.chaosNatsServer ?? natsServerBinary();
  const natsVersion = versionOf(binary);
  const minutes = args.chaosMinutes;
  note('chaos', `seed ${seed}; nats-server ${natsVersion} (${binary}); ${fmt(args.chaosRate, 1)} webhooks/s from ${fmt(args.chaosCustomers)} customers for ${fmt(minutes, 1)} min; faults: ${args.chaosFaults.join(', ')}`);

  // Ctrl-C: run.ts removes everything; this stops the load, the faults and the restarts first.
  const abort = new AbortController();
  const onSignal = () => abort.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const faultRandom = seeded(seed);
  const loadRandom = seeded(seed ^ 0x5bd1e995);

  let stopCluster: (() => Promise<void>) | null = null;
  let roles: ChaosRoles | null = null;
  let nc: NatsConnection | null = null;
  let ticker: NodeJS.Timeout | null = null;
  let db: pg.Client | null = null;
  const s = newScenario('chaos');
  const helpdesk = await startStandIn('bench-chaos-token', { refuseRate: 0.02, history: true, random: seeded(seed + 1) });
  const model = await startModelStandIn();
  try {
    helpdesk.setLatency(args.helpdeskLatency);
    model.setLatency(args.chaosModelLatency);
    note('chaos', `starting a three-node NATS cluster (database ${s.databaseName})`);
    const cluster = await startNatsCluster((step) => {
      stopCluster = onCleanup('chaos nats cluster', step);
    }, { binary });
    const natsUrl = cluster.urls.join(',');
    roles = new ChaosRoles(s, { partitions: args.partitions, profile: false, nodeFlags: args.childFlags, env: { NATS_URL: natsUrl, NATS_REPLICAS: '3' } }, abort.signal);
    const gateways = await roles.startGateways();
    const builtIn = await createTenant(gateways[0]!, helpdesk);
    const modelled = await createTenant(gateways[0]!, helpdesk, { baseUrl: model.baseUrl, name: 'gpt-4o-mini', apiKey: 'sk-bench-chaos' });
    await roles.startWorkers();
    const tenants: [ChaosTenant, ChaosTenant] = [builtIn, modelled];

    nc = await connectNats(cluster.urls, `bench-chaos-${RUN_ID}`);
    const ncClose = nc;
    onCleanup('chaos NATS connection', async () => {
      if (!ncClose.isClosed()) await ncClose.close();
    });
    const stream = streamNames(s.natsPrefix).inboundStream;
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(stream);
    note('chaos', `inbound stream ${stream}: ${info.config.num_replicas} replicas, leader ${info.cluster?.leader ?? '?'}`);
    const sql = await pgClient(s.databaseUrl);
    db = sql;

    // The pipeline answers before the clock starts: one message per company, through each gateway.
    for (const [t, tenant] of tenants.entries()) {
      for (const [g, url] of gateways.entries()) {
        const id = `${RUN_ID}-chaos-probe-${t}-${g}`;
        const body = inboxBody(id, `probe-${t}-${g}`, QUESTIONS[0]!, t);
        const res = await httpRequest(`${url}/api/webhook/helpdesk/${tenant.integrationId}`, 'POST', body, { 'content-type': 'application/json', 'x-webhook-signature': signBody(tenant.webhookSecret, body) });
        if (res.status !== 200) throw new Error(`probe webhook: HTTP ${res.status} ${res.body}`);
      }
    }
    const probes = tenants.length * gateways.length;
    if (!(await helpdesk.waitForCount(probes, { stallMs: 60_000, tick: (n) => progress('chaos', `probe messages: ${n}/${probes} answered`) }))) {
      throw new Error('the probe messages were not answered within 60 s');
    }
    if (abort.signal.aborted) throw new Error('interrupted');

    const log = new ReplyLog(helpdesk);
    const load = new WebhookLoad({
      gateways, tenants, rate: args.chaosRate, customers: args.chaosCustomers, durationMs: minutes * 60_000, random: loadRandom,
      idPrefix: `${RUN_ID}-${s.natsPrefix}`, signal: abort.signal,
    });
    const t0 = performance.now();
    const loadEnd = t0 + minutes * 60_000;
    const plan: FaultPlan = { nextAt: null, nextKind: null };
    const faultsDone = runFaults({ roles, cluster, nc, stream, random: faultRandom, signal: abort.signal, t0 }, args.chaosFaults, loadEnd, plan);
    faultsDone.catch(() => {});
    let phase = 'load';
    let lastResolve = 0;
    const answeredSoFar = () => {
      const by = log.byMessage();
      let answered = 0;
      let late = 0;
      const now = performance.now();
      for (const m of load.messages.values()) {
        if (m.ackAt === null) continue;
        if (by.has(m.id)) answered++;
        else if (now - m.ackAt > LOST_AFTER_MS) late++;
      }
      return { answered, late };
    };
    ticker = setInterval(() => {
      const now = performance.now();
      if (now - lastResolve > 5_000) {
        lastResolve = now;
        void log.resolve(sql).catch((err) => note('chaos', `reply look-up failed: ${(err as Error).message}`));
      }
      const { answered, late } = answeredSoFar();
      const next = plan.nextAt && plan.nextKind ? `next fault ${FAULT_TEXT[plan.nextKind]} in ${Math.max(0, Math.round((plan.nextAt - now) / 1000))} s` : 'no fault pending';
      const r = load.failures.length;
      progress(
        'chaos',
        `${phase} ${Math.round((now - t0) / 1000)}/${Math.round((loadEnd - t0) / 1000)} s: sent ${fmt(load.sent)}, acked ${fmt(load.acked)} (${fmt(r)} attempts without 200, ${fmt(load.retrying)} in flight), ` +
          `answered ${fmt(answered)}, lost so far ${fmt(late)} (acked > ${LOST_AFTER_MS / 1000} s ago), replies ${fmt(log.replies.length)}; ${next}`,
      );
    }, 1_000);

    await load.run();
    if (abort.signal.aborted) throw new Error('interrupted');
    phase = 'retries';
    note('chaos', `load over: ${fmt(load.sent)} sent, ${fmt(load.acked)} acknowledged; ${fmt(load.retrying)} deliveries still retrying`);
    await load.settled();
    const faults: FaultRecord[] = await faultsDone;
    if (abort.signal.aborted) throw new Error('interrupted');

    // Replies until they stop: all acknowledged ones answered and quiet for a while; or quiet for
    // longer with no outbox row left to send (one waiting for its retry is still coming); or 2 min.
    phase = 'draining';
    const drainFrom = performance.now();
    let unfinished = 0;
    for (let k = 0; ; k++) {
      await sleep(1_000, abort.signal);
      if (abort.signal.aborted) throw new Error('interrupted');
      await log.resolve(sql);
      if (k % 5 === 0) unfinished = Number((await sql.query<{ n: string }>(`select count(*) as n from outbox where status in ('pending', 'sending')`)).rows[0]?.n ?? 0);
      const now = performance.now();
      const quiet = now - Math.max(log.lastAt, drainFrom);
      const { answered } = answeredSoFar();
      if (answered >= load.acked && log.pending === 0 && quiet >= QUIET_ALL_ANSWERED_MS) break;
      if ((quiet >= QUIET_MS && unfinished === 0) || now - drainFrom >= DRAIN_MAX_MS) break;
    }
    clearInterval(ticker);
    ticker = null;
    const end = performance.now();
    for (let k = 0; k < 5 && log.pending > 0; k++) {
      await log.resolve(sql);
      if (log.pending > 0) await sleep(500);
    }

    const figures = analyse({ messages: load.messages, failures: load.failures, log, faults, t0, loadEnd, end });
    const lost = await lostCauses(sql, figures.lostIds);
    // Where the stream and its consumers were left (messages not consumed would show here).
    let streamState: Record<string, unknown> | null = null;
    try {
      const after = await jsm.streams.info(stream);
      let pending = 0;
      let ackPending = 0;
      for await (const c of jsm.consumers.list(stream)) {
        pending += c.num_pending;
        ackPending += c.num_ack_pending;
      }
      streamState = { messages: after.state.messages, leader: after.cluster?.leader ?? null, replicas: after.cluster?.replicas?.map((r) => ({ name: r.name, current: r.current, lag: r.lag ?? 0 })) ?? [], consumerPending: pending, consumerAckPending: ackPending };
    } catch (err) {
      streamState = { error: (err as Error).message };
    }
    const outcomes: Record<string, number> = {};
    for (const r of (await sql.query<{ k: string; n: string }>(`select 'outbox ' || kind || ' ' || status as k, count(*) as n from outbox group by kind, status union all select 'conversations ' || status, count(*) from conversations group by status`)).rows) {
      outcomes[r.k] = Number(r.n);
    }
    await sql.end();
    db = null;

    note(
      'chaos',
      `${fmt(figures.acknowledged)} acknowledged: ${fmt(figures.answered)} answered, ${fmt(figures.lost)} lost, ${fmt(figures.doubled)} doubled; ` +
        `${fmt(figures.neverAcknowledged)} never acknowledged; ${fmt(helpdesk.refused())} helpdesk sends refused, ${fmt(helpdesk.historyReads())} history reads`,
    );
    for (const [cause, n] of Object.entries(lost.causes)) note('chaos', `  lost: ${fmt(n)} ${cause}`);
    const rows = chaosRows('chaos', figures, {
      minutes, rate: args.chaosRate, customers: args.chaosCustomers, natsServer: natsVersion, seed, events: roles.events, t0,
      lostCauses: lost.causes, helpdeskRefused: helpdesk.refused(), historyReads: helpdesk.historyReads(),
    });
    const unfinishedAtEnd = Object.entries(outcomes).filter(([k]) => /^outbox .* (pending|sending)$/.test(k)).reduce((sum, [, n]) => sum + n, 0);
    const left = streamState && typeof streamState.messages === 'number' ? streamState : null;
    if (unfinishedAtEnd > 0 || (left && ((left.messages as number) > 0 || (left.consumerPending as number) > 0))) {
      rows.push({
        section: 'chaos',
        metric: 'left at the end: outbox rows unsent; inbound stream messages / not yet delivered to a consumer',
        value: `${fmt(unfinishedAtEnd)}; ${left ? `${fmt(left.messages as number)} / ${fmt(left.consumerPending as number)}` : '–'}`,
      });
    }
    return {
      rows,
      data: {
        seed,
        natsServer: { binary, version: natsVersion },
        minutes,
        rate: args.chaosRate,
        customers: args.chaosCustomers,
        faultKinds: args.chaosFaults,
        modelLatencyMs: args.chaosModelLatency,
        helpdeskLatencyMs: args.helpdeskLatency,
        lost: figures.lost,
        doubled: figures.doubled,
        figures: { ...figures, lostIds: figures.lostIds.slice(0, 200), doubledIds: figures.doubledIds.slice(0, 200) },
        lostCauses: lost.causes,
        lostExamples: lost.examples,
        faults: faults.map((f) => ({ ...f, at: round((f.at - t0) / 1000, 2) })),
        roleEvents: roles.events.map((e) => ({ ...e, at: round((e.at - t0) / 1000, 1) })),
        helpdesk: { refused: helpdesk.refused(), historyReads: helpdesk.historyReads(), kept: helpdesk.count() - probes },
        modelRequests: model.requests(),
        stream: streamState,
        outcomes,
        drainSeconds: round((end - drainFrom) / 1000, 1),
        unfinishedOutboxAtEnd: unfinishedAtEnd,
      },
    };
  } finally {
    if (ticker) clearInterval(ticker);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    abort.abort();
    helpdesk.onReply(null);
    await roles?.stopAll();
    // Before the database is dropped (a connection cut by the drop would be an unhandled error).
    await db?.end().catch(() => {});
    if (nc && !nc.isClosed()) await nc.close().catch(() => {});
    await (stopCluster as (() => Promise<void>) | null)?.();
    await s.dispose();
    await helpdesk.close();
    await model.close();
  }
}
