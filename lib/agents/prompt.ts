/**
 * Prompt assembly for chat models, in one place: the agent's system prompt, the knowledge
 * passages that match the customer's message, the recent history (newest kept first when the
 * budget runs out), then the new message.
 */
export interface KnowledgePassage {
  title: string;
  snippet: string;
}

export interface HistoryMessage {
  role: 'customer' | 'agent' | 'operator' | 'system';
  text: string;
}

export type ChatMessage = { role: 'system' | 'user' | 'assistant'; content: string };

export const DEFAULT_HISTORY_TOKEN_BUDGET = 2000;

/** A rough, dependency-free token estimate (≈ 4 characters a token for Latin text); used only to bound history. */
export const estimateTokens = (text: string): number => Math.ceil(text.length / 4) + 4;

const HANDOFF_INSTRUCTION =
  'If you cannot answer from the knowledge provided, or the customer asks for a person, call the tool `handoff_to_human` instead of guessing.';

const NOTHING_RELEVANT =
  'The knowledge base has nothing relevant to this message. Do not state facts about the business (prices, times, policies) from elsewhere: if the message needs them, call `handoff_to_human`.';

export function buildPrompt(input: {
  systemPrompt: string;
  passages: KnowledgePassage[];
  /** The agent has a knowledge base (with no passage, the model is told that it has nothing relevant). */
  hasKnowledgeBase?: boolean;
  history: HistoryMessage[];
  message: string;
  historyTokenBudget?: number;
}): ChatMessage[] {
  const system = [input.systemPrompt.trim() || 'You are a helpful customer-support assistant. Answer briefly.', HANDOFF_INSTRUCTION];
  if (input.passages.length) {
    system.push('Knowledge base passages (answer from these):');
    input.passages.forEach((p, i) => system.push(`[${i + 1}] ${p.title}\n${p.snippet}`));
  } else if (input.hasKnowledgeBase) {
    system.push(NOTHING_RELEVANT);
  }
  const budget = input.historyTokenBudget ?? DEFAULT_HISTORY_TOKEN_BUDGET;
  const kept: ChatMessage[] = [];
  let used = 0;
  for (let i = input.history.length - 1; i >= 0; i--) {
    const h = input.history[i]!;
    if (h.role === 'system' || !h.text) continue;
    const cost = estimateTokens(h.text);
    if (used + cost > budget) break;
    used += cost;
    kept.unshift(h.role === 'customer' ? { role: 'user', content: h.text } : { role: 'assistant', content: h.role === 'operator' ? `(human colleague) ${h.text}` : h.text });
  }
  return [{ role: 'system', content: system.join('\n\n') }, ...kept, { role: 'user', content: input.message }];
}
