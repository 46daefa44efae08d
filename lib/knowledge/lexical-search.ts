import { query, type SqlClient } from '../db.js';
import { passageConfidences, type QuestionFacts, type WordMatch } from './confidence.js';
import { round } from './fusion.js';
import {
  FACTS_JSON, LEXICAL_CTES, LIST_DEPTH, MISSPELT_FULLTEXT_WEIGHT, QUESTION_FACTS_CTES, questionFacts, RRF_K, searchText, statementParams, wordMatches,
  type FactRow, type LexicalResult, type Question, type Signal, type WordRow,
} from './lexical-statement.js';

/**
 * The lexical search's statements (lib/knowledge/lexical-statement.ts builds them): every
 * candidate of a batch of questions with how it holds their words (the search route, model
 * agents), or the few best of each with the text an answer needs (the built-in agent).
 */
/**
 * The lexical candidates of each question (both lists, at most `depth` each), in ONE
 * statement whatever the number of questions.
 */
export async function lexicalCandidates(client: SqlClient, questions: Question[], depth = LIST_DEPTH): Promise<LexicalResult[]> {
  const out: LexicalResult[] = questions.map(() => ({ candidates: [], terms: [], facts: null }));
  const asked = questions.map((q, i) => ({ ...q, text: searchText(q.query), i })).filter((q) => q.text !== '');
  if (!asked.length) return out;
  const rows = await query<{
    ord: number; chunk_id: string | null; document_id: number; ft_rank: string | null; tg_rank: string | null; fuzzy: boolean | null; relevance: number | null;
    facts: FactRow[] | null; terms: string[] | null; n: number | null; words: WordRow[] | null;
  }>(
    client,
    'kb_lexical',
    `with ${LEXICAL_CTES},
     listed_facts as (
       select m.ord, m.chunk_id, ${FACTS_JSON} as facts
       from matched m join ranked r on r.ord = m.ord and r.chunk_id = m.chunk_id
       where r.ft_rank <= $4::int or r.tg_rank <= $4::int
       group by m.ord, m.chunk_id
     ),
     ${QUESTION_FACTS_CTES},
     matched_terms as (
       select f.ord, array_agg(distinct w.term) as terms from (select distinct ord, qi from found) f
       join weighted w on w.ord = f.ord and w.qi = f.qi group by f.ord
     )
     select r.ord, r.chunk_id, r.document_id, r.ft_rank, r.tg_rank, r.fuzzy, r.relevance, lf.facts, null::text[] as terms, null::float8 as n, null::json as words
     from ranked r left join listed_facts lf on lf.ord = r.ord and lf.chunk_id = r.chunk_id
     where r.ft_rank <= $4::int or r.tg_rank <= $4::int
     union all
     select qf.ord, null, null, null, null, null, null, null, mt.terms, qf.n, qf.words
     from question_facts qf left join matched_terms mt on mt.ord = qf.ord`,
    statementParams(asked, depth),
  );
  for (const r of rows) {
    const target = out[asked[r.ord - 1]!.i]!;
    if (r.chunk_id === null) {
      target.terms = r.terms ?? [];
      target.facts = questionFacts(Number(r.n), r.words ?? []);
    } else {
      target.candidates.push({
        chunkId: Number(r.chunk_id), documentId: r.document_id, relevance: Number(r.relevance ?? 0),
        fulltextRank: r.ft_rank === null ? null : Number(r.ft_rank), trigramRank: r.tg_rank === null ? null : Number(r.tg_rank), fuzzy: r.fuzzy === true,
        matches: wordMatches(r.facts),
      });
    }
  }
  return out;
}

export interface BestMatch {
  documentId: number;
  chunkId: number;
  /** The document's title. */
  title: string;
  heading: string;
  /** The chunk's text. */
  content: string;
  relevance: number;
  /** 0–1: how well the chunk answers the question (lib/knowledge/confidence.ts). */
  confidence: number;
  score: number;
  matchedBy: Signal[];
  /** How the chunk holds the question's words (the statement's facts; absent for a search with vectors). */
  matches?: WordMatch[];
}

/** The passages that might answer a question, best first by the fused score, each with its confidence. */
export interface AnswerCandidates {
  passages: BestMatch[];
  /** The question's words as the base sees them (what the confidences were computed from); null when a search with vectors found them. */
  facts: QuestionFacts | null;
}

/** Passages per question the answer decision weighs (the best by score and its rivals for the margin). */
export const ANSWER_CANDIDATES = 4;

/**
 * For each of many questions, the ANSWER_CANDIDATES best chunks by the lexical signals fused
 * with RRF, with their confidence and the text an answer needs, in ONE statement (the built-in
 * agent asks for a whole batch of customer messages at once, inside the worker's transaction).
 * null where nothing matches.
 */
export async function bestKnowledgeMatches(client: SqlClient, questions: Question[]): Promise<(AnswerCandidates | null)[]> {
  const out: (AnswerCandidates | null)[] = questions.map(() => null);
  const asked = questions.map((q, i) => ({ ...q, text: searchText(q.query), i })).filter((q) => q.text !== '');
  if (!asked.length) return out;
  const rows = await query<{
    ord: number; chunk_id: string | null; document_id: number; title: string; heading: string; content: string; relevance: number; score: number;
    ft_rank: string | null; fuzzy: boolean; facts: FactRow[] | null; n: number; words: WordRow[];
  }>(
    client,
    'kb_best',
    `with ${LEXICAL_CTES},
     fused as (
       select r.ord, r.chunk_id, r.document_id, r.relevance, r.ft_rank, r.fuzzy,
              coalesce(case when r.any_fuzzy then ${MISSPELT_FULLTEXT_WEIGHT} else 1 end / (${RRF_K} + r.ft_rank), 0) + coalesce(1.0 / (${RRF_K} + r.tg_rank), 0) as score
       from ranked r where r.ft_rank is not null or r.tg_rank is not null
     ),
     top as (
       select * from (select f.*, row_number() over (partition by f.ord order by f.score desc, f.relevance desc, f.chunk_id) as r from fused f) x
       where x.r <= ${ANSWER_CANDIDATES}
     ),
     top_facts as (
       select m.ord, m.chunk_id, ${FACTS_JSON} as facts
       from matched m join top t on t.ord = m.ord and t.chunk_id = m.chunk_id
       group by m.ord, m.chunk_id
     ),
     ${QUESTION_FACTS_CTES}
     select qf.ord, t.chunk_id, t.document_id, d.title, c.heading, c.content, t.relevance, t.score, t.ft_rank, t.fuzzy, tf.facts, qf.n, qf.words
     from question_facts qf
     left join top t on t.ord = qf.ord
     left join top_facts tf on tf.ord = t.ord and tf.chunk_id = t.chunk_id
     left join knowledge_chunks c on c.id = t.chunk_id and c.company_id = (select company_id from q where q.ord = t.ord)
     left join knowledge_documents d on d.id = t.document_id and d.company_id = c.company_id
     order by qf.ord, t.r`,
    statementParams(asked, LIST_DEPTH),
  );
  const byOrd = new Map<number, { facts: QuestionFacts; rows: typeof rows; }>();
  for (const r of rows) {
    let e = byOrd.get(r.ord);
    if (!e) byOrd.set(r.ord, (e = { facts: questionFacts(Number(r.n), r.words), rows: [] }));
    if (r.chunk_id !== null && r.content !== null) e.rows.push(r);
  }
  for (const [ord, e] of byOrd) {
    if (!e.rows.length) continue;
    const confidences = passageConfidences(e.facts, e.rows.map((r) => ({ matches: wordMatches(r.facts) })));
    out[asked[ord - 1]!.i] = {
      facts: e.facts,
      passages: e.rows.map((r, k) => {
        const matchedBy: Signal[] = [];
        if (r.ft_rank !== null) matchedBy.push('fulltext');
        if (r.fuzzy) matchedBy.push('trigram');
        return {
          documentId: r.document_id, chunkId: Number(r.chunk_id), title: r.title, heading: r.heading, content: r.content,
          relevance: round(Number(r.relevance)), confidence: round(confidences[k]!, 4), score: round(Number(r.score)), matchedBy, matches: wordMatches(r.facts),
        };
      }),
    };
  }
  return out;
}

