import { Migration } from '@mikro-orm/migrations';

/**
 * Knowledge search in bounded time whatever a company stores (issue #26, contract.md § No
 * tenant slows another down):
 * - `knowledge_synonym_entries` replaces `knowledge_synonyms`: one row per entry of a base's
 *   own synonym groups (its lexemes in the base's language, as `tsvector_to_array` orders
 *   them) instead of one per lexeme. The most a base may hold (2000 groups of 20 entries of
 *   60 characters, up to 30 one-letter words each) was a million rows, written in seconds
 *   by every change of the groups; now 40,000. A question finds the entries it holds whole
 *   by their first lexeme (`lexemes[1]`, indexed) and `lexemes <@ <its lexemes>`.
 * - The trigram index of `knowledge_terms` is on `lower(term)` (pg_trgm compares without
 *   case anyway): on `term` itself the planner took it for the equality look-ups of a
 *   question's lexemes, a scan of every term sharing a trigram (2.7 ms each where the
 *   primary key takes 0.01 ms; 28 s for a question whose word had 3,000 synonyms).
 */
export class Migration0017SynonymEntries extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table knowledge_synonym_entries (
        knowledge_base_id int not null,
        group_no int not null,
        entry_no int not null,
        company_id int not null,
        lexemes text[] not null check (cardinality(lexemes) > 0),
        primary key (knowledge_base_id, group_no, entry_no),
        foreign key (knowledge_base_id, company_id) references knowledge_bases(id, company_id) on delete cascade
      );
      create index knowledge_synonym_entries_first_idx on knowledge_synonym_entries (knowledge_base_id, (lexemes[1]), group_no, entry_no);
      insert into knowledge_synonym_entries (knowledge_base_id, group_no, entry_no, company_id, lexemes)
      select kb.id, g.group_no, e.entry_no, kb.company_id, x.lexemes
      from knowledge_bases kb
      cross join lateral jsonb_array_elements(kb.synonyms) with ordinality as g(entries, group_no)
      cross join lateral jsonb_array_elements_text(g.entries) with ordinality as e(entry, entry_no)
      cross join lateral (select tsvector_to_array(to_tsvector(kb.language::regconfig, e.entry)) as lexemes) x
      where cardinality(x.lexemes) > 0;
      drop table knowledge_synonyms;

      drop index knowledge_terms_trgm_idx;
      create index knowledge_terms_similar_idx on knowledge_terms using gin (knowledge_base_id, lower(term) gin_trgm_ops);
    `);
  }
}
