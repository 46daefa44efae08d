import type { AgentOutput, ClarifyOption } from '../../schema/conversation.js';
import { answerEvidence, type AnswerEvidence, type Passage } from '../knowledge/answer-evidence.js';
import { chunkTexts } from '../knowledge/chunk-texts.js';
import { ANSWER_CANDIDATES, bestKnowledgeMatches, type Question } from '../knowledge/search.js';
import { searchKnowledge, type KnowledgeBaseInfo } from '../knowledge/retrieve.js';
import type { AnswerDeps, AgentProfile } from './answer.js';
import { handoff, noAnswer, sourceOf } from './answer.js';
import { clarifyText, decideBuiltin, outOfScopeReply, pickedOption } from './answer-decision.js';
import { composeAnswer, DEFAULT_ANSWER_LENGTH } from './builtin.js';
import { answerDecision, DECISION_PASSAGES, decisionPassage, smallTalkOf, smallTalkReply } from './decision.js';

/**
 * The `builtin` provider's answer (contract.md § Answers that find what the help centre says):
 * small talk gets its short reply; a reply to the agent's last clarify question ("2", or a
 * title) is answered from the article it picks; anything else is searched (lexically in one
 * statement the worker batches, `evidence`; with the local model's vectors, or by every signal
 * of a base with an embedding server) and decided (lib/agents/answer-decision.ts): an answer
 * composed from the passage, a clarify question, the out-of-scope line, or `onNoAnswer`.
 *
 * While the conversation waits for a person (`handedOver`), only what the agent can answer
 * is answered (greeting, answer, clarify); anything else returns a handoff, which the
 * conversation does not act on: the customer waits for the person.
 */
export interface BuiltinOptions {
  /**
   * The evidence of a question of a base without an embedding server, given how to search for
   * it (`search`): the worker batches the searches of many customers into one statement and
   * keeps the evidence of questions asked again. Default: `search()`.
   */
  evidence?: (q: Question, search: () => Promise<AnswerEvidence>) => Promise<AnswerEvidence>;
  maxLength?: number;
  signal?: AbortSignal;
  /** The options of the agent's last clarify question. */
  choices?: ClarifyOption[];
  handedOver?: boolean;
}

/** A greeting or thanks and nothing else: the short reply (null when the message asks something). */
export function smallTalkAnswer(agent: AgentProfile, base: KnowledgeBaseInfo | null, text: string, handedOver = false): { output: AgentOutput | null; question: string } {
  const talk = smallTalkOf(text);
  if (!talk.kind || talk.question) return { output: null, question: talk.question || text };
  const decision = answerDecision(talk.kind, { knowledgeBaseId: base?.id ?? null, question: text, threshold: agent.relevanceThreshold, handedOver });
  return { output: { kind: 'reply', text: smallTalkReply(talk.kind, text, agent.greeting), sources: [], decision }, question: '' };
}

export async function builtinAnswer(deps: AnswerDeps, agent: AgentProfile, base: KnowledgeBaseInfo | null, question: string, options: BuiltinOptions = {}): Promise<AgentOutput> {
  const handedOver = options.handedOver === true;
  const talk = smallTalkAnswer(agent, base, question, handedOver);
  if (talk.output) return talk.output;
  const threshold = agent.relevanceThreshold;
  if (!base) return unanswered(agent, noAnswer(agent, { decision: answerDecision('no_answer', { knowledgeBaseId: null, question, threshold, handedOver }) }), handedOver);
  const picked = options.choices?.length ? pickedOption(question, options.choices) : null;
  if (picked) {
    const answered = await answerFromOption(deps, agent, base, question, picked, options, handedOver);
    if (answered) return answered;
  }
  let evidence: AnswerEvidence;
  if (base.embedding) {
    const hits = await searchKnowledge({ sql: deps.sql, vectors: deps.vectors, logger: deps.logger }, base, talk.question, { limit: ANSWER_CANDIDATES, signal: options.signal });
    evidence = await answerEvidence(deps, base, talk.question, hits.length ? { passages: hits, facts: null } : null);
  } else {
    const q = { companyId: base.companyId, knowledgeBaseId: base.id, query: talk.question };
    const search = async () => answerEvidence(deps, base, talk.question, (await bestKnowledgeMatches(deps.sql, [q]))[0] ?? null);
    evidence = options.evidence ? await options.evidence(q, search) : await search();
  }
  return builtinReply(agent, base, talk.question, evidence, { maxLength: options.maxLength, handedOver, customerText: question });
}

/** The reply the decision makes of the evidence. Pure. */
export function builtinReply(
  agent: AgentProfile,
  base: KnowledgeBaseInfo,
  question: string,
  evidence: AnswerEvidence,
  o: { maxLength?: number; handedOver?: boolean; customerText?: string } = {},
): AgentOutput {
  const handedOver = o.handedOver === true;
  const choice = decideBuiltin(evidence, agent.relevanceThreshold);
  const passages = evidence.passages.slice(0, DECISION_PASSAGES).map(decisionPassage);
  const record = (kind: Parameters<typeof answerDecision>[0], best: Passage | null, options?: ClarifyOption[]) =>
    answerDecision(kind, { knowledgeBaseId: base.id, question, threshold: agent.relevanceThreshold, best: best && decisionPassage(best), passages, options, handedOver });
  if (choice.kind === 'answer') {
    const text = composeAnswer(question, { title: choice.passage.title, content: choice.passage.content }, o.maxLength ?? DEFAULT_ANSWER_LENGTH);
    if (text) return { kind: 'reply', text, sources: [sourceOf(choice.passage)], confidence: choice.passage.confidence, decision: record('answer', choice.passage) };
    return unanswered(agent, noAnswer(agent, { decision: record('no_answer', choice.passage) }), handedOver);
  }
  if (choice.kind === 'clarify') {
    const offered = choice.options.map((p) => ({ documentId: p.documentId, chunkId: p.chunkId, title: p.title }));
    return { kind: 'reply', text: clarifyText(offered, o.customerText ?? question), sources: [], options: offered, decision: record('clarify', choice.options[0]!, offered) };
  }
  if (choice.kind === 'out_of_scope') {
    const decision = record('out_of_scope', choice.best);
    if (handedOver) return handoff(agent, 'no_answer', { decision });
    return { kind: 'reply', text: outOfScopeReply(agent.outOfScopeText, o.customerText ?? question), sources: [], decision };
  }
  return unanswered(agent, noAnswer(agent, { decision: record('no_answer', choice.best) }), handedOver);
}

/** While handed over, a no-answer says nothing (a fallback reply would be sent): the person answers. */
function unanswered(agent: AgentProfile, output: AgentOutput, handedOver: boolean): AgentOutput {
  if (!handedOver || output.kind !== 'reply') return output;
  return handoff(agent, 'no_answer', output.decision ? { decision: output.decision } : {});
}

/** The answer from the article the customer picked among the options offered; null when its chunk is gone. */
async function answerFromOption(deps: AnswerDeps, agent: AgentProfile, base: KnowledgeBaseInfo, question: string, picked: ClarifyOption, o: BuiltinOptions, handedOver: boolean): Promise<AgentOutput | null> {
  const chunk = (await chunkTexts(deps.sql, base.companyId, [picked.chunkId], [])).get(picked.chunkId);
  if (!chunk || chunk.documentId !== picked.documentId) return null;
  const text = composeAnswer(question, { title: chunk.title, content: chunk.content }, o.maxLength ?? DEFAULT_ANSWER_LENGTH);
  if (!text) return null;
  // The customer chose it: as sure as the agent can be.
  const passage = { documentId: chunk.documentId, chunkId: chunk.chunkId, title: chunk.title, confidence: 1 };
  const decision = answerDecision('answer', { knowledgeBaseId: base.id, question, threshold: agent.relevanceThreshold, best: passage, passages: [passage], handedOver });
  return { kind: 'reply', text, sources: [sourceOf(passage)], confidence: 1, decision };
}

