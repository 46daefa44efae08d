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

/** A tool call as the assistant message that asked for it carries it (chat-completions format). */
export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/**
 * A message of a chat-completions request. An answer that uses the company's tools takes
 * several turns: the assistant's message asking for them (`tool_calls`), then one `tool`
 * message per call with what the call gave (lib/agents/answer.ts modelAnswer).
 */
export type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: ChatToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

/** A message of the prompt as built: text only. */
export type PromptMessage = { role: 'system' | 'user' | 'assistant'; content: string };

export const DEFAULT_HISTORY_TOKEN_BUDGET = 2000;

/** A rough, dependency-free token estimate (≈ 4 characters a token for Latin text); used only to bound history. */
export const estimateTokens = (text: string): number => Math.ceil(text.length / 4) + 4;

const DEFAULT_COMPANY_PROMPT = 'You are a helpful customer-support assistant. Answer briefly.';

const FRAME = "You answer a company's customers on its behalf. The company's instructions:";

/** Where facts may come from: the passages when the agent has a knowledge base, else the company's instructions; and what the company's tools return, when it has any. */
const SOURCE_RULE = {
  passages: '1. Answer only from the numbered knowledge base passages below.',
  instructions: "1. Answer only from the company's instructions above.",
  passagesAndTools: "1. Answer only from the numbered knowledge base passages below and from what the company's tools return.",
  instructionsAndTools: "1. Answer only from the company's instructions above and from what the company's tools return.",
};

const OTHER_RULES = [
  '2. If that does not answer the question, or the customer asks for a person, call the tool `handoff_to_human` (with a reason) instead of guessing.',
  '3. Never promise an action in your text (a transfer, a callback, a refund, a booking, "I\'ll check"): only a tool call does it.',
  '4. Greetings and thanks may be answered briefly.',
];

const NOTHING_RELEVANT =
  'The knowledge base has nothing relevant to this message. Do not state facts about the business (prices, times, policies) from elsewhere: if the message needs them, call `handoff_to_human`.';
const NOTHING_RELEVANT_BUT_TOOLS =
  "The knowledge base has nothing relevant to this message. Do not state facts about the business (prices, times, policies) from elsewhere: if the message needs them, get them with the company's tools, or call `handoff_to_human`.";

function serviceRules(hasKnowledgeBase: boolean, hasTools: boolean): string {
  const source = hasKnowledgeBase ? (hasTools ? SOURCE_RULE.passagesAndTools : SOURCE_RULE.passages) : hasTools ? SOURCE_RULE.instructionsAndTools : SOURCE_RULE.instructions;
  return ["Service rules (they override the company's instructions):", source, ...OTHER_RULES].join('\n');
}

export function buildPrompt(input: {
  systemPrompt: string;
  passages: KnowledgePassage[];
  /** The agent has a knowledge base (with no passage, the model is told that it has nothing relevant). */
  hasKnowledgeBase?: boolean;
  /** The agent is offered company tools (lib/agents/tools/toolbox.ts): what they return is a source too. */
  hasTools?: boolean;
  history: HistoryMessage[];
  message: string;
  historyTokenBudget?: number;
}): PromptMessage[] {
  const hasKnowledge = Boolean(input.hasKnowledgeBase) || input.passages.length > 0;
  const hasTools = Boolean(input.hasTools);
  const system = [`${FRAME}\n"""\n${input.systemPrompt.trim() || DEFAULT_COMPANY_PROMPT}\n"""`, serviceRules(hasKnowledge, hasTools)];
  if (input.passages.length) {
    system.push('Knowledge base passages:');
    input.passages.forEach((p, i) => system.push(`[${i + 1}] ${p.title}\n${p.snippet}`));
  } else if (hasKnowledge) {
    system.push(hasTools ? NOTHING_RELEVANT_BUT_TOOLS : NOTHING_RELEVANT);
  }
  const budget = input.historyTokenBudget ?? DEFAULT_HISTORY_TOKEN_BUDGET;
  const kept: PromptMessage[] = [];
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
