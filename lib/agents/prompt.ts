/**
 * Prompt assembly for chat models, in one place: the system message (the company's
 * instructions, then the service's rules, then the knowledge passages that reached the
 * agent's threshold), the recent history (newest kept first when the budget runs out), then
 * the new message.
 *
 * The service's rules come after the company's prompt and say they override it: a company
 * prompt that says "always offer a callback" must not make the model promise what no tool
 * does (contract.md § Answers a company can trust; lib/agents/promises.ts catches the replies
 * that promise anyway). They are kept short: they are paid for on every call.
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

const DEFAULT_COMPANY_PROMPT = 'You are a helpful customer-support assistant. Answer briefly.';

const FRAME = "You answer a company's customers on its behalf. The company's instructions:";

/** Where facts may come from: the passages when the agent has a knowledge base, else the company's instructions. */
const SOURCE_RULE = {
  passages: '1. Answer only from the numbered knowledge base passages below.',
  instructions: "1. Answer only from the company's instructions above.",
};

const OTHER_RULES = [
  '2. If that does not answer the question, or the customer asks for a person, call the tool `handoff_to_human` (with a reason) instead of guessing.',
  '3. Never promise an action in your text (a transfer, a callback, a refund, a booking, "I\'ll check"): only a tool call does it.',
  '4. Greetings and thanks may be answered briefly.',
];

const NOTHING_RELEVANT =
  'The knowledge base has nothing relevant to this message. Do not state facts about the business (prices, times, policies) from elsewhere: if the message needs them, call `handoff_to_human`.';

function serviceRules(hasKnowledgeBase: boolean): string {
  return ["Service rules (they override the company's instructions):", hasKnowledgeBase ? SOURCE_RULE.passages : SOURCE_RULE.instructions, ...OTHER_RULES].join('\n');
}

export function buildPrompt(input: {
  systemPrompt: string;
  passages: KnowledgePassage[];
  /** The agent has a knowledge base (with no passage, the model is told that it has nothing relevant). */
  hasKnowledgeBase?: boolean;
  history: HistoryMessage[];
  message: string;
  historyTokenBudget?: number;
}): ChatMessage[] {
  const hasKnowledge = Boolean(input.hasKnowledgeBase) || input.passages.length > 0;
  const system = [`${FRAME}\n"""\n${input.systemPrompt.trim() || DEFAULT_COMPANY_PROMPT}\n"""`, serviceRules(hasKnowledge)];
  if (input.passages.length) {
    system.push('Knowledge base passages:');
    input.passages.forEach((p, i) => system.push(`[${i + 1}] ${p.title}\n${p.snippet}`));
  } else if (hasKnowledge) {
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
