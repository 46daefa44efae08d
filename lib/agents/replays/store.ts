import { inTransaction, query, type SqlClient, type SqlPool } from '../../db.js';
import { formatUsd } from '../../money.js';
import type { ReplayAnswer, ReplayStatus } from '../../../schema/replay-entities.js';
import type { AgentSettings } from '../versions.js';

/**
 * Replays of an agent's past conversations with changes (contract.md § Replay before
 * publishing): every statement on `agent_replays` / `agent_replay_items`, for the API that
 * creates, reads and publishes them (gateway/routes/replays.ts) and the workers that answer
 * them (actors/replays/). Plain SQL through `pg` so both sides share it; every API statement
 * names the company. A replay only reads conversations: nothing here writes to them.
 */

export const MAX_REPLAY_CONVERSATIONS = 200;
export const DEFAULT_REPLAY_CONVERSATIONS = 50;
/** The first 20 answered customer messages of each conversation: a long conversation does not crowd out the others. */
export const MAX_MESSAGES_PER_CONVERSATION = 20;
/** Replays of one company running at once at most (their model calls are real, and debited). */
export const MAX_RUNNING_REPLAYS = 3;

/** Which conversations a replay takes: `ids`, or the agent's conversations created in [`from`, `to`); `limit` of either. */
export interface ReplaySelection {
  ids?: number[];
  from?: string;
  to?: string;
  limit?: number;
}

export interface ReplayItemView {
  seq: number;
  conversationId: number;
  /** A number, as the conversations' API shows message ids. */
  messageId: number;
  question: string;
  before: ReplayAnswer;
  after: ReplayAnswer | null;
  changed: boolean | null;
  costUsd: string;
}

export interface ReplaySummary {
  /** Answered again, and the answer means the same. */
  same: number;
  changed: number;
  /** Answered before, handed over now. */
  newHandoffs: number;
  /** Handed over before, answered now. */
  resolvedHandoffs: number;
  costUsd: string;
}

/** What the API answers of a replay (`items` only when asked for). */
export interface ReplayView {
  id: number;
  agentId: number;
  status: ReplayStatus;
  total: number;
  done: number;
  /** The fields as sent, a model key shown as "********". */
  changes: Record<string, unknown>;
  changeFields: string[];
  baseVersion: number;
  publishedVersion: number | null;
  error: string | null;
  createdAt: string;
  finishedAt: string | null;
  summary: ReplaySummary;
  items?: ReplayItemView[];
}

export type ItemFilter = 'all' | 'changed' | 'newHandoffs' | 'resolvedHandoffs' | 'none';
export const ITEM_FILTERS: readonly ItemFilter[] = ['all', 'changed', 'newHandoffs', 'resolvedHandoffs', 'none'];

/** The ids among `ids` that are no conversation of the company (the API's 400 names them). */
export async function unknownConversationIds(sql: SqlClient, companyId: number, ids: number[]): Promise<number[]> {
  const rows = await query<{ id: number }>(
    sql,
    'replay_unknown_conversations',
    `select x.id from unnest($2::int[]) x(id)
     where not exists (select 1 from conversations c where c.id = x.id and c.company_id = $1)
     order by x.id`,
    [companyId, ids],
  );
  return rows.map((r) => r.id);
}

/** A conversation with a customer message the agent answered (a reply or a handoff notice in answer to it). */
const ANSWERED = `exists (
  select 1 from conversation_messages m
  join conversation_messages a on a.reply_to_id = m.id and a.role = 'agent' and a.kind in ('reply', 'handoff_notice')
  where m.conversation_id = c.id and m.role = 'customer' and m.kind = 'message')`;

/**
 * The chosen conversations: the company's of `ids` ($3), or else the agent's (those of its
 * integrations); created in [$4, $5) when given; newest activity first, $6 at most. (Each
 * statement is planned with its values, so the case folds to the branch it takes.)
 */
const CHOSEN = `select c.id, c.created_at from conversations c
  where c.company_id = $1
    and case when $3::int[] is null then c.integration_id in (select i.id from integrations i where i.company_id = $1 and i.agent_id = $2)
             else c.id = any($3::int[]) end
    and ($4::timestamptz is null or c.created_at >= $4) and ($5::timestamptz is null or c.created_at < $5)
    and ${ANSWERED}
  order by c.last_message_at desc nulls last, c.id desc limit $6`;

/**
 * One statement: the chosen conversations' answered customer messages (each one's first
 * agent answer is its `before`), the replay row with their count, and its items numbered
 * conversations oldest first, each one's messages in order. No row at all when there is
 * no such message.
 */
const CREATE = `
  with chosen as (${CHOSEN}),
  items as (
    select row_number() over (order by ch.created_at, ch.id, q.seq)::int as seq, ch.id as conversation_id, q.message_id, q.question, q.before
    from chosen ch
    cross join lateral (
      select m.id as message_id, m.seq, m.text as question,
             jsonb_build_object('kind', case when a.kind = 'reply' then 'reply' else 'handoff' end, 'text', a.text, 'sources', coalesce(a.sources, '[]'::jsonb)) as before
      from conversation_messages m
      cross join lateral (
        select a.kind, a.text, a.sources from conversation_messages a
        where a.reply_to_id = m.id and a.role = 'agent' and a.kind in ('reply', 'handoff_notice')
        order by a.seq limit 1
      ) a
      where m.conversation_id = ch.id and m.role = 'customer' and m.kind = 'message'
      order by m.seq limit ${MAX_MESSAGES_PER_CONVERSATION}
    ) q
  ),
  replay as (
    insert into agent_replays (company_id, agent_id, changes, settings, change_fields, base_version, total, created_by)
    select $1, $2, $7, $8, $9, $10, k.n, $11 from (select count(*)::int as n from items) k where k.n > 0
    returning id, total
  ),
  stored as (
    insert into agent_replay_items (replay_id, company_id, seq, conversation_id, message_id, question, before)
    select r.id, $1, i.seq, i.conversation_id, i.message_id, i.question, i.before from items i cross join replay r
  )
  select id, total from replay`;

/** Key of the per-company advisory lock that makes the running-replays quota exact. */
const REPLAY_LOCK = 0x7265706c; // 'repl'

/**
 * Creates a replay in one transaction: the chosen conversations' answered customer messages
 * become its items with their `before`. Returns null when there are none, 'busy' when the
 * company already runs MAX_RUNNING_REPLAYS (counted under a lock of the company's replays, so
 * two requests at once cannot both pass).
 */
export async function createReplay(
  sql: SqlPool,
  r: {
    companyId: number;
    agentId: number;
    changes: object;
    settings: AgentSettings;
    changeFields: string[];
    baseVersion: number;
    createdBy: string | null;
    selection: ReplaySelection;
  },
): Promise<{ id: number; total: number } | 'busy' | null> {
  const s = r.selection;
  const limit = Math.min(s.limit ?? (s.ids ? s.ids.length : DEFAULT_REPLAY_CONVERSATIONS), MAX_REPLAY_CONVERSATIONS);
  return inTransaction(sql, async (c) => {
    await query(c, 'replay_lock', 'select pg_advisory_xact_lock($1::int, $2::int)', [REPLAY_LOCK, r.companyId]);
    const [running] = await query<{ n: number }>(c, 'replay_running', `select count(*)::int as n from agent_replays where company_id = $1 and status = 'running'`, [r.companyId]);
    if (running!.n >= MAX_RUNNING_REPLAYS) return 'busy';
    const [row] = await query<{ id: number; total: number }>(c, 'replay_create', CREATE, [
      r.companyId, r.agentId, s.ids ?? null, s.from ?? null, s.to ?? null, limit,
      JSON.stringify(r.changes), JSON.stringify(r.settings), r.changeFields, r.baseVersion, r.createdBy,
    ]);
    return row ?? null;
  });
}

interface ReplayRow {
  id: number;
  agent_id: number;
  status: ReplayStatus;
  total: number;
  changes: Record<string, unknown>;
  change_fields: string[];
  base_version: number;
  published_version: number | null;
  error: string | null;
  created_at: Date;
  finished_at: Date | null;
  done: number;
  same: number;
  changed: number;
  new_handoffs: number;
  resolved_handoffs: number;
  cost_usd: string;
}

/** The replay's columns and its summary over its items (`r` the replay). */
const REPLAY_COLUMNS = `r.id, r.agent_id, r.status, r.total, r.changes, r.change_fields, r.base_version, r.published_version, r.error, r.created_at, r.finished_at,
  s.done, s.same, s.changed, s.new_handoffs, s.resolved_handoffs, s.cost_usd`;
const SUMMARY = `cross join lateral (
  select count(*) filter (where i.after is not null)::int as done,
         count(*) filter (where i.after is not null and not i.changed)::int as same,
         count(*) filter (where i.changed)::int as changed,
         count(*) filter (where i.before->>'kind' = 'reply' and i.after->>'kind' = 'handoff')::int as new_handoffs,
         count(*) filter (where i.before->>'kind' = 'handoff' and i.after->>'kind' = 'reply')::int as resolved_handoffs,
         coalesce(sum(i.cost_usd), 0)::text as cost_usd
  from agent_replay_items i where i.replay_id = r.id
) s`;

/** The stored changes as shown: a sealed model key never leaves, its presence shows as "********". */
function changesView(changes: Record<string, unknown>): Record<string, unknown> {
  const model = changes.model as Record<string, unknown> | undefined;
  if (!model || !('apiKeySealed' in model)) return changes;
  const { apiKeySealed, ...rest } = model;
  return { ...changes, model: { ...rest, apiKey: apiKeySealed === null ? null : '********' } };
}

const replayView = (r: ReplayRow): ReplayView => ({
  id: r.id,
  agentId: r.agent_id,
  status: r.status,
  total: r.total,
  done: r.done,
  changes: changesView(r.changes),
  changeFields: r.change_fields,
  baseVersion: r.base_version,
  publishedVersion: r.published_version,
  error: r.error,
  createdAt: r.created_at.toISOString(),
  finishedAt: r.finished_at?.toISOString() ?? null,
  summary: { same: r.same, changed: r.changed, newHandoffs: r.new_handoffs, resolvedHandoffs: r.resolved_handoffs, costUsd: formatUsd(r.cost_usd) },
});

const ITEM_WHERE: Record<Exclude<ItemFilter, 'none'>, string> = {
  all: 'true',
  changed: 'i.changed',
  newHandoffs: `i.before->>'kind' = 'reply' and i.after->>'kind' = 'handoff'`,
  resolvedHandoffs: `i.before->>'kind' = 'handoff' and i.after->>'kind' = 'reply'`,
};

/** One replay of the company's agent with its summary and the items `o.items` asks for (by seq); null when there is none such. */
export async function replayWithSummary(sql: SqlClient, companyId: number, agentId: number, replayId: number, o: { items: ItemFilter }): Promise<ReplayView | null> {
  const [row] = await query<ReplayRow>(sql, 'replay_get', `select ${REPLAY_COLUMNS} from agent_replays r ${SUMMARY} where r.id = $1 and r.company_id = $2 and r.agent_id = $3`, [
    replayId, companyId, agentId,
  ]);
  if (!row) return null;
  const view = replayView(row);
  if (o.items === 'none') return view;
  const items = await query<{ seq: number; conversation_id: number; message_id: string; question: string; before: ReplayAnswer; after: ReplayAnswer | null; changed: boolean | null; cost_usd: string }>(
    sql,
    `replay_items_${o.items}`,
    `select i.seq, i.conversation_id, i.message_id::text, i.question, i.before, i.after, i.changed, i.cost_usd::text
     from agent_replay_items i where i.replay_id = $1 and ${ITEM_WHERE[o.items]} order by i.seq`,
    [replayId],
  );
  view.items = items.map((i) => ({
    seq: i.seq, conversationId: i.conversation_id, messageId: Number(i.message_id), question: i.question,
    before: i.before, after: i.after, changed: i.changed, costUsd: formatUsd(i.cost_usd),
  }));
  return view;
}

/** A page of the agent's replays, newest first, without items. */
export async function listReplays(sql: SqlClient, companyId: number, agentId: number, page: { limit: number; offset: number }): Promise<{ replays: ReplayView[]; total: number }> {
  const [rows, [count]] = await Promise.all([
    query<ReplayRow>(sql, 'replay_list', `select ${REPLAY_COLUMNS} from (
        select * from agent_replays where company_id = $1 and agent_id = $2 order by id desc limit $3 offset $4
      ) r ${SUMMARY} order by r.id desc`, [companyId, agentId, page.limit, page.offset]),
    query<{ n: number }>(sql, 'replay_count', 'select count(*)::int as n from agent_replays where company_id = $1 and agent_id = $2', [companyId, agentId]),
  ]);
  return { replays: rows.map(replayView), total: count!.n };
}

/** A replay about to be published, its row locked until `c`'s transaction ends (a second publish waits, then sees it published). */
export async function lockReplayForPublish(
  c: SqlClient,
  companyId: number,
  agentId: number,
  replayId: number,
): Promise<{ status: ReplayStatus; changes: Record<string, unknown>; publishedVersion: number | null } | null> {
  const [row] = await query<{ status: ReplayStatus; changes: Record<string, unknown>; published_version: number | null }>(
    c,
    'replay_lock_publish',
    'select status, changes, published_version from agent_replays where id = $1 and company_id = $2 and agent_id = $3 for update',
    [replayId, companyId, agentId],
  );
  return row ? { status: row.status, changes: row.changes, publishedVersion: row.published_version } : null;
}

/** Records the version the replay's publish made. */
export async function markPublished(c: SqlClient, companyId: number, replayId: number, version: number): Promise<void> {
  await query(c, 'replay_published', 'update agent_replays set published_version = $3 where id = $1 and company_id = $2', [replayId, companyId, version]);
}

// ---- the worker side -------------------------------------------------------------------

export interface ClaimedReplay {
  id: number;
  companyId: number;
  agentId: number;
  settings: AgentSettings;
  total: number;
}

/** Takes up to `max` running replays whose lease is free or ran out (oldest first), leased to `workerId` for `leaseMs`. */
export async function claimReplays(sql: SqlClient, workerId: string, max: number, leaseMs: number): Promise<ClaimedReplay[]> {
  const rows = await query<{ id: number; company_id: number; agent_id: number; settings: AgentSettings; total: number }>(
    sql,
    'replay_claim',
    `with free as (
       select id from agent_replays
       where status = 'running' and (lease_until is null or lease_until < now())
       order by id limit $2 for update skip locked
     )
     update agent_replays r set lease_owner = $1, lease_until = now() + $3 * interval '1 millisecond'
     from free where r.id = free.id
     returning r.id, r.company_id, r.agent_id, r.settings, r.total`,
    [workerId, max, leaseMs],
  );
  return rows.map((r) => ({ id: r.id, companyId: r.company_id, agentId: r.agent_id, settings: r.settings, total: r.total }));
}

/** Extends the lease; false when it is no longer `workerId`'s (another worker took it over, or the replay ended or was deleted). */
export async function renewLease(sql: SqlClient, replayId: number, workerId: string, leaseMs: number): Promise<boolean> {
  const rows = await query(
    sql,
    'replay_renew',
    `update agent_replays set lease_until = now() + $3 * interval '1 millisecond'
     where id = $1 and lease_owner = $2 and status = 'running' returning 1`,
    [replayId, workerId, leaseMs],
  );
  return rows.length > 0;
}

/** Gives a running replay's lease up (an orderly stop): another worker takes it at its next look, not when the lease runs out. */
export async function releaseLease(sql: SqlClient, replayId: number, workerId: string): Promise<void> {
  await query(sql, 'replay_release', `update agent_replays set lease_owner = null, lease_until = null where id = $1 and lease_owner = $2 and status = 'running'`, [replayId, workerId]);
}

export interface PendingItem {
  id: string;
  seq: number;
  conversationId: number;
  messageId: string;
  question: string;
  before: ReplayAnswer;
}

/** The replay's items not answered yet, by seq. */
export async function pendingItems(sql: SqlClient, replayId: number): Promise<PendingItem[]> {
  const rows = await query<{ id: string; seq: number; conversation_id: number; message_id: string; question: string; before: ReplayAnswer }>(
    sql,
    'replay_pending',
    `select id::text, seq, conversation_id, message_id::text, question, before
     from agent_replay_items where replay_id = $1 and after is null order by seq`,
    [replayId],
  );
  return rows.map((r) => ({ id: r.id, seq: r.seq, conversationId: r.conversation_id, messageId: r.message_id, question: r.question, before: r.before }));
}

/**
 * Stores one item's answer in the caller's transaction `c` (where its debit is written too):
 * only while the item is unanswered and the replay is running under `workerId`'s lease. True
 * when stored; false: roll the transaction back (its debit with it).
 */
export async function storeItemAnswer(c: SqlClient, item: { id: string; replayId: number; workerId: string; after: ReplayAnswer; changed: boolean; costUsd: string }): Promise<boolean> {
  const rows = await query(
    c,
    'replay_store_item',
    `update agent_replay_items i set after = $3, changed = $4, cost_usd = $5, done_at = now()
     where i.id = $1::bigint and i.replay_id = $2 and i.after is null
       and exists (select 1 from agent_replays r where r.id = $2 and r.status = 'running' and r.lease_owner = $6)
     returning 1`,
    [item.id, item.replayId, JSON.stringify(item.after), item.changed, item.costUsd, item.workerId],
  );
  return rows.length > 0;
}

/** Ends a replay `workerId` holds: done, or failed with why; its lease is let go. */
export async function finishReplay(sql: SqlClient, replayId: number, workerId: string, status: 'done' | 'failed', error?: string): Promise<void> {
  await query(
    sql,
    'replay_finish',
    `update agent_replays set status = $3, error = $4, finished_at = now(), lease_owner = null, lease_until = null
     where id = $1 and lease_owner = $2 and status = 'running'`,
    [replayId, workerId, status, status === 'failed' ? (error ?? null) : null],
  );
}

const normalText = (s: string) => s.normalize('NFKC').toLowerCase().replace(/\s+/g, ' ').trim();

/** Whether the customer would get a different answer: another kind, or another text (case, spacing and Unicode forms aside). */
export function answersDiffer(before: ReplayAnswer, after: ReplayAnswer): boolean {
  return before.kind !== after.kind || normalText(before.text) !== normalText(after.text);
}
