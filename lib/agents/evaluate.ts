import { chargeModelUsage, releaseReservations } from '../credit.js';
import { inTransaction, type SqlPool } from '../db.js';
import { DEFAULT_HANDOFF_TEXT } from '../conversations.js';
import type { KnowledgeBaseInfo } from '../knowledge/retrieve.js';
import type { AgentOutput, AnswerDecision, DecisionPassage, ReplySource } from '../../schema/conversation.js';
import { answerOutsideConversation, type AgentProfile, type AnswerDeps, type AnswerTools } from './answer.js';

/**
 * "Test agent": questions put to an agent's answer path (lib/agents/answer.ts) exactly as a
 * customer's first message would be, without a conversation and without sending anything.
 * A case expects either phrases or a handoff:
 * - phrases: passes when the agent answers (not a no-answer) and what the customer would read
 *   contains every phrase (case, `ё`/`е` and spacing ignored); no phrases: any answer passes;
 * - `"handoff"` (a question the agent must not answer): passes when the agent does not answer
 *   from its knowledge: it had no answer (handed over, or said the fallback text under
 *   `onNoAnswer: "fallback"`) or the customer asked for a person.
 * A model agent's calls are real calls: each is charged like a customer's (one `model_usage`
 * ledger entry, `conversationId` null), and the balance and spend caps apply (a case then
 * shows the handoff the customer would get).
 */
export const EXPECT_HANDOFF = 'handoff';

export interface EvaluationCase {
  question: string;
  /** The phrases the answer must contain, or `"handoff"`: the agent must not answer. */
  expect: string[] | typeof EXPECT_HANDOFF;
}

export interface CaseResult {
  question: string;
  /** What the case expected; null on results kept before expectations were recorded. */
  expect: string[] | typeof EXPECT_HANDOFF | null;
  /** What the customer would read: the reply, or the notice of a handoff. */
  answer: string;
  outcome: 'reply' | 'handoff' | 'close';
  /** Why the agent handed over (handoff only). */
  reason: string | null;
  sources: ReplySource[];
  /** 0–1: how sure the agent was that its sources answer the question (grounded replies only). */
  confidence: number | null;
  /** What the agent decided (null: the answer path recorded no decision). */
  decision: AnswerDecision['kind'] | null;
  /** The passage the decision found best, answered from or not. */
  bestMatch: DecisionPassage | null;
  pass: boolean;
  missing: string[];
}

const normalise = (s: string) => s.normalize('NFKC').toLowerCase().replace(/ё/g, 'е').replace(/\s+/g, ' ').trim();

/** The expected phrases the answer lacks. */
export function missingPhrases(answer: string, expect: string[]): string[] {
  const text = normalise(answer);
  return expect.filter((p) => !text.includes(normalise(p)));
}

/**
 * The decision behind an output. Handoffs for want of credit, a spend cap or a working model
 * carry none (the agent decided nothing): null, which passes no case that expects a handoff.
 */
function decisionKind(out: AgentOutput): AnswerDecision['kind'] | null {
  if (out.decision) return out.decision.kind;
  return out.kind === 'handoff' && (out.reason === 'no_answer' || out.reason === 'asked_for_human') ? out.reason : null;
}

function caseResult(c: EvaluationCase, out: AgentOutput): CaseResult {
  const answer = out.kind === 'reply' ? out.text : (out.text ?? DEFAULT_HANDOFF_TEXT);
  const decision = decisionKind(out);
  let pass: boolean;
  let missing: string[] = [];
  if (c.expect === EXPECT_HANDOFF) {
    pass = decision === 'no_answer' || decision === 'asked_for_human';
  } else {
    missing = missingPhrases(answer, c.expect);
    pass = decision !== 'no_answer' && missing.length === 0 && (c.expect.length > 0 || out.kind === 'reply');
  }
  return {
    question: c.question,
    expect: c.expect,
    answer,
    outcome: out.kind,
    reason: out.kind === 'reply' ? null : out.reason,
    sources: out.kind === 'reply' ? (out.sources ?? []) : [],
    confidence: out.kind === 'reply' ? (out.confidence ?? null) : null,
    decision,
    bestMatch: out.decision?.best ?? null,
    pass,
    missing,
  };
}

/** `tools`: a model agent's own tools (a test calls only those that change no data). */
export async function evaluateCase(deps: AnswerDeps & { sql: SqlPool }, agent: AgentProfile, base: KnowledgeBaseInfo | null, c: EvaluationCase, tools?: AnswerTools): Promise<CaseResult> {
  const { output, reservationId } = await answerOutsideConversation(deps, agent, base, c.question, { history: [], ...(tools ? { tools } : {}) });
  const usage = output.usage;
  if (usage) {
    await inTransaction(deps.sql, (client) => chargeModelUsage(client, { companyId: agent.companyId, conversationId: null, messageId: null, reservationId, ...usage }));
  } else if (reservationId !== null) {
    await releaseReservations(deps.sql, agent.companyId, [{ reservationId }]);
  }
  return caseResult(c, output);
}
