import type { EntityManager, SqlClient } from './db.js';

/**
 * Full-text search over a knowledge base, shared by the gateway's search route and the
 * workers' built-in agent.
 *
 * Matching: the question's lexemes (after stemming and stop-word removal) are OR-ed, so a
 * natural question ("what are your opening hours?") finds a document about opening hours
 * even though it does not contain "what" or "your". Documents that also satisfy the strict
 * `websearch_to_tsquery` (all words, quoted phrases, `-excluded` words) rank first.
 *
 * Score: `ts_rank_cd` (cover density; title weighs 1.0, content 0.4) normalised by document
 * length and mapped into [0, 1), plus 1 for a strict match. So a score in [1, 2) means every
 * word matched, [0, 1) some word did; results are sorted by score, highest first.
 *
 * This module runs raw SQL, which the tenant filter (schema/entities.ts) does not see: the
 * `company_id` condition is written explicitly in every query here. This is the one place
 * outside lib/tenancy.ts that writes a tenant condition; callers pass the tenant's id.
 */

/** Must match the configuration of the generated column (schema/migrations/0003-knowledge.ts). */
export const TEXT_SEARCH_CONFIG = 'russian';
/** Longer queries are cut: a chat message of several KB adds nothing but work to an OR query. */
export const MAX_QUERY_CHARS = 2000;
export const DEFAULT_SEARCH_LIMIT = 10;
export const MAX_SEARCH_LIMIT = 50;
/** Above this size the built-in agent gets matching excerpts of the document, not all of it. */
export const MAX_ANSWER_SOURCE_CHARS = 20_000;

export interface SearchKnowledgeOptions {
  companyId: number;
  knowledgeBaseId: number;
  query: string;
  limit?: number;
}

export interface KnowledgeHit {
  documentId: number;
  title: string;
  /** Plain text around the matches (no highlight markers). */
  snippet: string;
  score: number;
}

export interface BestKnowledgeMatch {
  documentId: number;
  title: string;
  /** The whole content, or for a large document excerpts around the matches separated by blank lines. */
  content: string;
  score: number;
}

const HEADLINE_OPTIONS = 'StartSel="", StopSel="", MaxWords=35, MinWords=15, ShortWord=3, MaxFragments=2, FragmentDelimiter=" … "';
const EXCERPT_OPTIONS = 'StartSel="", StopSel="", MaxWords=80, MinWords=40, ShortWord=3, MaxFragments=4, FragmentDelimiter="\n\n"';

/** SQL quoting a lexeme for tsquery input: taken as-is, no second normalisation. */
const quotedLexeme = (lexeme: string) => `('''' || replace(replace(${lexeme}, '\\', '\\\\'), '''', '''''') || '''')`;

/**
 * The two queries of a question (the SQL text expression `text`): `strict` (websearch
 * syntax, AND) and `loose` (the question's lexemes OR-ed; NULL when it has none, which
 * matches nothing).
 */
const queriesOf = (text: string) => `
  websearch_to_tsquery('${TEXT_SEARCH_CONFIG}', ${text}) as strict,
  (select string_agg(${quotedLexeme('l')}, ' | ') from unnest(tsvector_to_array(to_tsvector('${TEXT_SEARCH_CONFIG}', ${text}))) as l)::tsquery as loose`;

/** The query CTE of one question: one bound parameter. */
const QUERY_CTE = `q as (select ${queriesOf('p.text')} from (select ?::text as text) as p)`;

/**
 * A knowledge base's documents matching `q`, best first; `companyId` is the tenant
 * condition (see the module comment). The arguments are SQL expressions.
 */
const rankedDocuments = (companyId: string, knowledgeBaseId: string, limit: string) => `
  select d.id, d.title, d.content,
         (d.search_vector @@ q.strict) as exact,
         ts_rank_cd(d.search_vector, q.loose, 1 | 32) as rank
  from knowledge_documents d
  where d.company_id = ${companyId} and d.knowledge_base_id = ${knowledgeBaseId} and d.search_vector @@ q.loose
  order by exact desc, rank desc, d.id asc
  limit ${limit}`;

/** Ranked candidates of the one question of QUERY_CTE. */
const RANKED = `ranked as (select r.* from q cross join lateral (${rankedDocuments('?::int', '?::int', '?::int')}) r)`;

function normaliseQuery(query: string): string {
  return query.slice(0, MAX_QUERY_CHARS).trim();
}

function clampLimit(limit: number | undefined): number {
  if (limit === undefined || !Number.isFinite(limit)) return DEFAULT_SEARCH_LIMIT;
  return Math.min(MAX_SEARCH_LIMIT, Math.max(1, Math.floor(limit)));
}

const score = (exact: boolean, rank: number) => Math.round(((exact ? 1 : 0) + Number(rank)) * 1e6) / 1e6;

async function rows<T>(em: EntityManager, sql: string, bindings: unknown[]): Promise<T[]> {
  const res = (await em.getKnex().raw(sql, bindings as never)) as { rows: T[] };
  return res.rows;
}

/** Ranked documents of one knowledge base of one company; [] for an empty or stop-word-only query. */
export async function searchKnowledge(em: EntityManager, options: SearchKnowledgeOptions): Promise<KnowledgeHit[]> {
  const query = normaliseQuery(options.query);
  if (!query) return [];
  const found = await rows<{ id: number; title: string; snippet: string; exact: boolean; rank: number }>(
    em,
    `with ${QUERY_CTE}, ${RANKED}
     select r.id, r.title, r.exact, r.rank,
            ts_headline('${TEXT_SEARCH_CONFIG}', r.content, q.loose, '${HEADLINE_OPTIONS}') as snippet
     from ranked r, q
     order by r.exact desc, r.rank desc, r.id asc`,
    [query, options.companyId, options.knowledgeBaseId, clampLimit(options.limit)],
  );
  return found.map((r) => ({ documentId: r.id, title: r.title, snippet: cleanSnippet(r.snippet), score: score(r.exact, r.rank) }));
}

/**
 * The best document for each of many questions, in ONE statement (the built-in agent asks
 * for a whole batch of customer messages at once), with what it needs to compose an answer:
 * the content (or, for a large document, excerpts around the matches). null where nothing
 * matches. Same matching and ranking as `searchKnowledge`.
 */
export async function bestKnowledgeMatches(client: SqlClient, questions: Omit<SearchKnowledgeOptions, 'limit'>[]): Promise<(BestKnowledgeMatch | null)[]> {
  const asked = questions.map((q) => ({ ...q, query: normaliseQuery(q.query) }));
  const live = asked.map((q, i) => ({ ...q, i })).filter((q) => q.query !== '');
  const out: (BestKnowledgeMatch | null)[] = asked.map(() => null);
  if (live.length === 0) return out;
  const { rows: found } = await client.query<{ ord: string; id: number; title: string; content: string; exact: boolean; rank: number }>({
    name: 'kb_best_many',
    text: `with q as (
             select x.ord, x.company_id, x.knowledge_base_id, ${queriesOf('x.text')}
             from unnest($1::text[], $2::int[], $3::int[]) with ordinality as x(text, company_id, knowledge_base_id, ord)
           )
           select q.ord, r.id, r.title, r.exact, r.rank,
                  case when length(r.content) <= ${MAX_ANSWER_SOURCE_CHARS} then r.content
                       else ts_headline('${TEXT_SEARCH_CONFIG}', r.content, q.loose, '${EXCERPT_OPTIONS}') end as content
           from q cross join lateral (${rankedDocuments('q.company_id', 'q.knowledge_base_id', '1')}) r`,
    values: [live.map((q) => q.query), live.map((q) => q.companyId), live.map((q) => q.knowledgeBaseId)],
  });
  for (const r of found) {
    const q = live[Number(r.ord) - 1]!;
    out[q.i] = { documentId: r.id, title: r.title, content: r.content, score: score(r.exact, r.rank) };
  }
  return out;
}

/** ts_headline keeps the document's whitespace; a snippet reads better on one line. */
export function cleanSnippet(snippet: string): string {
  return snippet.replace(/\s+/g, ' ').trim();
}
