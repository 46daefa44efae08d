import { headingPath, type Chunk } from './chunker-0010.js';

/**
 * How migration 0010 writes a document's chunks into the knowledge index: the writes of
 * lib/knowledge/store.ts as they were when the migration was written (the tables as 0010
 * leaves them). Frozen here so the migration never follows later changes of the live store.
 * Never edit: a migration that has shipped must give the same result on every database.
 *
 * Raw SQL: company_id is named explicitly in every statement. `exec` runs one statement with
 * `?` placeholders inside the migration's transaction.
 */
export type Exec = (sql: string, params: unknown[]) => Promise<Record<string, unknown>[]>;

/** The first key of the advisory lock that serialises index writes of one knowledge base. */
const INDEX_LOCK = 19_001;

interface DocumentRef {
  companyId: number;
  knowledgeBaseId: number;
  documentId: number;
}

/** Removes a document's chunks and their terms (the document row stays). */
async function removeChunks(exec: Exec, ref: DocumentRef): Promise<number> {
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

/**
 * Replaces a document's chunks: the old ones and their terms go, the new ones are indexed in
 * the base's language (title and heading path weigh A, the text B), their terms counted, the
 * counters updated. `embeddings[i]` belongs to `chunks[i]`.
 */
export async function replaceChunks(exec: Exec, ref: DocumentRef, title: string, chunks: Chunk[], embeddings: number[][] | null): Promise<void> {
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
    }));
    await exec(
      `insert into knowledge_chunks (company_id, knowledge_base_id, document_id, position, heading, content, words, search_vector, heading_vector, embedding)
       select kb.company_id, kb.id, ?, v.position, v.heading, v.content, v.words,
              setweight(to_tsvector(kb.language::regconfig, v.label), 'A') || setweight(to_tsvector(kb.language::regconfig, v.content), 'B'),
              to_tsvector(kb.language::regconfig, v.label), v.embedding
       from knowledge_bases kb cross join json_to_recordset(?::json) as v(position int, heading text, label text, content text, words int, embedding real[])
       where kb.id = ? and kb.company_id = ?`,
      [ref.documentId, JSON.stringify(slice), ref.knowledgeBaseId, ref.companyId],
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
}
