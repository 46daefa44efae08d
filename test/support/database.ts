import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Test } from 'tap';
import { ensureDatabase, migrate, openDatabase, type Orm } from '../../lib/db.js';

export const TEST_PG_BASE = process.env.TEST_DATABASE_BASE_URL ?? 'postgresql://root@127.0.0.1:5432';

/** A fresh, migrated database for one test file, dropped when the test ends. */
export async function createTestDatabase(t: Test, label: string): Promise<{ url: string; orm: Orm }> {
  const name = `mas_t_${label.replace(/[^a-z0-9]/gi, '_').toLowerCase().slice(0, 30)}_${randomBytes(4).toString('hex')}`;
  const url = `${TEST_PG_BASE}/${name}`;
  await ensureDatabase(url);
  const orm = await openDatabase({ url, poolMax: 5 });
  await migrate(orm);
  t.teardown(async () => {
    await orm.close(true);
    const admin = new pg.Client({ connectionString: `${TEST_PG_BASE}/postgres` });
    await admin.connect();
    await admin.query(`drop database if exists "${name}" with (force)`);
    await admin.end();
  });
  return { url, orm };
}
