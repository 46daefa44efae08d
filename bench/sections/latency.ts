import { performance } from 'node:perf_hooks';
import { RUN_ID, newScenario, pgClient } from '../lib/env.js';
import { inboxBody, QUESTIONS, signBody } from '../lib/payloads.js';
import { collectProfile, nowUs } from '../lib/profiles.js';
import { note, progress } from '../lib/progress.js';
import { createTenant, httpRequest, startGatewayChild, startWorkerChild } from '../lib/setup.js';
import { fmt, round, summarise } from '../lib/stats.js';
import type { BenchContext, Row, SectionResult } from './types.js';

/**
 * Latency: webhook → reply under a steady load. The gateway and one worker run as children;
 * signed inbox webhooks are sent at a fixed rate (on a schedule: a slow answer never delays
 * the next send) over `clients` conversations in turn, and each reply that reaches the
 * Chat2Desk stand-in is paired with the oldest unanswered webhook of its client (one
 * conversation's replies come in order). Latency = stand-in receives the reply − bench
 * starts sending the webhook. A warm-up sends one message to every client first (creating
 * their conversations) and is not measured.
 */
/**
 * Where the time of a measured message went, from the rows the worker wrote: PostgreSQL's
 * now() is the start of the writing transaction; the machine has one clock.
 *   webhook → message stored: gateway, JetStream, consumer, lane, first transaction begins
 *   stored → reply stored:    rest of that transaction, the agent (knowledge search), second transaction begins
 *   reply stored → sent:      rest of it, the outbox dispatcher (claim, checks, HTTP call, bookkeeping)
 *   helpdesk → stand-in: the stand-in got the reply (before `sent` is written, so the last two overlap)
 */
async function stageBreakdown(url: string, wall: Map<string, { sent: number; received: number }>): Promise<{ stage: string; p50: number; p99: number }[]> {
  const db = await pgClient(url);
  const { rows } = await db.query<{ external_id: string; customer_at: Date; reply_at: Date; claimed_at: Date | null; sent_at: Date | null }>(
    `select c.external_id, c.created_at as customer_at, r.created_at as reply_at, o.sent_at
     from conversation_messages c
     join conversation_messages r on r.reply_to_id = c.id and r.kind = 'reply'
     join outbox o on o.message_id = r.id
     where c.role = 'customer'`,
  );
  await db.end();
  // created_at / sent_at are microsecond timestamps; pg gives Date (ms): enough here.
  const a: number[] = [];
  const b: number[] = [];
  const c: number[] = [];
  for (const r of rows) {
    const w = wall.get(r.external_id);
    if (!w) continue;
    a.push(r.customer_at.getTime() - w.sent);
    b.push(r.reply_at.getTime() - r.customer_at.getTime());
    c.push(w.received - r.reply_at.getTime());
  }
  const row = (stage: string, v: number[]) => {
    const s = summarise(v);
    return { stage, p50: round(s.p50, 1), p99: round(s.p99, 1) };
  };
  return [row('webhook sent → customer message stored (tx 1 begins)', a), row('tx 1 begins → reply stored (tx 2 begins)', b), row('tx 2 begins → reply at the helpdesk', c)];
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function runLatency(ctx: BenchContext): Promise<SectionResult> {
  const { args, standIn } = ctx;
  const s = newScenario('latency');
  note('latency', `setting up (database ${s.databaseName})`);
  const gateway = await startGatewayChild(s, 'latency-gateway', { partitions: args.partitions, profile: args.profile, nodeFlags: args.childFlags });
  const tenant = await createTenant(gateway.url, standIn);
  const worker = await startWorkerChild(s, 'latency-worker', { partitions: args.partitions, profile: args.profile, nodeFlags: args.childFlags });
  const deadline = performance.now() + 30_000;
  while (worker.acquired.length < args.partitions && performance.now() < deadline) await sleep(50);

  const url = `${gateway.url}/api/webhook/helpdesk/${tenant.integrationId}`;
  const clients = args.latencyClients;
  const pending = new Map<string, { sent: number; measured: boolean; messageId: string }[]>();
  /** Wall-clock times (ms since epoch) of measured messages by message id: sent, and reply received. */
  const wall = new Map<string, { sent: number; received: number }>();
  const toWall = (perf: number) => performance.timeOrigin + perf;
  const replyMs: number[] = [];
  const ackMs: number[] = [];
  let unmatched = 0;
  let failures = 0;
  standIn.reset();
  standIn.onReply((clientId, at) => {
    const q = pending.get(clientId);
    const first = q?.shift();
    if (!first) {
      unmatched++;
      return;
    }
    if (first.measured) {
      replyMs.push(at - first.sent);
      wall.set(first.messageId, { sent: toWall(first.sent), received: toWall(at) });
    }
  });

  const interval = 1000 / args.latencyRate;
  const warm = clients;
  const measured = Math.round(args.latencyRate * args.latencyDuration);
  const total = warm + measured;
  let fromUs = 0;
  const t0 = performance.now();
  const inflight: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = t0 + i * interval;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    if (i === warm) fromUs = nowUs();
    const clientId = `l${i % clients}`;
    const messageId = `${RUN_ID}-lat-${i}`;
    const body = inboxBody(messageId, clientId, QUESTIONS[i % QUESTIONS.length]!, i);
    const headers = { 'content-type': 'application/json', 'x-webhook-signature': signBody(tenant.webhookSecret, body) };
    const sent = performance.now();
    let q = pending.get(clientId);
    if (!q) pending.set(clientId, (q = []));
    q.push({ sent, measured: i >= warm, messageId });
    inflight.push(
      httpRequest(url, 'POST', body, headers).then(
        (res) => {
          if (res.status !== 200) failures++;
          else if (i >= warm) ackMs.push(performance.now() - sent);
        },
        () => {
          failures++;
        },
      ),
    );
    if (i % 25 === 0) progress('latency', `${i < warm ? 'warm-up' : 'measuring'} ${i}/${total} sent, ${standIn.count()} replies`);
  }
  await Promise.all(inflight);
  const complete = await standIn.waitForCount(total, { stallMs: 15_000 });
  const toUs = nowUs();
  standIn.onReply(null);
  const workerRss = worker.rssBytes();
  const stages = await stageBreakdown(s.databaseUrl, wall);
  await worker.stop();
  await gateway.stop();
  await collectProfile(worker, { fromUs, toUs }, args.profileTop);
  await collectProfile(gateway, { fromUs, toUs }, args.profileTop);
  await s.dispose();

  const reply = summarise(replyMs);
  const ack = summarise(ackMs);
  note('latency', `webhook → reply p50 ${reply.p50.toFixed(1)} ms, p99 ${reply.p99.toFixed(1)} ms (${reply.count} measured); webhook answered p50 ${ack.p50.toFixed(1)} ms, p99 ${ack.p99.toFixed(1)} ms`);
  if (!complete || failures || unmatched) note('latency', `WARNING: complete=${complete}, ${failures} failed webhooks, ${unmatched} unmatched replies`);
  const rows: Row[] = [
    { section: 'latency', metric: `webhook → reply p50 (${args.latencyRate} msg/s, ${args.latencyDuration} s, ${clients} conversations)`, value: `${fmt(reply.p50, 1)} ms` },
    { section: 'latency', metric: 'webhook → reply p99', value: `${fmt(reply.p99, 1)} ms`, target: '≤ 30 ms', ok: reply.p99 <= 30 && complete },
    { section: 'latency', metric: 'webhook → reply p90 / max', value: `${fmt(reply.p90, 1)} / ${fmt(reply.max, 1)} ms` },
    { section: 'latency', metric: 'webhook HTTP answer (gateway ack) p50 / p99', value: `${fmt(ack.p50, 1)} / ${fmt(ack.p99, 1)} ms` },
  ];
  for (const st of stages) rows.push({ section: 'latency', metric: `  stage ${st.stage} p50 / p99`, value: `${fmt(st.p50, 1)} / ${fmt(st.p99, 1)} ms` });
  return {
    rows,
    data: {
      rate: args.latencyRate,
      durationSeconds: args.latencyDuration,
      clients,
      warmupMessages: warm,
      replyMs: { ...reply, p50: round(reply.p50, 2), p90: round(reply.p90, 2), p99: round(reply.p99, 2), max: round(reply.max, 2), mean: round(reply.mean, 2) },
      webhookAckMs: { ...ack, p50: round(ack.p50, 2), p90: round(ack.p90, 2), p99: round(ack.p99, 2), max: round(ack.max, 2), mean: round(ack.mean, 2) },
      complete,
      failures,
      unmatched,
      workerRssMiB: round(workerRss / 2 ** 20),
      stages,
    },
  };
}
