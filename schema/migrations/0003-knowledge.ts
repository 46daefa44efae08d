import { Migration } from '@mikro-orm/migrations';

/**
 * Knowledge documents with a stored, generated full-text vector (title weight A, content
 * weight B) and a GIN index on it.
 *
 * Text search configuration: PostgreSQL's built-in `russian`. Despite the name it is the
 * `english` configuration for ASCII words (english_stem + English stop words) plus the
 * Russian Snowball stemmer and stop words for Cyrillic words. Chat2Desk is popular in
 * Russian-speaking markets, so knowledge bases come in both languages; `english` would leave
 * Cyrillic words unstemmed and keep their stop words, and `simple` stems nothing and drops no
 * stop words, which makes an OR-of-words query ("what are your ...") match nearly every
 * document. lib/knowledge.ts must use the same configuration (TEXT_SEARCH_CONFIG).
 *
 * A document's company is the company of its knowledge base: the composite foreign key makes
 * the database refuse anything else.
 */
export class Migration0003Knowledge extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table knowledge_bases add constraint knowledge_bases_id_company_key unique (id, company_id);
      create table knowledge_documents (
        id serial primary key,
        company_id int not null references companies(id) on delete cascade,
        knowledge_base_id int not null,
        title text not null,
        content text not null,
        created_at timestamptz not null default now(),
        search_vector tsvector not null generated always as (
          setweight(to_tsvector('russian'::regconfig, title), 'A') ||
          setweight(to_tsvector('russian'::regconfig, content), 'B')
        ) stored,
        foreign key (knowledge_base_id, company_id) references knowledge_bases(id, company_id) on delete cascade
      );
      create index knowledge_documents_kb_idx on knowledge_documents(knowledge_base_id, company_id, id);
      create index knowledge_documents_company_idx on knowledge_documents(company_id);
      create index knowledge_documents_search_idx on knowledge_documents using gin(search_vector);
    `);
  }
}
