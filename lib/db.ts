import pg from 'pg';
import { MikroORM, type EntityManager } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import { entities } from '../schema/entities.js';
import { migrations } from '../schema/migrations/index.js';
import { succeedsWithin } from './deadline.js';

export type { EntityManager };
export type Orm = MikroORM;

export class DatabaseUnavailableError extends Error {
  constructor(url: string, cause: unknown) {
    super(`PostgreSQL is not reachable at ${redactUrl(url)}`, { cause });
    this.name = 'DatabaseUnavailableError';
  }
}

export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparseable URL)';
  }
}

/** Creates the database named in `url` when it does not exist yet (first run on a fresh machine). */
export async function ensureDatabase(url: string): Promise<boolean> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ''));
  if (!name) return false;
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString(), connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
  } catch (err) {
    throw new DatabaseUnavailableError(url, err);
  }
  try {
    const found = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (found.rowCount) return false;
    await client.query(`create database "${name.replace(/"/g, '""')}"`);
    return true;
  } catch (err) {
    // Two processes starting at once may race to create it.
    if ((err as { code?: string }).code === '42P04') return false;
    throw err;
  } finally {
    await client.end();
  }
}

export interface OpenDatabaseOptions {
  url: string;
  poolMax?: number;
}

export async function openDatabase({ url, poolMax = 10 }: OpenDatabaseOptions): Promise<Orm> {
  try {
    return await MikroORM.init({
      clientUrl: url,
      entities,
      extensions: [Migrator],
      migrations: { migrationsList: migrations, transactional: true, allOrNothing: true, snapshot: false, silent: true },
      discovery: { warnWhenNoEntities: false },
      pool: { min: 0, max: poolMax },
      allowGlobalContext: false,
      debug: false,
      driverOptions: { connection: { connectionTimeoutMillis: 5000 } },
    });
  } catch (err) {
    throw new DatabaseUnavailableError(url, err);
  }
}

export async function migrate(orm: Orm): Promise<string[]> {
  const applied = await orm.getMigrator().up();
  return applied.map((m) => m.name);
}

/** A cheap liveness query with a deadline, for /readyz. */
export function pingDatabase(orm: Orm, timeoutMs = 2000): Promise<boolean> {
  return succeedsWithin(() => orm.em.fork().getConnection().execute('select 1'), timeoutMs);
}
