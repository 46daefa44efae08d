import { jetstreamManager } from '@nats-io/jetstream';
import { initialConversationSnapshot } from '../../machines/conversation.js';
import { partitionOf, streamNames } from '../../lib/streams.js';
import { spawnChild } from '../lib/children.js';
import { CHILD_BASE_ENV, newScenario, pgClient, type Scenario } from '../lib/env.js';
import { closeDialogEnvelope, publishEnvelopes } from '../lib/payloads.js';
import { collectProfile, nowUs } from '../lib/profiles.js';
import { note, progress } from '../lib/progress.js';
import { createTenant, startGatewayChild, startWorkerChild, type Tenant } from '../lib/setup.js';
import { fmt, mib, round } from '../lib/stats.js';
import type { BenchContext, Row, SectionResult } from './types.js';

/**
 * Actors: memory per conversation machine held in memory, and hydration cost, at each size.
 *
 * actors/host.ts keeps no machine between events: a lane (a conversation with queued work)
 * lives only while it has work, and every event re-reads the conversation row, resolves its
 * snapshot and steps it with the pure transition(). So the section measures
 *   1. the per-event cold hydration the host pays (bench/actors-probe.ts MODE=event: DB row
 *      `for update` in a transaction + resolveState + transition + serialise);
 *   2. what an in-memory design would cost: every seeded conversation hydrated and held, as
 *      resolved snapshots (MODE=snapshot) and as live XState actors (MODE=actor): RSS and heap
 *      per conversation, time to load + hydrate, time of one step each;
 *   3. the RSS of a real worker (`npm run worker`) that processed one event (a close_dialog
 *      status webhook: one transaction that hydrates, steps and stores the machine) for each
 *      of the seeded conversations, i.e. has seen that many distinct conversations.
 * Conversations are seeded straight into PostgreSQL in bulk, with the snapshot of a
 * conversation that has had one question answered (active.idle, its ids in the context).
 */
const SEED_CHUNK = 20_000;

async function seed(s: Scenario, tenant: Tenant, count: number, partitions: number): Promise<number> {
  const db = await pgClient(s.databaseUrl);
  const template = initialConversationSnapshot();
  const t0 = performance.now();
  for (let from = 0; from < count; from += SEED_CHUNK) {
    const n = Math.min(SEED_CHUNK, count - from);
    const parts = Array.from({ length: n }, (_, k) => partitionOf(tenant.integrationId, `a${from + k}`, partitions));
    await db.query(
      `insert into conversations (company_id, integration_id, channel, client_id, partition, status, state, snapshot, channel_id, transport, message_seq, transition_seq, last_message_at)
       select $1, $2, 'helpdesk', 'a' || (g - 1 + $4), p, 'active', '{"active":"idle"}'::jsonb,
         jsonb_set(jsonb_set(jsonb_set($3::jsonb,
           '{context,requestIds}', jsonb_build_array(500000 + g - 1 + $4)),
           '{context,dialogIds}', jsonb_build_array(900000 + g - 1 + $4)),
           '{context,lastCustomerMessageId}', to_jsonb(((g - 1 + $4) * 2 + 1)::text)),
         '17', 'telegram', 2, 2, now()
       from unnest($5::int[]) with ordinality as t(p, g)`,
      [tenant.companyId, tenant.integrationId, JSON.stringify(template), from, parts],
    );
    progress('actors', `seeded ${fmt(from + n)}/${fmt(count)} conversations`);
  }
  await db.query('analyze conversations');
  await db.end();
  return performance.now() - t0;
}

async function probe(s: Scenario, tenant: Tenant, mode: 'event' | 'snapshot' | 'actor', label: string, sample: number): Promise<Record<string, number & Record<string, number>>> {
  const child = await spawnChild({
    file: 'bench/actors-probe.ts',
    label,
    nodeFlags: ['--expose-gc'],
    env: { ...CHILD_BASE_ENV, DATABASE_URL: s.databaseUrl, INTEGRATION_ID: String(tenant.integrationId), MODE: mode, SAMPLE: String(sample) },
  });
  const line = await child.waitForLog((l) => l.msg === 'probe result', 30 * 60_000);
  await child.exited;
  return line as never;
}

interface SizeResult {
  conversations: number;
  seedSeconds: number;
  event: Record<string, unknown>;
  snapshot: Record<string, unknown>;
  actor: Record<string, unknown>;
  worker: Record<string, unknown> | null;
}

async function runSize(ctx: BenchContext, count: number): Promise<SizeResult> {
  const { args } = ctx;
  const tag = `actors${count >= 1000 ? `${Math.round(count / 1000)}k` : count}`;
  const s = newScenario(tag);
  note(tag, `setting up (database ${s.databaseName})`);
  const gateway = await startGatewayChild(s, `${tag}-gateway`, { partitions: args.partitions, profile: false, nodeFlags: args.childFlags });
  const tenant = await createTenant(gateway.url, ctx.standIn);
  await gateway.stop();
  const seedMs = await seed(s, tenant, count, args.partitions);
  note(tag, `seeded ${fmt(count)} conversations in ${(seedMs / 1000).toFixed(1)} s; probing`);

  const event = await probe(s, tenant, 'event', `${tag}-probe-event`, Math.min(count, 2000));
  note(tag, `per-event hydration (DB + resolve + step + serialise): p50 ${Number(event.totalMs.p50).toFixed(2)} ms; resolveState ${Number(event.hydrateUs.p50).toFixed(0)} µs, transition ${Number(event.stepUs.p50).toFixed(0)} µs`);
  const snapshot = await probe(s, tenant, 'snapshot', `${tag}-probe-snapshot`, 0);
  note(tag, `held as resolved snapshots: ${fmt(Number(snapshot.rssBytesPerActor))} B RSS / ${fmt(Number(snapshot.heapBytesPerActor))} B heap each; ${Number(snapshot.hydrateUsPerActor).toFixed(1)} µs to hydrate`);
  const actor = await probe(s, tenant, 'actor', `${tag}-probe-actor`, 0);
  note(tag, `held as live actors: ${fmt(Number(actor.rssBytesPerActor))} B RSS / ${fmt(Number(actor.heapBytesPerActor))} B heap each; ${Number(actor.hydrateUsPerActor).toFixed(1)} µs to create + start; total RSS ${fmt(Number(actor.rssAfterMiB))} MiB`);

  let worker: Record<string, unknown> | null = null;
  if (args.actorsWorker) {
    const w = await startWorkerChild(s, `${tag}-worker`, { partitions: args.partitions, profile: args.profile, nodeFlags: args.childFlags });
    const deadline = performance.now() + 30_000;
    while (w.acquired.length < args.partitions && performance.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 1000));
    const idleRss = w.rssBytes();
    const integration = { id: tenant.integrationId, companyId: tenant.companyId };
    const fromUs = nowUs();
    const t0 = performance.now();
    const cpu0 = w.cpuMs();
    await publishEnvelopes(ctx.nc, s.natsPrefix, args.partitions, count, (i) => closeDialogEnvelope(integration, `a${i}`, 500_000 + i), (n) => progress(tag, `published ${fmt(n)}/${fmt(count)} close_dialog events`));
    const jsm = await jetstreamManager(ctx.nc);
    const stream = streamNames(s.natsPrefix).inboundStream;
    const db = await pgClient(s.databaseUrl);
    let closed = 0;
    let lastChange = performance.now();
    let maxRss = 0;
    for (;;) {
      const left = (await jsm.streams.info(stream)).state.messages;
      const now = Number((await db.query<{ n: string }>(`select count(*) as n from conversations where status = 'closed'`)).rows[0]!.n);
      if (now !== closed) lastChange = performance.now();
      closed = now;
      maxRss = Math.max(maxRss, w.rssBytes());
      progress(tag, `worker: ${fmt(closed)}/${fmt(count)} conversations stepped, ${fmt(left)} queued, RSS ${fmt(mib(w.rssBytes()))} MiB`);
      if (left === 0 && closed >= count) break;
      if (performance.now() - lastChange > 30_000) {
        note(tag, `WARNING: worker stalled at ${closed}/${count}`);
        break;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    const seconds = (performance.now() - t0) / 1000;
    const toUs = nowUs();
    const cpuMs = w.cpuMs() - cpu0;
    const rssAfter = w.rssBytes();
    await new Promise((r) => setTimeout(r, 3000));
    const rssSettled = w.rssBytes();
    await db.end();
    worker = {
      processed: closed,
      seconds: round(seconds, 1),
      eventsPerSecond: round(closed / seconds),
      cpuMsPerEvent: round(cpuMs / Math.max(1, closed), 3),
      idleRssMiB: round(mib(idleRss)),
      rssAfterMiB: round(mib(rssAfter)),
      rssSettledMiB: round(mib(rssSettled)),
      peakRssMiB: round(mib(Math.max(maxRss, w.peakRssBytes()))),
    };
    note(tag, `worker processed ${fmt(closed)} distinct conversations in ${seconds.toFixed(1)} s (${fmt(closed / seconds)}/s): RSS idle ${fmt(mib(idleRss))} MiB → after ${fmt(mib(rssAfter))} MiB (peak ${fmt(Number(worker.peakRssMiB))} MiB)`);
    await w.stop();
    await collectProfile(w, { fromUs, toUs }, args.profileTop);
  }
  await s.dispose();
  return { conversations: count, seedSeconds: round(seedMs / 1000, 1), event, snapshot, actor, worker };
}

export async function runActors(ctx: BenchContext): Promise<SectionResult> {
  const sizes: SizeResult[] = [];
  for (const n of ctx.args.actorSizes) sizes.push(await runSize(ctx, n));
  const rows: Row[] = [];
  for (const r of sizes) {
    const k = r.conversations >= 1000 ? `${fmt(r.conversations / 1000)}k` : fmt(r.conversations);
    const ev = r.event as { totalMs: { p50: number; p99: number }; dbMs: { p50: number }; hydrateUs: { p50: number }; stepUs: { p50: number }; serialiseUs: { p50: number } };
    const sn = r.snapshot as { rssBytesPerActor: number; heapBytesPerActor: number; hydrateUsPerActor: number; stepUsPerActor: number; rssAfterMiB: number; loadMs: number; wallMs: number };
    const ac = r.actor as typeof sn;
    rows.push(
      { section: 'actors', metric: `${k}: host design: per-event cold hydration p50 / p99 (row lock + resolve + step + serialise)`, value: `${ev.totalMs.p50.toFixed(2)} / ${ev.totalMs.p99.toFixed(2)} ms` },
      { section: 'actors', metric: `${k}:   of which resolveState / transition / serialise (p50)`, value: `${ev.hydrateUs.p50.toFixed(0)} / ${ev.stepUs.p50.toFixed(0)} / ${ev.serialiseUs.p50.toFixed(0)} µs` },
      { section: 'actors', metric: `${k}: held as resolved snapshots: bytes each (RSS / heap)`, value: `${fmt(sn.rssBytesPerActor)} / ${fmt(sn.heapBytesPerActor)}` },
      { section: 'actors', metric: `${k}:   load + hydrate all (s); hydrate / step per actor (µs)`, value: `${(sn.wallMs / 1000).toFixed(1)}; ${sn.hydrateUsPerActor.toFixed(1)} / ${sn.stepUsPerActor.toFixed(1)}` },
      { section: 'actors', metric: `${k}: held as live XState actors: bytes each (RSS / heap)`, value: `${fmt(ac.rssBytesPerActor)} / ${fmt(ac.heapBytesPerActor)}` },
      { section: 'actors', metric: `${k}:   create + start per actor / one event each (µs); process RSS`, value: `${ac.hydrateUsPerActor.toFixed(1)} / ${ac.stepUsPerActor.toFixed(1)}; ${fmt(ac.rssAfterMiB)} MiB` },
    );
    if (r.conversations >= 100_000) {
      rows.push({ section: 'actors', metric: `${k} live actors in one process: RSS`, value: `${fmt(ac.rssAfterMiB)} MiB`, target: '≤ 1 GiB (100k)', ok: ac.rssAfterMiB <= 1024 });
    }
    if (r.worker) {
      const w = r.worker as { processed: number; eventsPerSecond: number; idleRssMiB: number; rssAfterMiB: number; peakRssMiB: number };
      const row: Row = { section: 'actors', metric: `${k}: worker after ${fmt(w.processed)} distinct conversations: RSS idle → after (peak)`, value: `${fmt(w.idleRssMiB)} → ${fmt(w.rssAfterMiB)} (${fmt(w.peakRssMiB)}) MiB` };
      if (r.conversations >= 100_000) Object.assign(row, { target: '≤ 1 GiB (100k)', ok: w.peakRssMiB <= 1024 });
      rows.push(row, { section: 'actors', metric: `${k}:   worker status events/s (1 transaction each)`, value: fmt(w.eventsPerSecond) });
    }
  }
  return { rows, data: { sizes } };
}
