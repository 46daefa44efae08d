import { performance } from 'node:perf_hooks';
import { CpuMeter } from '../lib/children.js';
import { newScenario, pgClient, RUN_ID } from '../lib/env.js';
import { ForeignLoad } from '../lib/load.js';
import { startModelStandIn, type ChatRequest, type ModelStandIn } from '../lib/model-stand-in.js';
import { envelopeOf, inboxBody, publishEnvelopes, QUESTIONS, signBody } from '../lib/payloads.js';
import { note, progress } from '../lib/progress.js';
import { createTenant, httpRequest, startGatewayChild, startWorkerChild, type GatewayChild, type Tenant, type WorkerChild } from '../lib/setup.js';
import { fmt, round, summarise } from '../lib/stats.js';
import type { BenchContext, Row, SectionResult } from './types.js';

/**
 * Replay (issue #31): what replaying past conversations with changed agent settings costs,
 * and what it costs the live customers meanwhile. One gateway and one worker (children), two
 * companies with an OpenAI-compatible model agent each, both served by the model stand-in
 * (`--replay-latency` ms per call, 1 s), the Chat2Desk stand-in as their helpdesk
 * (`--helpdesk-latency`, 150 ms).
 *
 * Company A gets `--replay-conversations` (200) conversations of `--replay-messages` (3)
 * answered customer messages each, through the real message path (the gateway's envelopes
 * published into JetStream, one message per conversation per round, each round answered
 * before the next). Then, in one run:
 * 1. **throughput**: `POST /api/agents/:id/replays` with a changed systemPrompt over all of
 *    them, polled (`GET …/replays/:rid?items=none`) until done: replayed messages/s and the
 *    time to done;
 * 2. **live p99**: company B's customers write through the gateway as signed webhooks at
 *    `--replay-live-rate` (30/s, one new customer each, far under the worker's model places)
 *    for `--replay-live-duration` s (12) per window, `--replay-live-rounds` (2) times a window
 *    with no replay then one while another replay of the same conversations runs (started
 *    first; checked to be still running when the window's last live reply arrives), so a
 *    drift of the machine's other work falls on both. Webhook → reply at the helpdesk p50 /
 *    p99 of each kind of window (the rounds pooled) and the ratio of the p99s (target ≤ 1.2×).
 *
 * The model stand-in tells the calls apart by the system prompt (each replay's carries its
 * own mark), so the figures also say how many model calls each replay had in flight, that
 * every replayed call used the changed prompt, and the helpdesk stand-in that a replay sent
 * nothing to anyone.
 */

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

const BASE_PROMPT = 'You answer customers of a shop.';
/** The changed prompt of each replay: its mark tells its model calls apart at the stand-in. */
const changedPrompt = (mark: string) => `${BASE_PROMPT} Answer in two sentences at most. [${mark}]`;

interface ReplayView {
  id: number;
  status: 'running' | 'done' | 'failed';
  total: number;
  done: number;
  error: string | null;
  createdAt: string;
  finishedAt: string | null;
  summary?: { same: number; changed: number; newHandoffs: number; resolvedHandoffs: number; costUsd: string };
}

interface Stage {
  gateway: GatewayChild;
  worker: WorkerChild;
  a: Tenant;
  b: Tenant;
  model: ModelStandIn;
  natsPrefix: string;
  databaseName: string;
  databaseUrl: string;
}

/** When each kind of model call arrived at the stand-in (performance.now() ms), by the prompt it carried. */
class ModelCalls {
  readonly byMark = new Map<string, number[]>();
  readonly live: number[] = [];
  constructor(private readonly marks: string[]) {}
  see(request: ChatRequest, at: number): void {
    const system = request.messages?.find((m) => m.role === 'system')?.content;
    const text = typeof system === 'string' ? system : '';
    const mark = this.marks.find((m) => text.includes(`[${m}]`));
    if (mark === undefined) this.live.push(at);
    else {
      let list = this.byMark.get(mark);
      if (!list) this.byMark.set(mark, (list = []));
      list.push(at);
    }
  }
  of(mark: string): number[] {
    return this.byMark.get(mark) ?? [];
  }
}

/** The most calls in flight at once, from their arrivals (each is answered `latencyMs` later). */
function peakInflight(arrivals: number[], latencyMs: number): number {
  const t = [...arrivals].sort((x, y) => x - y);
  let peak = 0;
  for (let i = 0, j = 0; i < t.length; i++) {
    while (t[j]! <= t[i]! - latencyMs) j++;
    peak = Math.max(peak, i - j + 1);
  }
  return peak;
}

/** Calls in flight on average over [from, to] (each lasts `latencyMs` from its arrival). */
function meanInflight(arrivals: number[], latencyMs: number, from: number, to: number): number {
  let busy = 0;
  for (const a of arrivals) busy += Math.max(0, Math.min(to, a + latencyMs) - Math.max(from, a));
  return to > from ? busy / (to - from) : NaN;
}

async function api<T>(stage: Stage, method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await httpRequest(`${stage.gateway.url}${path}`, method, body === undefined ? undefined : JSON.stringify(body), {
    'content-type': 'application/json',
    authorization: `Bearer ${stage.a.token}`,
  });
  let parsed: unknown = null;
  try {
    parsed = res.body ? JSON.parse(res.body) : null;
  } catch {
    parsed = res.body;
  }
  return { status: res.status, body: parsed as T };
}

async function startReplay(stage: Stage, mark: string, conversations: number): Promise<{ id: number; total: number; postedAt: number }> {
  const postedAt = performance.now();
  const res = await api<{ replay: { id: number; total: number; status: string } }>(stage, 'POST', `/api/agents/${stage.a.agentId}/replays`, {
    changes: { systemPrompt: changedPrompt(mark) },
    conversations: { limit: conversations },
  });
  if (res.status !== 201) throw new Error(`POST /api/agents/:id/replays: HTTP ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
  return { id: res.body.replay.id, total: res.body.replay.total, postedAt };
}

async function replayView(stage: Stage, id: number): Promise<ReplayView> {
  const res = await api<{ replay: ReplayView }>(stage, 'GET', `/api/agents/${stage.a.agentId}/replays/${id}?items=none`);
  if (res.status !== 200) throw new Error(`GET /api/agents/:id/replays/${id}: HTTP ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
  return res.body.replay;
}

/**
 * Polls a replay every second (as the dashboard does while one runs) until it is no longer
 * running (or made no progress for `stallMs`). Its duration comes from its own timestamps,
 * not from this poll.
 */
async function untilFinished(stage: Stage, label: string, id: number, stallMs = 60_000): Promise<{ view: ReplayView; seenAt: number }> {
  let lastDone = -1;
  let lastChange = performance.now();
  for (;;) {
    const view = await replayView(stage, id);
    if (view.status !== 'running') return { view, seenAt: performance.now() };
    progress(label, `replay ${id}: ${fmt(view.done)}/${fmt(view.total)} answered, ${fmt(stage.model.inflight())} model calls in flight`);
    if (view.done !== lastDone) {
      lastDone = view.done;
      lastChange = performance.now();
    } else if (performance.now() - lastChange > stallMs) throw new Error(`${label}: replay ${id} made no progress for ${stallMs / 1000} s (${view.done}/${view.total})`);
    await sleep(1000);
  }
}

/** Company A's conversations: one answered customer message per conversation per round, through JetStream as the gateway publishes them. */
async function makeConversations(ctx: BenchContext, stage: Stage, conversations: number, messages: number): Promise<void> {
  const integration = { id: stage.a.integrationId, companyId: stage.a.companyId };
  for (let r = 0; r < messages; r++) {
    ctx.standIn.reset();
    await publishEnvelopes(ctx.nc, stage.natsPrefix, ctx.args.partitions, conversations, (c) =>
      envelopeOf(integration, inboxBody(`${RUN_ID}-replay-c${c}-m${r}`, `rc-${c}`, QUESTIONS[(c + r) % QUESTIONS.length]!, c)),
    );
    const answered = await ctx.standIn.waitForCount(conversations, {
      stallMs: 30_000,
      tick: (k) => progress('replay', `conversations: round ${r + 1}/${messages}, ${fmt(k)}/${fmt(conversations)} answered`),
    });
    if (!answered) throw new Error(`replay: round ${r + 1} of the conversations was not answered (${ctx.standIn.count()}/${conversations})`);
  }
}

interface LiveWindow {
  label: string;
  sent: number;
  answered: number;
  failures: number;
  /** Replies at the helpdesk that were not this window's (a replay must send nothing). */
  foreignReplies: number;
  /** Webhook POST started → reply at the helpdesk, ms: summary, and every one (pooled over the rounds). */
  replyMs: { p50: number; p90: number; p99: number; max: number };
  samples: number[];
  /** The 10 slowest: when sent (s after the window's start) and webhook → reply (ms). */
  slowest: { atS: number; ms: number }[];
  /** Wall-clock ms by message id: webhook sent, reply at the helpdesk (for the stages). */
  wall: Map<string, { sent: number; received: number }>;
  /** performance.now() of the first send and of the last reply. */
  from: number;
  to: number;
  /** Cores used over the window by the worker, by PostgreSQL's backends of the scenario, and by work that is not the bench's (other test suites). */
  workerCores: number;
  postgresCores: number;
  otherCores: number;
}

/**
 * Company B's live load: one signed webhook every 1 / rate s (on a schedule: a slow answer
 * never delays the next send), each from a new customer, for `seconds`; then waits for
 * every reply (or 30 s without one).
 */
async function liveLoad(ctx: BenchContext, stage: Stage, label: string, rate: number, seconds: number): Promise<LiveWindow> {
  const { standIn } = ctx;
  const url = `${stage.gateway.url}/api/webhook/helpdesk/${stage.b.integrationId}`;
  const total = Math.max(1, Math.round(rate * seconds));
  const interval = 1000 / rate;
  const sentAt = new Map<string, number>();
  const wall = new Map<string, { sent: number; received: number }>();
  const toWall = (perf: number) => performance.timeOrigin + perf;
  const messageIdOf = (clientId: string) => `${RUN_ID}-${clientId}`;
  const replyMs: number[] = [];
  const timed: { atS: number; ms: number }[] = [];
  let t0 = 0;
  let lastReply = 0;
  let foreign = 0;
  let failures = 0;
  standIn.reset();
  standIn.onReply((clientId, at) => {
    const sent = sentAt.get(clientId);
    if (sent === undefined) {
      foreign++;
      return;
    }
    sentAt.delete(clientId);
    replyMs.push(at - sent);
    timed.push({ atS: round((sent - t0) / 1000, 2), ms: round(at - sent) });
    wall.set(messageIdOf(clientId), { sent: toWall(sent), received: toWall(at) });
    lastReply = at;
  });
  const inflight: Promise<void>[] = [];
  const load = new ForeignLoad();
  const pgCpu = CpuMeter.postgres(stage.databaseName);
  await Promise.all([load.start(), pgCpu.start(500)]);
  const workerCpu0 = stage.worker.cpuMs();
  t0 = performance.now();
  for (let i = 0; i < total; i++) {
    const due = t0 + i * interval;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    const clientId = `${label}-${i}`;
    const body = inboxBody(messageIdOf(clientId), clientId, QUESTIONS[i % QUESTIONS.length]!, 50_000 + i);
    sentAt.set(clientId, performance.now());
    inflight.push(
      httpRequest(url, 'POST', body, { 'content-type': 'application/json', 'x-webhook-signature': signBody(stage.b.webhookSecret, body) }).then(
        (res) => {
          if (res.status !== 200) failures++;
        },
        () => {
          failures++;
        },
      ),
    );
    if (i % 10 === 0) progress(label, `${i}/${total} sent, ${replyMs.length} answered, ${fmt(stage.model.inflight())} model calls in flight`);
  }
  await Promise.all(inflight);
  for (let last = -1, lastChange = performance.now(); replyMs.length < total; ) {
    await sleep(50);
    if (replyMs.length !== last) {
      last = replyMs.length;
      lastChange = performance.now();
    } else if (performance.now() - lastChange > 30_000) break;
  }
  standIn.onReply(null);
  const elapsed = performance.now() - t0;
  const workerCores = (stage.worker.cpuMs() - workerCpu0) / elapsed;
  const postgresCores = (await pgCpu.stop()) / elapsed;
  const { foreignCores } = await load.stop();
  const s = summarise(replyMs);
  return {
    label,
    sent: total,
    answered: replyMs.length,
    failures,
    foreignReplies: foreign,
    replyMs: { p50: round(s.p50, 1), p90: round(s.p90, 1), p99: round(s.p99, 1), max: round(s.max, 1) },
    samples: replyMs,
    slowest: timed.sort((x, y) => y.ms - x.ms).slice(0, 10),
    wall,
    from: t0,
    to: lastReply || performance.now(),
    workerCores: round(workerCores, 2),
    postgresCores: round(postgresCores, 2),
    otherCores: round(foreignCores, 2),
  };
}

/** One round of the live measure: a window without a replay, then one while a replay runs. */
interface LiveRound {
  without: LiveWindow;
  with: LiveWindow;
  /** The replay was still running when the last live reply of its window arrived. */
  stillRunning: boolean;
  doneAtStart: number;
  doneAtEnd: number;
  statusAtEnd: string;
  /** Model calls in flight on average over the window with the replay. */
  inflight: { replay: number; live: number };
  replay: ReplayRun;
}

interface ReplayRun {
  id: number;
  total: number;
  status: string;
  error: string | null;
  /** POST → done, on the server's clock (createdAt → finishedAt), s. */
  seconds: number;
  /** Replayed messages per second over that time. */
  rate: number;
  /** POST → the replay's first model call (the worker's poll picking it up), ms. */
  startMs: number;
  /** The replay's first model call → its last model answer, s, and messages/s over it. */
  workSeconds: number;
  workRate: number;
  /** Model calls carrying this replay's changed prompt (the stand-in's count). */
  modelCalls: number;
  /** The most of them in flight at once. */
  peakInflight: number;
  summary: ReplayView['summary'] | null;
}

function replayRun(started: { id: number; total: number; postedAt: number }, view: ReplayView, arrivals: number[], latencyMs: number): ReplayRun {
  const seconds = view.finishedAt ? (Date.parse(view.finishedAt) - Date.parse(view.createdAt)) / 1000 : NaN;
  const first = arrivals.length ? Math.min(...arrivals) : NaN;
  const last = arrivals.length ? Math.max(...arrivals) + latencyMs : NaN;
  const workSeconds = (last - first) / 1000;
  return {
    id: view.id,
    total: view.total,
    status: view.status,
    error: view.error,
    seconds: round(seconds, 2),
    rate: round(view.total / seconds, 1),
    startMs: round(first - started.postedAt),
    workSeconds: round(workSeconds, 2),
    workRate: round(view.total / workSeconds, 1),
    modelCalls: arrivals.length,
    peakInflight: peakInflight(arrivals, latencyMs),
    summary: view.summary ?? null,
  };
}

type Stages = { stage: string; p50: number; p99: number }[];

/**
 * Where the live answers' time went, from the rows the worker wrote (PostgreSQL's now() is its
 * transaction's start; one clock on this machine): webhook → customer message stored; stored →
 * answer committed (a model place, credit, the model call); committed → reply at the helpdesk.
 */
async function stagesOf(databaseUrl: string, windows: LiveWindow[]): Promise<Stages> {
  const wall = new Map(windows.flatMap((w) => [...w.wall]));
  const db = await pgClient(databaseUrl);
  const { rows } = await db.query<{ external_id: string; customer_at: Date; reply_at: Date }>(
    `select c.external_id, c.created_at as customer_at, r.created_at as reply_at
     from conversation_messages c join conversation_messages r on r.reply_to_id = c.id and r.role = 'agent'
     where c.role = 'customer' and c.external_id = any($1::text[])`,
    [[...wall.keys()]],
  );
  await db.end();
  const found = rows.flatMap((r) => {
    const w = wall.get(r.external_id);
    return w ? [{ w, stored: r.customer_at.getTime(), answered: r.reply_at.getTime() }] : [];
  });
  const stage = (name: string, values: number[]) => {
    const v = summarise(values);
    return { stage: name, p50: round(v.p50), p99: round(v.p99) };
  };
  return [
    stage('webhook → message stored', found.map((r) => r.stored - r.w.sent)),
    stage('stored → answer committed (model call included)', found.map((r) => r.answered - r.stored)),
    stage('answer committed → reply at the helpdesk', found.map((r) => r.w.received - r.answered)),
  ];
}

/** Company A's conversations as rows (a fingerprint of what a replay must not change), its messages and its replay_usage ledger entries. */
async function companyState(databaseUrl: string, companyId: number): Promise<{ fingerprint: string; messages: number; replayUsage: number }> {
  const db = await pgClient(databaseUrl);
  try {
    const row = (
      await db.query<{ fingerprint: string; messages: string; replay_usage: string }>(
        `select (select md5(coalesce(string_agg(concat_ws('|', id, status, message_seq, transition_seq, updated_at, last_message_at), ',' order by id), ''))
                   from conversations where company_id = $1) as fingerprint,
                (select count(*) from conversation_messages where company_id = $1) as messages,
                (select count(*) from credit_ledger where company_id = $1 and kind = 'replay_usage') as replay_usage`,
        [companyId],
      )
    ).rows[0]!;
    return { fingerprint: row.fingerprint, messages: Number(row.messages), replayUsage: Number(row.replay_usage) };
  } finally {
    await db.end();
  }
}

export async function runReplay(ctx: BenchContext): Promise<SectionResult> {
  const { args, standIn } = ctx;
  const latencyMs = args.replayModelLatency;
  const conversations = args.replayConversations;
  const perConversation = args.replayMessages;
  const marks = ['replay-throughput', ...Array.from({ length: args.replayLiveRounds }, (_, r) => `replay-under-live-${r + 1}`)];
  const model = await startModelStandIn();
  model.setLatency(latencyMs);
  standIn.setLatency(args.helpdeskLatency);
  const calls = new ModelCalls(marks);
  const s = newScenario('replay');
  let gateway: GatewayChild | null = null;
  let worker: WorkerChild | null = null;
  try {
    note('replay', `setting up (database ${s.databaseName}; model ${latencyMs} ms, helpdesk ${args.helpdeskLatency} ms)`);
    gateway = await startGatewayChild(s, 'replay-gateway', { partitions: args.partitions, profile: false, nodeFlags: args.childFlags });
    const a = await createTenant(gateway.url, standIn, { baseUrl: model.baseUrl, name: 'gpt-4o-mini', apiKey: 'sk-bench-replay-a' });
    const b = await createTenant(gateway.url, standIn, { baseUrl: model.baseUrl, name: 'gpt-4o-mini', apiKey: 'sk-bench-replay-b' });
    const env: Record<string, string> = args.replayConcurrency ? { REPLAY_MAX_CONCURRENCY: String(args.replayConcurrency) } : {};
    worker = await startWorkerChild(s, 'replay-worker', { partitions: args.partitions, profile: args.profile, nodeFlags: args.childFlags, env });
    const deadline = performance.now() + 30_000;
    while (worker.acquired.length < args.partitions && performance.now() < deadline) await sleep(50);
    const stage: Stage = { gateway, worker, a, b, model, natsPrefix: s.natsPrefix, databaseName: s.databaseName, databaseUrl: s.databaseUrl };

    const t0 = performance.now();
    await makeConversations(ctx, stage, conversations, perConversation);
    note('replay', `${fmt(conversations)} conversations of ${perConversation} answered customer messages made in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    model.onRequest((request, _kind, at) => calls.see(request, at));
    await sleep(1000); // the last sends' bookkeeping (the helpdesk answered them ~150 ms after they arrived)
    const before = await companyState(s.databaseUrl, a.companyId);

    // 1. Throughput: a replay alone.
    const cpu0 = worker.cpuMs();
    const pgCpu = CpuMeter.postgres(s.databaseName);
    await pgCpu.start(500);
    standIn.reset();
    const first = await startReplay(stage, marks[0]!, conversations);
    const expected = conversations * perConversation;
    if (first.total !== expected) note('replay', `WARNING: the replay has ${first.total} messages, ${expected} were made`);
    const firstEnd = await untilFinished(stage, 'replay', first.id);
    const workerCpuMs = worker.cpuMs() - cpu0;
    const sentDuringReplay = standIn.count();
    const pgMs = await pgCpu.stop();
    if (firstEnd.view.status !== 'done') throw new Error(`replay ${first.id} ended ${firstEnd.view.status}: ${firstEnd.view.error ?? ''}`);
    const throughput = replayRun(first, firstEnd.view, calls.of(marks[0]!), latencyMs);
    const cpuPerItem = { worker: round(workerCpuMs / first.total, 2), postgres: round(pgMs / first.total, 2) };
    note(
      'replay',
      `replay of ${fmt(first.total)} messages: done in ${throughput.seconds} s (${fmt(throughput.rate, 1)} messages/s; first model call ${fmt(throughput.startMs)} ms after the POST, ` +
        `${fmt(throughput.workRate, 1)}/s from it), at most ${throughput.peakInflight} model calls in flight; CPU ms per message worker ${cpuPerItem.worker} / PostgreSQL ${cpuPerItem.postgres}`,
    );

    // 2. Live p99 without and with a replay, alternating (the machine's other work drifts). The window must end before
    //    the replay does: as long as the first one took, less its start.
    const fits = Math.max(3, throughput.seconds - 3 - throughput.startMs / 1000);
    const liveSeconds = Math.min(args.replayLiveDuration, fits);
    if (liveSeconds < args.replayLiveDuration) note('replay', `live windows shortened to ${liveSeconds.toFixed(1)} s: a replay lasts ~${throughput.seconds} s`);
    const warm = 30;
    await liveLoad(ctx, stage, 'replay-warm', Math.max(args.replayLiveRate, 10), warm / Math.max(args.replayLiveRate, 10));
    const rounds: LiveRound[] = [];
    for (let r = 1; r <= args.replayLiveRounds; r++) {
      const without = await liveLoad(ctx, stage, `replay-live-alone${r}`, args.replayLiveRate, liveSeconds);
      note('replay', `round ${r}, live without a replay: ${without.answered}/${without.sent} answered, webhook → reply p50 ${fmt(without.replyMs.p50)} / p99 ${fmt(without.replyMs.p99)} ms; cores: worker ${without.workerCores}, PostgreSQL ${without.postgresCores}, other work ${without.otherCores}`);
      const mark = marks[r]!;
      const started = await startReplay(stage, mark, conversations);
      // Live load once the replay's model calls are under way.
      for (const until = performance.now() + 30_000; calls.of(mark).length === 0; await sleep(20)) {
        if (performance.now() > until) throw new Error(`replay ${started.id}: no model call within 30 s`);
      }
      await sleep(Math.min(500, latencyMs / 2));
      const atStart = await replayView(stage, started.id);
      const withReplay = await liveLoad(ctx, stage, `replay-live-with${r}`, args.replayLiveRate, liveSeconds);
      const atEnd = await replayView(stage, started.id);
      const stillRunning = atEnd.status === 'running' && atEnd.done < atEnd.total;
      const inflight = { replay: round(meanInflight(calls.of(mark), latencyMs, withReplay.from, withReplay.to), 1), live: round(meanInflight(calls.live, latencyMs, withReplay.from, withReplay.to), 1) };
      note(
        'replay',
        `round ${r}, live with a replay running: ${withReplay.answered}/${withReplay.sent} answered, webhook → reply p50 ${fmt(withReplay.replyMs.p50)} / p99 ${fmt(withReplay.replyMs.p99)} ms; ` +
          `replay ${atStart.done} → ${atEnd.done}/${atEnd.total} over the window (${atEnd.status}), ${fmt(inflight.replay, 1)} replay and ${fmt(inflight.live, 1)} live model calls in flight on average; cores: worker ${withReplay.workerCores}, PostgreSQL ${withReplay.postgresCores}, other work ${withReplay.otherCores}`,
      );
      if (!stillRunning) note('replay', `WARNING: round ${r}: the replay was no longer running at the end of the live window (${atEnd.status}, ${atEnd.done}/${atEnd.total}): the "with" window is not all under a replay`);
      const end = await untilFinished(stage, 'replay', started.id);
      if (end.view.status !== 'done') throw new Error(`replay ${started.id} ended ${end.view.status}: ${end.view.error ?? ''}`);
      const replay = replayRun(started, end.view, calls.of(mark), latencyMs);
      rounds.push({ without, with: withReplay, stillRunning, doneAtStart: atStart.done, doneAtEnd: atEnd.done, statusAtEnd: atEnd.status, inflight, replay });
    }
    model.onRequest(null);

    // What a replay must not have done: changed a conversation or sent anything.
    const after = await companyState(s.databaseUrl, a.companyId);
    const untouched = after.fingerprint === before.fingerprint && after.messages === before.messages;
    const totalReplayed = first.total + rounds.reduce((n, r) => n + r.replay.total, 0);
    const replayUsage = after.replayUsage - before.replayUsage;
    const sentMeanwhile = sentDuringReplay + rounds.reduce((n, r) => n + r.with.foreignReplies, 0);

    const stagesWithout = await stagesOf(s.databaseUrl, rounds.map((r) => r.without));
    const stagesWith = await stagesOf(s.databaseUrl, rounds.map((r) => r.with));

    // All rounds' samples together: a p99 of twice as many answers.
    const pooled = (pick: (r: LiveRound) => LiveWindow) => summarise(rounds.flatMap((r) => pick(r).samples));
    const without = pooled((r) => r.without);
    const withReplay = pooled((r) => r.with);
    const p99Ratio = withReplay.p99 / without.p99;
    const p50Ratio = withReplay.p50 / without.p50;
    const liveComplete = rounds.every((r) => r.without.answered === r.without.sent && r.with.answered === r.with.sent && r.without.failures + r.with.failures === 0);
    const stillRunning = rounds.every((r) => r.stillRunning);
    const changedPromptCalls = throughput.modelCalls + rounds.reduce((n, r) => n + r.replay.modelCalls, 0);
    const windows = `${rounds.length} × ${fmt(liveSeconds, 1)} s`;
    const list = (f: (r: LiveRound) => string) => rounds.map(f).join('; ');
    const rows: Row[] = [
      {
        section: 'replay',
        metric: `replay of ${fmt(conversations)} conversations (${fmt(first.total)} messages, model ${fmt(latencyMs)} ms): messages/s, POST → done`,
        value: `${fmt(throughput.rate, 1)}/s in ${fmt(throughput.seconds, 1)} s`,
      },
      {
        section: 'replay',
        metric: `  POST → first model call; first call → last answer (messages/s over it); model calls in flight at most`,
        value: `${fmt(throughput.startMs)} ms; ${fmt(throughput.workSeconds, 1)} s (${fmt(throughput.workRate, 1)}/s); ${throughput.peakInflight}`,
      },
      { section: 'replay', metric: '  CPU ms per replayed message, worker / PostgreSQL', value: `${cpuPerItem.worker} / ${cpuPerItem.postgres}` },
      {
        section: 'replay',
        metric: '  summary same / changed / new handoffs / resolved handoffs, cost',
        value: throughput.summary ? `${throughput.summary.same} / ${throughput.summary.changed} / ${throughput.summary.newHandoffs} / ${throughput.summary.resolvedHandoffs}, $${throughput.summary.costUsd}` : '–',
      },
      {
        section: 'replay',
        metric: `live: another company's webhook → reply p50 / p99, ${fmt(args.replayLiveRate)} msg/s, ${windows}, no replay`,
        value: `${fmt(without.p50)} / ${fmt(without.p99)} ms`,
      },
      {
        section: 'replay',
        metric: `live: the same while a replay of ${fmt(conversations)} conversations runs (${windows}${rounds.length > 1 ? ', alternating' : ''})`,
        value: `${fmt(withReplay.p50)} / ${fmt(withReplay.p99)} ms`,
      },
      {
        section: 'replay',
        metric: '  p99 ratio with / without a replay (p50 ratio)',
        value: `${p99Ratio.toFixed(2)}× (${p50Ratio.toFixed(2)}×)`,
        target: '≤ 1.2×, replay running all the window',
        ok: liveComplete && stillRunning && p99Ratio <= 1.2,
      },
      {
        section: 'replay',
        metric: '  p99 per round, without / with',
        value: list((r) => `${fmt(r.without.replyMs.p99)} / ${fmt(r.with.replyMs.p99)} ms`),
      },
      ...stagesWithout.map((st, k) => ({
        section: 'replay',
        metric: `  stage ${st.stage}, p50 / p99: without; with`,
        value: `${fmt(st.p50)} / ${fmt(st.p99)}; ${fmt(stagesWith[k]?.p50)} / ${fmt(stagesWith[k]?.p99)} ms`,
      })),
      {
        section: 'replay',
        metric: '  replay running at the end of each live window (done at its start → end)',
        value: list((r) => `${r.stillRunning ? 'yes' : `NO (${r.statusAtEnd})`} (${fmt(r.doneAtStart)} → ${fmt(r.doneAtEnd)})`),
        target: 'yes',
        ok: stillRunning,
      },
      {
        section: 'replay',
        metric: '  model calls in flight on average over each window with a replay, replay / live',
        value: list((r) => `${fmt(r.inflight.replay, 1)} / ${fmt(r.inflight.live, 1)}`),
      },
      {
        section: 'replay',
        metric: '  cores used over each window, without; with: worker / PostgreSQL / other work on the machine',
        value: list((r) => `${r.without.workerCores} / ${r.without.postgresCores} / ${r.without.otherCores}; ${r.with.workerCores} / ${r.with.postgresCores} / ${r.with.otherCores}`),
      },
      {
        section: 'replay',
        metric: '  those replays under live load: messages/s, POST → done (at most in flight)',
        value: list((r) => `${fmt(r.replay.rate, 1)}/s in ${fmt(r.replay.seconds, 1)} s (${r.replay.peakInflight})`),
      },
      {
        section: 'replay',
        metric: 'replayed model calls with the changed prompt / replayed messages',
        value: `${fmt(changedPromptCalls)} / ${fmt(totalReplayed)}`,
        target: 'all',
        ok: changedPromptCalls === totalReplayed,
      },
      {
        section: 'replay',
        metric: "replays left A's conversations alone (rows unchanged, messages before → after); replies sent meanwhile; replay_usage entries",
        value: `${untouched ? 'yes' : 'NO'} (${fmt(before.messages)} → ${fmt(after.messages)}); ${fmt(sentMeanwhile)}; ${fmt(replayUsage)}`,
        target: `yes; 0; ${fmt(totalReplayed)}`,
        ok: untouched && sentMeanwhile === 0 && replayUsage === totalReplayed,
      },
    ];
    const latencyOf = (l: ReturnType<typeof summarise>) => ({ count: l.count, p50: round(l.p50, 1), p90: round(l.p90, 1), p99: round(l.p99, 1), max: round(l.max, 1) });
    const withoutSamples = ({ samples: _samples, wall: _wall, ...w }: LiveWindow) => w;
    return {
      rows,
      data: {
        modelLatencyMs: latencyMs,
        helpdeskLatencyMs: args.helpdeskLatency,
        conversations,
        messagesPerConversation: perConversation,
        replayConcurrency: args.replayConcurrency || null,
        throughput,
        cpuMsPerMessage: cpuPerItem,
        live: { rate: args.replayLiveRate, seconds: liveSeconds, without: latencyOf(without), with: latencyOf(withReplay), p99Ratio: round(p99Ratio, 3), p50Ratio: round(p50Ratio, 3), complete: liveComplete, stillRunning },
        rounds: rounds.map((r) => ({ ...r, without: withoutSamples(r.without), with: withoutSamples(r.with) })),
        stages: { without: stagesWithout, with: stagesWith },
        replayedMessages: totalReplayed,
        changedPromptCalls,
        sentMeanwhile,
        companyA: { before, after, untouched, replayUsageEntries: replayUsage },
      },
    };
  } finally {
    model.onRequest(null);
    await worker?.stop();
    await gateway?.stop();
    await s.dispose();
    standIn.setLatency(0);
    await model.close();
  }
}
