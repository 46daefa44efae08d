import { query, type SqlClient } from '../../lib/db.js';
import { formatUsd } from '../../lib/money.js';

/**
 * Outcomes of a company's agents over a period (GET /api/analytics). Every figure counts
 * events that happened in [from, to), each on the UTC day it happened, so the days add up
 * to the totals (README § Outcomes has the definitions):
 * - conversations: sessions started (a session starts with its first message, seq 1);
 * - autoResolved: sessions closed that were never handed to a human (never in a paused
 *   state, whoever paused them: an agent handoff, a helpdesk transfer, an operator), in
 *   which no operator wrote, and not closed by an operator's Close (a person resolved
 *   that one). Most are the agent's own: the customer stayed silent after its answer for
 *   the agent's autoResolveMinutes (actors/auto-resolve.ts, event `agent.auto_resolve`),
 *   or its close_conversation tool; the helpdesk's close counts too;
 * - handedOff: sessions handed over (an agent handoff or a helpdesk transfer, the
 *   `session_transfer_external` action), counted once, at their first handoff;
 * - reopened: sessions started by a customer whose previous session had closed at most
 *   REOPEN_WINDOW_DAYS before;
 * - replies: agent replies delivered (`delivery = 'sent'`), dated when they were written;
 * - modelCostUsd: the model_usage debits of the credit ledger;
 * - costPerResolutionUsd: modelCostUsd / autoResolved, to the micro-dollar; null when none
 *   was resolved.
 * With an agent: sessions and replies of the integrations whose agent it is now, and the
 * ledger entries of its own calls.
 * Each part reads a partial index of migration 0014 (or credit_ledger_spend_idx): the
 * predicates below are written exactly as those indexes' so the planner can use them.
 */
export const REOPEN_WINDOW_DAYS = 7;
export const MAX_PERIOD_DAYS = 366;

export interface OutcomeFigures {
  conversations: number;
  autoResolved: number;
  handedOff: number;
  reopened: number;
  replies: number;
  modelCostUsd: string;
  costPerResolutionUsd: string | null;
}

export interface Outcomes extends OutcomeFigures {
  from: string;
  to: string;
  agentId: number | null;
  reopenWindowDays: number;
  byDay: (OutcomeFigures & { date: string })[];
}

export interface OutcomeQuery {
  companyId: number;
  from: Date;
  to: Date;
  agentId: number | null;
}

/** $1 company, $2 from, $3 to (excluded), $4 agent or null, $5 the reopen window in days. */
export const OUTCOMES_SQL = `
  with agent_integrations as (
    select i.id from integrations i where i.company_id = $1 and i.agent_id = $4
  ), started as (
    select m.created_at as at, c.id, c.integration_id, c.client_id
    from conversation_messages m join conversations c on c.id = m.conversation_id
    where m.company_id = $1 and m.seq = 1 and m.created_at >= $2 and m.created_at < $3
      and ($4::int is null or c.integration_id in (select id from agent_integrations))
  ), events (at, metric, amount) as (
    select at, 'conversations'::text, 1::numeric from started
    union all
    select s.at, 'reopened', 1 from started s
    where (select p.closed_at from conversations p
           where p.integration_id = s.integration_id and p.client_id = s.client_id and p.id < s.id
           order by p.id desc limit 1) >= s.at - make_interval(days => $5)
    union all
    select c.closed_at, 'autoResolved', 1 from conversations c
    where c.company_id = $1 and c.closed_at is not null and c.closed_at >= $2 and c.closed_at < $3 and c.status = 'closed'
      and ($4::int is null or c.integration_id in (select id from agent_integrations))
      and not exists (select 1 from conversation_transitions p where p.conversation_id = c.id and p.to_state ? 'paused')
      and not exists (select 1 from conversation_messages o where o.conversation_id = c.id and o.role = 'operator')
      and not exists (select 1 from conversation_transitions x where x.conversation_id = c.id and x.event = 'operator.close')
    union all
    select t.at, 'handedOff', 1 from conversation_transitions t join conversations c on c.id = t.conversation_id
    where t.company_id = $1 and t.actions @> '[{"type":"session_transfer_external"}]' and t.at >= $2 and t.at < $3
      and ($4::int is null or c.integration_id in (select id from agent_integrations))
      and not exists (
        select 1 from conversation_transitions e
        where e.conversation_id = t.conversation_id and e.seq < t.seq and e.actions @> '[{"type":"session_transfer_external"}]'
      )
    union all
    select m.created_at, 'replies', 1 from conversation_messages m join conversations c on c.id = m.conversation_id
    where m.company_id = $1 and m.role = 'agent' and m.kind = 'reply' and m.created_at >= $2 and m.created_at < $3 and m.delivery = 'sent'
      and ($4::int is null or c.integration_id in (select id from agent_integrations))
    union all
    select l.at, 'modelCostUsd', -l.amount_usd from credit_ledger l
    where l.company_id = $1 and l.kind = 'model_usage' and l.at >= $2 and l.at < $3 and ($4::int is null or l.agent_id = $4)
  ), days as (
    select d::date as day
    from generate_series(($2::timestamptz at time zone 'UTC')::date, (($3::timestamptz - interval '1 microsecond') at time zone 'UTC')::date, interval '1 day') d
  ), per_day as (
    select d.day,
      count(*) filter (where e.metric = 'conversations')::int as conversations,
      count(*) filter (where e.metric = 'autoResolved')::int as auto_resolved,
      count(*) filter (where e.metric = 'handedOff')::int as handed_off,
      count(*) filter (where e.metric = 'reopened')::int as reopened,
      count(*) filter (where e.metric = 'replies')::int as replies,
      coalesce(sum(e.amount) filter (where e.metric = 'modelCostUsd'), 0) as model_cost
    from days d left join events e on (e.at at time zone 'UTC')::date = d.day
    group by grouping sets ((d.day), ())
  )
  select to_char(day, 'YYYY-MM-DD') as day, conversations, auto_resolved, handed_off, reopened, replies, model_cost::text as model_cost,
         case when auto_resolved > 0 then round(model_cost / auto_resolved, 6)::text end as cost_per_resolution
  from per_day order by day nulls first`;

interface FiguresRow {
  day: string | null;
  conversations: number;
  auto_resolved: number;
  handed_off: number;
  reopened: number;
  replies: number;
  model_cost: string;
  cost_per_resolution: string | null;
}

const figures = (r: FiguresRow): OutcomeFigures => ({
  conversations: r.conversations,
  autoResolved: r.auto_resolved,
  handedOff: r.handed_off,
  reopened: r.reopened,
  replies: r.replies,
  modelCostUsd: formatUsd(r.model_cost),
  costPerResolutionUsd: r.cost_per_resolution === null ? null : formatUsd(r.cost_per_resolution),
});

export const outcomeParams = (q: OutcomeQuery): unknown[] => [q.companyId, q.from.toISOString(), q.to.toISOString(), q.agentId, REOPEN_WINDOW_DAYS];

export async function outcomes(c: SqlClient, q: OutcomeQuery): Promise<Outcomes> {
  const rows = await query<FiguresRow>(c, 'analytics_outcomes', OUTCOMES_SQL, outcomeParams(q));
  const total = rows.find((r) => r.day === null)!;
  return {
    from: q.from.toISOString(),
    to: q.to.toISOString(),
    agentId: q.agentId,
    reopenWindowDays: REOPEN_WINDOW_DAYS,
    ...figures(total),
    byDay: rows.filter((r) => r.day !== null).map((r) => ({ date: r.day!, ...figures(r) })),
  };
}
