import { chargeModelUsage, directAdmission, releaseReservations } from '../credit.js';
import { inTransaction, type SqlPool } from '../db.js';
import { DEFAULT_HANDOFF_TEXT } from '../conversations.js';
import type { KnowledgeBaseInfo } from '../knowledge/retrieve.js';
import type { AgentOutput, ReplySource } from '../../schema/conversation.js';
import { builtinAnswer, handoff, modelAnswer, type AgentProfile, type AnswerDeps } from './answer.js';
import { wantsHuman } from './builtin.js';

/**
 * "Test agent": questions put to an agent's answer path (lib/agents/answer.ts) exactly as a
 * customer's first message would be, without a conversation and without sending anything.
 * A case passes when the answer the customer would read contains every expected phrase
 * (case, `ё`/`е` and spacing ignored); a case without phrases passes when the agent answers
 * instead of handing over. A model agent's calls are real calls: each is charged like a
 * customer's (one `model_usage` ledger entry, `conversationId` null), and the balance and
 * spend caps apply (a case then shows the handoff the customer would get).
 */
export interface EvaluationCase {
  question: string;
  expect: string[];
}

export interface CaseResult {
  question: string;
  /** What the customer would read: the reply, or the notice of a handoff. */
  answer: string;
  outcome: 'reply' | 'handoff' | 'close';
  /** Why the agent handed over (handoff only). */
  reason: string | null;
  sources: ReplySource[];
  pass: boolean;
  missing: string[];
}

const normalise = (s: string) => s.normalize('NFKC').toLowerCase().replace(/ё/g, 'е').replace(/\s+/g, ' ').trim();

/** The expected phrases the answer lacks. */
export function missingPhrases(answer: string, expect: string[]): string[] {
  const text = normalise(answer);
  return expect.filter((p) => !text.includes(normalise(p)));
}

function result(c: EvaluationCase, out: AgentOutput): CaseResult {
  const answer = out.kind === 'reply' ? out.text : (out.text ?? DEFAULT_HANDOFF_TEXT);
  const missing = missingPhrases(answer, c.expect);
  const pass = c.expect.length ? missing.length === 0 : out.kind === 'reply';
  return {
    question: c.question,
    answer,
    outcome: out.kind,
    reason: out.kind === 'reply' ? null : out.reason,
    sources: out.kind === 'reply' ? (out.sources ?? []) : [],
    pass,
    missing,
  };
}

export async function evaluateCase(deps: AnswerDeps & { sql: SqlPool }, agent: AgentProfile, base: KnowledgeBaseInfo | null, c: EvaluationCase): Promise<CaseResult> {
  if (wantsHuman(c.question)) return result(c, handoff(agent, 'asked_for_human'));
  if (agent.provider === 'builtin') return result(c, await builtinAnswer(deps, agent, base, c.question));
  const { output, reservationId } = await modelAnswer({ ...deps, credit: directAdmission(deps.sql) }, agent, base, c.question, { history: [], messageId: null });
  const usage = output.usage;
  if (usage) {
    await inTransaction(deps.sql, (client) => chargeModelUsage(client, { companyId: agent.companyId, conversationId: null, messageId: null, reservationId, ...usage }));
  } else if (reservationId !== null) {
    await releaseReservations(deps.sql, agent.companyId, [{ reservationId }]);
  }
  return result(c, output);
}
