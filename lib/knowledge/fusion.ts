import { MISSPELT_FULLTEXT_WEIGHT, RRF_K, type LexicalCandidate, type Signal } from './lexical-statement.js';

/**
 * The local model's list counts this much in the fusion: its static vectors find the answering
 * article first less often than the words do on a help centre of many sections (bench/README.md),
 * so meaning breaks the words' ties and brings up what they miss, rather than reordering them.
 */
export const LOCAL_VECTOR_WEIGHT = 0.25;

export const round = (n: number, digits = 6) => Math.round(n * 10 ** digits) / 10 ** digits;

/** One fused result (before its text is read). */
export interface FusedCandidate {
  chunkId: number;
  documentId: number;
  score: number;
  relevance: number;
  matchedBy: Signal[];
}

/**
 * Reciprocal-rank fusion of the lexical candidates and, when given, the vector list
 * (chunk ids best first, with their cosine similarity): score = Σ 1 / (k + rank), the full-text
 * list of a question with a misspelt word weighing MISSPELT_FULLTEXT_WEIGHT, the vector list
 * `vectorWeight` (the local model's: LOCAL_VECTOR_WEIGHT).
 */
export function fuse(
  lexical: LexicalCandidate[],
  vector: { chunkId: number; documentId: number; similarity: number }[] | null,
  signals: { fulltext: boolean; trigram: boolean } = { fulltext: true, trigram: true },
  vectorWeight = 1,
): FusedCandidate[] {
  const byId = new Map<number, FusedCandidate>();
  const entry = (chunkId: number, documentId: number) => {
    let e = byId.get(chunkId);
    if (!e) byId.set(chunkId, (e = { chunkId, documentId, score: 0, relevance: 0, matchedBy: [] }));
    return e;
  };
  // A trigram list exists only for a question with a misspelt word (MISSPELT_FULLTEXT_WEIGHT).
  const misspelt = lexical.some((c) => c.trigramRank !== null);
  for (const c of lexical) {
    const ft = signals.fulltext && c.fulltextRank !== null;
    const tg = signals.trigram && c.trigramRank !== null;
    if (!ft && !(tg && c.fuzzy)) continue;
    const e = entry(c.chunkId, c.documentId);
    if (ft) {
      e.score += (misspelt && signals.trigram ? MISSPELT_FULLTEXT_WEIGHT : 1) / (RRF_K + c.fulltextRank!);
      e.matchedBy.push('fulltext');
    }
    if (tg) e.score += 1 / (RRF_K + c.trigramRank!);
    if (signals.trigram && c.fuzzy) e.matchedBy.push('trigram');
    e.relevance = Math.max(e.relevance, c.relevance);
  }
  vector?.forEach((v, i) => {
    const e = entry(v.chunkId, v.documentId);
    e.score += vectorWeight / (RRF_K + i + 1);
    e.matchedBy.push('vector');
    e.relevance = Math.max(e.relevance, v.similarity);
  });
  return [...byId.values()].sort((a, b) => b.score - a.score || b.relevance - a.relevance || a.chunkId - b.chunkId);
}

