import type { Orm, SqlPool } from '../../lib/db.js';
import { chunkContent } from '../../lib/knowledge/chunker.js';
import { embedTexts, type EmbeddingModel } from '../../lib/knowledge/embeddings.js';
import type { KnowledgeBaseInfo } from '../../lib/knowledge/retrieve.js';
import { localIndexing } from '../../lib/knowledge/indexing.js';
import { replaceChunks, type Exec } from '../../lib/knowledge/store.js';
import { DOCUMENTS, type HelpDocument } from '../knowledge/help-centre.js';

/**
 * The bench's help centres loaded into knowledge bases the way the service stores them (chunks,
 * terms, vectors), straight through lib/knowledge: companies, bases, labelled sections.
 */
export async function createCompany(sql: SqlPool, name: string): Promise<number> {
  const { rows } = await sql.query<{ id: number }>(`insert into companies (public_id, name, balance_usd) values (gen_random_uuid(), $1, 5) returning id`, [name]);
  return rows[0]!.id;
}

export async function createBase(sql: SqlPool, companyId: number, name: string, language: string, embedding: EmbeddingModel | null): Promise<KnowledgeBaseInfo> {
  const { rows } = await sql.query<{ id: number }>(
    `insert into knowledge_bases (company_id, name, language, embedding_base_url, embedding_model) values ($1, $2, $3, $4, $5) returning id`,
    [companyId, name, language, embedding?.baseUrl ?? null, embedding?.model ?? null],
  );
  return { id: rows[0]!.id, companyId, language, contentVersion: '0', embedding };
}

/** Adds a document (markdown) to a base: chunks, vectors, terms; returns the chunk ids by heading. */
export async function addDocument(orm: Orm, sql: SqlPool, base: KnowledgeBaseInfo, title: string, markdown: string): Promise<Map<string, number>> {
  const { rows } = await sql.query<{ id: number }>(
    `insert into knowledge_documents (company_id, knowledge_base_id, title, content, format, source, status) values ($1, $2, $3, $4, 'markdown', '{"type":"markdown"}', 'ready') returning id`,
    [base.companyId, base.id, title, markdown],
  );
  const documentId = rows[0]!.id;
  const chunks = chunkContent(markdown, 'markdown');
  const local = await localIndexing({ language: base.language, hasEmbeddingServer: base.embedding !== null }, title, markdown, chunks);
  const embeddings = base.embedding ? await embedTexts(base.embedding, chunks.map((c) => [title, ...c.headings, c.text].join('\n'))) : null;
  await orm.em.fork().transactional(async (em) => {
    const exec: Exec = (s, p) => em.execute(s, p as unknown[]);
    await replaceChunks(exec, { companyId: base.companyId, knowledgeBaseId: base.id, documentId }, title, chunks, { ...local, embeddings });
  });
  const { rows: ids } = await sql.query<{ id: string; heading: string }>(`select id, heading from knowledge_chunks where document_id = $1 and company_id = $2`, [documentId, base.companyId]);
  return new Map(ids.map((r) => [r.heading, Number(r.id)]));
}

export const markdownOf = (d: HelpDocument) => Object.values(d.sections).map((s) => `## ${s.heading}\n\n${s.text}`).join('\n\n');

/** The labelled sections in a base: `doc/section` → chunk id. */
export async function loadLabelled(orm: Orm, sql: SqlPool, base: KnowledgeBaseInfo, documents: HelpDocument[] = DOCUMENTS): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const d of documents) {
    const byHeading = await addDocument(orm, sql, base, d.title, markdownOf(d));
    for (const [key, s] of Object.entries(d.sections)) {
      const id = byHeading.get(s.heading);
      if (id === undefined) throw new Error(`section ${d.key}/${key} is not one chunk`);
      out.set(`${d.key}/${key}`, id);
    }
  }
  return out;
}

export async function baseInfo(sql: SqlPool, base: KnowledgeBaseInfo): Promise<KnowledgeBaseInfo> {
  const { rows } = await sql.query<{ v: string }>(`select content_version::text as v from knowledge_bases where id = $1`, [base.id]);
  return { ...base, contentVersion: rows[0]!.v };
}

