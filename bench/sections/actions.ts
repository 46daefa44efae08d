import { performance } from 'node:perf_hooks';
import { startActionApiStandIn, ORDER_STATUS, type ActionApiStandIn } from '../lib/action-api-stand-in.js';
import { CpuMeter } from '../lib/children.js';
import { newScenario, pgClient, RUN_ID } from '../lib/env.js';
import { startModelStandIn, type ChatRequest, type ModelStandIn, type StandInTool } from '../lib/model-stand-in.js';
import { envelopeOf, inboxBody, publishEnvelopes, signBody } from '../lib/payloads.js';
import { note, progress } from '../lib/progress.js';
import { createTenant, httpRequest, startGatewayChild, startWorkerChild, type GatewayChild, type Tenant, type WorkerChild } from '../lib/setup.js';
import { fmt, round, steadyRate, summarise } from '../lib/stats.js';
import type { BenchContext, Row, SectionResult } from './types.js';

/**
 * Actions (issue #30): what one call of a company's own HTTP API costs an answer. One gateway
 * and one worker (children), one company with an OpenAI-compatible model agent whose server
 * is the model stand-in (`--actions-model-latency` ms per turn, 1 s) and whose helpdesk is
 * the Chat2Desk stand-in (`--helpdesk-latency`, 150 ms). Two runs of `--actions-customers`
 * customers (300, one message each, published into JetStream as fast as it takes them, the
 * gateway's envelopes), each after an unmeasured burst of the same size (warm connections):
 * 1. the agent has no action: the model answers text in its one turn;
 * 2. the same agent with one action `get_order` (GET `<order API>/orders/{orderId}`, created
 *    through `POST /api/agents/:id/actions`, the order API a stand-in answering after
 *    `--actions-latency` ms, 100): the model calls it in its first turn and answers with its
 *    result in a second.
 *
 * Figures per run: answers/s (first publish → last reply), publish → reply p50 / p99 and its
 * stages, model and action requests per answer, worker and PostgreSQL CPU ms per answer. The
 * claim checked: the action costs an answer one more model turn and the API's time, not more.
 */
export interface ActionsRun {
  label: string;
  withAction: boolean;
  customers: number;
  answered: number;
  complete: boolean;
  /** First publish → last reply. */
  seconds: number;
  /** Answers per second, first publish → last reply. */
  rate: number;
  steadyRate: number;
  /** Publish → reply at the helpdesk, ms. */
  replyMs: { p50: number; p90: number; p99: number; max: number };
  modelRequests: number;
  /** Model answers that were a call of get_order, and requests that carried its result. */
  modelToolCalls: number;
  modelToolResults: number;
  modelPeakInflight: number;
  actionRequests: number;
  actionPeakInflight: number;
  /** Replies quoting the order API's answer (the model's second turn saw the result). */
  repliesWithOrder: number;
  workerCpuMsPerMessage: number;
  postgresCpuMsPerMessage: number;
  /** Where an answer's time went, p50 / p99 ms (stagesOf). */
  stages: { stage: string; p50: number; p99: number }[];
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

const ACTION = 'get_order';
const orderIdOf = (i: number) => `A-${1000 + i}`;
const customerOfOrder = (orderId: string): number | null => {
  const m = /^A-(\d+)$/.exec(orderId);
  return m ? Number(m[1]) - 1000 : null;
};
/** The customer a model request answers: its question names the customer's order. */
const customerOf = (request: ChatRequest): number | null => {
  const asked = [...(request.messages ?? [])].reverse().find((m) => m.role === 'user');
  const m = typeof asked?.content === 'string' ? /number (A-\d+)\./.exec(asked.content) : null;
  return m ? customerOfOrder(m[1]!) : null;
};

/** The model's side: call get_order with an order number, then answer with what the API said. */
const GET_ORDER_MODEL: StandInTool = {
  name: ACTION,
  args: (request, n) => ({ orderId: orderIdOf(customerOf(request) ?? n) }),
  answer: (result) => {
    try {
      const r = JSON.parse(result) as { status?: number; body?: { orderId?: string; status?: string; eta?: string } };
      if (r.body?.status) return `Your order ${r.body.orderId} is ${r.body.status}; it arrives in ${r.body.eta}.`;
    } catch {
      /* answered below */
    }
    return `I could not look your order up (${result.slice(0, 80)}).`;
  },
};

const question = (i: number) => `Where is my order? It is number ${orderIdOf(i)}.`;
const quotesOrder = (text: string) => text.includes(`is ${ORDER_STATUS}`);

interface Stage {
  gateway: GatewayChild;
  worker: WorkerChild;
  tenant: Tenant;
  model: ModelStandIn;
  api: ActionApiStandIn;
  databaseName: string;
  databaseUrl: string;
  natsPrefix: string;
}

async function webhook(stage: Stage, messageId: string, clientId: string, i: number): Promise<void> {
  const body = inboxBody(messageId, clientId, question(i), i);
  const res = await httpRequest(`${stage.gateway.url}/api/webhook/helpdesk/${stage.tenant.integrationId}`, 'POST', body, {
    'content-type': 'application/json',
    'x-webhook-signature': signBody(stage.tenant.webhookSecret, body),
  });
  if (res.status !== 200) throw new Error(`webhook: HTTP ${res.status} ${res.body}`);
}

/**
 * An unmeasured burst as large as the measured one: JIT, caches, and as many keep-alive
 * connections to the model (and the order API) as the burst needs, so neither run pays for
 * opening them and the other not.
 */
async function warmUp(ctx: BenchContext, stage: Stage, label: string, n: number): Promise<void> {
  ctx.standIn.reset();
  const integration = { id: stage.tenant.integrationId, companyId: stage.tenant.companyId };
  await publishEnvelopes(ctx.nc, stage.natsPrefix, ctx.args.partitions, n, (i) => envelopeOf(integration, inboxBody(`${RUN_ID}-${label}-warm${i}`, `${label}-warm-${i}`, question(i), i)));
  if (!(await ctx.standIn.waitForCount(n, { stallMs: 30_000, tick: (k) => progress(label, `warm-up: ${fmt(k)}/${fmt(n)} answered`) }))) throw new Error(`${label}: the warm-up was not answered`);
}

async function createAction(stage: Stage): Promise<void> {
  const body = {
    name: ACTION,
    description: 'Look an order up by its number: its status and when it arrives.',
    parameters: { type: 'object', properties: { orderId: { type: 'string', description: 'The order number, e.g. A-1001' } }, required: ['orderId'], additionalProperties: false },
    // A company's API takes a key: the sealed header is opened for every call, as in production.
    request: { method: 'GET', url: `${stage.api.url}/orders/{orderId}`, headers: { authorization: 'Bearer bench-orders-key' } },
    timeoutMs: 5_000,
  };
  const res = await httpRequest(`${stage.gateway.url}/api/agents/${stage.tenant.agentId}/actions`, 'POST', JSON.stringify(body), {
    'content-type': 'application/json',
    authorization: `Bearer ${stage.tenant.token}`,
  });
  if (res.status !== 201) throw new Error(`POST /api/agents/:id/actions: HTTP ${res.status} ${res.body.slice(0, 300)}`);
}

/** One message at a time until the worker calls the new action (it reads an agent's tools with its config, cached for a few seconds). */
async function untilActionCalled(ctx: BenchContext, stage: Stage, label: string): Promise<void> {
  stage.api.reset();
  const until = performance.now() + 60_000;
  for (let k = 0; stage.api.requests() === 0; k++) {
    if (performance.now() > until) throw new Error(`${label}: the worker never called the action ${ACTION} within 60 s`);
    ctx.standIn.reset();
    await webhook(stage, `${RUN_ID}-${label}-probe${k}`, `${label}-probe-${k}`, k);
    if (!(await ctx.standIn.waitForCount(1, { stallMs: 30_000 }))) throw new Error(`${label}: a probe message was not answered`);
  }
}

async function measure(ctx: BenchContext, stage: Stage, label: string, withAction: boolean): Promise<ActionsRun> {
  const { args, standIn } = ctx;
  const customers = args.actionsCustomers;
  const { model, api, worker } = stage;
  standIn.reset();
  model.reset();
  api.reset();
  const prefix = `${label}-`;
  const times = new Timeline(customers);
  const replyMs: number[] = [];
  const replyAt: number[] = [];
  let withOrder = 0;
  standIn.onReply((clientId, at, text) => {
    if (!clientId.startsWith(prefix)) return;
    const i = Number(clientId.slice(prefix.length));
    if (!times.has(i) || Number.isNaN(times.published[i]!)) return;
    times.replied[i] = at;
    replyMs.push(at - times.published[i]!);
    replyAt.push(at);
    if (quotesOrder(text)) withOrder++;
  });
  model.onRequest((request, answer, at) => {
    const i = customerOf(request);
    if (i === null || !times.has(i)) return;
    if (answer === 'result') times.secondTurn[i] = at;
    else if (Number.isNaN(times.firstTurn[i]!)) times.firstTurn[i] = at;
  });
  api.onRequest((orderId, at) => {
    const i = customerOfOrder(orderId);
    if (i !== null && times.has(i)) times.action[i] = at;
  });
  const cpuBefore = worker.cpuMs();
  const pgCpu = CpuMeter.postgres(stage.databaseName);
  await pgCpu.start(500);
  const integration = { id: stage.tenant.integrationId, companyId: stage.tenant.companyId };
  const messageIdOf = (i: number) => `${RUN_ID}-${label}-${i}`;
  const t0 = performance.now();
  await publishEnvelopes(ctx.nc, stage.natsPrefix, args.partitions, customers, (i) => {
    times.published[i] = performance.now();
    return envelopeOf(integration, inboxBody(messageIdOf(i), `${prefix}${i}`, question(i), i));
  });
  let complete = true;
  for (let last = -1, lastChange = performance.now(); replyMs.length < customers; ) {
    await sleep(100);
    progress(label, `${fmt(replyMs.length)}/${fmt(customers)} answered; in flight: ${fmt(model.inflight())} model calls, ${fmt(api.inflight())} action calls`);
    if (replyMs.length !== last) {
      last = replyMs.length;
      lastChange = performance.now();
    } else if (performance.now() - lastChange > 30_000) {
      complete = false;
      break;
    }
  }
  standIn.onReply(null);
  model.onRequest(null);
  api.onRequest(null);
  const cpuMs = worker.cpuMs() - cpuBefore;
  const pgMs = await pgCpu.stop();
  const answered = replyMs.length;
  const tLast = answered ? Math.max(...replyAt) : performance.now();
  const seconds = (tLast - t0) / 1000;
  const s = summarise(replyMs);
  const stages = await stagesOf(stage.databaseUrl, times, messageIdOf, args.actionsModelLatency, args.actionsLatency);
  const run: ActionsRun = {
    label,
    withAction,
    customers,
    answered,
    complete,
    seconds: round(seconds, 3),
    rate: answered / Math.max(0.001, seconds),
    steadyRate: steadyRate(Float64Array.from(replyAt)),
    replyMs: { p50: round(s.p50), p90: round(s.p90), p99: round(s.p99), max: round(s.max) },
    modelRequests: model.requests(),
    modelToolCalls: model.toolCalls(),
    modelToolResults: model.toolResults(),
    modelPeakInflight: model.peak(),
    actionRequests: api.requests(),
    actionPeakInflight: api.peak(),
    repliesWithOrder: withOrder,
    workerCpuMsPerMessage: round(cpuMs / Math.max(1, answered), 2),
    postgresCpuMsPerMessage: round(pgMs / Math.max(1, answered), 2),
    stages,
  };
  note(
    label,
    `${complete ? 'all' : 'ONLY'} ${fmt(answered)}/${fmt(customers)} answered in ${seconds.toFixed(2)} s: ${fmt(run.rate)}/s; publish → reply p50 ${fmt(s.p50)} / p99 ${fmt(s.p99)} / max ${fmt(s.max)} ms; ` +
      `${fmt(run.modelRequests)} model requests (${fmt(run.modelToolCalls)} tool calls), ${fmt(run.actionRequests)} action requests; CPU ms/answer worker ${run.workerCpuMsPerMessage} / PostgreSQL ${run.postgresCpuMsPerMessage}`,
  );
  note(label, `stages p50 / p99: ${stages.map((st) => `${st.stage} ${fmt(st.p50)} / ${fmt(st.p99)} ms`).join('; ')}`);
  return run;
}

/** When each customer's message reached each place (performance.now() ms; NaN: never). */
class Timeline {
  readonly published: Float64Array;
  readonly firstTurn: Float64Array;
  readonly action: Float64Array;
  readonly secondTurn: Float64Array;
  readonly replied: Float64Array;
  constructor(readonly size: number) {
    const none = () => new Float64Array(size).fill(NaN);
    this.published = none();
    this.firstTurn = none();
    this.action = none();
    this.secondTurn = none();
    this.replied = none();
  }
  has(i: number): boolean {
    return Number.isInteger(i) && i >= 0 && i < this.size;
  }
}

/**
 * Where an answer's time went: the bench's own clocks (publish, requests at the stand-ins,
 * reply at the helpdesk) and the rows the worker wrote (message stored, answer committed:
 * PostgreSQL's now(), its transaction's start), all on this machine's wall clock.
 */
async function stagesOf(databaseUrl: string, t: Timeline, messageIdOf: (i: number) => string, modelMs: number, actionMs: number): Promise<ActionsRun['stages']> {
  const ids = Array.from({ length: t.size }, (_, i) => messageIdOf(i));
  const db = await pgClient(databaseUrl);
  const found = await db.query<{ external_id: string; customer_at: Date; reply_at: Date }>(
    `select c.external_id, c.created_at as customer_at, r.created_at as reply_at
     from conversation_messages c join conversation_messages r on r.reply_to_id = c.id and r.role = 'agent'
     where c.role = 'customer' and c.external_id = any($1::text[])`,
    [ids],
  );
  // The tool-call ledger's own clock: a GET action's row is written once, after the call.
  const ledger = await db.query<{ external_id: string; finished_at: Date | null }>(
    `select c.external_id, t.finished_at
     from agent_tool_calls t join conversation_messages c on c.id = t.message_id
     where c.external_id = any($1::text[])`,
    [ids],
  );
  await db.end();
  const index = new Map(ids.map((id, i) => [id, i]));
  // performance.now() → wall-clock ms, to compare with PostgreSQL's timestamps.
  const wall = (perf: number) => performance.timeOrigin + perf;
  const stored = new Float64Array(t.size).fill(NaN);
  const committed = new Float64Array(t.size).fill(NaN);
  for (const r of found.rows) {
    const i = index.get(r.external_id);
    if (i === undefined) continue;
    stored[i] = r.customer_at.getTime();
    committed[i] = r.reply_at.getTime();
  }
  const finished = new Float64Array(t.size).fill(NaN);
  for (const r of ledger.rows) {
    const i = index.get(r.external_id);
    if (i === undefined) continue;
    finished[i] = r.finished_at?.getTime() ?? NaN;
  }
  const each = (f: (i: number) => number) => Array.from({ length: t.size }, (_, i) => f(i)).filter((v) => Number.isFinite(v));
  const lastTurn = (i: number) => (Number.isNaN(t.secondTurn[i]!) ? t.firstTurn[i]! : t.secondTurn[i]!);
  const stage = (name: string, values: number[]) => {
    const v = summarise(values);
    return { stage: name, p50: round(v.p50), p99: round(v.p99) };
  };
  return [
    stage('publish → message stored', each((i) => stored[i]! - wall(t.published[i]!))),
    stage('message stored → first model request', each((i) => wall(t.firstTurn[i]!) - stored[i]!)),
    // A GET action may be repeated: its ledger row is written once, after the call.
    stage(`model's tool call (${fmt(modelMs)} ms after its request) → request at the API`, each((i) => wall(t.action[i]!) - wall(t.firstTurn[i]! + modelMs))),
    stage(`API's answer (${fmt(actionMs)} ms after its request) → ledger row written`, each((i) => finished[i]! - wall(t.action[i]! + actionMs))),
    stage('ledger row written → second model request', each((i) => wall(t.secondTurn[i]!) - finished[i]!)),
    stage('last model answer → answer committed', each((i) => committed[i]! - wall(lastTurn(i) + modelMs))),
    stage('answer committed → reply at the helpdesk', each((i) => wall(t.replied[i]!) - committed[i]!)),
  ];
}

export async function runActions(ctx: BenchContext): Promise<SectionResult> {
  const { args, standIn } = ctx;
  const modelMs = args.actionsModelLatency;
  const actionMs = args.actionsLatency;
  const model = await startModelStandIn();
  const api = await startActionApiStandIn();
  model.setLatency(modelMs);
  // The stand-in calls get_order only when the request offers it: in the first run it answers text.
  model.callTool(GET_ORDER_MODEL);
  api.setLatency(actionMs);
  standIn.setLatency(args.helpdeskLatency);
  const s = newScenario('actions');
  let gateway: GatewayChild | null = null;
  let worker: WorkerChild | null = null;
  try {
    note('actions', `setting up (database ${s.databaseName}; model ${modelMs} ms per turn, action ${actionMs} ms, helpdesk ${args.helpdeskLatency} ms)`);
    gateway = await startGatewayChild(s, 'actions-gateway', { partitions: args.partitions, profile: false, nodeFlags: args.childFlags });
    const tenant = await createTenant(gateway.url, standIn, { baseUrl: model.baseUrl, name: 'gpt-4o-mini', apiKey: 'sk-bench-actions' });
    worker = await startWorkerChild(s, 'actions-worker', { partitions: args.partitions, profile: args.profile, nodeFlags: args.childFlags });
    const deadline = performance.now() + 30_000;
    while (worker.acquired.length < args.partitions && performance.now() < deadline) await sleep(50);
    const stage: Stage = { gateway, worker, tenant, model, api, databaseName: s.databaseName, databaseUrl: s.databaseUrl, natsPrefix: s.natsPrefix };
    const warm = args.actionsCustomers;

    await warmUp(ctx, stage, 'actions-none', warm);
    const plain = await measure(ctx, stage, 'actions-none', false);

    await createAction(stage);
    await untilActionCalled(ctx, stage, 'actions-get-order');
    await warmUp(ctx, stage, 'actions-get-order', warm);
    const called = await measure(ctx, stage, 'actions-get-order', true);

    const db = await pgClient(s.databaseUrl);
    const ledger: Record<string, number> = {};
    for (const r of (await db.query<{ status: string; n: string }>(`select status, count(*) as n from agent_tool_calls group by status`)).rows) ledger[r.status] = Number(r.n);
    const paused = Number((await db.query<{ n: string }>(`select count(*) as n from conversations where status = 'paused'`)).rows[0]?.n ?? 0);
    await db.end();
    if (paused > 0) note('actions', `WARNING: ${paused} conversations were handed to a human`);

    // The claim: one more model turn and the API's time, not more (10 % of slack for a shared machine).
    const extraMs = modelMs + actionMs;
    const p99Limit = (plain.replyMs.p99 + extraMs) * 1.1;
    const p99Ratio = called.replyMs.p99 / plain.replyMs.p99;
    const secondsLimit = (plain.seconds + extraMs / 1000) * 1.1;
    const rateRatio = called.rate / plain.rate;
    const rateRatioFloor = plain.seconds / secondsLimit;
    const perAnswer = (n: number, r: ActionsRun) => (r.answered ? n / r.answered : NaN);
    const modelPer = [perAnswer(plain.modelRequests, plain), perAnswer(called.modelRequests, called)] as const;
    const actionPer = [perAnswer(plain.actionRequests, plain), perAnswer(called.actionRequests, called)] as const;
    const bothComplete = plain.complete && called.complete;
    const n = args.actionsCustomers;
    const rows: Row[] = [
      {
        section: 'actions',
        metric: `answers/s, ${fmt(n)} customers (model ${fmt(modelMs)} ms/turn, helpdesk ${args.helpdeskLatency} ms): no action / one ${ACTION} call (${actionMs} ms)`,
        value: `${fmt(plain.rate)} / ${fmt(called.rate)}`,
      },
      {
        section: 'actions',
        metric: '  throughput ratio with / without the action (first publish → last reply)',
        value: `${rateRatio.toFixed(2)}× (${plain.seconds.toFixed(2)} → ${called.seconds.toFixed(2)} s)`,
        target: `≥ ${rateRatioFloor.toFixed(2)}×: ≤ one extra turn (≤ (${plain.seconds.toFixed(2)} s + ${fmt(extraMs)} ms) × 1.1)`,
        ok: bothComplete && called.seconds <= secondsLimit,
      },
      { section: 'actions', metric: '  publish → reply p50 / p99, no action', value: `${fmt(plain.replyMs.p50)} / ${fmt(plain.replyMs.p99)} ms` },
      { section: 'actions', metric: `  publish → reply p50 / p99, one ${ACTION} call`, value: `${fmt(called.replyMs.p50)} / ${fmt(called.replyMs.p99)} ms` },
      {
        section: 'actions',
        metric: '  p99 with the action (ratio with / without)',
        value: `${fmt(called.replyMs.p99)} ms (${p99Ratio.toFixed(2)}×)`,
        target: `≈ one extra turn: ≤ (${fmt(plain.replyMs.p99)} + ${fmt(modelMs)} model + ${fmt(actionMs)} action) × 1.1 = ${fmt(p99Limit)} ms`,
        ok: bothComplete && called.replyMs.p99 <= p99Limit,
      },
      {
        section: 'actions',
        metric: 'model requests per answer, no action / with',
        value: `${fmt(modelPer[0], 2)} / ${fmt(modelPer[1], 2)}`,
        target: '1 / 2',
        ok: bothComplete && modelPer[0] === 1 && modelPer[1] === 2,
      },
      {
        section: 'actions',
        metric: `action requests per answer, no action / with (at most ${fmt(called.actionPeakInflight)} in flight)`,
        value: `${fmt(actionPer[0], 2)} / ${fmt(actionPer[1], 2)}`,
        target: '0 / 1',
        ok: bothComplete && actionPer[0] === 0 && actionPer[1] === 1,
      },
      {
        section: 'actions',
        metric: "  replies quoting the order API's answer",
        value: `${fmt(called.repliesWithOrder)} / ${fmt(called.answered)}`,
        target: 'all',
        ok: called.complete && called.repliesWithOrder === called.answered,
      },
      {
        section: 'actions',
        metric: 'CPU ms per answer, worker / PostgreSQL: no action; with',
        value: `${plain.workerCpuMsPerMessage} / ${plain.postgresCpuMsPerMessage}; ${called.workerCpuMsPerMessage} / ${called.postgresCpuMsPerMessage}`,
      },
      ...plain.stages.map((st, k) => ({
        section: 'actions',
        metric: `  stage ${st.stage}, p50 / p99: no action; with`,
        value: `${fmt(st.p50)} / ${fmt(st.p99)}; ${fmt(called.stages[k]?.p50)} / ${fmt(called.stages[k]?.p99)} ms`,
      })),
      { section: 'actions', metric: 'tool-call ledger rows by status (probes and warm-up included)', value: Object.entries(ledger).map(([k, v]) => `${k} ${fmt(v)}`).join(', ') || '–' },
    ];
    return { rows, data: { modelLatencyMs: modelMs, actionLatencyMs: actionMs, helpdeskLatencyMs: args.helpdeskLatency, plain, called, p99Ratio: round(p99Ratio, 3), rateRatio: round(rateRatio, 3), p99LimitMs: round(p99Limit), ledger, paused } };
  } finally {
    await worker?.stop();
    await gateway?.stop();
    await s.dispose();
    standIn.setLatency(0);
    await api.close();
    await model.close();
  }
}
