import { expandQuestion } from './expansion.js';
import type { QuestionFacts, WordMatch } from './confidence.js';
import { AUTO_LANGUAGE, detectLanguage } from './language.js';
import { withoutStopWords } from './stop-words.js';

/**
 * Retrieval over a knowledge base's chunks, shared by the gateway (search route,
 * evaluations) and the worker (built-in and model agents).
 *
 * Two lexical signals come from one SQL statement per batch of questions:
 * - **fulltext**: the question's lexemes in the base's text-search configuration (stop
 *   words of questions removed first, lib/knowledge/stop-words.ts), each weighted by its
 *   IDF in the base (BM25's `ln(1 + (N − df + .5)/(df + .5))`, from `knowledge_terms`) and
 *   by HEADING_WEIGHT when it is in the chunk's title or heading path; a chunk's score is the sum over
 *   the lexemes it holds. PostgreSQL's own ts_rank knows no IDF, so a common word weighed as
 *   much as the subject of the question.
 *   A word's synonyms (the built-in groups, lib/knowledge/expansion.ts: "guarantee" →
 *   "warranty", "привезут" → "доставка"; and the base's own, `knowledge_synonym_entries`) cover it
 *   too, at SYNONYM_WEIGHT of their own weight: the help centre's words are rarely the
 *   customer's.
 * - **trigram**: a lexeme the base does not know (a typo, another word form under `simple`)
 *   is replaced by the base's most similar terms (pg_trgm `similarity` ≥ TRIGRAM_MIN over a
 *   GIN index of the base's terms); this list ranks the chunks by the question so corrected
 *   (the neighbours' weights multiplied by their similarity). A question without such a
 *   word has no trigram list (it would repeat the full-text one); a result is `matchedBy`
 *   trigram when a neighbour contributed to it.
 * Candidates are found through the GIN index of the chunks' vectors, by the lexemes that are
 * rare enough to be selective (the question's own: in at most a fifth of the chunks, or 50;
 * synonyms and trigram neighbours: a fiftieth, the MAX_EXPANSION_FINDERS rarest of them); the
 * others only add to the scores of the chunks found that way.
 *
 * The work is bounded whatever a company stored or a customer wrote (contract.md § No tenant
 * slows another down): the constants below cap the lexemes of a question, the base's own
 * synonyms looked at and used, the misspelt words looked up, and the terms searched.
 *
 * The first RERANK_DEPTH chunks of each lexical list are then scaled by how often, and where
 * (title and headings or text), they hold the question's words (`ts_rank`, TERM_FREQUENCY_WEIGHT).
 *
 * A third signal, **vector** (lib/knowledge/vectors.ts), is added in code when the base has an
 * embedding model. The lists are fused by reciprocal rank (RRF, k = 60); the full-text list of
 * a question with a misspelt word weighs MISSPELT_FULLTEXT_WEIGHT.
 *
 * Relevance (0–1), what an agent's threshold is compared with: the share of the IDF weight of
 * the question's words known to the base (directly or through a trigram neighbour) that the
 * chunk holds; or, for a chunk found by its vector, the cosine similarity. Words the base
 * does not know at all are left out: no chunk could hold them (a question with nothing
 * known finds nothing, and the agent has no answer).
 *
 * Raw SQL over company-owned tables: company_id is written explicitly in every condition.
 */
export const RRF_K = 60;
/** Candidates per list. */
export const LIST_DEPTH = 50;
export const TRIGRAM_MIN = 0.4;
/** A lexeme in the chunk's section headings weighs this much more (what a section is about). */
export const HEADING_WEIGHT = 1.5;
/** A synonym of a question's word (lib/knowledge/synonyms.ts) counts this much of the word itself. */
export const SYNONYM_WEIGHT = 0.8;
/**
 * A lexeme finds candidates only when it is in at most 1/N of the chunks (or 50): a word of the
 * question at 1/OWN_SELECTIVITY, a synonym or a trigram neighbour at 1/EXPANSION_SELECTIVITY (a
 * question brings two to three times as many of those); a commoner one only adds to the scores
 * of the chunks found.
 */
export const OWN_SELECTIVITY = 5;
export const EXPANSION_SELECTIVITY = 50;
/**
 * In the fusion of a question with a misspelt word, its full-text list counts this much: that
 * list misses the corrected word, the trigram list (the question as corrected) has them all.
 */
export const MISSPELT_FULLTEXT_WEIGHT = 0.5;
/**
 * The first RERANK_DEPTH chunks of each list are scaled by 1 + TERM_FREQUENCY_WEIGHT × PostgreSQL's
 * `ts_rank` of the chunk for the question's words (their own, synonyms and neighbours): how often
 * the chunk holds them, saturating, and whether in its title and headings (weight A) or text
 * (B). The IDF sum alone cannot tell two chunks apart that hold the same words once each.
 */
export const TERM_FREQUENCY_WEIGHT = 4;
export const RERANK_DEPTH = 10;
export const MAX_QUERY_CHARS = 2000;
/** A question's first this many lexemes are searched (a long message must not become a huge query). */
export const MAX_QUESTION_LEXEMES = 32;
/**
 * Bounds on a base's own synonyms per question, whatever the company stored (up to
 * QUOTA_SYNONYM_GROUPS_PER_BASE groups): entries looked at per lexeme of the question, entries
 * matched, and (word, synonym) pairs drawn from them, the first in the company's order.
 * A help centre's groups stay far below them; a base built to blow a search up gets a bounded one.
 */
export const SYNONYM_ENTRIES_PER_LEXEME = 100;
export const MAX_SYNONYM_ENTRIES = 12;
export const MAX_BASE_SYNONYM_PAIRS = 96;
/** A base's own synonym group holds at most this many terms of at most MAX_SYNONYM_LENGTH characters (the API refuses more; contract.md). */
export const MAX_SYNONYMS_PER_GROUP = 20;
export const MAX_SYNONYM_LENGTH = 60;
/** Terms of a question searched at most (its own lexemes, trigram neighbours, synonyms): each is checked in every shortlisted chunk. */
export const MAX_QUESTION_TERMS = 32;
/**
 * Synonyms and trigram neighbours that find candidates (through the chunks' index, one scan
 * each) per question, the rarest first; the others only add to the scores of the chunks found.
 */
export const MAX_EXPANSION_FINDERS = 16;
/**
 * A question with at most this many terms that found no candidates has each checked in each
 * shortlisted chunk's stored vector; with more, the chunks' lexemes are read once and checked
 * in memory (cheaper past about five terms).
 */
export const FEW_UNFOUND_TERMS = 5;
/**
 * Trigram neighbours are looked up (an index scan each) for the first MAX_MISSPELT_WORDS words of
 * a question the base does not know, of up to MAX_MISSPELT_LENGTH characters (a longer one is no
 * misspelt word).
 */
export const MAX_MISSPELT_WORDS = 8;
export const MAX_MISSPELT_LENGTH = 32;
export const DEFAULT_SEARCH_LIMIT = 10;
export const MAX_SEARCH_LIMIT = 50;

export type Signal = 'fulltext' | 'trigram' | 'vector';

export interface Question {
  companyId: number;
  knowledgeBaseId: number;
  query: string;
}

export interface LexicalCandidate {
  chunkId: number;
  documentId: number;
  fulltextRank: number | null;
  trigramRank: number | null;
  /** A trigram neighbour of a misspelt word is in the chunk. */
  fuzzy: boolean;
  relevance: number;
  /** How the chunk holds the question's words (what its confidence is computed from). */
  matches: WordMatch[];
}

export interface LexicalResult {
  candidates: LexicalCandidate[];
  /** The base's terms the question matched (its own lexemes and trigram neighbours). */
  terms: string[];
  /** The question's words as the base sees them (null: nothing searched). */
  facts: QuestionFacts | null;
}

/** One word of the question held by a chunk, as the statement returns it: `[qi, via, term, inHeading]`. */
export type FactRow = [qi: number, via: WordMatch['via'], term: string, inHeading: boolean];
/** One word of the question: `[qi, lexeme, df, [[trigram neighbour, df], …], [[synonym, df], …]]`. */
export type WordRow = [qi: number, lexeme: string, df: number, neighbours: [term: string, df: number][], synonyms: [term: string, df: number][]];

/** Over `matched m` grouped by question and chunk: how the chunk holds each word (FactRow). */
export const FACTS_JSON = `json_agg(json_build_array(m.qi, case when m.own then 'own' when m.exact then 'synonym' else 'typo' end, m.term, m.in_heading))`;

/** CTEs over LEXICAL_CTES: `question_facts (ord, n, words)`, each question's words (WordRow). */
export const QUESTION_FACTS_CTES = `
  expansions as (
    select ord, qi,
           coalesce(json_agg(json_build_array(term, df)) filter (where not exact), '[]'::json) as neighbours,
           coalesce(json_agg(json_build_array(term, df)) filter (where exact and not own), '[]'::json) as synonyms
    from terms where not own group by ord, qi
  ),
  question_facts as (
    select d.ord, max(d.n) as n,
           json_agg(json_build_array(d.qi, d.lexeme, d.df, coalesce(x.neighbours, '[]'::json), coalesce(x.synonyms, '[]'::json)) order by d.qi) as words
    from qdf d left join expansions x on x.ord = d.ord and x.qi = d.qi
    group by d.ord
  )`;

/** The question's words as the statement saw them. */
export function questionFacts(n: number, words: WordRow[]): QuestionFacts {
  const terms = (list: [string, number][]) => list.map(([term, tdf]) => ({ term, df: Number(tdf) }));
  return { chunks: n, words: words.map(([qi, lexeme, df, neighbours, synonyms]) => ({ qi, lexeme, df: Number(df), neighbours: terms(neighbours), synonyms: terms(synonyms) })) };
}

export const wordMatches = (facts: FactRow[] | null): WordMatch[] => (facts ?? []).map(([qi, via, term, inHeading]) => ({ qi, via, term, inHeading }));

/** SQL quoting a lexeme as a tsquery operand, taken as-is (no second normalisation). */
export const quotedLexeme = (lexeme: string) => `('''' || replace(replace(${lexeme}, '\\', '\\\\'), '''', '''''') || '''')`;

/** A question as searched: stop words out, bounded. */
export function searchText(question: string): string {
  return withoutStopWords(question.slice(0, MAX_QUERY_CHARS));
}

/**
 * The statement's CTEs up to `ranked` (one row per candidate chunk and question: ord,
 * chunk_id, ft_rank, tg_rank, relevance), for the questions of `$1` (texts), `$2` (company
 * ids), `$3` (knowledge base ids); `$4` candidates per list; `$5`, `$6`, `$7` the synonym pairs
 * (question ord, word, synonym: lib/knowledge/expansion.ts).
 */
export const LEXICAL_CTES = `
  q as (
    -- A base in \`auto\` reads the question in the language it is written in ($8, lib/knowledge/language.ts), else in its main one.
    select x.ord::int as ord, x.company_id, x.kb_id,
           (case when kb.language = '${AUTO_LANGUAGE}' then coalesce(nullif(x.lang, ''), kb.main_language, 'english') else kb.language end)::regconfig as cfg,
           greatest(kb.chunk_count, 1)::float8 as n, x.text
    from unnest($1::text[], $2::int[], $3::int[], $8::text[]) with ordinality as x(text, company_id, kb_id, lang, ord)
    join knowledge_bases kb on kb.id = x.kb_id and kb.company_id = x.company_id
  ),
  qdf as (
    select q.ord, l.i::int as qi, l.lexeme, coalesce(t.chunks, 0)::float8 as df, q.n, q.kb_id, q.company_id
    from q cross join lateral unnest(tsvector_to_array(to_tsvector(q.cfg, q.text))) with ordinality as l(lexeme, i)
    left join knowledge_terms t on t.knowledge_base_id = q.kb_id and t.company_id = q.company_id and t.term = l.lexeme
    where l.i <= ${MAX_QUESTION_LEXEMES}
  ),
  question_lexemes as (
    select ord, array_agg(lexeme) as lexemes from qdf group by ord
  ),
  base_entries as (
    -- The entries of the base's own synonym groups that the question holds whole (every lexeme of a
    -- phrase), found by their first lexeme; the first ones in the company's order, bounded.
    select ord, kb_id, company_id, group_no, entry_no, lexemes from (
      select d.ord, d.kb_id, d.company_id, s.group_no, s.entry_no, s.lexemes, row_number() over (partition by d.ord order by s.group_no, s.entry_no) as r
      from qdf d
      join question_lexemes ql on ql.ord = d.ord
      cross join lateral (
        select s.group_no, s.entry_no, s.lexemes from knowledge_synonym_entries s
        where s.knowledge_base_id = d.kb_id and s.company_id = d.company_id and s.lexemes[1] = d.lexeme
        order by s.group_no, s.entry_no limit ${SYNONYM_ENTRIES_PER_LEXEME}
      ) s
      where s.lexemes <@ ql.lexemes
    ) x
    where r <= ${MAX_SYNONYM_ENTRIES}
  ),
  synonym_pairs as (
    select s.ord, w.lexeme as word_lexeme, a.lexeme as synonym_lexeme
    from unnest($5::int[], $6::text[], $7::text[]) as s(ord, word, synonym)
    join q on q.ord = s.ord
    cross join lateral unnest(tsvector_to_array(to_tsvector(q.cfg, s.word))) as w(lexeme)
    cross join lateral unnest(tsvector_to_array(to_tsvector(q.cfg, s.synonym))) as a(lexeme)
    where w.lexeme <> a.lexeme
    union
    -- Each lexeme of a matched entry gets the lexemes of the other entries of its group, at most
    -- MAX_BASE_SYNONYM_PAIRS per question (like the built-in pairs, MAX_EXPANSIONS).
    select ord, word_lexeme, synonym_lexeme from (
      select e.ord, w.lexeme as word_lexeme, o.lexeme as synonym_lexeme,
             row_number() over (partition by e.ord order by e.group_no, e.entry_no, o.entry_no, o.i, w.lexeme) as r
      from base_entries e
      cross join lateral (
        select oe.entry_no, l.lexeme, l.i
        from knowledge_synonym_entries oe cross join unnest(oe.lexemes) with ordinality as l(lexeme, i)
        where oe.knowledge_base_id = e.kb_id and oe.company_id = e.company_id and oe.group_no = e.group_no and oe.entry_no <> e.entry_no
        order by oe.entry_no, l.i limit ${MAX_BASE_SYNONYM_PAIRS}
      ) o
      cross join unnest(e.lexemes) as w(lexeme)
      where w.lexeme <> o.lexeme
    ) p
    where r <= ${MAX_BASE_SYNONYM_PAIRS}
  ),
  candidate_terms as (
    select ord, qi, lexeme as term, 1.0::float8 as sim, df, n, kb_id, company_id, true as exact, true as own from qdf where df > 0
    union all
    -- A synonym of the question's word covers it (a little less than the word itself).
    select d.ord, d.qi, t.term, ${SYNONYM_WEIGHT}::float8, t.chunks::float8, d.n, d.kb_id, d.company_id, true, false
    from qdf d
    join synonym_pairs p on p.ord = d.ord and p.word_lexeme = d.lexeme
    join knowledge_terms t on t.knowledge_base_id = d.kb_id and t.company_id = d.company_id and t.term = p.synonym_lexeme
    union all
    -- A misspelt word (the first MAX_MISSPELT_WORDS the base does not know): its most similar terms.
    select d.ord, d.qi, e.term, e.sim, e.chunks::float8, d.n, d.kb_id, d.company_id, false, false
    from (
      select d.*, row_number() over (partition by d.ord order by d.qi) as k
      from qdf d where d.df = 0 and length(d.lexeme) between 4 and ${MAX_MISSPELT_LENGTH}
    ) d
    cross join lateral (
      select t.term, similarity(t.term, d.lexeme)::float8 as sim, t.chunks
      from knowledge_terms t
      where t.knowledge_base_id = d.kb_id and t.company_id = d.company_id and lower(t.term) % d.lexeme
      order by 2 desc, 3 desc limit 2
    ) e
    where d.k <= ${MAX_MISSPELT_WORDS} and e.sim >= ${TRIGRAM_MIN}
  ),
  terms as (
    -- At most MAX_QUESTION_TERMS: the question's own lexemes, then trigram neighbours, then the rarest synonyms.
    select ord, qi, term, sim, df, n, kb_id, company_id, exact, own from (
      select t.*, row_number() over (partition by ord order by own desc, exact, df, term, qi) as r from candidate_terms t
    ) x
    where r <= ${MAX_QUESTION_TERMS}
  ),
  total as (
    -- Each lexeme the base knows (itself or, misspelt, through its trigram neighbour) weighs its IDF;
    -- words the base does not know at all cannot be covered by any chunk and are left out.
    select ord, sum(idf) as weight
    from (select ord, qi, coalesce(max(ln(1 + (n - df + 0.5) / (df + 0.5))) filter (where own), max(ln(1 + (n - df + 0.5) / (df + 0.5)))) as idf from terms group by ord, qi) x
    group by ord
  ),
  weighted as (
    -- Which terms find candidates: the selective ones, of the synonyms and trigram neighbours only
    -- the MAX_EXPANSION_FINDERS rarest; when none is selective, the rarest MAX_EXPANSION_FINDERS of
    -- the question's own and as many of the others.
    select s.*, (s.selective or not s.some_selective) and (s.own and s.selective or s.rarity <= ${MAX_EXPANSION_FINDERS}) as finds
    from (
      select s.*, bool_or(s.selective) over (partition by s.ord) as some_selective,
             row_number() over (partition by s.ord, s.own order by not s.selective, s.df, s.term, s.qi) as rarity
      from (
        select t.*, ln(1 + (t.n - t.df + 0.5) / (t.df + 0.5)) * t.sim as w, ln(1 + (t.n - t.df + 0.5) / (t.df + 0.5)) as cw, ${quotedLexeme('t.term')}::tsquery as tq,
               t.df <= greatest(50, t.n / case when t.own then ${OWN_SELECTIVITY} else ${EXPANSION_SELECTIVITY} end) as selective
        from terms t
      ) s
    ) s
  ),
  found as (
    -- Chunk ids only, from the index (the base is the company's: q); the rows of the shortlisted
    -- ones are read once, below.
    select s.ord, s.qi, s.exact, s.own, s.term, s.w, s.cw, s.tq, c.id as chunk_id
    from weighted s cross join lateral (
      select c.id from knowledge_chunks c where c.knowledge_base_id = s.kb_id and c.search_vector @@ s.tq
    ) c
    where s.finds
  ),
  pre as (
    select ord, chunk_id, sum(w) as score from found group by ord, chunk_id
  ),
  shortlist as (
    select * from (select p.*, row_number() over (partition by ord order by score desc, chunk_id) as r from pre p) x where r <= $4::int * 2
  ),
  listed as materialized (
    select s.ord, c.id as chunk_id, c.document_id, c.heading_vector
    from shortlist s
    join q on q.ord = s.ord
    join knowledge_chunks c on c.id = s.chunk_id and c.company_id = q.company_id
  ),
  unfound_terms as materialized (
    select ord, qi, exact, own, term, w, cw, tq, company_id, count(*) over (partition by ord) as n from weighted where not finds
  ),
  unfound as materialized (
    -- A question with few such terms: each shortlisted chunk with each of them (paired first: a chunk
    -- is checked against its own question's terms only), the chunk's vector read for each pair.
    select l.ord, l.chunk_id, l.document_id, l.heading_vector, w.qi, w.exact, w.own, w.term, w.w, w.cw, w.tq, w.company_id
    from listed l join unfound_terms w on w.ord = l.ord
    where w.n <= ${FEW_UNFOUND_TERMS}
  ),
  listed_lexemes as materialized (
    -- A question with more: each shortlisted chunk's lexemes read once, without positions (a chunk's
    -- vector is often stored out of line, fetched again for every term checked in it).
    select l.ord, l.chunk_id, l.document_id, l.heading_vector, strip(c.search_vector) as lexemes
    from listed l
    join q on q.ord = l.ord
    join knowledge_chunks c on c.id = l.chunk_id and c.company_id = q.company_id
    where exists (select 1 from unfound_terms w where w.ord = l.ord and w.n > ${FEW_UNFOUND_TERMS})
  ),
  matched as (
    -- Every term of the question in each shortlisted chunk, and whether in its title or headings:
    -- the terms that found it, and the others (checked in the chunk itself, at most
    -- MAX_QUESTION_TERMS per shortlisted chunk).
    select f.ord, f.qi, f.exact, f.own, f.term, f.w, f.cw, l.chunk_id, l.document_id, (l.heading_vector @@ f.tq) as in_heading
    from found f join listed l on l.ord = f.ord and l.chunk_id = f.chunk_id
    union all
    select p.ord, p.qi, p.exact, p.own, p.term, p.w, p.cw, p.chunk_id, p.document_id, (p.heading_vector @@ p.tq)
    from unfound p
    join knowledge_chunks c on c.id = p.chunk_id and c.company_id = p.company_id
    where c.search_vector @@ p.tq
    union all
    select x.ord, w.qi, w.exact, w.own, w.term, w.w, w.cw, x.chunk_id, x.document_id, (x.heading_vector @@ w.tq)
    from listed_lexemes x join unfound_terms w on w.ord = x.ord
    where x.lexemes @@ w.tq
  ),
  per_lexeme as (
    select ord, chunk_id, document_id, qi,
           max(w * case when in_heading then ${HEADING_WEIGHT} else 1 end) filter (where exact) as ft,
           max(w * case when in_heading then ${HEADING_WEIGHT} else 1 end) as tg,
           max(cw) as covered,
           bool_and(not exact) as fuzzy
    from matched
    group by ord, chunk_id, document_id, qi
  ),
  per_chunk as (
    select p.ord, p.chunk_id, p.document_id, sum(p.ft) as ft, sum(p.tg) as tg, bool_or(p.fuzzy) as fuzzy,
           least(1.0, sum(p.covered) / nullif(t.weight, 0)) as relevance
    from per_lexeme p join total t on t.ord = p.ord
    group by p.ord, p.chunk_id, p.document_id, t.weight
  ),
  first_ranks as (
    select c.*,
           row_number() over (partition by c.ord order by c.ft desc nulls last, c.chunk_id) as ft_first,
           row_number() over (partition by c.ord order by c.tg desc, c.chunk_id) as tg_first
    from per_chunk c
  ),
  question_query as (
    select w.ord, w.company_id, string_agg(${quotedLexeme('w.term')}, ' | ')::tsquery as tq
    from (select distinct ord, company_id, term from weighted) w group by w.ord, w.company_id
  ),
  term_frequency as (
    -- The first RERANK_DEPTH of each list: how often and where (title, headings) the chunk holds
    -- the question's words. The others keep their score (they stay below).
    select c.ord, c.chunk_id, ts_rank(k.search_vector, qq.tq) as rank
    from first_ranks c
    join question_query qq on qq.ord = c.ord
    join knowledge_chunks k on k.id = c.chunk_id and k.company_id = qq.company_id
    where c.ft_first <= ${RERANK_DEPTH} or c.tg_first <= ${RERANK_DEPTH}
  ),
  reranked as (
    select c.ord, c.chunk_id, c.document_id, c.fuzzy, c.relevance,
           c.ft * (1 + ${TERM_FREQUENCY_WEIGHT} * coalesce(t.rank, 0)) as ft, c.tg * (1 + ${TERM_FREQUENCY_WEIGHT} * coalesce(t.rank, 0)) as tg
    from first_ranks c left join term_frequency t on t.ord = c.ord and t.chunk_id = c.chunk_id
  ),
  ranked as (
    select c.*,
           case when c.ft > 0 then row_number() over (partition by c.ord order by c.ft desc nulls last, c.chunk_id) end as ft_rank,
           case when f.any_fuzzy then row_number() over (partition by c.ord order by c.tg desc, c.chunk_id) end as tg_rank, f.any_fuzzy
    from reranked c join (select ord, bool_or(fuzzy) as any_fuzzy from per_chunk group by ord) f on f.ord = c.ord
  )`;

/** The parameters of a statement over LEXICAL_CTES for questions as searched (`query`: as written, which tells its language). */
export function statementParams(asked: { text: string; query: string; companyId: number; knowledgeBaseId: number }[], depth: number): unknown[] {
  const ords: number[] = [];
  const words: string[] = [];
  const synonyms: string[] = [];
  asked.forEach((q, k) => {
    for (const e of expandQuestion(q.text)) {
      ords.push(k + 1);
      words.push(e.word);
      synonyms.push(e.synonym);
    }
  });
  return [asked.map((q) => q.text), asked.map((q) => q.companyId), asked.map((q) => q.knowledgeBaseId), depth, ords, words, synonyms, asked.map((q) => detectLanguage(q.query) ?? '')];
}

