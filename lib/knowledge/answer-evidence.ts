import type { SqlClient } from '../db.js';
import { chunkTexts } from './chunk-texts.js';
import { isCommonWord } from './common-words.js';
import { combinedConfidence, isName, namesIn, passageConfidences, semanticCredit, standout, type QuestionFacts } from './confidence.js';
import { expandQuestion } from './expansion.js';
import { searchText } from './lexical-statement.js';
import { localModel } from './local-model.js';
import type { AnswerCandidates, BestMatch } from './lexical-search.js';
import type { KnowledgeBaseInfo } from './retrieve.js';
import { STOP_WORDS, wordsOf } from './stop-words.js';
import type { BaseRef, VectorIndex } from './vectors.js';

/**
 * What an answer decision weighs (lib/agents/answer-decision.ts): the candidate passages with
 * their lexical coverage (lib/knowledge/confidence.ts), their similarity of meaning to the
 * question (the local sentence model, lib/knowledge/local-model.ts, for a base without an
 * embedding server) and the confidence built from both; and how much of the question the base
 * knows at all (is it about this business?).
 *
 * The lexical candidates come from the worker's batched statement (lib/knowledge/lexical-search.ts);
 * the passages nearest in meaning are added when they could matter: a passage found only by
 * its meaning ("Do you ship to Lisbon?" → the article naming Portugal) is read (one more
 * statement) only when its confidence would beat the lexical ones'.
 */
export interface Passage extends BestMatch {
  /** 0–1: the share of the question's words the passage holds (lib/knowledge/confidence.ts). */
  lexical: number;
  /** Cosine of the question's and the passage's vectors; null: no vectors (another script, the model off or loading). */
  semantic: number | null;
}

export interface AnswerEvidence {
  /** Best first by confidence. */
  passages: Passage[];
  /**
   * Share (0–1) of the question's content words that the base holds anywhere (itself, a
   * synonym or a typo of it); a word of shops and services it does not hold (orders, delivery,
   * prices, returns: the built-in synonym groups, lib/knowledge/synonyms.ts) counts half: "where
   * is my order?" is about the business even when the help centre never says.
   */
  known: number;
  /** The question's vector was compared (a Latin-script question and the model ready). */
  semantic: boolean;
}

/** Passages nearest in meaning looked at (the nearest, and its rivals from other articles). */
export const NEAREST_IN_MEANING = 6;

export interface EvidenceDeps {
  sql: SqlClient;
  vectors: VectorIndex;
}

/** The evidence for one question, from its lexical candidates (null: nothing matched its words). */
export async function answerEvidence(deps: EvidenceDeps, base: KnowledgeBaseInfo, question: string, found: AnswerCandidates | null): Promise<AnswerEvidence> {
  const lexical = found?.passages ?? [];
  // Confidence again with the question's names known (the statement sees lexemes only).
  const facts = found?.facts ? { ...found.facts, names: namesIn(question) } : null;
  const coverage = facts ? passageConfidences(facts, lexical.map((p) => ({ matches: p.matches ?? [] }))) : lexical.map((p) => p.confidence);
  const q = base.embedding ? null : localModel.embed(question);
  const ref = { companyId: base.companyId, knowledgeBaseId: base.id, contentVersion: base.contentVersion };
  const sims = q ? await remainderSimilarities(deps, ref, question, q, lexical, facts) : lexical.map(() => null);
  // The passage nearest in meaning, and by how much it stands out from other articles'.
  const near = q ? await deps.vectors.nearest(deps.sql, ref, q, NEAREST_IN_MEANING, 'local') : [];
  const lead = near[0];
  const rival = lead ? near.find((h) => h.documentId !== lead.documentId) : undefined;
  const standsOut = (chunkId: number) => (lead && chunkId === lead.chunkId ? standout(lead.similarity - (rival?.similarity ?? 0)) : 0);
  const passages: Passage[] = lexical.map((p, i) => {
    const semantic = sims[i] ?? null;
    const lexicalScore = round4(coverage[i]!);
    return { ...p, lexical: lexicalScore, semantic, confidence: round4(combinedConfidence(lexicalScore, semantic, standsOut(p.chunkId))) };
  });
  if (lead && !lexical.some((p) => p.chunkId === lead.chunkId)) {
    // Found by its meaning alone ("Do you ship to Lisbon?" → the article naming Portugal): read when it could win.
    const confidence = round4(combinedConfidence(0, lead.similarity, standsOut(lead.chunkId)));
    const weakest = passages.length ? Math.min(...passages.map((p) => p.confidence)) : 0;
    if (confidence > weakest) {
      const t = (await chunkTexts(deps.sql, base.companyId, [lead.chunkId], [])).get(lead.chunkId);
      if (t) {
        passages.push({
          documentId: lead.documentId, chunkId: lead.chunkId, title: t.title, heading: t.heading, content: t.content, relevance: lead.similarity,
          lexical: 0, semantic: lead.similarity, confidence, score: 0, matchedBy: ['vector'], matches: [],
        });
      }
    }
  }
  for (const p of passages) if (p.semantic !== null && semanticCredit(p.semantic) > 0 && !p.matchedBy.includes('vector')) p.matchedBy = [...p.matchedBy, 'vector'];
  passages.sort((a, b) => b.confidence - a.confidence || b.score - a.score);
  return { passages, known: knownShare(facts, question), semantic: q !== null };
}

/**
 * The similarity of meaning of each lexical passage to what of the question it does not hold
 * in words: a passage sharing the word "France" with "What is the capital of France?" must
 * not be credited again for the meaning that word brings; what is left ("capital") is what
 * the passage must be about. A passage holding every word is compared with the whole question.
 */
async function remainderSimilarities(deps: EvidenceDeps, ref: BaseRef, question: string, whole: Float32Array, passages: BestMatch[], facts: QuestionFacts | null): Promise<(number | null)[]> {
  const words = wordsOf(question).filter((w) => !STOP_WORDS.has(w));
  const out: (number | null)[] = [];
  for (const p of passages) {
    const held = new Set((p.matches ?? []).map((m) => m.qi));
    const lexemes = (facts?.words ?? []).filter((w) => held.has(w.qi)).map((w) => w.lexeme);
    const rest = lexemes.length ? words.filter((w) => !lexemes.some((l) => sameStem(w, l))) : words;
    const v = rest.length && rest.length < words.length ? (localModel.embed(rest.join(' ')) ?? whole) : whole;
    out.push((await deps.vectors.similarities(deps.sql, ref, v, [p.chunkId], 'local'))[0] ?? null);
  }
  return out;
}

/** A word of the question and a lexeme (its stem, in whatever language): the lexeme's first letters start the word. */
const sameStem = (word: string, lexeme: string) => word === lexeme || word.startsWith(lexeme.slice(0, Math.max(3, lexeme.length - 1)));

/**
 * How much of the question the base knows (AnswerEvidence.known): numbers, names,
 * abbreviations and the languages' commonest words (unless of shops and services) left out.
 */
export function knownShare(facts: QuestionFacts | null, question: string): number {
  const business = wordsOf(question).filter((w) => expandQuestion(w).length > 0);
  if (!facts) {
    // Nothing of it matched the base: only its words of shops and services can tell.
    const names = namesIn(question);
    const words = wordsOf(searchText(question)).filter((w) => !/\d/.test(w) && w.length > 2 && !names.has(w));
    const ofBusiness = words.filter((w) => business.includes(w));
    const content = words.filter((w) => ofBusiness.includes(w) || !isCommonWord(w)).length;
    return content ? (ofBusiness.length * BUSINESS_WORD_CREDIT) / content : 0;
  }
  let content = 0;
  let known = 0;
  const seen = new Set<number>();
  for (const w of facts.words) {
    if (seen.has(w.qi)) continue;
    seen.add(w.qi);
    const ofBusiness = business.some((b) => sameStem(b, w.lexeme));
    // Names say who or where, not what about ("What is the capital of France?" is not about shipping to France).
    if (/\d/.test(w.lexeme) || w.lexeme.length <= 2 || (isCommonWord(w.lexeme) && !ofBusiness) || isName(w.lexeme, facts.names)) continue;
    content++;
    if (w.df > 0 || w.synonyms.length > 0 || w.neighbours.some((n) => n.term.length >= 4)) known++;
    else if (ofBusiness) known += BUSINESS_WORD_CREDIT;
  }
  return content ? known / content : 0;
}

/** What a word of shops and services the base does not hold counts as known. */
export const BUSINESS_WORD_CREDIT = 0.5;

const round4 = (n: number) => Math.round(n * 1e4) / 1e4;
