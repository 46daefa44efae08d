import { Migration } from '@mikro-orm/migrations';

/**
 * A knowledge base's own synonyms (issue #19: the words of a company's customers for its help
 * centre's, beside the built-in groups of lib/knowledge/synonyms.ts):
 * - `knowledge_bases.synonyms`: the groups as the company wrote them (a JSON array of arrays of
 *   words or phrases);
 * - `knowledge_synonyms`: their lexemes in the base's language, one row per lexeme of an entry
 *   (`entry_size`: how many lexemes the entry has; a phrase matches a question holding them
 *   all), written with the groups and again when the language changes (lib/knowledge/store.ts).
 */
export class Migration0016KnowledgeSynonyms extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table knowledge_bases add column synonyms jsonb not null default '[]';
      create table knowledge_synonyms (
        knowledge_base_id int not null,
        group_no int not null,
        entry_no int not null,
        lexeme text not null,
        company_id int not null,
        entry_size int not null,
        primary key (knowledge_base_id, group_no, entry_no, lexeme),
        foreign key (knowledge_base_id, company_id) references knowledge_bases(id, company_id) on delete cascade
      );
      create index knowledge_synonyms_lexeme_idx on knowledge_synonyms (knowledge_base_id, lexeme);
    `);
  }
}
