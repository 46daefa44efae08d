import { Migration } from '@mikro-orm/migrations';

/**
 * Knowledge that finds what the help centre says (contract.md § Answers that find what the
 * help centre says): `auto` is a base's default language, each document stemmed in the one it
 * is detected in (`language` of the document and of its chunks; `main_language`, the base's
 * most used, reads a question too short to tell), and each chunk's vector from the local
 * sentence model (`local_vector`, float32 little-endian; lib/knowledge/local-model.ts) for bases
 * without an embedding server. Bases left at the old default `simple` (no stemming) move to
 * `auto`; the documents of every base without an embedding server are indexed again in the
 * background (languages detected, local vectors made).
 */
export class Migration0027KnowledgeLanguagesAndMeaning extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table knowledge_bases alter column language set default 'auto', add column main_language text;`);
    this.addSql(`alter table knowledge_documents add column language text;`);
    this.addSql(`alter table knowledge_chunks add column language text, add column local_vector bytea;`);
    this.addSql(`update knowledge_bases set language = 'auto' where language = 'simple';`);
    this.addSql(
      `update knowledge_documents d set status = 'processing', progress = 0, error = null, attempts = 0, lease_until = null, updated_at = now()
       from knowledge_bases kb where kb.id = d.knowledge_base_id and kb.company_id = d.company_id and kb.embedding_base_url is null and d.content is not null;`,
    );
  }
}
