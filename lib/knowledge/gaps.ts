import { query, type SqlClient } from '../db.js';
import type { DecisionPassage } from '../../schema/conversation.js';
import { editDistance } from './confidence.js';
import { STOP_WORDS, wordsOf } from './stop-words.js';

/**
 * Knowledge gaps (contract.md § Answers a company can trust): the customer questions of a
 * knowledge base that ended without an answer, similar ones grouped, most frequent first.
 * They are read from the transition log, where the agent records its decision (the
 * `output.decision` of each `xstate.done.actor.agent` transition, schema/conversation.ts
 * AnswerDecision), through the partial index of migration 0018.
 *
 * Whatever a company has, the work is bounded: at most MAX_GAP_QUESTIONS no-answers are read
 * (the newest of the period), and grouping them takes time linear in that number (exact
 * buckets first, then a greedy merge that compares each bucket with a bounded number of
 * candidate groups found through an index of their words).
 */

/** No-answers read per request: the newest of the period; the grouping covers these only. */
export const MAX_GAP_QUESTIONS = 5000;
/** Conversations listed per gap, newest first. */
export const MAX_GAP_CONVERSATIONS = 20;
/** The question of a decision is bounded when recorded; read no more than this of it anyway. */
export const MAX_GAP_QUESTION_CHARS = 500;

/** Two questions are one gap when this share of their words match (Dice coefficient). */
const SAME_QUESTION = 0.75;
/** Words of a question compared (its first, after stop words): a question is short, a paste is not. */
const MAX_WORDS = 8;
/** Words longer than this are indexed by themselves and their prefix only (no typo variants). */
const MAX_TYPO_WORD = 16;
/** Groups remembered per word key: the first, i.e. the most frequent (buckets are merged in that order). */
const MAX_POSTINGS = 32;
/** Candidate groups a bucket is compared with, those sharing the most word keys with it. */
const MAX_CANDIDATES = 16;
/** The length of the prefix that stands for a word's stem (inflections: доставка / доставки / доставкой). */
const STEM = 5;

/**
 * Words that say nothing of what was asked, beyond the search's own stop words: contractions
 * written without their apostrophe ("whats"), pronouns, fillers and greetings a question is
 * wrapped in. Only for grouping: the search keeps its own list.
 */
const GAP_STOP_WORDS: ReadonlySet<string> = new Set(
  (
    'whats hows wheres whens whos whys thats theres dont doesnt didnt cant cannot wont isnt arent im ive id youre ' +
    'he she they them their his her him as by so then than some any anything something really ok okay hey hiya u ur pls plz ' +
    'good morning afternoon evening thanks thank guys there sir madam ' +
    'мой моя мое моё мои моего моей вам нам нас меня мне ты тебя вы он она они его ее её их был была было будет если чтобы ' +
    'из к ко про при кто чем тут там здесь вот ну здравствуйте добрый день доброе утро вечер спасибо'
  ).split(' '),
);

/** One no-answer of the transition log. */
export interface NoAnswer {
  conversationId: number;
  at: Date;
  /** The customer's text. */
  question: string;
  /** The best passage the agent found for it (below its threshold), if any. */
  best: DecisionPassage | null;
}

export interface KnowledgeGap {
  /** The group's most frequent phrasing (ties: the newest), as the customer last wrote it. */
  question: string;
  count: number;
  lastAt: Date;
  /** Distinct, newest first, at most MAX_GAP_CONVERSATIONS. */
  conversationIds: number[];
  /** The best passage found for the group's newest question. */
  bestMatch: DecisionPassage | null;
}

// ---------------------------------------------------------------- reading

interface NoAnswerRow {
  conversation_id: number;
  at: Date;
  question: string | null;
  best: unknown;
}

/**
 * The newest no-answers of a base in [from, to) ($3, $4), newest first, at most $5. The where
 * clause repeats the expressions of the partial index conversation_transitions_gaps_idx
 * (migration 0030: no-answers and out-of-scope questions) exactly, so the planner can use it: change one, change the other.
 */
export const NO_ANSWERS_SQL = `select conversation_id, at, left(payload #>> '{output,decision,question}', ${MAX_GAP_QUESTION_CHARS}) as question,
       payload #> '{output,decision,best}' as best
from conversation_transitions
where company_id = $1 and (payload #>> '{output,decision,knowledgeBaseId}')::int = $2
  and event = 'xstate.done.actor.agent' and payload #>> '{output,decision,kind}' in ('no_answer', 'out_of_scope')
  and at >= $3 and at < $4
order by at desc, id desc
limit $5`;

/** The newest no-answers of a base in [from, to), newest first: at most `limit` of them, and whether the period held more. */
export async function readNoAnswers(
  sql: SqlClient,
  scope: { companyId: number; knowledgeBaseId: number; from: Date; to: Date },
  limit = MAX_GAP_QUESTIONS,
): Promise<{ noAnswers: NoAnswer[]; truncated: boolean }> {
  const rows = await query<NoAnswerRow>(sql, 'kb_gaps_no_answers', NO_ANSWERS_SQL, [scope.companyId, scope.knowledgeBaseId, scope.from, scope.to, limit + 1]);
  const noAnswers = rows
    .slice(0, limit)
    .filter((r) => typeof r.question === 'string' && r.question.trim() !== '')
    .map((r) => ({ conversationId: r.conversation_id, at: r.at, question: r.question!, best: passageOf(r.best) }));
  return { noAnswers, truncated: rows.length > limit };
}

/** The recorded best passage, or null when there is none (or it is not of the recorded shape). */
function passageOf(value: unknown): DecisionPassage | null {
  if (value === null || typeof value !== 'object') return null;
  const p = value as Record<string, unknown>;
  const id = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v > 0;
  if (!id(p.documentId) || !id(p.chunkId) || typeof p.title !== 'string' || typeof p.confidence !== 'number' || !Number.isFinite(p.confidence)) return null;
  return { documentId: p.documentId as number, chunkId: p.chunkId as number, title: p.title, confidence: Math.min(1, Math.max(0, p.confidence)) };
}

// ---------------------------------------------------------------- grouping

/** The first MAX_WORDS distinct words of `words` that carry a subject: apostrophes dropped, no stop words. */
function subjectOf(words: readonly string[]): string[] {
  const subject: string[] = [];
  for (const raw of words) {
    const w = raw.includes("'") || raw.includes('’') ? raw.replace(/['’]s$/, '').replace(/['’]/g, '') : raw;
    if (!w || STOP_WORDS.has(w) || GAP_STOP_WORDS.has(w) || subject.includes(w)) continue;
    subject.push(w);
    if (subject.length === MAX_WORDS) break;
  }
  return subject;
}

/** A question's words that carry its subject: lowercase, ё as е, apostrophes dropped, no stop words. */
export const subjectWords = (question: string): string[] => subjectOf(wordsOf(question.slice(0, MAX_GAP_QUESTION_CHARS)));

/** A question as it is grouped: its subject words, and its phrasing (the same words in the same order, whatever the case, punctuation and spacing). */
function readQuestion(question: string): { subject: string[]; phrasing: string } {
  const words = wordsOf(question.slice(0, MAX_GAP_QUESTION_CHARS));
  return { subject: subjectOf(words), phrasing: words.join(' ') };
}

/**
 * Whether two words are the same for grouping: equal, a small typo (one edit in words of five
 * letters or more, two from eight), or one stem inflected (a common prefix of at least five
 * letters that leaves at most three of the longer word: delivery / delivered, доставка /
 * доставкой). Short words must be equal: ship / shop, tea / sea are different questions.
 */
export function sameWord(a: string, b: string): boolean {
  if (a === b) return true;
  const shorter = Math.min(a.length, b.length);
  const longer = Math.max(a.length, b.length);
  if (shorter < STEM) return false;
  let prefix = 0;
  while (prefix < shorter && a[prefix] === b[prefix]) prefix++;
  if (prefix >= Math.max(STEM, longer - 3)) return true;
  const allowed = shorter >= 8 ? 2 : 1;
  return editDistance(a, b, allowed) <= allowed;
}

/** How alike two questions' words are: 2 × matched / (|a| + |b|), each word matched at most once. */
export function questionSimilarity(a: readonly string[], b: readonly string[]): number {
  if (!a.length || !b.length) return 0;
  const used = new Array<boolean>(b.length).fill(false);
  let matched = 0;
  for (const word of a) {
    // An exact match first, so a typo match does not take the word another one equals.
    let k = b.findIndex((other, i) => !used[i] && other === word);
    if (k < 0) k = b.findIndex((other, i) => !used[i] && sameWord(word, other));
    if (k >= 0) {
      used[k] = true;
      matched++;
    }
  }
  return (2 * matched) / (a.length + b.length);
}

/**
 * The keys a word is found by: itself, its stem, and itself with one letter left out or none
 * (two words one edit apart share one of those: "capitol" and "capital" both give "capitl").
 */
function keysOf(word: string): string[] {
  const keys = [`=${word}`];
  if (word.length >= STEM) {
    keys.push(`^${word.slice(0, STEM)}`);
    if (word.length <= MAX_TYPO_WORD) {
      keys.push(`-${word}`);
      for (let i = 0; i < word.length; i++) keys.push(`-${word.slice(0, i)}${word.slice(i + 1)}`);
    }
  }
  return keys;
}

/** A no-answer as grouped: `order` is its place newest first. */
interface Asked {
  row: NoAnswer;
  order: number;
  phrasing: string;
}

/** Questions with the same subject words in any order: one bucket. */
interface Bucket {
  words: string[];
  /** Its no-answers, newest first. */
  asked: Asked[];
}

/**
 * Groups no-answers into gaps, most frequent first (ties: the most recent). Questions with the
 * same subject words (any case, punctuation, order, stop words) share a bucket; a bucket then
 * joins the group of an earlier, larger one whose words it matches closely enough (typos,
 * inflections, a word more or less in a longer question), or starts a group of its own.
 * Each bucket is compared with the seed (first bucket) of a group only, so groups do not
 * drift from one subject to the next through a chain of near neighbours.
 */
export function groupNoAnswers(noAnswers: readonly NoAnswer[]): KnowledgeGap[] {
  // Newest first; a stable sort keeps the reader's order (which breaks ties of `at` by id) for equal times.
  const rows = [...noAnswers].sort((x, y) => y.at.getTime() - x.at.getTime());

  // Customers repeat themselves: each distinct text is read once.
  const read = new Map<string, { subject: string[]; phrasing: string }>();
  const buckets = new Map<string, Bucket>();
  rows.forEach((row, order) => {
    let question = read.get(row.question);
    if (!question) read.set(row.question, (question = readQuestion(row.question)));
    const words = question.subject;
    // A question of stop words alone ("hi there?") is grouped only with the same words.
    const key = words.length ? [...words].sort().join(' ') : `\u0000${question.phrasing}`;
    let bucket = buckets.get(key);
    if (!bucket) buckets.set(key, (bucket = { words, asked: [] }));
    bucket.asked.push({ row, order, phrasing: question.phrasing });
  });

  // Most asked first (ties: the most recent, which Map order already is): those become the seeds.
  const ordered = [...buckets.values()].sort((x, y) => y.asked.length - x.asked.length);
  const groups: { seed: string[]; buckets: Bucket[] }[] = [];
  const postings = new Map<string, number[]>();
  const wordKeys = new Map<string, string[]>();
  const keysOfWord = (word: string) => {
    let keys = wordKeys.get(word);
    if (!keys) wordKeys.set(word, (keys = keysOf(word)));
    return keys;
  };
  // Per group: how many of the current bucket's words its seed may match, and the last word that counted it (a stamp).
  const hits = new Int32Array(ordered.length);
  const counted = new Int32Array(ordered.length).fill(-1);
  let stamp = 0;
  for (const bucket of ordered) {
    let target = -1;
    if (bucket.words.length) {
      const touched: number[] = [];
      for (const word of bucket.words) {
        stamp++;
        for (const key of keysOfWord(word)) {
          for (const g of postings.get(key) ?? []) {
            // One per word, whatever the number of keys it shares with the seed.
            if (counted[g] === stamp) continue;
            counted[g] = stamp;
            if (hits[g] === 0) touched.push(g);
            hits[g]!++;
          }
        }
      }
      // Dice ≥ SAME_QUESTION needs at least this many matched words: the others cannot join.
      const candidates = touched
        .filter((g) => 2 * hits[g]! >= SAME_QUESTION * (bucket.words.length + groups[g]!.seed.length))
        .sort((x, y) => hits[y]! - hits[x]! || x - y)
        .slice(0, MAX_CANDIDATES);
      for (const g of touched) hits[g] = 0;
      let best = SAME_QUESTION;
      for (const g of candidates) {
        const similarity = questionSimilarity(bucket.words, groups[g]!.seed);
        if (similarity > best || (similarity === best && (target < 0 || g < target))) {
          best = similarity;
          target = g;
        }
      }
    }
    if (target >= 0) {
      groups[target]!.buckets.push(bucket);
      continue;
    }
    const index = groups.push({ seed: bucket.words, buckets: [bucket] }) - 1;
    for (const word of bucket.words) {
      for (const key of keysOfWord(word)) {
        const list = postings.get(key);
        if (!list) postings.set(key, [index]);
        else if (list.length < MAX_POSTINGS && list.at(-1) !== index) list.push(index);
      }
    }
  }

  return groups.map((g) => gapOf(g.buckets.flatMap((b) => b.asked))).sort((x, y) => y.count - x.count || y.lastAt.getTime() - x.lastAt.getTime());
}

/** A group's figures from its no-answers. */
function gapOf(asked: Asked[]): KnowledgeGap {
  asked.sort((x, y) => x.order - y.order);
  const phrasings = new Map<string, { count: number; newest: NoAnswer }>();
  for (const { row, phrasing } of asked) {
    const seen = phrasings.get(phrasing);
    if (seen) seen.count++;
    else phrasings.set(phrasing, { count: 1, newest: row });
  }
  // Map order is newest first, so the first of the most frequent is the newest of them.
  let chosen: { count: number; newest: NoAnswer } | undefined;
  for (const p of phrasings.values()) if (!chosen || p.count > chosen.count) chosen = p;
  const conversationIds: number[] = [];
  for (const { row } of asked) {
    if (conversationIds.length >= MAX_GAP_CONVERSATIONS) break;
    if (!conversationIds.includes(row.conversationId)) conversationIds.push(row.conversationId);
  }
  const newest = asked[0]!.row;
  return {
    question: chosen!.newest.question.trim().replace(/\s+/g, ' '),
    count: asked.length,
    lastAt: newest.at,
    conversationIds,
    bestMatch: newest.best,
  };
}
