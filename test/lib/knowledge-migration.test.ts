import t from 'tap';
import { migrate, openSqlPool } from '../../lib/db.js';
import { chunkContent } from '../../lib/knowledge/chunker.js';
import { bestKnowledgeMatches } from '../../lib/knowledge/search.js';
// Chunks as the store wrote them before migration 0017 (the current store writes columns added later).
import { replaceChunks } from '../../schema/migrations/frozen/chunk-store-0010.js';
import { databaseUpTo } from '../support/database.js';

// Documents stored before migration 0010 (one text, searched whole) are chunked by it: they
// answer from the first start after the upgrade, with the language they were indexed in.
t.test('migration 0010 chunks the documents that exist', async (t) => {
  const { fresh, old } = await databaseUpTo(t, 'kb_migration', '0008-hardening');
  const em = old.em.fork();
  await em.execute(`insert into companies (public_id, name, balance_usd) values (gen_random_uuid(), 'Legacy', 5)`);
  await em.execute(`insert into knowledge_bases (company_id, name) values (1, 'FAQ')`);
  await em.execute(`insert into knowledge_documents (company_id, knowledge_base_id, title, content) values (1, 1, 'Shop', ?)`, [
    '## Opening hours\n\nWe open at nine and close at six.\n\n## Parking\n\nParking is free behind the shop.',
  ]);

  t.ok((await migrate(old)).includes('0010-knowledge-chunks'), 'migration 0010 ran (with the ones after 0008)');
  const chunks = await em.execute<{ heading: string; content: string }[]>(`select heading, content from knowledge_chunks order by position`);
  t.same(chunks.map((c) => [c.heading, c.content]), [['Opening hours', 'We open at nine and close at six.'], ['Parking', 'Parking is free behind the shop.']]);
  const [doc] = await em.execute<{ status: string; chunk_count: number; format: string }[]>(`select status, chunk_count, format from knowledge_documents`);
  // Migration 0027 queues the documents of bases without an embedding server to be indexed again (languages, local vectors).
  t.match(doc, { status: 'processing', chunk_count: 2, format: 'markdown' });
  const [kb] = await em.execute<{ language: string; chunk_count: number }[]>(`select language, chunk_count from knowledge_bases`);
  t.match(kb, { language: 'russian', chunk_count: 2 }, 'an existing base keeps the configuration it was searched with');
  const sql = openSqlPool({ url: fresh, poolMax: 1 });
  t.teardown(() => sql.end());
  const [best] = await bestKnowledgeMatches(sql, [{ companyId: 1, knowledgeBaseId: 1, query: 'where can I park?' }]);
  t.match(best?.passages[0], { heading: 'Parking', content: /free behind the shop/ });
  await em.execute(`insert into knowledge_bases (company_id, name) values (1, 'New')`);
  const [created] = await em.execute<{ language: string }[]>(`select language from knowledge_bases where name = 'New'`);
  t.equal(created.language, 'auto', 'new bases default to auto (migration 0027)');
});

// A base's own synonym groups written before migration 0017 (one row per lexeme) are indexed
// again by it, one row per entry, and keep working.
t.test('migration 0017 keeps the synonym groups that exist', async (t) => {
  const { fresh, old } = await databaseUpTo(t, 'kb_migration17', '0016-knowledge-synonyms');
  const em = old.em.fork();
  await em.execute(`insert into companies (public_id, name, balance_usd) values (gen_random_uuid(), 'Legacy', 5)`);
  await em.execute(`insert into knowledge_bases (company_id, name, language, synonyms) values (1, 'FAQ', 'english', ?)`, [JSON.stringify([['gizmo', 'widgets'], ['bank wire', 'invoice', 'the']])]);
  await em.execute(`insert into knowledge_documents (company_id, knowledge_base_id, title, content, status) values (1, 1, 'Shop', 'x', 'ready')`);
  await em.transactional((tx) =>
    replaceChunks((s, p) => tx.execute(s, p as unknown[]), { companyId: 1, knowledgeBaseId: 1, documentId: 1 }, 'Workshop', chunkContent('Widgets are assembled daily.\n\nBusiness customers can pay by invoice within 14 days.', 'text'), null),
  );

  t.ok((await migrate(old)).includes('0017-synonym-entries'), 'migration 0017 ran');
  const entries = await em.execute<{ group_no: number; entry_no: number; lexemes: string[] }[]>(`select group_no, entry_no, lexemes from knowledge_synonym_entries order by group_no, entry_no`);
  t.same(entries, [
    { group_no: 1, entry_no: 1, lexemes: ['gizmo'] },
    { group_no: 1, entry_no: 2, lexemes: ['widget'] },
    { group_no: 2, entry_no: 1, lexemes: ['bank', 'wire'] },
    { group_no: 2, entry_no: 2, lexemes: ['invoic'] },
  ], "one row per entry, its lexemes in the base's language (an entry of stop words only is left out)");
  const sql = openSqlPool({ url: fresh, poolMax: 1 });
  t.teardown(() => sql.end());
  const [gizmo, wire, bank] = await bestKnowledgeMatches(sql, ['where is my gizmo?', 'can I pay by bank wire', 'which bank'].map((query) => ({ companyId: 1, knowledgeBaseId: 1, query })));
  t.match(gizmo?.passages[0], { content: /Widgets are assembled/ }, 'a word finds its synonyms');
  t.match(wire?.passages[0], { content: /pay by invoice/ }, 'a phrase held whole finds its synonyms');
  t.equal(bank, null, 'one word of a phrase brings nothing');
});
