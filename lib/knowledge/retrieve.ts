import { guardForUrl } from '../address-guard.js';
import type { Config } from '../config.js';
import { query, type SqlClient } from '../db.js';
import type { Logger } from '../logger.js';
import type { SecretBox } from '../secrets.js';
import { embedTexts, type EmbeddingModel } from './embeddings.js';
import { combinedConfidence, namesIn, passageConfidences, SEMANTIC_FLOOR, standout } from './confidence.js';
import { localModel } from './local-model.js';
import { chunkTexts, clampLimit, fuse, lexicalCandidates, LIST_DEPTH, LOCAL_VECTOR_WEIGHT, round, searchText, type Signal } from './search.js';
import type { VectorIndex } from './vectors.js';

/**
 * A search of one knowledge base with every signal it has (lib/knowledge/search.ts): the
 * lexical lists from one statement, the vector list when the base has an embedding model
 * (the question embedded by that server; when the server fails the search goes on without
 * vectors and says so in the log), fused by RRF, then the texts and snippets of the results.
 */
export interface KnowledgeBaseInfo {
  id: number;
  companyId: number;
  language: string;
  contentVersion: string;
  embedding: EmbeddingModel | null;
}

export interface SearchHit {
  documentId: number;
  chunkId: number;
  title: string;
  heading: string;
  snippet: string;
  /** The chunk's whole text (for prompts and answers; the API shows `snippet`). */
  content: string;
  /** RRF score (higher is better; only comparable within one search). */
  score: number;
  /** 0–1: the share of the base's known words of the question the chunk holds (see search.ts). */
  relevance: number;
  /** 0–1: how well the chunk answers the question (lib/knowledge/confidence.ts): what an agent's threshold is compared with. */
  confidence: number;
  matchedBy: Signal[];
}

export interface RetrievalDeps {
  sql: SqlClient;
  vectors: VectorIndex;
  logger?: Logger;
}

export interface SearchOptions {
  limit?: number;
  /** Which signals to use (the quality bench compares them); default all the base has. */
  signals?: { fulltext?: boolean; trigram?: boolean; vector?: boolean };
  signal?: AbortSignal;
}

type UrlConfig = Pick<Config, 'allowPrivateUrls' | 'helpdeskGlobalUrl' | 'helpdeskEuropeUrl'>;

/**
 * The base as retrieval needs it (its embedding key opened); null when it is not the company's.
 * Only these columns: a base's synonyms may be megabytes, searches never read them.
 */
export async function loadBaseInfo(sql: SqlClient, secrets: SecretBox, urls: UrlConfig, companyId: number, knowledgeBaseId: number, logger?: Logger): Promise<KnowledgeBaseInfo | null> {
  const [row] = await query<{ language: string; content_version: string; embedding_base_url: string | null; embedding_model: string | null; embedding_api_key_sealed: string | null }>(
    sql,
    'kb_info',
    `select language, content_version::text, embedding_base_url, embedding_model, embedding_api_key_sealed from knowledge_bases where id = $1 and company_id = $2`,
    [knowledgeBaseId, companyId],
  );
  if (!row) return null;
  let embedding: EmbeddingModel | null = null;
  try {
    embedding = embeddingModelOf(row, secrets, urls);
  } catch (err) {
    // The key cannot be opened (SECRETS_KEY rotated away): the base is searched without vectors.
    logger?.warn({ err, knowledgeBaseId }, 'knowledge: the embedding API key cannot be opened; searching without vectors');
  }
  return { id: knowledgeBaseId, companyId, language: row.language, contentVersion: row.content_version, embedding };
}

export function embeddingModelOf(
  row: { embedding_base_url: string | null; embedding_model: string | null; embedding_api_key_sealed: string | null },
  secrets: SecretBox,
  urls: UrlConfig,
): EmbeddingModel | null {
  if (!row.embedding_base_url || !row.embedding_model) return null;
  return {
    baseUrl: row.embedding_base_url,
    model: row.embedding_model,
    apiKey: row.embedding_api_key_sealed ? secrets.open(row.embedding_api_key_sealed) : null,
    guard: guardForUrl(urls, row.embedding_base_url),
  };
}

export async function searchKnowledge(deps: RetrievalDeps, base: KnowledgeBaseInfo, question: string, options: SearchOptions = {}): Promise<SearchHit[]> {
  const limit = clampLimit(options.limit);
  const use = { fulltext: options.signals?.fulltext ?? true, trigram: options.signals?.trigram ?? true, vector: options.signals?.vector ?? true };
  const ref = { companyId: base.companyId, knowledgeBaseId: base.id, contentVersion: base.contentVersion };
  const searched = searchText(question) !== '';
  // The base's embedding server's vectors, else the local model's (null: none for this question).
  const local = use.vector && searched && base.embedding === null ? localModel.embed(question) : null;
  const [lexical, vector] = await Promise.all([
    lexicalCandidates(deps.sql, [{ companyId: base.companyId, knowledgeBaseId: base.id, query: question }]).then((r) => r[0]!),
    use.vector && searched && base.embedding !== null
      ? embedTexts(base.embedding, [question.slice(0, 2000)], { signal: options.signal })
          .then(([v]) => deps.vectors.nearest(deps.sql, ref, v!, LIST_DEPTH))
          .catch((err: unknown) => {
            deps.logger?.warn({ err: (err as Error).message, knowledgeBaseId: base.id }, 'knowledge: the embedding server failed; searching without vectors');
            return null;
          })
      : local
        ? // Only what is near in meaning: every passage is some distance from every question.
          deps.vectors.nearest(deps.sql, ref, local, LIST_DEPTH, 'local').then((hits) => hits.filter((h) => h.similarity >= SEMANTIC_FLOOR))
        : Promise.resolve(null),
  ]);
  const fused = fuse(lexical.candidates, vector, { fulltext: use.fulltext, trigram: use.trigram }, local ? LOCAL_VECTOR_WEIGHT : 1).slice(0, limit);
  const matchesOf = new Map(lexical.candidates.map((c) => [c.chunkId, c.matches]));
  const facts = lexical.facts ? { ...lexical.facts, names: namesIn(question) } : null;
  const coverage = facts ? passageConfidences(facts, fused.map((f) => ({ matches: matchesOf.get(f.chunkId) ?? [] }))) : fused.map(() => 0);
  // The local model's meaning adds to the nearest passage as far as it stands out from other articles'
  // (lib/knowledge/confidence.ts, calibrated on its similarities; a server's vectors only rank).
  const meaning = local ? vector : null;
  const similarity = new Map((meaning ?? []).map((v) => [v.chunkId, v.similarity]));
  const lead = meaning?.[0];
  const rival = lead ? meaning!.find((h) => h.documentId !== lead.documentId) : undefined;
  const confidences = fused.map((f, i) => combinedConfidence(coverage[i]!, similarity.get(f.chunkId) ?? null, lead?.chunkId === f.chunkId ? standout(lead.similarity - (rival?.similarity ?? 0)) : 0));
  const texts = await chunkTexts(deps.sql, base.companyId, fused.map((f) => f.chunkId), lexical.terms);
  return fused.flatMap((f, i) => {
    const t = texts.get(f.chunkId);
    if (!t) return [];
    return [{
      documentId: f.documentId, chunkId: f.chunkId, title: t.title, heading: t.heading, snippet: t.snippet, content: t.content,
      score: round(f.score), relevance: round(f.relevance, 4), confidence: round(confidences[i]!, 4), matchedBy: f.matchedBy,
    }];
  });
}
