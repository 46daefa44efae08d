import type pg from 'pg';
import type { ChaosFault } from './args.js';
import type { ChaosMessage, FailedAttempt } from './chaos-load.js';
import { FAULT_TEXT, type FaultRecord, type RoleEvent } from './chaos-faults.js';
import type { StandIn } from './stand-in.js';
import { fmt, median, round, summarise } from './stats.js';
import type { Row } from '../sections/types.js';

/**
 * What the chaos soak measures. Every reply that reaches the helpdesk stand-in carries
 * `external_id`, the worker's outbox row id (actors/outbox/delivery.ts sends it so that
 * reconciliation can find it in the helpdesk's history). The scenario's database links that
 * row to the customer message it answers: outbox.message_id → the agent's message, whose
 * reply_to_id → the customer message, whose external_id is the webhook's message_id. So each
 * reply is counted against exactly the webhook it answers, whatever its text, its order or
 * its customer; the reply's client_id is checked against the message's customer as well.
 */
export interface ChaosReply {
  at: number;
  clientId: string;
  outboxId: string | null;
}

interface Link {
  inbound: string | null;
  kind: string;
}

export class ReplyLog {
  readonly replies: ChaosReply[] = [];
  /** outbox id → the customer message it answers (null: not a reply to a customer message). */
  readonly links = new Map<string, Link>();
  #pending = new Set<string>();
  #busy = false;

  constructor(standIn: StandIn) {
    standIn.onReply((clientId, at, _text, externalId) => {
      this.replies.push({ at, clientId, outboxId: externalId });
      if (externalId && /^\d{1,18}$/.test(externalId) && !this.links.has(externalId)) this.#pending.add(externalId);
    });
  }

  get pending(): number {
    return this.#pending.size;
  }

  get lastAt(): number {
    return this.replies.length ? this.replies[this.replies.length - 1]!.at : 0;
  }

  /** Looks the new outbox ids up in the database (skipped while a look-up is under way). */
  async resolve(db: pg.Client): Promise<void> {
    if (this.#busy || this.#pending.size === 0) return;
    this.#busy = true;
    try {
      const ids = [...this.#pending];
      const { rows } = await db.query<{ outbox_id: string; kind: string; inbound: string | null }>(
        `select o.id::text as outbox_id, o.kind, c.external_id as inbound
         from outbox o join conversation_messages r on r.id = o.message_id
         left join conversation_messages c on c.id = r.reply_to_id and c.role = 'customer'
         where o.id = any($1::bigint[])`,
        [ids],
      );
      for (const r of rows) {
        this.links.set(r.outbox_id, { inbound: r.inbound, kind: r.kind });
        this.#pending.delete(r.outbox_id);
      }
    } finally {
      this.#busy = false;
    }
  }

  /** Arrival times of the replies to each customer message, and the outbox ids that carried them. */
  byMessage(): Map<string, { at: number[]; outboxIds: string[]; clientIds: string[] }> {
    const out = new Map<string, { at: number[]; outboxIds: string[]; clientIds: string[] }>();
    for (const r of this.replies) {
      const inbound = r.outboxId ? this.links.get(r.outboxId)?.inbound : undefined;
      if (!inbound) continue;
      let e = out.get(inbound);
      if (!e) out.set(inbound, (e = { at: [], outboxIds: [], clientIds: [] }));
      e.at.push(r.at);
      e.outboxIds.push(r.outboxId!);
      e.clientIds.push(r.clientId);
    }
    return out;
  }
}

/** Figures of one fault (times in ms after the fault). */
export interface FaultFigures {
  index: number;
  kind: ChaosFault;
  target: string;
  /** Seconds after the load's start. */
  atS: number;
  wallTime: string;
  restartedAfterMs: number | null;
  readyAfterMs: number | null;
  exitedAfterMs: number | null;
  forced: boolean;
  leaderAfter: string | null;
  leaderElectedAfterMs: number | null;
  caughtUpAfterMs: number | null;
  error: string | null;
  /** The window: until the next fault (or the end of the load). */
  windowS: number;
  /** First reply (after the fault) to a message acknowledged after the fault. */
  firstFreshReplyMs: number | null;
  /** The longest time without any reply, from the last reply before the fault to the window's end. */
  maxReplyGapMs: number;
  /** Where that gap began, relative to the fault (negative: before it). */
  maxReplyGapFromMs: number;
  /** Messages acknowledged from 10 s before the fault to 10 s before the next one (or the end of the load) answered later than `delayedOverMs` after their acknowledgement (or not at all). */
  delayed: number;
  delayedOverMs: number;
  /** When the last of those delayed answers arrived (the backlog of the fault answered). */
  delayedClearedMs: number | null;
  /** Webhook attempts in the window that got no 200, by what they got. */
  refusals: Record<string, number>;
  /** The last attempt without a 200 in the window (how long webhooks were refused). */
  lastRefusalMs: number | null;
  /** Messages first sent in the window: acknowledged, lost, doubled. */
  acked: number;
  lost: number;
  doubled: number;
}

export interface ChaosFigures {
  sent: number;
  duplicatesSent: number;
  acknowledged: number;
  neverAcknowledged: number;
  answered: number;
  lost: number;
  doubled: number;
  /** Replies beyond the first, over all acknowledged messages. */
  extraReplies: number;
  /** Messages that got no 200 but were answered all the same (accepted before the gateway could say so). */
  answeredUnacknowledged: number;
  replies: number;
  /** Replies whose outbox row could not be linked to a message of the load. */
  unmatchedReplies: number;
  /** Replies whose client_id is not the customer of the message they answer (should be 0). */
  wrongCustomer: number;
  attempts: number;
  refusals: Record<string, number>;
  ackToReplyMs: { p50: number; p90: number; p99: number; max: number };
  faults: FaultFigures[];
  lostIds: string[];
  doubledIds: { id: string; replies: number; outboxIds: string[] }[];
  /** Counts per second since the load's start. */
  timeline: { acknowledged: number[]; replies: number[]; withoutA200: number[] };
}

/** How long before a fault a message's acknowledgement counts as caught by it. */
const LEAD_MS = 10_000;

const countBy = (list: FailedAttempt[]): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const f of list) out[f.outcome] = (out[f.outcome] ?? 0) + 1;
  return out;
};

export function analyse(o: {
  messages: Map<string, ChaosMessage>;
  failures: FailedAttempt[];
  log: ReplyLog;
  faults: FaultRecord[];
  t0: number;
  /** performance.now() when the load ended: the last fault's window ends there (replies after it are the tail). */
  loadEnd: number;
  /** performance.now() when the measurement ended (the last reply waited for). */
  end: number;
}): ChaosFigures {
  const { messages, failures, log, faults, t0, loadEnd, end } = o;
  const byMessage = log.byMessage();
  let acknowledged = 0;
  let answered = 0;
  let lost = 0;
  let doubled = 0;
  let extra = 0;
  let answeredUnacked = 0;
  let wrongCustomer = 0;
  let attempts = 0;
  const latencies: number[] = [];
  const lostIds: string[] = [];
  const doubledIds: ChaosFigures['doubledIds'] = [];
  const firstReplyOf = new Map<string, number>();
  for (const m of messages.values()) {
    attempts += m.attempts;
    const r = byMessage.get(m.id);
    const n = r?.at.length ?? 0;
    if (r) {
      firstReplyOf.set(m.id, Math.min(...r.at));
      wrongCustomer += r.clientIds.filter((c) => c !== m.clientId).length;
    }
    if (m.ackAt === null) {
      if (n > 0) answeredUnacked++;
      continue;
    }
    acknowledged++;
    if (n === 0) {
      lost++;
      lostIds.push(m.id);
      continue;
    }
    answered++;
    latencies.push(firstReplyOf.get(m.id)! - m.ackAt);
    if (n >= 2) {
      doubled++;
      extra += n - 1;
      doubledIds.push({ id: m.id, replies: n, outboxIds: r!.outboxIds });
    }
  }
  const matched = [...byMessage.entries()].filter(([id]) => messages.has(id)).reduce((s, [, r]) => s + r.at.length, 0);
  const lat = summarise(latencies);
  const delayedOverMs = Math.max(5_000, 3 * median(latencies));

  // Reply arrivals in order, each with the message it answers (for the per-fault figures).
  const arrivals = log.replies.map((r) => {
    const inbound = r.outboxId ? log.links.get(r.outboxId)?.inbound ?? null : null;
    return { at: r.at, message: inbound ? messages.get(inbound) ?? null : null };
  });
  const sorted = [...faults].sort((a, b) => a.at - b.at);
  const figures: FaultFigures[] = sorted.map((f, i) => {
    const windowEnd = sorted[i + 1]?.at ?? Math.max(loadEnd, f.at);
    const inWindow = (t: number) => t >= f.at && t < windowEnd;
    const fresh = arrivals.find((a) => a.at >= f.at && a.message?.ackAt !== undefined && a.message.ackAt !== null && a.message.ackAt >= f.at);
    // Longest gap between replies: from the last reply before the fault through the window's end.
    const times = arrivals.filter((a) => a.at < windowEnd).map((a) => a.at);
    let k = times.findIndex((t) => t >= f.at);
    if (k < 0) k = times.length;
    const from = k > 0 ? times[k - 1]! : f.at;
    let gap = 0;
    let gapFrom = from;
    let prev = from;
    for (let j = k; j <= times.length; j++) {
      const t = j < times.length ? times[j]! : windowEnd;
      if (t - prev > gap) {
        gap = t - prev;
        gapFrom = prev;
      }
      prev = t;
    }
    let delayed = 0;
    let cleared: number | null = null;
    let acked = 0;
    let lostHere = 0;
    let doubledHere = 0;
    for (const m of messages.values()) {
      if (inWindow(m.firstAt) && m.ackAt !== null) {
        acked++;
        const n = byMessage.get(m.id)?.at.length ?? 0;
        if (n === 0) lostHere++;
        if (n >= 2) doubledHere++;
      }
      // A message acknowledged up to 10 s before a fault may be caught by it (in a worker's hands): those belong to that fault.
      if (m.ackAt === null || m.ackAt < f.at - LEAD_MS || m.ackAt >= (sorted[i + 1] ? sorted[i + 1]!.at - LEAD_MS : windowEnd)) continue;
      const first = firstReplyOf.get(m.id);
      if (first === undefined || first - m.ackAt > delayedOverMs) {
        delayed++;
        if (first !== undefined) cleared = Math.max(cleared ?? 0, first - f.at);
      }
    }
    const refused = failures.filter((x) => inWindow(x.at));
    const lastRefusal = refused.length ? Math.max(...refused.map((x) => x.at)) - f.at : null;
    const after = (t: number | null) => (t === null ? null : round(t - f.at));
    return {
      index: f.index,
      kind: f.kind,
      target: f.target,
      atS: round((f.at - t0) / 1000, 1),
      wallTime: f.wallTime,
      restartedAfterMs: after(f.restartedAt),
      readyAfterMs: after(f.readyAt),
      exitedAfterMs: after(f.exitedAt),
      forced: f.forced,
      leaderAfter: f.leaderAfter,
      leaderElectedAfterMs: after(f.leaderElectedAt),
      caughtUpAfterMs: after(f.caughtUpAt),
      error: f.error,
      windowS: round((windowEnd - f.at) / 1000, 1),
      firstFreshReplyMs: fresh ? round(fresh.at - f.at) : null,
      maxReplyGapMs: round(gap),
      maxReplyGapFromMs: round(gapFrom - f.at),
      delayed,
      delayedOverMs: round(delayedOverMs),
      delayedClearedMs: cleared === null ? null : round(cleared),
      refusals: countBy(refused),
      lastRefusalMs: lastRefusal === null ? null : round(lastRefusal),
      acked,
      lost: lostHere,
      doubled: doubledHere,
    };
  });

  // Per second from the load's start to the end of the measurement: for plotting, and to see a gap.
  const bins = Math.max(1, Math.ceil((end - t0) / 1000));
  const timeline = { acknowledged: new Array<number>(bins).fill(0), replies: new Array<number>(bins).fill(0), withoutA200: new Array<number>(bins).fill(0) };
  const bin = (t: number) => Math.min(bins - 1, Math.max(0, Math.floor((t - t0) / 1000)));
  for (const m of messages.values()) if (m.ackAt !== null) timeline.acknowledged[bin(m.ackAt)]!++;
  for (const r of log.replies) timeline.replies[bin(r.at)]!++;
  for (const x of failures) timeline.withoutA200[bin(x.at)]!++;

  return {
    sent: messages.size,
    duplicatesSent: [...messages.values()].filter((m) => m.duplicate).length,
    acknowledged,
    neverAcknowledged: messages.size - acknowledged,
    answered,
    lost,
    doubled,
    extraReplies: extra,
    answeredUnacknowledged: answeredUnacked,
    replies: log.replies.length,
    unmatchedReplies: log.replies.length - matched,
    wrongCustomer,
    attempts,
    refusals: countBy(failures),
    ackToReplyMs: { p50: round(lat.p50), p90: round(lat.p90), p99: round(lat.p99), max: round(lat.max) },
    faults: figures,
    lostIds,
    doubledIds,
    timeline,
  };
}

/** Why the lost messages were not answered, from the scenario's database. */
export async function lostCauses(db: pg.Client, ids: string[]): Promise<{ causes: Record<string, number>; examples: { id: string; cause: string }[] }> {
  const causes: Record<string, number> = {};
  const examples: { id: string; cause: string }[] = [];
  if (ids.length === 0) return { causes, examples };
  const { rows } = await db.query<{ external_id: string; conversation: string; reply_kind: string | null; outbox: string | null; last_error: string | null }>(
    `select distinct on (c.external_id) c.external_id, conv.status as conversation, r.kind as reply_kind, o.status as outbox, o.last_error
     from conversation_messages c join conversations conv on conv.id = c.conversation_id
     left join conversation_messages r on r.reply_to_id = c.id
     left join outbox o on o.message_id = r.id
     where c.role = 'customer' and c.external_id = any($1::text[])
     order by c.external_id, r.id nulls last`,
    [ids],
  );
  const found = new Map(rows.map((r) => [r.external_id, r]));
  for (const id of ids) {
    const r = found.get(id);
    const cause = !r
      ? 'never stored (not consumed from the stream)'
      : !r.reply_kind
        ? `stored, no reply written (conversation ${r.conversation})`
        : `${r.reply_kind === 'reply' ? 'reply' : r.reply_kind} written, ${r.outbox ? `outbox ${r.outbox}` : 'no outbox row'}${r.last_error ? ` (${r.last_error.slice(0, 80)})` : ''}`;
    causes[cause] = (causes[cause] ?? 0) + 1;
    if (examples.length < 20) examples.push({ id, cause });
  }
  return { causes, examples };
}

const s1 = (ms: number | null | undefined) => (ms === null || ms === undefined || !Number.isFinite(ms) ? '–' : `${(ms / 1000).toFixed(1)} s`);
const refusalText = (r: Record<string, number>) =>
  Object.keys(r).length ? Object.entries(r).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ×${fmt(v)}`).join(', ') : 'none';

export function chaosRows(section: string, f: ChaosFigures, extra: { minutes: number; rate: number; customers: number; natsServer: string; seed: number; events: RoleEvent[]; t0: number; lostCauses: Record<string, number>; helpdeskRefused: number; historyReads: number }): Row[] {
  const rows: Row[] = [
    {
      section,
      metric: `webhooks sent (${fmt(extra.rate, 1)}/s × ${fmt(extra.minutes, 1)} min, ${fmt(extra.customers)} customers; nats-server ${extra.natsServer}; seed ${extra.seed}) / delivered twice`,
      value: `${fmt(f.sent)} / ${fmt(f.duplicatesSent)}`,
    },
    { section, metric: 'acknowledged (200) / never acknowledged in 2 min of retries', value: `${fmt(f.acknowledged)} / ${fmt(f.neverAcknowledged)}`, target: 'none unacknowledged', ok: f.neverAcknowledged === 0 },
    { section, metric: 'lost: acknowledged, never answered', value: fmt(f.lost), target: '0', ok: f.lost === 0 },
    { section, metric: 'doubled: answered twice or more (extra replies)', value: `${fmt(f.doubled)} (${fmt(f.extraReplies)})`, target: '0', ok: f.doubled === 0 },
    { section, metric: 'webhook attempts without a 200 (all)', value: refusalText(f.refusals) },
    { section, metric: 'acknowledgement → reply p50 / p99 / max', value: `${fmt(f.ackToReplyMs.p50)} / ${fmt(f.ackToReplyMs.p99)} / ${fmt(f.ackToReplyMs.max)} ms` },
    { section, metric: 'helpdesk sends refused 503 (reconciled, then sent again) / history reads', value: `${fmt(extra.helpdeskRefused)} / ${fmt(extra.historyReads)}` },
  ];
  if (f.unmatchedReplies || f.wrongCustomer || f.answeredUnacknowledged) {
    rows.push({ section, metric: 'replies not linked to a message / to the wrong customer; answered without a 200', value: `${fmt(f.unmatchedReplies)} / ${fmt(f.wrongCustomer)}; ${fmt(f.answeredUnacknowledged)}` });
  }
  for (const [cause, n] of Object.entries(extra.lostCauses)) rows.push({ section, metric: `  lost: ${cause}`, value: fmt(n) });
  for (const x of f.faults) {
    const restart = x.kind === 'nats-leader-kill' ? `new leader ${x.leaderAfter ?? '–'} after ${s1(x.leaderElectedAfterMs)}; restarted +${s1(x.restartedAfterMs)}` : `restarted +${s1(x.restartedAfterMs)}, ready +${s1(x.readyAfterMs)}`;
    rows.push({
      section,
      metric: `fault ${x.index + 1} @ ${fmt(x.atS)} s: ${FAULT_TEXT[x.kind]} ${x.target}${x.error ? ` (FAILED: ${x.error.slice(0, 60)})` : ''} (${restart})`,
      value: `replies again ${s1(x.firstFreshReplyMs)}; max gap ${s1(x.maxReplyGapMs)}; ${fmt(x.delayed)} delayed > ${s1(x.delayedOverMs)}, last answered ${s1(x.delayedClearedMs)}`,
    });
    rows.push({
      section,
      metric: `  fault ${x.index + 1}: webhooks without a 200 in the next ${fmt(x.windowS)} s (last ${s1(x.lastRefusalMs)} after); its messages lost / doubled`,
      value: `${refusalText(x.refusals)}; ${fmt(x.lost)} / ${fmt(x.doubled)} of ${fmt(x.acked)}`,
    });
  }
  if (extra.events.length) {
    rows.push({ section, metric: 'unplanned exits / failed starts (restarted as a supervisor would)', value: extra.events.map((e) => `${e.role} ${e.event} @ ${fmt((e.at - extra.t0) / 1000)} s`).join('; ').slice(0, 160) });
  }
  return rows;
}

/** --baseline: lost, doubled and unacknowledged of both passes side by side. */
export function chaosComparisonRows(before: Record<string, unknown>, after: Record<string, unknown>): Row[] {
  const get = (d: Record<string, unknown>, k: string) => {
    const v = (d.figures as Record<string, unknown> | undefined)?.[k];
    return typeof v === 'number' ? v : undefined;
  };
  const slowest = (d: Record<string, unknown>) => {
    const faults = ((d.figures as { faults?: FaultFigures[] } | undefined)?.faults ?? []).map((x) => x.delayedClearedMs ?? 0);
    return faults.length ? Math.max(...faults) : undefined;
  };
  const pair = (b: number | undefined, a: number | undefined, digits = 0) => `${b === undefined ? '–' : fmt(b, digits)} → ${a === undefined ? '–' : fmt(a, digits)}`;
  return [
    { section: 'chaos', metric: 'vs baseline: lost (acknowledged, never answered)', value: pair(get(before, 'lost'), get(after, 'lost')), target: '0', ok: get(after, 'lost') === 0 },
    { section: 'chaos', metric: 'vs baseline: doubled', value: pair(get(before, 'doubled'), get(after, 'doubled')), target: '0', ok: get(after, 'doubled') === 0 },
    { section: 'chaos', metric: 'vs baseline: never acknowledged', value: pair(get(before, 'neverAcknowledged'), get(after, 'neverAcknowledged')) },
    { section: 'chaos', metric: 'vs baseline: acknowledged', value: pair(get(before, 'acknowledged'), get(after, 'acknowledged')) },
    { section: 'chaos', metric: 'vs baseline: slowest fault recovery (delayed answers answered, s)', value: pair(slowest(before) === undefined ? undefined : slowest(before)! / 1000, slowest(after) === undefined ? undefined : slowest(after)! / 1000, 1) },
  ];
}
