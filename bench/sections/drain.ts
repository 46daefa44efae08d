import { jetstreamManager } from '@nats-io/jetstream';
import { streamNames } from '../../lib/streams.js';
import {
  channelsFromEnv, helpdeskWebhooks, standInSink, startChannelSandboxes, telegramWebhooks, whatsappWebhooks,
  type ChannelSandboxes, type ChannelWebhooks, type ReplySink,
} from '../lib/channels.js';
import { CpuMeter, spawnChild } from '../lib/children.js';
import { CHILD_BASE_ENV, newScenario, PG_BASE, pgClient, RUN_ID, type Scenario } from '../lib/env.js';
import { startPgCounter, type PgCounter } from '../lib/pg-counter.js';
import { channelEnvelopeOf, publishEnvelopes, QUESTIONS, variedQuestions, type BenchChannel } from '../lib/payloads.js';
import { collectProfile, nowUs } from '../lib/profiles.js';
import { note, progress } from '../lib/progress.js';
import { createChannelIntegration, createTenant, httpRequest, startGatewayChild, startWorkerChild, type Tenant, type WorkerChild } from '../lib/setup.js';
import { fmt, median, mib, round, steadyRate } from '../lib/stats.js';
import type { BenchContext, Row, SectionResult } from './types.js';

/**
 * Drain: N customer messages over M conversations are queued while no worker runs
 * (published straight to JetStream as the envelopes the gateway would publish, or as signed
 * webhooks through the gateway with --drain-via gateway); then `npm run worker` starts (one or
 * more children) with the built-in agent and the knowledge base, and the clock runs until
 * every reply reached the Chat2Desk stand-in. Conversation c receives messages c, c+M, ...;
 * one conversation's messages are answered one after the other (the engine serialises them).
 *
 * Per channel (contract.md § Direct channels): the same drain with the backlog as WhatsApp
 * Cloud API or Telegram messages of an integration of that channel (the gateway's own
 * normalisers build the envelopes), replied through the WhatsApp / Telegram sandboxes
 * (scripts/sandbox/) answering at once, as the Chat2Desk stand-in does here.
 * BENCH_DRAIN_CHANNELS=helpdesk,whatsapp,telegram chooses them (default all).
 */
export interface DrainResult {
  /** The channel of the backlog and of the replies. */
  channel: BenchChannel;
  workers: number;
  messages: number;
  conversations: number;
  via: 'direct' | 'gateway';
  /** Messages answered per second, from the first worker's "worker started" to the last reply. */
  rate: number;
  /** Rate between the 10 % and 90 % replies (no start-up, no tail). */
  steadyRate: number;
  seconds: number;
  firstReplyMs: number;
  queueSeconds: number;
  replies: number;
  complete: boolean;
  workerCpuMsPerMessage: number;
  postgresCpuMsPerMessage: number;
  natsCpuMsPerMessage: number;
  workerPeakRssMiB: number[];
  /** When each worker got its first and last partitions (ms after the first worker started). */
  leases: { worker: string; acquired: number; released: number; firstMs: number | null; lastMs: number | null; releasedLastMs: number | null }[];
  outcomes: Record<string, number>;
  /** Per answered message, from pg_stat_database of the scenario's database. */
  postgres: { transactions: number; inserted: number; updated: number; returned: number; fetched: number };
  /** Per answered message and table (pg_stat_user_tables), the busiest tables. */
  tables: Record<string, Record<string, number>>;
  /** Per answered message, counted by the relay (--count-queries), else null. */
  statements: { statements: number; simple: number; execute: number; sync: number } | null;
}

interface DbStats {
  xact_commit: number;
  tup_inserted: number;
  tup_updated: number;
  tup_returned: number;
  tup_fetched: number;
}

type TableStats = Record<string, { seq_scan: number; seq_tup_read: number; idx_scan: number; idx_tup_fetch: number; n_tup_ins: number; n_tup_upd: number; n_tup_hot_upd: number }>;

async function tableStats(url: string): Promise<TableStats> {
  const db = await pgClient(url);
  const { rows } = await db.query(`select relname, seq_scan, seq_tup_read, coalesce(idx_scan, 0) as idx_scan, coalesce(idx_tup_fetch, 0) as idx_tup_fetch, n_tup_ins, n_tup_upd, n_tup_hot_upd from pg_stat_user_tables`);
  await db.end();
  const out: TableStats = {};
  for (const r of rows as Record<string, string>[]) {
    out[r.relname!] = Object.fromEntries(Object.entries(r).filter(([k]) => k !== 'relname').map(([k, v]) => [k, Number(v)])) as TableStats[string];
  }
  return out;
}

async function dbStats(url: string, name: string): Promise<DbStats> {
  const db = await pgClient(url);
  // Backends report to pg_stat_database within about a second (and when they disconnect).
  const r = (await db.query(`select xact_commit, tup_inserted, tup_updated, tup_returned, tup_fetched from pg_stat_database where datname = $1`, [name])).rows[0] as Record<string, string>;
  await db.end();
  return Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Number(v)])) as unknown as DbStats;
}

export async function drainOnce(
  ctx: BenchContext,
  label: string,
  workers: number,
  messages: number,
  conversations: number,
  beforeDispose?: (s: Scenario) => Promise<void>,
  channel: BenchChannel = 'helpdesk',
): Promise<DrainResult> {
  const { args, standIn } = ctx;
  const s = newScenario(label);
  note(label, `setting up (database ${s.databaseName})${channel === 'helpdesk' ? '' : `, ${channel} backlog replied through its sandbox`}`);
  // WhatsApp / Telegram: the roles reply through (and the Telegram create registers its webhook at) the sandboxes.
  const sandboxes: ChannelSandboxes | null = channel === 'helpdesk' ? null : await startChannelSandboxes();
  const replies: ReplySink = channel === 'helpdesk' ? standInSink(standIn) : sandboxes!.sinks[channel];
  const env = sandboxes?.env;
  const gateway = await startGatewayChild(s, `${label}-gateway`, { partitions: args.partitions, profile: false, nodeFlags: args.childFlags, env });
  const tenant: Tenant = await createTenant(gateway.url, standIn);
  let hooks: ChannelWebhooks = helpdeskWebhooks(tenant.integrationId, tenant.webhookSecret, `${RUN_ID}-${label}`);
  if (channel !== 'helpdesk') {
    const ci = await createChannelIntegration(gateway.url, tenant, channel, { whatsapp: sandboxes!.whatsapp, botToken: sandboxes!.botToken });
    hooks = channel === 'whatsapp' ? whatsappWebhooks(ci.integrationId, ci.secret, ci.account!) : telegramWebhooks(ci.integrationId, ci.secret);
  }
  const integration = { id: hooks.integrationId, companyId: tenant.companyId };
  const questions = args.drainQuestions === 'varied' ? variedQuestions() : QUESTIONS;
  const question = (i: number) => questions[(Math.floor(i / conversations) + i) % questions.length]!;
  const bodyOf = (i: number) => hooks.body(i, channel === 'helpdesk' ? `d${i % conversations}` : i % conversations, question(i));

  const q0 = performance.now();
  if (args.drainVia === 'direct') {
    await publishEnvelopes(ctx.nc, s.natsPrefix, args.partitions, messages, (i) => channelEnvelopeOf(channel, integration, bodyOf(i)), (n) => progress(label, `queued ${fmt(n)}/${fmt(messages)}`));
  } else {
    let next = 0;
    const path = `${gateway.url}${hooks.path}`;
    const lane = async () => {
      while (next < messages) {
        const i = next++;
        const body = bodyOf(i);
        const res = await httpRequest(path, 'POST', body, hooks.headers(body));
        if (res.status !== 200) throw new Error(`webhook ${i}: HTTP ${res.status} ${res.body}`);
        if (i % 1000 === 0) progress(label, `queued ${fmt(i)}/${fmt(messages)} through the gateway`);
      }
    };
    await Promise.all(Array.from({ length: 32 }, lane));
  }
  const queueSeconds = (performance.now() - q0) / 1000;
  const jsm = await jetstreamManager(ctx.nc);
  const queued = (await jsm.streams.info(streamNames(s.natsPrefix).inboundStream)).state.messages;
  if (queued !== messages) throw new Error(`${queued} messages in the stream, expected ${messages}`);
  await gateway.stop();
  note(label, `${fmt(messages)} messages over ${fmt(conversations)} conversations queued in ${queueSeconds.toFixed(1)} s; starting ${workers} worker(s)`);

  replies.reset();
  let counter: PgCounter | null = null;
  if (args.countQueries) counter = await startPgCounter(PG_BASE);
  await new Promise((r) => setTimeout(r, 1500));
  const stats0 = await dbStats(s.databaseUrl, s.databaseName);
  const tables0 = await tableStats(s.databaseUrl);
  const pgCpu = CpuMeter.postgres(s.databaseName);
  const natsCpu = CpuMeter.named('nats-server');
  await Promise.all([pgCpu.start(500), natsCpu.start(1000)]);
  const fromUs = nowUs();
  const children: WorkerChild[] = await Promise.all(
    Array.from({ length: workers }, (_, w) => startWorkerChild(s, `${label}-worker${w + 1}`, { partitions: args.partitions, profile: args.profile, nodeFlags: args.childFlags, databaseUrl: counter?.urlFor(s.databaseName), env })),
  );
  // Work starts with the first partition consumer (before "worker started" is logged).
  const t0 = Math.min(...children.map((c) => (c.acquired.length ? c.acquired[0]!.at : c.startedAt)));
  const cpu0 = children.map((c) => c.cpuMs());
  const complete = await replies.waitForCount(messages, {
    stallMs: 30_000,
    tick: (n) => {
      const secs = (performance.now() - t0) / 1000;
      progress(label, `${fmt(n)}/${fmt(messages)} replies, ${fmt(n / Math.max(0.001, secs))}/s, worker RSS ${children.map((c) => `${fmt(mib(c.rssBytes()))} MiB`).join(' + ')}`);
    },
  });
  const arrivals = replies.arrivals();
  const tLast = arrivals.length ? arrivals[arrivals.length - 1]! : performance.now();
  const toUs = nowUs();
  const workerCpu = children.reduce((sum, c, i) => sum + (c.cpuMs() - cpu0[i]!), 0);
  const peaks = children.map((c) => mib(c.peakRssBytes()));

  // What became of every message (a handoff would mean an unanswerable question).
  const db = await pgClient(s.databaseUrl);
  const outcomes: Record<string, number> = {};
  for (const r of (await db.query<{ k: string; n: string }>(`select 'outbox ' || status as k, count(*) as n from outbox group by status union all select 'conversations ' || status, count(*) from conversations group by status`)).rows) {
    outcomes[r.k] = Number(r.n);
  }
  await db.end();
  const pgMs = await pgCpu.stop();
  const natsMs = await natsCpu.stop();
  await Promise.all(children.map((c) => c.stop()));
  const counted = counter?.counts() ?? null;
  await counter?.close();
  await new Promise((r) => setTimeout(r, 1500));
  const stats1 = await dbStats(s.databaseUrl, s.databaseName);
  const tables1 = await tableStats(s.databaseUrl);
  for (const c of children) await collectProfile(c, { fromUs, toUs }, args.profileTop);
  await beforeDispose?.(s);
  await sandboxes?.close();
  await s.dispose();

  const answered = arrivals.length;
  const seconds = (tLast - t0) / 1000;
  const result: DrainResult = {
    channel,
    workers,
    messages,
    conversations,
    via: args.drainVia,
    rate: answered / Math.max(0.001, seconds),
    steadyRate: steadyRate(arrivals),
    seconds,
    firstReplyMs: arrivals.length ? arrivals[0]! - t0 : NaN,
    queueSeconds,
    replies: answered,
    complete,
    workerCpuMsPerMessage: workerCpu / Math.max(1, answered),
    postgresCpuMsPerMessage: pgMs / Math.max(1, answered),
    natsCpuMsPerMessage: natsMs / Math.max(1, answered),
    workerPeakRssMiB: peaks.map((p) => round(p)),
    leases: children.map((c) => ({
      worker: c.label,
      acquired: c.acquired.filter((a) => a.at <= tLast).length,
      released: c.released.filter((a) => a.at <= tLast).length,
      firstMs: c.acquired.length ? round(c.acquired[0]!.at - t0) : null,
      lastMs: c.acquired.length ? round(c.acquired[c.acquired.length - 1]!.at - t0) : null,
      releasedLastMs: c.released.some((a) => a.at <= tLast) ? round(c.released.filter((a) => a.at <= tLast).pop()!.at - t0) : null,
    })),
    outcomes,
    postgres: {
      transactions: round((stats1.xact_commit - stats0.xact_commit) / Math.max(1, arrivals.length), 2),
      inserted: round((stats1.tup_inserted - stats0.tup_inserted) / Math.max(1, arrivals.length), 2),
      updated: round((stats1.tup_updated - stats0.tup_updated) / Math.max(1, arrivals.length), 2),
      returned: round((stats1.tup_returned - stats0.tup_returned) / Math.max(1, arrivals.length), 1),
      fetched: round((stats1.tup_fetched - stats0.tup_fetched) / Math.max(1, arrivals.length), 1),
    },
    tables: Object.fromEntries(
      Object.entries(tables1)
        .map(([t, v]) => {
          const b = tables0[t];
          const per = (k: keyof TableStats[string]) => round((v[k] - (b?.[k] ?? 0)) / Math.max(1, arrivals.length), 2);
          return [t, { seqScans: per('seq_scan'), seqRowsRead: per('seq_tup_read'), idxScans: per('idx_scan'), idxRowsFetched: per('idx_tup_fetch'), inserted: per('n_tup_ins'), updated: per('n_tup_upd'), hotUpdated: per('n_tup_hot_upd') }] as const;
        })
        .filter(([, v]) => v.seqScans + v.idxScans + v.inserted + v.updated > 0)
        .sort((a, b) => b[1].seqRowsRead + b[1].idxRowsFetched - (a[1].seqRowsRead + a[1].idxRowsFetched)),
    ),
    statements: counted && {
      statements: round(counted.statements / Math.max(1, arrivals.length), 2),
      simple: round(counted.simple / Math.max(1, arrivals.length), 2),
      execute: round(counted.execute / Math.max(1, arrivals.length), 2),
      sync: round(counted.sync / Math.max(1, arrivals.length), 2),
    },
  };
  note(
    label,
    `${complete ? 'all' : 'ONLY'} ${fmt(answered)} replies in ${seconds.toFixed(1)} s: ${fmt(result.rate)}/s (steady ${fmt(result.steadyRate)}/s); ` +
      `CPU ms per message: worker ${result.workerCpuMsPerMessage.toFixed(2)}, PostgreSQL ${result.postgresCpuMsPerMessage.toFixed(2)}, NATS ${result.natsCpuMsPerMessage.toFixed(2)}`,
  );
  if (!complete) note(label, `WARNING: stalled for 30 s at ${answered}/${messages}; outcomes ${JSON.stringify(outcomes)}`);
  if ((outcomes['conversations paused'] ?? 0) > 0) note(label, `WARNING: ${outcomes['conversations paused']} conversations were handed off (a question the knowledge base did not answer)`);
  return result;
}

export interface SqlPhase {
  name: string;
  wallUsPerStatement: number;
  clientCpuUsPerStatement: number;
  postgresCpuUsPerStatement: number;
}

/** bench/sql-probe.ts on a scenario's database, PostgreSQL's CPU measured around each phase. */
async function sqlProbe(s: Scenario): Promise<SqlPhase[]> {
  const child = await spawnChild({ file: 'bench/sql-probe.ts', label: 'sql-probe', stdin: true, env: { ...CHILD_BASE_ENV, DATABASE_URL: s.databaseUrl, ITERATIONS: '3000' } });
  const phases: SqlPhase[] = [];
  let meter: CpuMeter | null = null;
  const go = () => child.proc.stdin!.write('\n');
  child.onLog((l) => {
    if (l.msg === 'phase start') {
      meter = CpuMeter.postgres(s.databaseName);
      void meter.start(200).then(go);
    } else if (l.msg === 'phase end') {
      const m = meter!;
      void m.stop().then((pgMs) => {
        phases.push({
          name: String(l.name),
          wallUsPerStatement: round(Number(l.wallUsPerStatement), 1),
          clientCpuUsPerStatement: round(Number(l.clientCpuUsPerStatement), 1),
          postgresCpuUsPerStatement: round((pgMs * 1000) / Number(l.statements), 1),
        });
        note('sql-probe', `${String(l.name).padEnd(40)} wall ${Number(l.wallUsPerStatement).toFixed(0)} µs, client CPU ${Number(l.clientCpuUsPerStatement).toFixed(0)} µs, PostgreSQL CPU ${((pgMs * 1000) / Number(l.statements)).toFixed(0)} µs per statement`);
        go();
      });
    }
  });
  await child.waitForLog((l) => l.msg === 'probe done', 10 * 60_000);
  await child.exited;
  return phases;
}

export async function runDrain(ctx: BenchContext): Promise<SectionResult> {
  const { args } = ctx;
  const runs: DrainResult[] = [];
  let sql: SqlPhase[] | null = null;
  const channels = channelsFromEnv('BENCH_DRAIN_CHANNELS').filter((c): c is Exclude<BenchChannel, 'helpdesk'> => c !== 'helpdesk');
  const channelRuns: Record<string, DrainResult[]> = Object.fromEntries(channels.map((c) => [c, []]));
  const channelErrors: Record<string, string> = {};
  for (let r = 0; r < args.drainRuns; r++) {
    const probe = args.experiments && r === 0 ? async (s: Scenario) => void (sql = await sqlProbe(s)) : undefined;
    runs.push(await drainOnce(ctx, args.drainRuns > 1 ? `drain${r + 1}` : 'drain', 1, args.drainMessages, args.drainConversations, probe));
    // Each channel's drain right after the helpdesk's of the same round (same sizes, same worker settings).
    for (const c of channels) {
      if (channelErrors[c]) continue;
      try {
        channelRuns[c]!.push(await drainOnce(ctx, `drain-${c}${args.drainRuns > 1 ? r + 1 : ''}`, 1, args.drainMessages, args.drainConversations, undefined, c));
      } catch (err) {
        // A checkout without the channel (--baseline) or a broken channel: the helpdesk's figures stand.
        channelErrors[c] = (err as Error).message.split('\n')[0]!.slice(0, 200);
        note('drain', `${c}: FAILED: ${(err as Error).stack ?? String(err)}`);
      }
    }
  }
  const rate = median(runs.map((r) => r.rate));
  const steady = median(runs.map((r) => r.steadyRate));
  const r0 = runs[Math.floor(runs.length / 2)]!;
  const rows: Row[] = [
    {
      section: 'drain',
      metric: `answered msg/s, 1 worker (${fmt(args.drainMessages)} msgs / ${fmt(args.drainConversations)} convs, start → last reply)`,
      value: fmt(rate),
      target: '≥ 2,000',
      ok: rate >= 2000 && runs.every((r) => r.complete),
    },
    { section: 'drain', metric: 'answered msg/s, steady (10 % → 90 % of replies)', value: fmt(steady) },
    { section: 'drain', metric: 'CPU ms per message: worker / PostgreSQL / nats-server', value: `${r0.workerCpuMsPerMessage.toFixed(2)} / ${r0.postgresCpuMsPerMessage.toFixed(2)} / ${r0.natsCpuMsPerMessage.toFixed(2)}` },
    { section: 'drain', metric: 'worker peak RSS (MiB)', value: fmt(r0.workerPeakRssMiB[0]) },
    { section: 'drain', metric: 'PostgreSQL per message: transactions / rows inserted / rows updated', value: `${fmt(r0.postgres.transactions, 1)} / ${fmt(r0.postgres.inserted, 1)} / ${fmt(r0.postgres.updated, 1)}` },
  ];
  const busiest = Object.entries(r0.tables).slice(0, 2);
  if (busiest.length) rows.push({ section: 'drain', metric: 'PostgreSQL rows read per message (busiest tables, index + seq)', value: busiest.map(([t, v]) => `${t} ${fmt(v.idxRowsFetched! + v.seqRowsRead!)}`).join(', ') });
  if (r0.statements) rows.push({ section: 'drain', metric: 'SQL statements per message (BEGIN/COMMIT + parameterised)', value: `${fmt(r0.statements.statements, 1)} (${fmt(r0.statements.simple, 1)} + ${fmt(r0.statements.execute, 1)})` });
  const perChannel: Record<string, unknown> = {};
  if (channels.length) {
    const figures = channels.map((c) => ({ c, list: channelRuns[c]! }));
    rows.push({
      section: 'drain',
      metric: `answered msg/s per channel, 1 worker: helpdesk / ${channels.join(' / ')} (replies at once)`,
      value: [fmt(rate), ...figures.map(({ c, list }) => (list.length ? fmt(median(list.map((x) => x.rate))) : channelErrors[c] ? 'FAILED' : '–'))].join(' / '),
    });
    for (const { c, list } of figures) {
      if (!list.length) {
        perChannel[c] = { error: channelErrors[c] ?? 'not run' };
        rows.push({ section: 'drain', metric: `${c}: FAILED`, value: (channelErrors[c] ?? 'not run').slice(0, 80), ok: false });
        continue;
      }
      // Ratio per round (each channel's drain right after the helpdesk's), then the median.
      const ratios = list.map((x, i) => x.rate / runs[i]!.rate);
      const cRate = median(list.map((x) => x.rate));
      const cSteady = median(list.map((x) => x.steadyRate));
      const mid = list[Math.floor(list.length / 2)]!;
      const complete = list.every((x) => x.complete);
      perChannel[c] = {
        runs: list, rate: round(cRate), steadyRate: round(cSteady), ratioToHelpdesk: round(median(ratios), 3), ratiosToHelpdesk: ratios.map((x) => round(x, 3)),
        workerCpuMsPerMessage: mid.workerCpuMsPerMessage, postgresCpuMsPerMessage: mid.postgresCpuMsPerMessage, complete, ...(channelErrors[c] ? { error: channelErrors[c] } : {}),
      };
      rows.push({
        section: 'drain',
        metric: `${c}: msg/s (steady); ratio to helpdesk; CPU ms per message worker / PostgreSQL`,
        value: `${complete ? '' : 'INCOMPLETE '}${fmt(cRate)} (${fmt(cSteady)}); ${fmt(median(ratios), 2)}×; ${mid.workerCpuMsPerMessage.toFixed(2)} / ${mid.postgresCpuMsPerMessage.toFixed(2)}`,
        ...(complete ? {} : { ok: false }),
      });
    }
  }
  for (const p of (sql ?? []) as SqlPhase[]) {
    rows.push({ section: 'drain', metric: `experiment SQL ${p.name}: wall / client CPU / PostgreSQL CPU per statement`, value: `${fmt(p.wallUsPerStatement)} / ${fmt(p.clientCpuUsPerStatement)} / ${fmt(p.postgresCpuUsPerStatement)} µs` });
  }
  return { rows, data: { runs, rate: round(rate), steadyRate: round(steady), workerCpuMsPerMessage: r0.workerCpuMsPerMessage, sqlProbe: sql, channels: perChannel } };
}

export async function runScaleOut(ctx: BenchContext): Promise<SectionResult> {
  const { args } = ctx;
  const one = await drainOnce(ctx, 'scale1', 1, args.scaleoutMessages, args.scaleoutConversations);
  const two = await drainOnce(ctx, 'scale2', 2, args.scaleoutMessages, args.scaleoutConversations);
  const laterFirst = Math.max(...two.leases.map((l) => l.firstMs ?? Infinity));
  const speedup = two.rate / one.rate;
  const rows: Row[] = [
    { section: 'scale-out', metric: `msg/s 1 worker → 2 workers (${fmt(args.scaleoutMessages)} / ${fmt(args.scaleoutConversations)})`, value: `${fmt(one.rate)} → ${fmt(two.rate)}` },
    { section: 'scale-out', metric: 'speed-up 2 workers / 1 (start → last reply; steady)', value: `${speedup.toFixed(2)}×; ${(two.steadyRate / one.steadyRate).toFixed(2)}×` },
    {
      section: 'scale-out',
      metric: 'partitions held at the last reply (2 workers); the later worker got its first one after',
      value: `${two.leases.map((l) => l.acquired - l.released).join(' + ')}; ${Number.isFinite(laterFirst) ? `${fmt(laterFirst)} ms` : 'never'}`,
    },
  ];
  return { rows, data: { oneWorker: one, twoWorkers: two, speedup: round(speedup, 2), steadySpeedup: round(two.steadyRate / one.steadyRate, 2) } };
}
