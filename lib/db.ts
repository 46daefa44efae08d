import pg from 'pg';
import { MikroORM, type EntityManager } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import { entities } from '../schema/entities.js';
import { migrations } from '../schema/migrations/index.js';
import { succeedsWithin } from './deadline.js';
import { pgErrorKind } from './pg-errors.js';

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
    if (pgErrorKind(err) === 'unique') return false;
    throw err;
  } finally {
    await client.end();
  }
}

export interface OpenDatabaseOptions {
  url: string;
  poolMax?: number;
  /**
   * false: commits do not wait for the WAL to reach disk (`synchronous_commit = off`). Only
   * for writes that may be lost in a crash of PostgreSQL itself (never of ours) without
   * harm: what was committed stays consistent, the last fraction of a second is missing.
   */
  synchronousCommit?: boolean;
  /**
   * PostgreSQL cancels any statement of these connections that runs longer (error 57014,
   * pgErrorKind 'timeout'). Unset: no limit (migrations, the message path).
   */
  statementTimeoutMs?: number;
}

function ormOptions({ url, poolMax = 10, statementTimeoutMs }: OpenDatabaseOptions) {
  return {
    clientUrl: url,
    entities,
    discovery: { warnWhenNoEntities: false },
    pool: { min: 0, max: poolMax },
    allowGlobalContext: false,
    debug: false,
    driverOptions: { connection: { connectionTimeoutMillis: 5000, ...(statementTimeoutMs ? { statement_timeout: statementTimeoutMs } : {}) } },
  };
}

export async function openDatabase(options: OpenDatabaseOptions): Promise<Orm> {
  try {
    return await MikroORM.init({
      ...ormOptions(options),
      extensions: [Migrator],
      migrations: { migrationsList: migrations, transactional: true, allOrNothing: true, snapshot: false, silent: true },
    });
  } catch (err) {
    throw new DatabaseUnavailableError(options.url, err);
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

/**
 * The workers' hot path talks to PostgreSQL through a plain `pg` pool: bulk statements with
 * array parameters, prepared once per connection (named), without the ORM's per-statement
 * overhead (bench/README.md: about half the client CPU per statement).
 */
export type SqlPool = pg.Pool;

/** See openSqlPool: well below the lease TTL, so a taken-over partition is free within it. */
export const IDLE_IN_TRANSACTION_MS = 5_000;
export type SqlClient = pg.Pool | pg.PoolClient;

export function openSqlPool({ url, poolMax = 10, synchronousCommit = true, statementTimeoutMs }: OpenDatabaseOptions): SqlPool {
  const pool = new pg.Pool({
    connectionString: url,
    max: poolMax,
    connectionTimeoutMillis: 5000,
    idleTimeoutMillis: 30_000,
    // A named statement's plan is cached after a few runs; one cached while the tables were
    // tiny (a fresh database) would keep scanning them whole as they grow. Plan each run: the
    // parse is still saved.
    // A worker stalled inside a transaction (SIGSTOP, a frozen VM) keeps its row locks, and
    // the worker taking its partitions over would wait on them for as long as it is stalled:
    // PostgreSQL ends a session idle in a transaction after IDLE_IN_TRANSACTION_MS (the
    // worker's transactions never wait on anything but the database).
    options: `-c plan_cache_mode=force_custom_plan -c idle_in_transaction_session_timeout=${IDLE_IN_TRANSACTION_MS}${synchronousCommit ? '' : ' -c synchronous_commit=off'}`,
    ...(statementTimeoutMs ? { statement_timeout: statementTimeoutMs } : {}),
  });
  // An idle client losing its connection (PostgreSQL restarted) must not crash the process.
  pool.on('error', () => {});
  return pool;
}

/** Runs `work` in one transaction on one pooled connection; rolls back on error. */
export async function inTransaction<T>(pool: SqlPool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  // A checked-out client has no error listener of the pool's: a connection lost between two
  // statements (PostgreSQL restarted) would be an uncaught 'error' event and end the process.
  const lost = () => {
    broken = true;
  };
  client.on('error', lost);
  try {
    await client.query('begin');
    const out = await work(client);
    await client.query('commit');
    return out;
  } catch (err) {
    try {
      await client.query('rollback');
    } catch {
      broken = true;
    }
    throw err;
  } finally {
    client.removeListener('error', lost);
    client.release(broken);
  }
}

/** Rows of a named prepared statement (`name` must always go with the same `text`). */
export async function query<T>(client: SqlClient, name: string, text: string, values: unknown[] = []): Promise<T[]> {
  const res = await client.query<T & pg.QueryResultRow>({ name, text, values });
  return res.rows;
}

/** Connections of the API's default pool size (the ORM's, besides API_SQL_POOL_MAX). */
export const API_ORM_POOL_MAX = 10;
/**
 * The API's plain-SQL connections (knowledge search, leads, analytics, document indexing):
 * more than one company's searches may hold at once (SEARCH_MAX_PER_COMPANY, 4), so one
 * company at its limit leaves room for the others.
 */
export const API_SQL_POOL_MAX = 10;

/**
 * The database as the API sees it: the connections of HTTP API requests (dashboard and API
 * clients) and of the work they start (document indexing), apart from the message path's, and
 * every statement on them ends within `statementTimeoutMs` (503 TIMEOUT past it,
 * gateway/http/errors.ts).
 *
 * The pools of each process:
 * - gateway: `ApiDatabase` (this ORM + plain SQL, statement timeout) for /api routes and the
 *   document ingestor; the message path (webhook ingress, the webchat socket, /readyz) keeps
 *   the runtime's ORM (lib/runtime.ts) and a small SQL pool of its own, without a timeout;
 * - worker: only the message path: the runtime's ORM (agents' settings), its hot-path pool
 *   and its quick pool (actors/worker.ts), no statement timeout (a group commit cancelled
 *   halfway would be retried whole, under more load);
 * - all-in-one: both, the runtime's ORM shared by the worker and the gateway's message path.
 * However busy the API is, it never takes a connection the replies need.
 */
export interface ApiDatabase {
  orm: Orm;
  sql: SqlPool;
  close: () => Promise<void>;
}

export function openApiDatabase({ url, statementTimeoutMs }: { url: string; statementTimeoutMs: number }): ApiDatabase {
  // Synchronous: connects on first use (the runtime has already reached the database and migrated it).
  const orm = MikroORM.initSync(ormOptions({ url, poolMax: API_ORM_POOL_MAX, statementTimeoutMs }));
  const sql = openSqlPool({ url, poolMax: API_SQL_POOL_MAX, statementTimeoutMs });
  return {
    orm,
    sql,
    close: async () => {
      await sql.end();
      await orm.close(true);
    },
  };
}
