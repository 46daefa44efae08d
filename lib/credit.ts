import { inTransaction, query, type SqlClient, type SqlPool } from './db.js';

/**
 * A company's credit as model calls see it: whether a call may be made (balance, daily spend
 * caps), the reservation a call holds while it runs, and its debit. Shared by the worker's
 * agents (actors/steps.ts, actors/agents/runner.ts), their replays (actors/replays/runner.ts)
 * and the gateway's agent evaluations (lib/agents/evaluate.ts).
 *
 * Reserve before, settle after (contract.md § Balance): a call is admitted only while the
 * balance less the reservations of calls in flight (`companies.reserved_usd`) covers its
 * estimated cost, which it then reserves; when its answer commits, the reservation is
 * replaced by the exact debit. The balance goes below zero only by what the calls in flight
 * cost beyond their estimates. `reserved_usd` changes only in the transaction that adds or
 * removes the reservation rows it sums, so a crash can leave a row but never a count without
 * its row; every transaction that changes several companies' rows locks them in id order:
 * - a call whose process died leaves its reservation until it expires (`expires_at`, longer
 *   than any call may last); the workers' sweep then releases it;
 * - the customer message of a crashed answer is asked again: its new reservation replaces the
 *   old one (one reservation per answered message), and the ledger's unique index on the
 *   answered message keeps the debit single.
 */
const first = <T>(r: T[]): T | null => r[0] ?? null;

/** Which reservation: the one of a customer message (worker answers), or by id (evaluations, which answer no stored message). */
export type ReservationRef = { messageId: string } | { reservationId: string };

/**
 * Debits one model call from the company's credit, inside the transaction that commits the
 * answer it produced, and releases the call's reservation: one `model_usage` ledger entry,
 * keyed by the customer message that was answered (`message_id`, unique per kind: migration
 * 0005; null for an evaluation's call), `companies.balance_usd` lowered by the exact amount and
 * `reserved_usd` by what the reservation held (numeric arithmetic in PostgreSQL, one
 * statement). Returns null when that message's answer was already paid (it cannot be: the
 * caller holds the conversation lock and only applies an answer the machine is still waiting
 * for; the unique index makes it a proof); its reservation is released all the same.
 */
export async function chargeModelUsage(
  c: SqlClient,
  u: { companyId: number; conversationId: number | null; messageId: string | null; reservationId?: string | null; agentId?: number | null; model: string; inputTokens: number; outputTokens: number; costUsd: string },
): Promise<{ ledgerId: string; amountUsd: string; balanceAfterUsd: string } | null> {
  const entry = first(
    await query<{ id: string; amount_usd: string; balance_after_usd: string }>(
      c,
      'usage_charge',
      `with paid as (
         select exists (select 1 from credit_ledger where kind = 'model_usage' and message_id = $7::bigint) as yes
       ),
       gone as (
         delete from credit_reservations where company_id = $1 and (message_id = $7::bigint or id = $9::bigint) returning amount_usd
       ),
       co as (
         update companies c set balance_usd = c.balance_usd - case when paid.yes then 0 else $2::numeric end,
                                reserved_usd = c.reserved_usd - (select coalesce(sum(amount_usd), 0) from gone)
         from paid where c.id = $1
         returning c.balance_usd, paid.yes
       )
       insert into credit_ledger (company_id, kind, amount_usd, balance_after_usd, input_tokens, output_tokens, model, conversation_id, message_id, agent_id)
       select $1, 'model_usage', -($2::numeric), co.balance_usd, $3, $4, $5, $6, $7::bigint, $8 from co where not co.yes
       returning id::text, amount_usd::text, balance_after_usd::text`,
      [u.companyId, u.costUsd, u.inputTokens, u.outputTokens, u.model, u.conversationId, u.messageId, u.agentId ?? null, u.reservationId ?? null],
    ),
  );
  return entry && { ledgerId: entry.id, amountUsd: entry.amount_usd, balanceAfterUsd: entry.balance_after_usd };
}

/**
 * Debits one replayed answer's model call (lib/agents/replays, contract.md § Replay before
 * publishing), in the transaction that stores the answer: one `replay_usage` ledger entry (no
 * conversation, no message: nothing was answered for a customer), `balance_usd` lowered by the
 * exact amount and the call's reservation released. Spend caps and analytics count
 * `model_usage` only: what a company spends trying changes out never hands a customer over.
 */
export async function chargeReplayUsage(
  c: SqlClient,
  u: { companyId: number; agentId: number; reservationId: string | null; model: string; inputTokens: number; outputTokens: number; costUsd: string },
): Promise<{ ledgerId: string; amountUsd: string; balanceAfterUsd: string }> {
  const [entry] = await query<{ id: string; amount_usd: string; balance_after_usd: string }>(
    c,
    'replay_usage_charge',
    `with gone as (
       delete from credit_reservations where company_id = $1 and id = $7::bigint returning amount_usd
     ),
     co as (
       update companies c set balance_usd = c.balance_usd - $2::numeric, reserved_usd = c.reserved_usd - (select coalesce(sum(amount_usd), 0) from gone)
       where c.id = $1
       returning c.balance_usd
     )
     insert into credit_ledger (company_id, kind, amount_usd, balance_after_usd, input_tokens, output_tokens, model, conversation_id, message_id, agent_id)
     select $1, 'replay_usage', -($2::numeric), co.balance_usd, $3, $4, $5, null, null, $6 from co
     returning id::text, amount_usd::text, balance_after_usd::text`,
    [u.companyId, u.costUsd, u.inputTokens, u.outputTokens, u.model, u.agentId, u.reservationId],
  );
  if (!entry) throw new Error(`chargeReplayUsage: company ${u.companyId} not found`);
  return { ledgerId: entry.id, amountUsd: entry.amount_usd, balanceAfterUsd: entry.balance_after_usd };
}

/** What one committed or discarded answer does to its company's credit. */
export interface AnswerSettlement {
  companyId: number;
  conversationId: number;
  /** The answered customer message: its reservation is released, its debit keyed by it. */
  messageId: string;
  /** The model call's cost to debit; null: the answer is not charged (discarded, or no call). */
  usage: { agentId?: number | null; model: string; inputTokens: number; outputTokens: number; costUsd: string } | null;
}

/**
 * The credit side of a group-committed batch of answers, in its transaction, after its other
 * writes (the company rows stay locked only until the commit): every answered message's
 * reservation released, and one `model_usage` entry per charged answer not paid before, the
 * balances lowered by their sum. The companies are locked in id order first (every
 * transaction that locks several does so), so two batches cannot deadlock. Two statements
 * whatever the batch holds.
 */
export async function settleAnswers(c: SqlClient, list: AnswerSettlement[]): Promise<void> {
  if (list.length === 0) return;
  const companies = [...new Set(list.map((s) => s.companyId))].sort((a, b) => a - b);
  await query(c, 'settle_lock', `select id from companies where id = any($1::int[]) order by id for no key update`, [companies]);
  const rows = list.map((s, i) => ({
    i, company_id: s.companyId, conversation_id: s.conversationId, message_id: s.messageId,
    agent_id: s.usage?.agentId ?? null, model: s.usage?.model ?? null, input_tokens: s.usage?.inputTokens ?? null, output_tokens: s.usage?.outputTokens ?? null, cost: s.usage?.costUsd ?? null,
  }));
  await query(
    c,
    'settle_answers',
    `with input as (
       select * from jsonb_to_recordset($1::jsonb)
         as x(i int, company_id int, conversation_id bigint, message_id bigint, agent_id int, model text, input_tokens bigint, output_tokens bigint, cost numeric)
     ),
     gone as (
       delete from credit_reservations r using input i where r.message_id = i.message_id and r.company_id = i.company_id returning r.company_id, r.amount_usd
     ),
     fresh as (
       select i.* from input i
       where i.cost is not null and not exists (select 1 from credit_ledger l where l.kind = 'model_usage' and l.message_id = i.message_id)
     ),
     per as (
       select ids.company_id,
              coalesce((select sum(f.cost) from fresh f where f.company_id = ids.company_id), 0) as spent,
              coalesce((select sum(g.amount_usd) from gone g where g.company_id = ids.company_id), 0) as freed
       from (select distinct company_id from input) ids
     ),
     co as (
       update companies c set balance_usd = c.balance_usd - per.spent, reserved_usd = c.reserved_usd - per.freed
       from per where c.id = per.company_id and (per.freed <> 0 or exists (select 1 from fresh f where f.company_id = per.company_id))
       returning c.id, c.balance_usd
     )
     insert into credit_ledger (company_id, kind, amount_usd, balance_after_usd, input_tokens, output_tokens, model, conversation_id, message_id, agent_id)
     select f.company_id, 'model_usage', -f.cost,
            co.balance_usd + sum(f.cost) over (partition by f.company_id order by f.i rows between current row and unbounded following) - f.cost,
            f.input_tokens, f.output_tokens, f.model, f.conversation_id, f.message_id, f.agent_id
     from fresh f join co on co.id = f.company_id
     order by f.i`,
    [JSON.stringify(rows)],
  );
}

export type Reservation =
  | { ok: true; reservationId: string }
  /**
   * Not admitted: the balance (≤ 0, or less what calls in flight hold does not cover the
   * estimate) or a daily spend cap; what was free, and what the calls in flight hold (anywhere).
   */
  | { ok: false; reason: 'balance' | 'company_cap' | 'agent_cap'; availableUsd: string; reservedUsd: string };

export interface ReservationRequest {
  companyId: number;
  agentId: number | null;
  /** The customer message being answered (null: an evaluation): a reservation it still holds from a call that died is replaced. */
  messageId: string | null;
  amountUsd: string;
  /** How long the reservation may outlive its call's process before the sweep releases it. */
  ttlMs: number;
}

/**
 * Reserves the estimated cost of many calls at once, in one statement (a worker
 * group-commits the reservations of the calls that start meanwhile: one company row would
 * otherwise be updated, and its lock waited for, once per call). Its row locks are
 * `for no key update`, which the inserts of the company's other rows (foreign keys: `for key
 * share`) do not wait for, nor it for them. The companies are locked in
 * id order; the requests of a company, in order, are admitted while its balance is above zero,
 * neither its nor the agent's daily spend cap is reached (today's spend is summed only when
 * there is a cap) and the balance less what calls in flight hold covers them all so far (the
 * first that does not fit, and those after it, are refused). A message's reservation left by
 * a call that died is released first. One result per request, in order; a refusal says what
 * was free and what calls in flight (this batch's included) hold.
 */
export async function reserveCredits(c: SqlClient, requests: ReservationRequest[]): Promise<Reservation[]> {
  if (requests.length === 0) return [];
  const rows = await query<{ i: number; id: string | null; reason: 'balance' | 'company_cap' | 'agent_cap' | null; available: string | null; reserved: string | null }>(
    c,
    'credit_reserve',
    `with req as (
       select * from jsonb_to_recordset($1::jsonb) as x(i int, company_id int, agent_id int, message_id bigint, amount numeric, ttl_ms int)
     ),
     co as materialized (
       select id, balance_usd, reserved_usd, spend_cap_usd_per_day as cap from companies
       where id in (select company_id from req) order by id for no key update
     ),
     prior as (
       delete from credit_reservations r using req where r.message_id = req.message_id returning r.company_id, r.amount_usd
     ),
     day as (select date_trunc('day', now() at time zone 'utc') at time zone 'utc' as start),
     state as materialized (
       select co.id, co.balance_usd as balance,
              co.reserved_usd - coalesce((select sum(p.amount_usd) from prior p where p.company_id = co.id), 0) as reserved,
              co.cap is not null and (select coalesce(-sum(l.amount_usd), 0) from credit_ledger l, day
                                      where l.company_id = co.id and l.kind = 'model_usage' and l.at >= day.start) >= co.cap as capped
       from co
     ),
     agent_capped as (
       select a.id from agents a, day
       where a.id in (select agent_id from req) and a.spend_cap_usd_per_day is not null
         and (select coalesce(-sum(l.amount_usd), 0) from credit_ledger l
              where l.company_id = a.company_id and l.kind = 'model_usage' and l.agent_id = a.id and l.at >= day.start) >= a.spend_cap_usd_per_day
     ),
     cand as (
       select req.*, s.balance - s.reserved as available, sum(req.amount) over (partition by req.company_id order by req.i) as upto
       from req join state s on s.id = req.company_id
       where s.balance > 0 and not s.capped and (req.agent_id is null or req.agent_id not in (select id from agent_capped))
     ),
     ok as materialized (
       select cand.i, cand.company_id, cand.agent_id, cand.message_id, cand.amount, cand.ttl_ms, nextval('credit_reservations_id_seq') as id
       from cand where cand.available > 0 and cand.upto <= cand.available
     ),
     ins as (
       insert into credit_reservations (id, company_id, agent_id, message_id, amount_usd, expires_at)
       select id, company_id, agent_id, message_id, amount, now() + ttl_ms * interval '1 millisecond' from ok
     ),
     held as (
       select s.id, s.balance, s.reserved + coalesce((select sum(ok.amount) from ok where ok.company_id = s.id), 0) as reserved,
              exists (select 1 from prior p where p.company_id = s.id) or exists (select 1 from ok where ok.company_id = s.id) as changed
       from state s
     ),
     upd as (
       update companies c set reserved_usd = held.reserved from held where c.id = held.id and held.changed
     )
     select req.i, ok.id::text as id,
            case when ok.id is not null then null
                 when s.id is null or s.balance <= 0 then 'balance'
                 when s.capped then 'company_cap'
                 when req.agent_id in (select id from agent_capped) then 'agent_cap'
                 else 'balance' end as reason,
            (h.balance - h.reserved)::text as available, h.reserved::text as reserved
     from req left join state s on s.id = req.company_id left join held h on h.id = req.company_id left join ok on ok.i = req.i
     order by req.i`,
    [JSON.stringify(requests.map((r, i) => ({ i, company_id: r.companyId, agent_id: r.agentId, message_id: r.messageId, amount: r.amountUsd, ttl_ms: Math.round(r.ttlMs) })))],
  );
  return rows.map((r): Reservation =>
    r.id !== null ? { ok: true, reservationId: r.id } : { ok: false, reason: r.reason ?? 'balance', availableUsd: r.available ?? '0', reservedUsd: r.reserved ?? '0' },
  );
}

/** A reservation for one call. */
export async function reserveCredit(pool: SqlPool, r: ReservationRequest): Promise<Reservation> {
  return (await reserveCredits(pool, [r]))[0]!;
}

/**
 * How a model call gets its credit (lib/agents/answer.ts). The worker's (actors/credit-gate.ts)
 * group-commits reservations and waits for the company's calls in flight when they hold the
 * credit a call needs; `directAdmission` reserves at once and refuses what does not fit (the
 * gateway's evaluations).
 */
export interface CreditAdmission {
  reserve(r: ReservationRequest, o: { deadlineMs: number; signal?: AbortSignal; away?: <T>(wait: () => Promise<T>) => Promise<T> }): Promise<Reservation>;
  /** Reservations of these companies were settled or released (calls waiting for credit may try again). */
  settled(companyIds: Iterable<number>): void;
}

export const directAdmission = (pool: SqlPool): CreditAdmission => ({ reserve: (r) => reserveCredit(pool, r), settled: () => {} });

/** Releases reservations without a charge (the call failed, was cancelled, or its answer was discarded); the count of those that existed. */
export async function releaseReservations(c: SqlClient, companyId: number, refs: ReservationRef[]): Promise<number> {
  if (refs.length === 0) return 0;
  const messageIds = refs.flatMap((r) => ('messageId' in r ? [r.messageId] : []));
  const ids = refs.flatMap((r) => ('reservationId' in r ? [r.reservationId] : []));
  const [row] = await query<{ n: number }>(
    c,
    'credit_release',
    `with gone as (
       delete from credit_reservations where company_id = $1 and (message_id = any($2::bigint[]) or id = any($3::bigint[])) returning amount_usd
     ),
     co as (
       update companies set reserved_usd = reserved_usd - (select sum(amount_usd) from gone)
       where id = $1 and exists (select 1 from gone)
     )
     select count(*)::int as n from gone`,
    [companyId, messageIds, ids],
  );
  return row?.n ?? 0;
}

/**
 * Releases the reservations that outlived any call (their process died): run by every worker
 * now and then, in a transaction that locks the companies concerned in id order. Returns how
 * many were released.
 */
export async function sweepExpiredReservations(pool: SqlPool): Promise<number> {
  return inTransaction(pool, async (c) => {
    const companies = (await query<{ company_id: number }>(c, 'sweep_companies', `select distinct company_id from credit_reservations where expires_at < now() order by company_id`)).map((r) => r.company_id);
    if (companies.length === 0) return 0;
    await query(c, 'sweep_lock', `select id from companies where id = any($1::int[]) order by id for no key update`, [companies]);
    const [row] = await query<{ n: number }>(
      c,
      'credit_sweep',
      `with gone as (
         delete from credit_reservations where expires_at < now() and company_id = any($1::int[]) returning company_id, amount_usd
       ),
       per as (select company_id, sum(amount_usd) as amount from gone group by company_id),
       co as (
         update companies c set reserved_usd = c.reserved_usd - per.amount from per where c.id = per.company_id
       )
       select count(*)::int as n from gone`,
      [companies],
    );
    return row?.n ?? 0;
  });
}
