import { DEFAULT_HANDOFF_TEXT } from '../../conversations.js';
import type { SqlPool } from '../../db.js';
import type { KnowledgeBaseInfo } from '../../knowledge/retrieve.js';
import type { AgentOutput, ToolCallRecord } from '../../../schema/conversation.js';
import type { ReplayAnswer } from '../../../schema/replay-entities.js';
import { answerOutsideConversation, type AgentProfile, type AnswerDeps, type AnswerTools, type ModelAnswerOptions } from '../answer.js';
import type { CallSlot } from '../slots.js';
import type { HistoryMessage } from '../prompt.js';

/**
 * One past customer message answered again for a replay (contract.md § Replay before
 * publishing), as an evaluation answers a question (lib/agents/answer.ts
 * answerOutsideConversation), with the conversation as it was before the message. Nothing is sent and nothing of the conversation
 * is written: the caller stores the answer on the replay's item and debits its cost.
 *
 * A model call reserves its credit like an evaluation's (no customer message: `messageId`
 * null) and keeps it for the caller to settle (lib/credit.ts chargeReplayUsage) or release.
 * Its tools (`tools.recordedFor` names the original message): those that change nothing are
 * called for real; the others are not, and the model gets what the original answer's call of
 * them got (lib/agents/tools/toolbox.ts).
 */
export interface ReplayItemInput {
  /** The customer message answered again, and its conversation (whose customer the company's tools are called for). */
  messageId: string;
  conversationId: number;
  question: string;
}

/** The answer as a replay stores it (its tool calls kept when it made any). */
export type StoredReplayAnswer = ReplayAnswer & { toolCalls?: ToolCallRecord[] };

export interface ReplayItemAnswer {
  answer: StoredReplayAnswer;
  /** The model call's cost to debit (null: no call, or it failed and costs nothing). */
  usage: { model: string; inputTokens: number; outputTokens: number; costUsd: string } | null;
  /** The credit reservation the call still holds (with `usage`). */
  reservationId: string | null;
  /** The company cannot pay for the call: why the replay stops (the answer is not the agent's, and is not stored). */
  stop: string | null;
}

export interface ReplayAnswerOptions {
  signal?: AbortSignal;
  /** The call's place among the worker's model calls (a spare one). */
  slot?: CallSlot;
  passages?: number;
  historyTokenBudget?: number;
  model?: ModelAnswerOptions['model'];
  maxLength?: number;
}

/** Why a replay stops when the model call could not be paid for; null when it could. */
export function creditStop(output: AgentOutput): string | null {
  if (output.kind !== 'handoff') return null;
  if (output.reason === 'no_credit') return "the company's credit ran out";
  if (output.reason === 'spend_cap') return 'a daily spend cap is reached';
  return null;
}

/** What the customer would get: a reply, or a handoff with its notice (a close says its last words). */
export function replayAnswerOf(output: AgentOutput): StoredReplayAnswer {
  const calls = output.toolCalls?.length ? { toolCalls: output.toolCalls } : {};
  if (output.kind === 'reply') return { kind: 'reply', text: output.text, sources: output.sources ?? [], ...calls };
  if (output.kind === 'close') return { kind: 'reply', text: output.text ?? '', sources: [], ...calls };
  return { kind: 'handoff', text: output.text ?? DEFAULT_HANDOFF_TEXT, sources: [], reason: output.reason, ...calls };
}

export async function replayAnswer(
  deps: AnswerDeps & { sql: SqlPool },
  profile: AgentProfile,
  base: KnowledgeBaseInfo | null,
  tools: AnswerTools | null,
  item: ReplayItemInput,
  history: HistoryMessage[],
  o: ReplayAnswerOptions = {},
): Promise<ReplayItemAnswer> {
  const { output, reservationId } = await answerOutsideConversation(deps, profile, base, item.question, {
    history,
    signal: o.signal,
    slot: o.slot,
    passages: o.passages,
    historyTokenBudget: o.historyTokenBudget,
    model: o.model,
    maxLength: o.maxLength,
    ...(tools ? { tools: { ...tools, conversationId: null, recordedFor: item.messageId, caller: { conversationId: item.conversationId } } } : {}),
  });
  const usage = output.usage ? { model: output.usage.model, inputTokens: output.usage.inputTokens, outputTokens: output.usage.outputTokens, costUsd: output.usage.costUsd } : null;
  return { answer: replayAnswerOf(output), usage, reservationId, stop: creditStop(output) };
}
