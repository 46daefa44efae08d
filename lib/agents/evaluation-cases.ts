import { query, type SqlPool } from '../db.js';
import type { EvaluationCase } from './evaluate.js';

/**
 * The Test agent page's cases, kept per agent (contract.md § The first hour; table
 * `agent_evaluation_cases`, migration 0033; this module owns it): the list as it was last
 * saved, replaced whole by each save. The routes (gateway/routes/evaluations.ts) check first
 * that the agent is the company's; `companyId` is stored for the tenant's reads all the same.
 */

/** The agent's saved cases (none saved: an empty list). */
export async function savedCases(sql: SqlPool, companyId: number, agentId: number): Promise<EvaluationCase[]> {
  const rows = await query<{ cases: EvaluationCase[] }>(sql, 'evaluation_cases_get', 'select cases from agent_evaluation_cases where company_id = $1 and agent_id = $2', [companyId, agentId]);
  return rows[0]?.cases ?? [];
}

/** Replaces the agent's cases; what is kept now. */
export async function saveCases(sql: SqlPool, companyId: number, agentId: number, cases: EvaluationCase[]): Promise<EvaluationCase[]> {
  // Only the fields a case has: the body's schema allows no others, this keeps the row so.
  const kept = cases.map((c) => ({ question: c.question, expect: c.expect }));
  const rows = await query<{ cases: EvaluationCase[] }>(
    sql,
    'evaluation_cases_put',
    `insert into agent_evaluation_cases (agent_id, company_id, cases) values ($2, $1, $3::jsonb)
     on conflict (agent_id) do update set cases = excluded.cases, updated_at = now() where agent_evaluation_cases.company_id = excluded.company_id
     returning cases`,
    [companyId, agentId, JSON.stringify(kept)],
  );
  return rows[0]?.cases ?? [];
}
