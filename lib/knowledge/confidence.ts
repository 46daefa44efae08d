import { isCommonWord } from './common-words.js';

/**
 * How sure the agent may be that a passage answers a question (0–1), the number an agent's
 * `relevanceThreshold` is compared with (contract.md § Answers a company can trust). Pure: the
 * facts come from the search statement (lib/knowledge/search.ts), which tells for each of the
 * question's words how common it is in the base and how each candidate passage holds it.
 *
 * Confidence is the share of the question's meaning the passage covers:
 * - each word of the question (stop words out) weighs its rarity in the base (BM25's IDF): the
 *   subject of a question is its rare words, "order" in a shop's help centre says little;
 * - a word the base never uses weighs as much as a word held by one chunk, times UNKNOWN_WEIGHT
 *   (the same proportion in a base of four chunks as in one of three hundred): "what is the
 *   capital of peru?" asked of a shop is about "capital" and "peru", which no passage holds,
 *   so no passage covers much of it, whatever letters they share;
 * - numbers (order ids, prices, dates: NUMBER_WEIGHT of that) and the question's names
 *   ("Lisbon", "Ольга": NAME_WEIGHT, known to the base or not) say little of what is asked;
 *   abbreviations of one or two letters nothing;
 * - unless it is one of the languages' commonest words ("take", "today", "сегодня";
 *   lib/knowledge/common-words.ts): then COMMON_WEIGHT of that, its absence says little;
 * - a word the base does not use but whose synonym it does weighs as that synonym;
 * - so does a typo: an unknown word one or two edits away from a word of the base (by length,
 *   `isTypo`) is read as that word. Trigram similarity alone ("peru" ~ "repair") is no typo;
 * - a word held in the passage's title or headings counts fully, in its text BODY_CREDIT, through
 *   a synonym SYNONYM_CREDIT of that, through a typo TYPO_CREDIT of that.
 * The weights were chosen on the development sets of bench/sections/trust.ts (`npm run bench --
 * --only trust`: trust-dev*.ts and tiny-dev.ts). A penalty for a close runner-up from another
 * document was tried there and answered no fewer unanswerable questions, so a passage is judged
 * on its own (a close runner-up of another article makes the agent ask: lib/agents/answer-decision.ts).
 */
export const UNKNOWN_WEIGHT = 1.6;
export const COMMON_WEIGHT = 0.2;
export const BODY_CREDIT = 0.7;
export const SYNONYM_CREDIT = 0.8;
export const TYPO_CREDIT = 0.9;
/** A name of the question (namesIn) weighs this much of what it would weigh otherwise (known to the base or not). */
export const NAME_WEIGHT = 0.3;
/** A number (an order id, a price, a date) the base does not hold weighs this much of an unknown word. */
export const NUMBER_WEIGHT = 0.2;

/** A word of the question as the base sees it. */
export interface QuestionWord {
  /** Its place in the question (the key of a passage's matches). */
  qi: number;
  lexeme: string;
  /** Chunks of the base holding it (0: unknown to the base). */
  df: number;
  /** For an unknown word: the base's most similar terms (trigram neighbours) and their chunk counts. */
  neighbours: { term: string; df: number }[];
  /** The base's terms that are synonyms of the word, and their chunk counts. */
  synonyms: { term: string; df: number }[];
}

export interface QuestionFacts {
  /** Chunks in the base. */
  chunks: number;
  words: QuestionWord[];
  /** The question's names (lowercase): capitalised words inside a sentence ("Lisbon", "Ольга"); see namesIn. */
  names?: ReadonlySet<string>;
}

/**
 * The names in a question: words written with a capital inside a sentence (not its first
 * word, not "I"). A name the base does not hold says who or where, not what is asked:
 * "Do you ship to Lisbon?" is about shipping.
 */
export function namesIn(text: string): Set<string> {
  const out = new Set<string>();
  for (const sentence of text.split(/[.!?\n]+/u)) {
    const words = sentence.match(/[\p{L}][\p{L}'’-]*/gu) ?? [];
    words.forEach((w, i) => {
      if (i > 0 && w !== 'I' && /^\p{Lu}/u.test(w) && !/^\p{Lu}+$/u.test(w)) out.add(w.toLowerCase());
    });
  }
  return out;
}

/** Is an unknown lexeme one of the question's names (a stem of it, or it of the stem)? */
export function isName(lexeme: string, names: ReadonlySet<string> | undefined): boolean {
  if (!names?.size) return false;
  for (const n of names) if (n === lexeme || (lexeme.length >= 3 && (n.startsWith(lexeme) || lexeme.startsWith(n)))) return true;
  return false;
}

/** How a passage holds one word of the question. */
export interface WordMatch {
  qi: number;
  via: 'own' | 'synonym' | 'typo';
  /** The base's term found (the word itself, its synonym or its neighbour). */
  term: string;
  inHeading: boolean;
}

export interface ConfidenceWeights {
  unknownWeight: number;
  commonWeight: number;
  bodyCredit: number;
  synonymCredit: number;
  typoCredit: number;
}

export const DEFAULT_CONFIDENCE_WEIGHTS: Readonly<ConfidenceWeights> = Object.freeze({
  unknownWeight: UNKNOWN_WEIGHT,
  commonWeight: COMMON_WEIGHT,
  bodyCredit: BODY_CREDIT,
  synonymCredit: SYNONYM_CREDIT,
  typoCredit: TYPO_CREDIT,
});

/** BM25's inverse document frequency of a term held by `df` of `n` chunks. */
export const idf = (n: number, df: number) => Math.log(1 + (n - df + 0.5) / (df + 0.5));

/**
 * A small help centre uses few words: most of a customer's are unknown to it whether or not it
 * answers them. An unknown word weighs less in it: SMALL_BASE_FLOOR of its weight in a base of
 * one chunk, growing with the logarithm of the chunks to all of it at FULL_VOCABULARY_CHUNKS.
 */
export const SMALL_BASE_FLOOR = 0.5;
export const FULL_VOCABULARY_CHUNKS = 30;
export const smallBaseFactor = (chunks: number) => Math.min(1, Math.max(SMALL_BASE_FLOOR, Math.log(chunks + 1) / Math.log(FULL_VOCABULARY_CHUNKS + 1)));

/** Rows of the edit distance, reused: words are short, and no call allocates. */
let distanceRows: Int32Array[] = [new Int32Array(0), new Int32Array(0), new Int32Array(0)];

/** Optimal string alignment distance (a swap of two neighbours is one edit), or `max + 1` once it exceeds `max`. */
export function editDistance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  if (distanceRows[0]!.length < b.length + 1) distanceRows = distanceRows.map(() => new Int32Array(b.length + 1));
  let [before, previous, current] = distanceRows as [Int32Array, Int32Array, Int32Array];
  for (let j = 0; j <= b.length; j++) previous[j] = j;
  for (let i = 1; i <= a.length; i++) {
    current[0] = i;
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      let d = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1));
      if (i > 1 && j > 1 && a.charCodeAt(i - 1) === b.charCodeAt(j - 2) && a.charCodeAt(i - 2) === b.charCodeAt(j - 1)) d = Math.min(d, before[j - 2]! + 1);
      current[j] = d;
      if (d < best) best = d;
    }
    if (best > max) return max + 1;
    [before, previous, current] = [previous, current, before];
  }
  return previous[b.length]!;
}

/** Edits a word of this length may be away from the base's word to be its typo. */
export const typoEdits = (length: number) => (length < 4 ? 0 : length < 8 ? 1 : 2);

/** Letters a misspelt word may carry past the base's stem ("parkng" for the stem "park"): its ending. */
const ENDING = 3;

/**
 * Is `word` (unknown to the base) a misspelling of the base's `term`? The base's terms are
 * stems, a misspelt word is not stemmed: its beginning may be the misspelt stem.
 */
export function isTypo(word: string, term: string): boolean {
  const edits = typoEdits(Math.min(word.length, term.length));
  if (edits === 0) return false;
  if (editDistance(word, term, edits) <= edits) return true;
  for (let k = Math.max(1, term.length - edits); k <= Math.min(word.length - 1, term.length + edits); k++) {
    if (word.length - k <= ENDING && editDistance(word.slice(0, k), term, edits) <= edits) return true;
  }
  return false;
}

/** What each word of the question weighs, and the terms that count as it through a typo. */
export function wordWeights(q: QuestionFacts, w: ConfidenceWeights = DEFAULT_CONFIDENCE_WEIGHTS): Map<number, { weight: number; typos: Set<string> }> {
  // The rarest word a base can hold is in one chunk: an unknown word weighs in proportion to
  // it, so that a base of two articles judges a question as one of three hundred does.
  const rarest = idf(q.chunks, 1);
  const out = new Map<number, { weight: number; typos: Set<string> }>();
  for (const word of q.words) {
    if (out.has(word.qi)) continue;
    if (word.df > 0) {
      // A name the base holds ("France", "Klarna") tells where or with what, seldom what is asked.
      out.set(word.qi, { weight: idf(q.chunks, word.df) * (isName(word.lexeme, q.names) ? NAME_WEIGHT : 1), typos: new Set() });
      continue;
    }
    // The base says it in its own words: the word weighs what they weigh.
    if (word.synonyms.length) {
      out.set(word.qi, { weight: Math.max(...word.synonyms.map((t) => idf(q.chunks, t.df))), typos: new Set() });
      continue;
    }
    // An abbreviation ("ул", "st") the base does not hold says nothing of what is asked; an order
    // number, a price, a date or a name little ("where is my order 4411?", "do you ship to Lisbon?").
    if (word.lexeme.length <= 2 && !/\d/.test(word.lexeme)) continue;
    if (/\d/.test(word.lexeme)) {
      out.set(word.qi, { weight: rarest * w.unknownWeight * NUMBER_WEIGHT, typos: new Set() });
      continue;
    }
    if (isName(word.lexeme, q.names)) {
      out.set(word.qi, { weight: rarest * w.unknownWeight * NAME_WEIGHT, typos: new Set() });
      continue;
    }
    const typos = word.neighbours.filter((n) => isTypo(word.lexeme, n.term));
    if (typos.length) out.set(word.qi, { weight: Math.max(...typos.map((t) => idf(q.chunks, t.df))), typos: new Set(typos.map((t) => t.term)) });
    else out.set(word.qi, { weight: rarest * w.unknownWeight * smallBaseFactor(q.chunks) * (isCommonWord(word.lexeme) ? w.commonWeight : 1), typos: new Set() });
  }
  return out;
}

/** The share of the question's weight a passage covers (0–1). */
export function coverage(weights: Map<number, { weight: number; typos: Set<string> }>, matches: WordMatch[], w: ConfidenceWeights = DEFAULT_CONFIDENCE_WEIGHTS): number {
  let total = 0;
  for (const v of weights.values()) total += v.weight;
  if (total <= 0) return 0;
  const credit = new Map<number, number>();
  for (const m of matches) {
    const word = weights.get(m.qi);
    if (!word) continue;
    let c = m.inHeading ? 1 : w.bodyCredit;
    if (m.via === 'synonym') c *= w.synonymCredit;
    else if (m.via === 'typo') {
      if (!word.typos.has(m.term)) continue;
      c *= w.typoCredit;
    }
    credit.set(m.qi, Math.max(credit.get(m.qi) ?? 0, c));
  }
  let covered = 0;
  for (const [qi, c] of credit) covered += weights.get(qi)!.weight * c;
  return Math.min(1, covered / total);
}

/** The confidence of each candidate passage (same order), from how each holds the question's words. */
export function passageConfidences(q: QuestionFacts, candidates: { matches: WordMatch[] }[], w: ConfidenceWeights = DEFAULT_CONFIDENCE_WEIGHTS): number[] {
  const weights = wordWeights(q, w);
  return candidates.map((c) => coverage(weights, c.matches, w));
}

/**
 * The semantic evidence (contract.md § Answers that find what the help centre says): the cosine
 * of the question's and the passage's vectors (lib/knowledge/local-model.ts) read as a credit
 * 0–1: nothing below SEMANTIC_FLOOR (texts about different things still share some meaning),
 * full at SEMANTIC_FULL.
 */
export const SEMANTIC_FLOOR = 0.2;
export const SEMANTIC_FULL = 0.6;
/** How much a full semantic credit counts against a passage holding none of the question's words. */
export const SEMANTIC_WEIGHT = 0.6;

export function semanticCredit(similarity: number | null): number {
  if (similarity === null) return 0;
  return Math.min(1, Math.max(0, (similarity - SEMANTIC_FLOOR) / (SEMANTIC_FULL - SEMANTIC_FLOOR)));
}

/** The margin in meaning by which a passage must stand out from every other article's to be credited in full. */
export const STANDOUT_MARGIN = 0.1;

/** How far the passage nearest in meaning stands out from the nearest of other articles (0–1; 0 for any other passage). */
export function standout(margin: number): number {
  return Math.min(1, Math.max(0, margin / STANDOUT_MARGIN));
}

/**
 * The confidence (0–1) that a passage answers the question, from its lexical coverage and its
 * similarity of meaning: lexical + (1 − lexical) × SEMANTIC_WEIGHT × credit × standout. Meaning
 * adds only to the passage nearest the question and as far as it stands out: in a help centre
 * every passage shares some meaning with every question, and crediting each lifts the wrong
 * ones too. Without vectors it is the lexical coverage.
 */
export function combinedConfidence(lexical: number, similarity: number | null, standsOut = 1): number {
  if (similarity === null) return lexical;
  return lexical + (1 - lexical) * SEMANTIC_WEIGHT * semanticCredit(similarity) * standsOut;
}
