import { headingPath, type Chunk } from './chunker.js';
import { AUTO_LANGUAGE } from './language.js';

/**
 * Writes of a knowledge base's index: a document's chunks (with their full-text vectors in
 * the base's language, and embeddings when the base has a model), the base's term table
 * (`knowledge_terms`: every lexeme of the base with the number of chunks holding it, used
 * for IDF weights and for trigram look-ups of misspelt words; lib/knowledge/search.ts), and
 * the counters (`chunk_count`, `content_version`, which vector caches compare against).
 *
 * Raw SQL: company_id is named explicitly in every statement (the tenant filter does not
 * see raw SQL). `exec` runs one statement with `?` placeholders inside the caller's
 * transaction (MikroORM's em.execute, or a migration's execute).
 */
export type Exec = (sql: string, params: unknown[]) => Promise<Record<string, unknown>[]>;

/** The first key of the advisory lock that serialises index writes of one knowledge base. */
const INDEX_LOCK = 19_001;

export interface DocumentRef {
  companyId: number;
  knowledgeBaseId: number;
  documentId: number;
}

/** Removes a document's chunks and their terms (the caller's transaction; the document row stays). */
export async function removeChunks(exec: Exec, ref: DocumentRef): Promise<number> {
  // One index writer per base at a time: term counts are updated in no particular order.
  await exec(`select pg_advisory_xact_lock(?, ?)`, [INDEX_LOCK, ref.knowledgeBaseId]);
  await exec(
    `update knowledge_terms t set chunks = t.chunks - o.n
     from (select l as term, count(*)::int as n
           from knowledge_chunks c cross join unnest(tsvector_to_array(c.search_vector)) as l
           where c.document_id = ? and c.knowledge_base_id = ? and c.company_id = ?
           group by l) o
     where t.knowledge_base_id = ? and t.company_id = ? and t.term = o.term`,
    [ref.documentId, ref.knowledgeBaseId, ref.companyId, ref.knowledgeBaseId, ref.companyId],
  );
  await exec(`delete from knowledge_terms where knowledge_base_id = ? and company_id = ? and chunks <= 0`, [ref.knowledgeBaseId, ref.companyId]);
  const removed = await exec(`delete from knowledge_chunks where document_id = ? and knowledge_base_id = ? and company_id = ? returning id`, [ref.documentId, ref.knowledgeBaseId, ref.companyId]);
  if (removed.length > 0) {
    await exec(`update knowledge_bases set chunk_count = greatest(0, chunk_count - ?), content_version = content_version + 1 where id = ? and company_id = ?`, [removed.length, ref.knowledgeBaseId, ref.companyId]);
  }
  return removed.length;
}

/** How a document's chunks are indexed besides their text. */
export interface ChunkIndexing {
  /** The text-search configuration of the document (its detected one in a base in `auto`); null: the base's. */
  language?: string | null;
  /** The embedding server's vectors, `embeddings[i]` of `chunks[i]`. */
  embeddings?: number[][] | null;
  /** The local sentence model's vectors (lib/knowledge/local-model.ts), null where a chunk has none. */
  localVectors?: (Float32Array | null)[] | null;
}

const bytesOf = (v: Float32Array | null | undefined) => (v ? Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64') : null);

/**
 * Replaces a document's chunks (the caller's transaction): the old ones and their terms go,
 * the new ones are indexed in the document's language (title and heading path weigh A, the
 * text B), their terms counted, the counters and the base's main language updated.
 */
export async function replaceChunks(exec: Exec, ref: DocumentRef, title: string, chunks: Chunk[], indexing: ChunkIndexing = {}): Promise<void> {
  const { embeddings = null, localVectors = null } = indexing;
  const language = indexing.language ?? null;
  await removeChunks(exec, ref);
  // Inserted in slices: one JSON parameter of a few MB at most.
  for (let from = 0; from < chunks.length; from += 500) {
    const slice = chunks.slice(from, from + 500).map((c, j) => ({
      position: c.position,
      heading: headingPath(c.headings),
      label: [title, ...c.headings].join(' \n '),
      content: c.text,
      words: c.words,
      embedding: embeddings ? `{${embeddings[from + j]!.join(',')}}` : null,
      local: bytesOf(localVectors?.[from + j]),
    }));
    await exec(
      `insert into knowledge_chunks (company_id, knowledge_base_id, document_id, position, heading, content, words, search_vector, heading_vector, embedding, language, local_vector)
       select kb.company_id, kb.id, ?, v.position, v.heading, v.content, v.words,
              setweight(to_tsvector(l.cfg, v.label), 'A') || setweight(to_tsvector(l.cfg, v.content), 'B'),
              to_tsvector(l.cfg, v.label), v.embedding, l.cfg::text, decode(v.local, 'base64')
       from knowledge_bases kb
       cross join lateral (select coalesce(?::text, case when kb.language = '${AUTO_LANGUAGE}' then 'simple' else kb.language end)::regconfig as cfg) l
       cross join json_to_recordset(?::json) as v(position int, heading text, label text, content text, words int, embedding real[], local text)
       where kb.id = ? and kb.company_id = ?`,
      [ref.documentId, language, JSON.stringify(slice), ref.knowledgeBaseId, ref.companyId],
    );
  }
  await exec(
    `insert into knowledge_terms (knowledge_base_id, term, company_id, chunks)
     select ?, l, ?, count(*)::int
     from knowledge_chunks c cross join unnest(tsvector_to_array(c.search_vector)) as l
     where c.document_id = ? and c.knowledge_base_id = ? and c.company_id = ?
     group by l order by l
     on conflict (knowledge_base_id, term) do update set chunks = knowledge_terms.chunks + excluded.chunks`,
    [ref.knowledgeBaseId, ref.companyId, ref.documentId, ref.knowledgeBaseId, ref.companyId],
  );
  await exec(`update knowledge_bases set chunk_count = chunk_count + ?, content_version = content_version + 1 where id = ? and company_id = ?`, [chunks.length, ref.knowledgeBaseId, ref.companyId]);
  await exec(`update knowledge_documents set language = ? where id = ? and company_id = ?`, [language, ref.documentId, ref.companyId]);
  await updateMainLanguage(exec, ref);
}

/** The base's main language: the one most of its chunks are in (a question too short to tell is read in it). */
async function updateMainLanguage(exec: Exec, ref: Omit<DocumentRef, 'documentId'>): Promise<void> {
  await exec(
    `update knowledge_bases kb set main_language = (
       select c.language from knowledge_chunks c where c.knowledge_base_id = kb.id and c.company_id = kb.company_id and c.language is not null
       group by c.language order by count(*) desc, c.language limit 1)
     where kb.id = ? and kb.company_id = ?`,
    [ref.knowledgeBaseId, ref.companyId],
  );
}

/**
 * Indexes a base's own synonym groups (`knowledge_bases.synonyms`, as stored) in its language,
 * from scratch: one row per entry with its lexemes (a phrase matches a question holding them
 * all; lib/knowledge/search.ts). An entry of stop words only has no lexeme and is left out.
 * Bumps `content_version` (answer caches compare it). The caller's transaction, after the
 * base's row is written: on a change of the groups or of the language.
 */
export async function indexSynonyms(exec: Exec, base: { companyId: number; knowledgeBaseId: number }): Promise<void> {
  await exec(`delete from knowledge_synonym_entries where knowledge_base_id = ? and company_id = ?`, [base.knowledgeBaseId, base.companyId]);
  await exec(
    `insert into knowledge_synonym_entries (knowledge_base_id, group_no, entry_no, company_id, lexemes)
     select kb.id, g.group_no, e.entry_no, kb.company_id, x.lexemes
     from knowledge_bases kb
     cross join lateral jsonb_array_elements(kb.synonyms) with ordinality as g(entries, group_no)
     cross join lateral jsonb_array_elements_text(g.entries) with ordinality as e(entry, entry_no)
     cross join lateral (select tsvector_to_array(to_tsvector((case when kb.language <> '${AUTO_LANGUAGE}' then kb.language
       when e.entry ~* '[а-яё]' then 'russian' else coalesce(kb.main_language, 'english') end)::regconfig, e.entry)) as lexemes) x
     where kb.id = ? and kb.company_id = ? and cardinality(x.lexemes) > 0`,
    [base.knowledgeBaseId, base.companyId],
  );
  await exec(`update knowledge_bases set content_version = content_version + 1 where id = ? and company_id = ?`, [base.knowledgeBaseId, base.companyId]);
}
