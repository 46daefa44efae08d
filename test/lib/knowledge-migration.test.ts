import t from 'tap';
import { migrate, openDatabase, openSqlPool } from '../../lib/db.js';
import { bestKnowledgeMatches } from '../../lib/knowledge/search.js';
import { createTestDatabase } from '../support/database.js';

// Documents stored before migration 0010 (one text, searched whole) are chunked by it: they
// answer from the first start after the upgrade, with the language they were indexed in.
t.test('migration 0010 chunks the documents that exist', async (t) => {
  const { url, orm } = await createTestDatabase(t, 'kb_migration');
  // createTestDatabase migrated to the latest; start again from 0008 on a second database.
  await orm.close(true);
  const fresh = url.replace(/mas_t_kb_migration_/, 'mas_t_kb_migration_old_');
  const admin = openSqlPool({ url: url.replace(/\/[^/]+$/, '/postgres'), poolMax: 1 });
  await admin.query(`create database "${fresh.split('/').pop()}"`);
  t.teardown(async () => {
    await admin.query(`drop database if exists "${fresh.split('/').pop()}" with (force)`);
    await admin.end();
  });
  const old = await openDatabase({ url: fresh, poolMax: 2 });
  t.teardown(() => old.close(true));
  await old.getMigrator().up({ to: '0008-hardening' });
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
  t.match(doc, { status: 'ready', chunk_count: 2, format: 'markdown' });
  const [kb] = await em.execute<{ language: string; chunk_count: number }[]>(`select language, chunk_count from knowledge_bases`);
  t.match(kb, { language: 'russian', chunk_count: 2 }, 'an existing base keeps the configuration it was searched with');
  const sql = openSqlPool({ url: fresh, poolMax: 1 });
  t.teardown(() => sql.end());
  const [best] = await bestKnowledgeMatches(sql, [{ companyId: 1, knowledgeBaseId: 1, query: 'where can I park?' }]);
  t.match(best, { heading: 'Parking', content: /free behind the shop/ });
  await em.execute(`insert into knowledge_bases (company_id, name) values (1, 'New')`);
  const [created] = await em.execute<{ language: string }[]>(`select language from knowledge_bases where name = 'New'`);
  t.equal(created.language, 'simple', 'new bases default to simple');
});
