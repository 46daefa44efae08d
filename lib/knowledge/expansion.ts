import { withoutStopWords } from './stop-words.js';
import { SERVICE_SYNONYM_GROUPS } from './synonyms-services.js';
import { SYNONYM_GROUPS } from './synonyms.js';

/**
 * The synonyms of a question's words (lib/knowledge/synonyms.ts), for knowledge search:
 * each pair is a word of the question and one word that means the same. Search turns both
 * into lexemes of the base's language and lets a chunk holding the synonym cover the word,
 * at SYNONYM_WEIGHT (lib/knowledge/search.ts).
 *
 * A question's word matches a listed word when they are equal; in Cyrillic also when they
 * share a stem of at least 4 letters that leaves at most 3 letters of either (the endings
 * of Russian cases and tenses); in Latin when the longer is the shorter plus an English
 * ending. A listed phrase matches consecutive words of the question and gives its
 * synonyms to each of them. Questions and the list are compared without their stop words
 * (lib/knowledge/stop-words.ts: "как долго" is listed as "долго"), as search sees them.
 */
export interface Expansion {
  /** A word of the question (as written, lowercased). */
  word: string;
  /** One word meaning the same (never a phrase). */
  synonym: string;
}

/** At most this many pairs per question: a long message must not become a huge query. */
export const MAX_EXPANSIONS = 96;

const ENGLISH_ENDINGS = ['s', 'es', 'ed', 'd', 'ing', 'er', 'ers', 'ly'];
const CYRILLIC = /[\u0400-\u04ff]/;

function commonPrefix(a: string, b: string): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

/** Whether a question's word is a form of a listed word. */
export function sameWord(word: string, listed: string): boolean {
  if (word === listed) return true;
  if (CYRILLIC.test(listed)) {
    const p = commonPrefix(word, listed);
    return p >= 4 && p >= Math.max(word.length, listed.length) - 3;
  }
  const [short, long] = word.length <= listed.length ? [word, listed] : [listed, word];
  return short.length >= 3 && long.startsWith(short) && ENGLISH_ENDINGS.includes(long.slice(short.length));
}

interface Entry {
  words: string[];
  group: number;
}

const GROUPS: string[][] = [...SYNONYM_GROUPS, ...SERVICE_SYNONYM_GROUPS].map((g) => [...new Set(g.map(withoutStopWords).filter((e) => e !== ''))]);
/** Entries by their first word's first three letters (a question's word is looked up by its own). */
const ENTRIES = new Map<string, Entry[]>();
GROUPS.forEach((group, index) => {
  for (const e of group) {
    const words = e.split(' ');
    const key = words[0]!.slice(0, 3);
    let list = ENTRIES.get(key);
    if (!list) ENTRIES.set(key, (list = []));
    list.push({ words, group: index });
  }
});
/** The one-word members of each group: what a matched word is searched as besides itself. */
const SINGLE_WORDS: string[][] = GROUPS.map((g) => g.filter((e) => !e.includes(' ')));

/**
 * An object pronoun may sit inside a listed phrasal verb: "bring them back", "send these back"
 * are "bring back", "send back" ("it", "my", "this" are stop words, gone before this reads).
 */
const PHRASE_GAP_WORDS: ReadonlySet<string> = new Set(['them', 'these', 'those', 'one', 'ones', 'his', 'her', 'their', 'everything', 'all']);

/** The question's words that a listed phrase matches from position `i` (one gap word at most), or null. */
function phraseAt(words: string[], i: number, phrase: string[]): string[] | null {
  if (!sameWord(words[i]!, phrase[0]!)) return null;
  const out = [words[i]!];
  let at = i + 1;
  let gapped = false;
  for (let k = 1; k < phrase.length; k++) {
    if (at < words.length && sameWord(words[at]!, phrase[k]!)) {
      out.push(words[at++]!);
      continue;
    }
    if (gapped || at + 1 >= words.length || !PHRASE_GAP_WORDS.has(words[at]!) || !sameWord(words[at + 1]!, phrase[k]!)) return null;
    gapped = true;
    out.push(words[at + 1]!);
    at += 2;
  }
  return out;
}

/** The pairs of a question as searched (`searchText`: lowercased words without stop words). */
export function expandQuestion(searched: string): Expansion[] {
  const words = searched === '' ? [] : searched.split(' ');
  const out: Expansion[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < words.length && out.length < MAX_EXPANSIONS; i++) {
    for (const entry of ENTRIES.get(words[i]!.slice(0, 3)) ?? []) {
      const matched = phraseAt(words, i, entry.words);
      if (!matched) continue;
      for (const word of matched) {
        for (const synonym of SINGLE_WORDS[entry.group]!) {
          const key = `${word} ${synonym}`;
          if (synonym === word || seen.has(key) || out.length >= MAX_EXPANSIONS) continue;
          seen.add(key);
          out.push({ word, synonym });
        }
      }
    }
  }
  return out;
}
