import type { ClarifyOption } from '../../schema/conversation.js';
import type { AnswerEvidence, Passage } from '../knowledge/answer-evidence.js';

/**
 * The built-in agent's decision for a question (small talk and requests for a person are
 * decided before; contract.md § Answers that find what the help centre says), pure:
 * - `answer`: the most confident passage reaches the agent's threshold and no passage of
 *   another article is close behind it;
 * - `clarify`: two or three passages of different articles are close (within CLARIFY_MARGIN
 *   of the best, above CLARIFY_FLOOR × the threshold) and none is sure (the best is below the
 *   threshold + SURE_MARGIN): the customer is asked which one;
 * - `out_of_scope`: no passage comes near (confidence below OUT_OF_SCOPE_CONFIDENCE, similarity
 *   of meaning below IN_SCOPE_SIMILARITY) and the base holds less than OUT_OF_SCOPE_KNOWN of the
 *   question's content words (a word of shops and services counts half: "where is my order?"
 *   asked of a help centre that never mentions orders is about the business; AnswerEvidence.known):
 *   the question is not about this business;
 * - `no_answer`: about the business, but no passage answers.
 * The constants were chosen on the development sets of the trust bench (bench/knowledge/tiny-dev.ts
 * and trust-dev*.ts, `npm run bench -- --only trust`), never on the held-out ones.
 */
export const CLARIFY_MARGIN = 0.08;
export const CLARIFY_FLOOR = 0.8;
export const SURE_MARGIN = 0.2;
export const MAX_OPTIONS = 3;
export const OUT_OF_SCOPE_KNOWN = 0.5;
export const OUT_OF_SCOPE_CONFIDENCE = 0.25;
/** A passage this similar in meaning makes the question the business's (no out_of_scope). */
export const IN_SCOPE_SIMILARITY = 0.25;

export type BuiltinChoice =
  | { kind: 'answer'; passage: Passage }
  | { kind: 'clarify'; options: Passage[] }
  | { kind: 'out_of_scope'; best: Passage | null }
  | { kind: 'no_answer'; best: Passage | null };

export function decideBuiltin(e: AnswerEvidence, threshold: number): BuiltinChoice {
  // The best passage of each article, best first (the passages come best first).
  const perArticle: Passage[] = [];
  for (const p of e.passages) if (!perArticle.some((q) => q.documentId === p.documentId)) perArticle.push(p);
  const best = perArticle[0] ?? null;
  if (best) {
    const close = perArticle.slice(1).filter((p) => p.confidence >= Math.max(threshold * CLARIFY_FLOOR, best.confidence - CLARIFY_MARGIN));
    if (close.length > 0 && best.confidence < threshold + SURE_MARGIN && best.confidence >= threshold * CLARIFY_FLOOR) {
      return { kind: 'clarify', options: [best, ...close].slice(0, MAX_OPTIONS) };
    }
    if (best.confidence >= threshold) return { kind: 'answer', passage: best };
  }
  const nearInMeaning = e.passages.some((p) => p.semantic !== null && p.semantic >= IN_SCOPE_SIMILARITY);
  if (e.known < OUT_OF_SCOPE_KNOWN && !nearInMeaning && (best?.confidence ?? 0) < OUT_OF_SCOPE_CONFIDENCE) return { kind: 'out_of_scope', best };
  return { kind: 'no_answer', best };
}

/** The option a reply to a clarify question picks: its number ("2", "2.", "#2", "option 2") or its title; null: none. */
export function pickedOption(text: string, options: readonly ClarifyOption[]): ClarifyOption | null {
  const t = normalise(text);
  if (!t) return null;
  const number = /^(?:#|no\.?|n|option|вариант|номер)?\s*(\d{1,2})\s*[.)]?$/u.exec(t);
  if (number) return options[Number(number[1]) - 1] ?? null;
  const byTitle = options.filter((o) => {
    const title = normalise(o.title);
    return title.length > 0 && (t === title || (t.length >= 4 && (title.includes(t) || t.includes(title))));
  });
  return byTitle.length === 1 ? byTitle[0]! : null;
}

const normalise = (s: string) => s.normalize('NFKC').toLowerCase().replace(/ё/g, 'е').replace(/[^\p{L}\p{N}#.)]+/gu, ' ').trim();

/** The clarify question, in the customer's script: "Do you mean: 1. Returns 2. Exchanges?" (numbered for every channel). */
export function clarifyText(options: readonly { title: string }[], customerText: string): string {
  const list = options.map((o, i) => `${i + 1}. ${o.title}`).join('\n');
  return /\p{Script=Cyrillic}/u.test(customerText)
    ? `Уточните, пожалуйста, вы имеете в виду:\n${list}\nОтветьте номером или названием.`
    : `Do you mean:\n${list}\nReply with the number or the name.`;
}

export const DEFAULT_OUT_OF_SCOPE_TEXT = "Sorry, I can only help with questions about our products and services. What would you like to know about them?";
export const DEFAULT_OUT_OF_SCOPE_TEXT_RU = 'Извините, я могу помочь только с вопросами о наших товарах и услугах. Что вы хотели бы узнать о них?';

/** The reply to an out-of-scope question: the agent's own text, else the default in the customer's script. */
export function outOfScopeReply(agentText: string | null, customerText: string): string {
  if (agentText) return agentText;
  return /\p{Script=Cyrillic}/u.test(customerText) ? DEFAULT_OUT_OF_SCOPE_TEXT_RU : DEFAULT_OUT_OF_SCOPE_TEXT;
}
