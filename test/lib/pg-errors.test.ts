// Database failures classified in one place (lib/pg-errors.ts), by SQLSTATE or network code,
// against errors real PostgreSQL raises: through raw `pg` (the message path) and through
// MikroORM (the API).
import pg from 'pg';
import t from 'tap';
import { isDataError, pgErrorKind, sqlState } from '../../lib/pg-errors.js';
import { createTestDatabase } from '../support/database.js';
import { freePort } from '../support/local-server.js';

const { url, orm } = await createTestDatabase(t, 'pg_errors');
const client = new pg.Client({ connectionString: url });
await client.connect();
t.teardown(() => client.end());
await client.query('create temp table t (id int primary key, v varchar(2) not null)');

/** The error a statement fails with (run under `timeoutMs` of statement_timeout when given). */
async function failureOf(text: string, values: unknown[] = [], timeoutMs = 0): Promise<unknown> {
  await client.query(`set statement_timeout = ${timeoutMs}`);
  try {
    await client.query(text, values);
  } catch (err) {
    return err;
  } finally {
    await client.query('set statement_timeout = 0');
  }
  throw new Error(`expected ${text} to fail`);
}

t.test('the values themselves: data', async (t) => {
  const cases: [string, string, unknown[], string][] = [
    ['not a number', "select 'x'::int", [], '22P02'],
    ['too long', "insert into t values (1, 'abc')", [], '22001'],
    ['U+0000 in text', 'select $1::text', ['a\u0000b'], '22021'],
    ['out of range', 'select 2147483648::int', [], '22003'],
    ['not null', 'insert into t values (2, null)', [], '23502'],
  ];
  for (const [what, text, values, state] of cases) {
    const err = await failureOf(text, values);
    t.equal(sqlState(err), state, what);
    t.equal(pgErrorKind(err), 'data', what);
    t.equal(isDataError(err), true, what);
  }
});

t.test('a value that exists already: unique', async (t) => {
  await client.query("insert into t values (10, 'a')");
  const err = await failureOf("insert into t values (10, 'b')");
  t.equal(sqlState(err), '23505');
  t.equal(pgErrorKind(err), 'unique');
  t.equal(isDataError(err), true, 'the same values fail again');
  const database = await failureOf('create database postgres');
  t.equal(pgErrorKind(database), 'unique', 'a database that exists (42P04)');
});

t.test('a statement cancelled at its statement_timeout: timeout', async (t) => {
  const err = await failureOf('select pg_sleep(2)', [], 50);
  t.equal(sqlState(err), '57014');
  t.equal(pgErrorKind(err), 'timeout');
  t.equal(isDataError(err), false);
});

t.test('a connection the server ends, or none at all: unavailable', async (t) => {
  const victim = new pg.Client({ connectionString: url });
  victim.on('error', () => {});
  await victim.connect();
  const pid = (await victim.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
  const sleeping = victim.query('select pg_sleep(10)').catch((err: unknown) => err);
  // Terminated once the sleep is running (the backend shows it as active).
  for (let i = 0; i < 100 && !(await client.query('select 1 from pg_stat_activity where pid = $1 and state = $2', [pid, 'active'])).rowCount; i++) await new Promise((r) => setTimeout(r, 20));
  await client.query('select pg_terminate_backend($1)', [pid]);
  const err = await sleeping;
  t.equal(sqlState(err), '57P01', 'admin_shutdown');
  t.equal(pgErrorKind(err), 'unavailable');
  await victim.end().catch(() => {});

  const port = await freePort();
  const nobody = new pg.Client({ host: '127.0.0.1', port, user: 'root', database: 'postgres' });
  const refused = await nobody.connect().then(() => null, (e: unknown) => e);
  t.equal(sqlState(refused), null, 'no answer from PostgreSQL');
  t.equal(pgErrorKind(refused), 'unavailable', 'connection refused');
});

t.test('through MikroORM and wrapped in another error', async (t) => {
  // What MikroORM throws for a failed statement: its DriverException made from pg's error.
  const driver = orm.em.getDriver();
  const unique = driver.convertException((await failureOf("insert into t values (10, 'c')")) as Error);
  t.equal(unique.name, 'UniqueConstraintViolationException');
  t.equal(pgErrorKind(unique), 'unique');
  const cancelled = driver.convertException((await failureOf('select pg_sleep(2)', [], 50)) as Error);
  t.equal(pgErrorKind(cancelled), 'timeout');
  const refused = driver.convertException(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED', errno: -111 }));
  t.equal(pgErrorKind(refused), 'unavailable', 'a network error it wrapped');
  t.equal(pgErrorKind(new Error('storing failed', { cause: await failureOf("insert into t values (11, 'abc')") })), 'data', 'from the cause');
});

t.test('anything else: null', async (t) => {
  t.equal(pgErrorKind(await failureOf('selec 1')), null, 'a syntax error is ours');
  t.equal(pgErrorKind(Object.assign(new Error('looks like one'), { code: '23505' })), null, 'only PostgreSQL\'s own answer counts, not a look-alike code');
  t.equal(pgErrorKind(new Error('plain')), null);
  t.equal(pgErrorKind('not an error'), null);
  t.equal(pgErrorKind(undefined), null);
});
