import { Migration } from '@mikro-orm/migrations';
import { chunkContent } from './frozen/chunker-0010.js';
import { replaceChunks, type Exec } from './frozen/chunk-store-0010.js';

/**
 * Knowledge that answers well (issue #19):
 * - knowledge bases get a `language` (a text-search configuration; new bases default to
 *   `simple`, existing ones keep `russian`, what they were indexed with), an optional
 *   embedding model (base URL, model, sealed key, dimensions), a chunk count and a
 *   `content_version` that vector caches compare against;
 * - documents get a format, a source (`{type, filename?, url?, bytes?}`), a processing
 *   status (`processing` | `ready` | `failed`) with progress and error, the uploaded bytes
 *   while they wait to be read (`raw`), and a lease for the process working on them
 *   (`lease_until`, `attempts`: a process that dies mid-way leaves an expired lease that
 *   another one takes over; gateway/knowledge/ingestor.ts). Their generated `search_vector`
 *   goes: chunks are searched instead (and a 1 MB document no longer has to fit one tsvector);
 * - `knowledge_chunks`: a document split by headings and paragraphs, each chunk with its
 *   heading path, full-text vectors (title + headings weight A, text B), an embedding
 *   (`real[]`: pgvector is not packaged for this PostgreSQL);
 * - `knowledge_terms`: every lexeme of a base with its chunk count (IDF weights; trigram
 *   look-ups of misspelt words through a pg_trgm GIN index);
 * - conversation messages get `sources` (the chunks an agent's reply came from).
 *
 * Existing documents are chunked here (as markdown, their headings kept), so they answer
 * from the first start after the upgrade: with the chunker and index writes of the time,
 * frozen in ./frozen/.
 */
export class Migration0010KnowledgeChunks extends Migration {
  override async up(): Promise<void> {
    const exec: Exec = (sql, params) => this.execute(sql, params) as Promise<Record<string, unknown>[]>;
    await exec(
      `create extension if not exists pg_trgm;
       create extension if not exists btree_gin;

       alter table knowledge_bases
         add column language text not null default 'russian',
         add column embedding_base_url text,
         add column embedding_model text,
         add column embedding_api_key_sealed text,
         add column embedding_dimensions int,
         add column chunk_count int not null default 0,
         add column content_version bigint not null default 0,
         add column updated_at timestamptz not null default now();
       alter table knowledge_bases alter column language set default 'simple';

       alter table knowledge_documents
         drop column search_vector,
         alter column content drop not null,
         add column format text not null default 'markdown',
         add column source jsonb not null default '{"type":"text"}',
         add column status text not null default 'ready' check (status in ('processing', 'ready', 'failed')),
         add column progress int not null default 100 check (progress between 0 and 100),
         add column error text,
         add column chunk_count int not null default 0,
         add column raw bytea,
         add column attempts int not null default 0,
         add column lease_until timestamptz,
         add column updated_at timestamptz not null default now();
       alter table knowledge_documents add constraint knowledge_documents_id_kb_company_key unique (id, knowledge_base_id, company_id);
       create index knowledge_documents_processing_idx on knowledge_documents (lease_until) where status = 'processing';

       create table knowledge_chunks (
         id bigserial primary key,
         company_id int not null,
         knowledge_base_id int not null,
         document_id int not null,
         position int not null,
         heading text not null default '',
         content text not null,
         words int not null,
         search_vector tsvector not null,
         heading_vector tsvector not null,
         embedding real[],
         foreign key (document_id, knowledge_base_id, company_id) references knowledge_documents(id, knowledge_base_id, company_id) on delete cascade
       );
       create index knowledge_chunks_search_idx on knowledge_chunks using gin (knowledge_base_id, search_vector);
       create index knowledge_chunks_document_idx on knowledge_chunks (document_id, position);
       create index knowledge_chunks_kb_idx on knowledge_chunks (knowledge_base_id, id);

       create table knowledge_terms (
         knowledge_base_id int not null,
         term text not null,
         company_id int not null,
         chunks int not null,
         primary key (knowledge_base_id, term),
         foreign key (knowledge_base_id, company_id) references knowledge_bases(id, company_id) on delete cascade
       );
       create index knowledge_terms_trgm_idx on knowledge_terms using gin (knowledge_base_id, term gin_trgm_ops);

       alter table agents
         add column on_no_answer text not null default 'handoff' check (on_no_answer in ('handoff', 'fallback')),
         add column fallback_message text,
         add column relevance_threshold real not null default 0.5 check (relevance_threshold between 0 and 1);

       alter table conversation_messages add column sources jsonb;

       create table agent_evaluations (
         id serial primary key,
         company_id int not null references companies(id) on delete cascade,
         agent_id int,
         passed int not null,
         failed int not null,
         cases jsonb not null,
         created_at timestamptz not null default now()
       );
       create index agent_evaluations_agent_idx on agent_evaluations (company_id, agent_id, id);`,
      [],
    );

    const docs = (await exec(`select id, company_id, knowledge_base_id, title, content from knowledge_documents order by id`, [])) as {
      id: number; company_id: number; knowledge_base_id: number; title: string; content: string;
    }[];
    for (const d of docs) {
      const chunks = chunkContent(d.content, 'markdown');
      await replaceChunks(exec, { companyId: d.company_id, knowledgeBaseId: d.knowledge_base_id, documentId: d.id }, d.title, chunks, null);
      await exec(`update knowledge_documents set chunk_count = ? where id = ?`, [chunks.length, d.id]);
    }
  }
}
