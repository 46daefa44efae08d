import { performance } from 'node:perf_hooks';
import { CpuMeter } from '../lib/children.js';
import { newScenario, pgClient, RUN_ID } from '../lib/env.js';
import { startModelStandIn, type ModelStandIn } from '../lib/model-stand-in.js';
import { envelopeOf, inboxBody, publishEnvelopes, QUESTIONS, signBody } from '../lib/payloads.js';
import { collectProfile, nowUs } from '../lib/profiles.js';
import { note, progress } from '../lib/progress.js';
import { createTenant, httpRequest, startGatewayChild, startWorkerChild, type Tenant } from '../lib/setup.js';
import { fmt, mib, round, steadyRate, summarise } from '../lib/stats.js';
import type { BenchContext, Row, SectionResult } from './types.js';

/**
 * Models (issue #17): answers at real model latency. The gateway and one worker run as
 * children; two companies have an OpenAI-compatible model agent (no knowledge base: webhook →
 * model → reply) whose server is a stand-in in the bench process answering after
 * `--models-latency` ms (1 s), and their helpdesk is the Chat2Desk stand-in answering each
 * send after `--helpdesk-latency` ms (150). After a short warm-up, company A's burst of
 * `--models-burst` customers (5,000, one message each) is published into JetStream as fast as
 * it takes them (the gateway's envelopes), and meanwhile company B's `--models-other`
 * customers (20) write through the gateway as signed webhooks, spread over the burst.
 *
 * Figures: A's answered messages/s (first publish → last reply), the most model calls in
 * flight (at the stand-in), the worker's memory per call in flight (its RSS growth over the
 * burst / that peak), and B's webhook → reply times during the burst (the fairness figure).
 * The same burst is run first with a model that answers at once: the ratio of the two rates
 * says how much of the worker's pace real model latency costs.
 */
export interface BurstResult {
  label: string;
  modelLatencyMs: number;
  helpdeskLatencyMs: number;
  burst: number;
  /** A's answers per second, first publish → last reply. */
  rate: number;
  steadyRate: number;
  seconds: number;
  complete: boolean;
  peakInflight: number;
  modelRequests: number;
  workerRssBeforeMiB: number;
  workerPeakRssMiB: number;
  /** Worker RSS growth over the burst / peak calls in flight (the burst's waiting messages are held too). */
  kibPerCallInFlight: number;
  /** Worker RSS growth over the burst / messages of the burst (all held in memory at its start). */
  kibPerMessageHeld: number;
  workerCpuMsPerMessage: number;
  postgresCpuMsPerMessage: number;
  natsCpuMsPerMessage: number;
  /** The bench process (the model and helpdesk stand-ins, the publisher) per message. */
  benchCpuMsPerMessage: number;
  /** B's webhook → reply, ms. */
  other: { count: number; p50: number; max: number; answered: number };
  /** Where B's slowest message spent its time, ms (from the rows the worker wrote; PostgreSQL's now() is its transaction's start). */
  otherStages: { stage: string; p50: number; max: number }[];
  outcomes: Record<string, number>;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function burstOnce(ctx: BenchContext, model: ModelStandIn, label: string, modelLatencyMs: number): Promise<BurstResult> {
  const { args, standIn } = ctx;
  const burst = args.modelsBurst;
  const others = args.modelsOther;
  model.setLatency(modelLatencyMs);
  standIn.setLatency(args.helpdeskLatency);
  const s = newScenario(label);
  note(label, `setting up (database ${s.databaseName}; model ${modelLatencyMs} ms, helpdesk ${args.helpdeskLatency} ms)`);
  const gateway = await startGatewayChild(s, `${label}-gateway`, { partitions: args.partitions, profile: false, nodeFlags: args.childFlags });
  const a: Tenant = await createTenant(gateway.url, standIn, { baseUrl: model.baseUrl, name: 'gpt-4o-mini', apiKey: 'sk-bench-company-a' });
  const b: Tenant = await createTenant(gateway.url, standIn, { baseUrl: model.baseUrl, name: 'gpt-4o-mini', apiKey: 'sk-bench-company-b' });
  const env: Record<string, string> = args.modelsConcurrency ? { MODEL_MAX_CONCURRENCY: String(args.modelsConcurrency) } : {};
  const worker = await startWorkerChild(s, `${label}-worker`, { partitions: args.partitions, profile: args.profile, nodeFlags: args.childFlags, env });
  const deadline = performance.now() + 30_000;
  while (worker.acquired.length < args.partitions && performance.now() < deadline) await sleep(50);

  const webhook = async (tenant: Tenant, messageId: string, clientId: string, i: number) => {
    const body = inboxBody(messageId, clientId, QUESTIONS[i % QUESTIONS.length]!, i);
    const res = await httpRequest(`${gateway.url}/api/webhook/helpdesk/${tenant.integrationId}`, 'POST', body, { 'content-type': 'application/json', 'x-webhook-signature': signBody(tenant.webhookSecret, body) });
    if (res.status !== 200) throw new Error(`webhook: HTTP ${res.status} ${res.body}`);
  };

  // Warm-up (not measured): connections, caches and JIT of both companies' paths.
  const warm = 50;
  standIn.reset();
  for (let i = 0; i < warm; i++) await webhook(i % 2 ? b : a, `${RUN_ID}-${label}-warm${i}`, `warm-${i}`, i);
  if (!(await standIn.waitForCount(warm, { stallMs: 30_000 }))) throw new Error(`${label}: the warm-up was not answered`);

  standIn.reset();
  model.reset();
  const aAt: number[] = [];
  const bSent = new Map<string, number>();
  /** B's webhooks by message id: when sent (wall clock ms), and when the reply reached the helpdesk. */
  const bWall = new Map<string, { sent: number; received: number }>();
  const toWall = (perf: number) => performance.timeOrigin + perf;
  const bMs: number[] = [];
  standIn.onReply((clientId, at) => {
    if (clientId.startsWith('a-')) aAt.push(at);
    else if (bSent.has(clientId)) {
      bMs.push(at - bSent.get(clientId)!);
      bWall.set(`${RUN_ID}-${label}-${clientId.replace('-', '')}`, { sent: toWall(bSent.get(clientId)!), received: toWall(at) });
    }
  });
  const rssBefore = worker.rssBytes();
  const cpuBefore = worker.cpuMs();
  const pgCpu = CpuMeter.postgres(s.databaseName);
  const natsCpu = CpuMeter.named('nats-server');
  await Promise.all([pgCpu.start(500), natsCpu.start(1000)]);
  const benchCpu0 = process.cpuUsage();
  const fromUs = nowUs();
  const integration = { id: a.integrationId, companyId: a.companyId };
  const t0 = performance.now();
  const publishing = publishEnvelopes(ctx.nc, s.natsPrefix, args.partitions, burst, (i) => envelopeOf(integration, inboxBody(`${RUN_ID}-${label}-a${i}`, `a-${i}`, QUESTIONS[i % QUESTIONS.length]!, i)));
  // B's customers write while A's burst is being answered.
  const spacing = Math.max(50, burst / others);
  const writing = (async () => {
    for (let k = 0; k < others; k++) {
      const due = t0 + 100 + k * spacing;
      if (due > performance.now()) await sleep(due - performance.now());
      const clientId = `b-${k}`;
      bSent.set(clientId, performance.now());
      await webhook(b, `${RUN_ID}-${label}-b${k}`, clientId, k);
    }
  })();
  await Promise.all([publishing, writing]);
  let complete = true;
  for (let last = -1, lastChange = performance.now(); aAt.length < burst || bMs.length < others; ) {
    await sleep(100);
    progress(label, `${fmt(aAt.length)}/${fmt(burst)} answered, ${fmt(model.inflight())} model calls in flight (peak ${fmt(model.peak())}), worker RSS ${fmt(mib(worker.rssBytes()))} MiB`);
    const n = aAt.length + bMs.length;
    if (n !== last) {
      last = n;
      lastChange = performance.now();
    } else if (performance.now() - lastChange > 30_000) {
      complete = false;
      break;
    }
  }
  const toUs = nowUs();
  standIn.onReply(null);
  const tLast = aAt.length ? Math.max(...aAt) : performance.now();
  const cpuMs = worker.cpuMs() - cpuBefore;
  const pgMs = await pgCpu.stop();
  const natsMs = await natsCpu.stop();
  const benchUsage = process.cpuUsage(benchCpu0);
  const answered = Math.max(1, aAt.length + bMs.length);
  const peakRss = worker.peakRssBytes();
  const db = await pgClient(s.databaseUrl);
  const outcomes: Record<string, number> = {};
  for (const r of (await db.query<{ k: string; n: string }>(`select 'conversations ' || status as k, count(*) as n from conversations group by status union all select 'model_usage entries', count(*) from credit_ledger where kind = 'model_usage'`)).rows) {
    outcomes[r.k] = Number(r.n);
  }
  const stagesOf = await db.query<{ external_id: string; customer_at: Date; reply_at: Date }>(
    `select c.external_id, c.created_at as customer_at, r.created_at as reply_at
     from conversation_messages c join conversation_messages r on r.reply_to_id = c.id and r.role = 'agent'
     where c.role = 'customer' and c.external_id = any($1::text[])`,
    [[...bWall.keys()]],
  );
  await db.end();
  const stage = (name: string, values: number[]) => {
    const v = summarise(values);
    return { stage: name, p50: round(v.p50), max: round(v.max) };
  };
  const rowsOf = stagesOf.rows.map((r) => ({ w: bWall.get(r.external_id)!, stored: r.customer_at.getTime(), answered: r.reply_at.getTime() })).filter((r) => r.w);
  const otherStages = [
    stage('webhook → message stored', rowsOf.map((r) => r.stored - r.w.sent)),
    stage('stored → answer committed (place, model call)', rowsOf.map((r) => r.answered - r.stored)),
    stage('answer committed → reply at the helpdesk', rowsOf.map((r) => r.w.received - r.answered)),
  ];
  await worker.stop();
  await gateway.stop();
  await collectProfile(worker, { fromUs, toUs }, args.profileTop);
  await s.dispose();

  const seconds = (tLast - t0) / 1000;
  const peak = model.peak();
  const other = summarise(bMs);
  const result: BurstResult = {
    label,
    modelLatencyMs,
    helpdeskLatencyMs: args.helpdeskLatency,
    burst,
    rate: aAt.length / Math.max(0.001, seconds),
    steadyRate: steadyRate(Float64Array.from(aAt.sort((x, y) => x - y))),
    seconds,
    complete,
    peakInflight: peak,
    modelRequests: model.requests(),
    workerRssBeforeMiB: round(mib(rssBefore)),
    workerPeakRssMiB: round(mib(peakRss)),
    kibPerCallInFlight: round((peakRss - rssBefore) / 1024 / Math.max(1, peak), 1),
    kibPerMessageHeld: round((peakRss - rssBefore) / 1024 / burst, 1),
    workerCpuMsPerMessage: round(cpuMs / answered, 2),
    postgresCpuMsPerMessage: round(pgMs / answered, 2),
    natsCpuMsPerMessage: round(natsMs / answered, 2),
    benchCpuMsPerMessage: round((benchUsage.user + benchUsage.system) / 1000 / answered, 2),
    other: { count: others, answered: bMs.length, p50: round(other.p50), max: round(other.max) },
    otherStages,
    outcomes,
  };
  note(
    label,
    `${complete ? 'all' : 'ONLY'} ${fmt(aAt.length)} answered in ${seconds.toFixed(1)} s: ${fmt(result.rate)}/s (steady ${fmt(result.steadyRate)}/s), peak ${fmt(peak)} model calls in flight, ` +
      `worker RSS ${fmt(result.workerRssBeforeMiB)} → ${fmt(result.workerPeakRssMiB)} MiB, CPU ms/message worker ${result.workerCpuMsPerMessage} / PostgreSQL ${result.postgresCpuMsPerMessage} / NATS ${result.natsCpuMsPerMessage} / bench ${result.benchCpuMsPerMessage}; other company: p50 ${fmt(other.p50)} ms, max ${fmt(other.max)} ms`,
  );
  note(label, `other company's stages p50 / max: ${otherStages.map((st) => `${st.stage} ${fmt(st.p50)} / ${fmt(st.max)} ms`).join('; ')}`);
  if ((outcomes['conversations paused'] ?? 0) > 0) note(label, `WARNING: ${outcomes['conversations paused']} conversations were handed to a human`);
  return result;
}

export async function runModels(ctx: BenchContext): Promise<SectionResult> {
  const { args } = ctx;
  const model = await startModelStandIn();
  try {
    const instant = await burstOnce(ctx, model, 'models-instant', 0);
    const real = await burstOnce(ctx, model, 'models-real', args.modelsLatency);
    const ratio = real.rate / instant.rate;
    const fairnessTarget = args.modelsLatency + 1000;
    const concurrency = args.modelsConcurrency ? `MODEL_MAX_CONCURRENCY=${args.modelsConcurrency}` : 'MODEL_MAX_CONCURRENCY default';
    const rows: Row[] = [
      {
        section: 'models',
        metric: `answered msg/s, 1 worker, burst of ${fmt(args.modelsBurst)} (model ${args.modelsLatency} ms, helpdesk ${args.helpdeskLatency} ms, ${concurrency})`,
        value: fmt(real.rate),
        target: '≥ 1,000',
        ok: real.rate >= 1000 && real.complete,
      },
      { section: 'models', metric: '  the same burst with a model that answers at once', value: fmt(instant.rate) },
      { section: 'models', metric: '  ratio real latency / instant model', value: `${ratio.toFixed(2)}×`, target: '≥ 0.8×', ok: ratio >= 0.8 && real.complete },
      { section: 'models', metric: '  steady (10 % → 90 % of replies), real / instant', value: `${fmt(real.steadyRate)} / ${fmt(instant.steadyRate)}` },
      { section: 'models', metric: 'model calls in flight at most (real / instant)', value: `${fmt(real.peakInflight)} / ${fmt(instant.peakInflight)}` },
      {
        section: 'models',
        metric: 'worker memory per call in flight: RSS growth over the burst / peak in flight (/ messages held)',
        value: `${fmt(real.kibPerCallInFlight, 1)} KiB (${fmt(real.kibPerMessageHeld, 1)} KiB; ${fmt(real.workerRssBeforeMiB)} → ${fmt(real.workerPeakRssMiB)} MiB)`,
      },
      {
        section: 'models',
        metric: 'CPU ms per message: worker / PostgreSQL / nats-server / bench stand-ins (real; instant)',
        value: `${real.workerCpuMsPerMessage} / ${real.postgresCpuMsPerMessage} / ${real.natsCpuMsPerMessage} / ${real.benchCpuMsPerMessage}; ${instant.workerCpuMsPerMessage} / ${instant.postgresCpuMsPerMessage} / ${instant.natsCpuMsPerMessage} / ${instant.benchCpuMsPerMessage}`,
      },
      {
        section: 'models',
        metric: `fairness: another company's webhook → reply during the burst, p50 / slowest (${args.modelsOther} customers)`,
        value: `${fmt(real.other.p50)} / ${fmt(real.other.max)} ms`,
        target: `≤ ${fmt(fairnessTarget)} ms`,
        ok: real.other.answered === real.other.count && real.other.max <= fairnessTarget,
      },
    ];
    for (const st of real.otherStages) rows.push({ section: 'models', metric: `  stage ${st.stage}, p50 / slowest`, value: `${fmt(st.p50)} / ${fmt(st.max)} ms` });
    return { rows, data: { instant, real, ratio: round(ratio, 3) } };
  } finally {
    ctx.standIn.setLatency(0);
    await model.close();
  }
}
