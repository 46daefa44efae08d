import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Test } from 'tap';
import { ensureDatabase, migrate, openDatabase, openSqlPool, type Orm } from '../../lib/db.js';

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

/** A second database migrated up to `to` only (both dropped at the end): rows written there meet the migrations after it. */
export async function databaseUpTo(t: Test, label: string, to: string): Promise<{ fresh: string; old: Orm }> {
  const { url, orm } = await createTestDatabase(t, label);
  // createTestDatabase migrated to the latest; start again on a second database.
  await orm.close(true);
  const fresh = url.replace(`mas_t_${label}_`, `mas_t_${label}_old_`);
  const admin = openSqlPool({ url: url.replace(/\/[^/]+$/, '/postgres'), poolMax: 1 });
  await admin.query(`create database "${fresh.split('/').pop()}"`);
  t.teardown(async () => {
    await admin.query(`drop database if exists "${fresh.split('/').pop()}" with (force)`);
    await admin.end();
  });
  const old = await openDatabase({ url: fresh, poolMax: 2 });
  t.teardown(() => old.close(true));
  await old.getMigrator().up({ to });
  return { fresh, old };
}
