import { chargeModelUsage, releaseReservations } from '../credit.js';
import { inTransaction, type SqlPool } from '../db.js';
import { DEFAULT_HANDOFF_TEXT } from '../conversations.js';
import type { KnowledgeBaseInfo } from '../knowledge/retrieve.js';
import type { AgentOutput, AnswerDecision, ClarifyOption, DecisionPassage, ReplySource } from '../../schema/conversation.js';
import { answerOutsideConversation, type AgentProfile, type AnswerDeps, type AnswerTools } from './answer.js';

/**
 * "Test agent": questions put to an agent's answer path (lib/agents/answer.ts) exactly as a
 * customer's first message would be, without a conversation and without sending anything.
 * A case expects either phrases or a handoff:
 * - phrases: passes when the agent answers (not a no-answer) and what the customer would read
 *   contains every phrase (case, `ё`/`е`, dashes, quotes and spacing folded: foldForComparison);
 *   a decline (`out_of_scope`) or a question back (`clarify`) passes only on its phrases ("Do
 *   you mean: 1. Returns 2. Exchanges?" has "Returns"). No phrases: any answer passes, and a
 *   decline or a question back is not one;
 * - `"handoff"` (a question the agent must not answer): passes when the agent does not answer
 *   from its knowledge (contract.md § Answers that find what the help centre says): it had no
 *   answer (handed over, or said the fallback text under `onNoAnswer: "fallback"`), the
 *   customer asked for a person, it declined a question not about this business
 *   (`out_of_scope`, no handoff), or it asked which article was meant (`clarify`: no answer
 *   yet either).
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
  /** A `clarify` decision only: the articles the customer was asked to choose from, in the order offered. */
  options?: ClarifyOption[];
  pass: boolean;
  missing: string[];
}

/**
 * Text as an expected phrase is compared (contract.md § Answers that find what the help centre
 * says): a model or a help centre writes "2–4 working days" and «Klarna» where a person types
 * "2-4 working days" and "Klarna", so case, dashes, quotes and spaces are folded first. NFKC
 * already turns NBSP, the thin and other fixed-width spaces into a plain space and ″ into ′′.
 */
const DASHES = /[\u2010-\u2015\u2212\u2E3A\u2E3B\uFE58\uFE63\uFF0D]/g; // ‐ ‑ ‒ – — ― − ⸺ ⸻ and their small / full-width forms
const SINGLE_QUOTES = /[\u2018-\u201B\u2032\u2035\u02BC\u0060\u00B4]/g; // ‘ ’ ‚ ‛ ′ ‵ ʼ ` ´
const DOUBLE_QUOTES = /[\u201C-\u201F\u00AB\u00BB\u2033\u2036\u301D-\u301F\uFF02]/g; // “ ” „ ‟ « » ″ ‶ 〝 〞 〟 ＂
export const foldForComparison = (s: string): string =>
  s
    .normalize('NFKC')
    .toLowerCase()
    .replace(/ё/g, 'е')
    .replace(DASHES, '-')
    .replace(/\u2032\u2032|\u2035\u2035/g, '"') // NFKC makes ″ and ‶ two primes: still one double quote
    .replace(SINGLE_QUOTES, "'")
    .replace(DOUBLE_QUOTES, '"')
    .replace(/[\u00AD\u200B-\u200D\u2060\uFEFF]/g, '') // soft hyphens and zero-width characters show nothing
    .replace(/\s+/g, ' ') // every space and line break (NBSP and the thin ones included)
    .trim();

/** The expected phrases the answer lacks. */
export function missingPhrases(answer: string, expect: string[]): string[] {
  const text = foldForComparison(answer);
  return expect.filter((p) => !text.includes(foldForComparison(p)));
}

/**
 * The decision behind an output. Handoffs for want of credit, a spend cap or a working model
 * carry none (the agent decided nothing): null, which passes no case that expects a handoff.
 */
function decisionKind(out: AgentOutput): AnswerDecision['kind'] | null {
  if (out.decision) return out.decision.kind;
  return out.kind === 'handoff' && (out.reason === 'no_answer' || out.reason === 'asked_for_human') ? out.reason : null;
}

/** Decisions that do not answer the question from the knowledge: what a case expecting `"handoff"` passes on. */
const NOT_ANSWERED: ReadonlySet<AnswerDecision['kind']> = new Set(['no_answer', 'asked_for_human', 'out_of_scope', 'clarify']);
/** Replies that are not an answer: a case with no phrases ("any answer") fails on them. */
const NOT_AN_ANSWER: ReadonlySet<AnswerDecision['kind']> = new Set(['out_of_scope', 'clarify']);

function caseResult(c: EvaluationCase, out: AgentOutput): CaseResult {
  const answer = out.kind === 'reply' ? out.text : (out.text ?? DEFAULT_HANDOFF_TEXT);
  const decision = decisionKind(out);
  let pass: boolean;
  let missing: string[] = [];
  if (c.expect === EXPECT_HANDOFF) {
    pass = decision !== null && NOT_ANSWERED.has(decision);
  } else {
    missing = missingPhrases(answer, c.expect);
    const answered = c.expect.length > 0 ? true : out.kind === 'reply' && !(decision !== null && NOT_AN_ANSWER.has(decision));
    pass = decision !== 'no_answer' && missing.length === 0 && answered;
  }
  const options = decision === 'clarify' ? (out.decision?.options ?? (out.kind === 'reply' ? out.options : undefined)) : undefined;
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
    ...(options?.length ? { options } : {}),
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
