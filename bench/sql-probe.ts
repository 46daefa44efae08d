import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { openDatabase } from '../lib/db.js';

/**
 * Experiment (`--experiments`, after the drain, on its database): what one SQL statement of
 * the worker costs through each client, sequentially, on one connection at a time:
 *   orm       MikroORM `em.fork().execute(sql, params)` (what actors/store.ts does: knex
 *             formats the values into the text, sent as a simple query, parsed and planned
 *             by PostgreSQL every time)
 *   pg        pg Pool `query(text, values)` (extended protocol, unnamed statement)
 *   prepared  pg Pool `query({ name, text, values })` (prepared once per connection)
 * and a transaction of five statements (BEGIN, 3 statements, COMMIT) through the ORM's
 * `transactional` vs pg. The parent measures PostgreSQL's CPU around each phase (it prints
 * a line before and after each one and waits for the parent's go).
 *
 * Env: DATABASE_URL, ITERATIONS. Prints JSON lines: {"msg":"phase start"|"phase end", ...}.
 */
const url = process.env.DATABASE_URL!;
const iterations = Number(process.env.ITERATIONS ?? 3000);

const orm = await openDatabase({ url, poolMax: 1 });
const pool = new pg.Pool({ connectionString: url, max: 1 });
const ids = (await pool.query<{ integration_id: number; client_id: string; id: number }>('select integration_id, client_id, id from conversations order by id limit 500')).rows;
if (ids.length === 0) throw new Error('no conversations to probe');

const SELECT = `select * from conversations where integration_id = $1 and client_id = $2 and status <> 'closed' order by id desc limit 1`;
const SELECT_Q = SELECT.replace('$1', '?').replace('$2', '?');
const UPDATE = `update conversations set updated_at = now() where id = $1 returning updated_at`;
const UPDATE_Q = UPDATE.replace('$1', '?');

const emit = (o: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(o)}\n`);
const waitGo = () =>
  new Promise<void>((resolve) => {
    process.stdin.once('data', () => resolve());
  });

async function phase(name: string, perIteration: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < 200; i++) await fn(i); // warm-up
  emit({ msg: 'phase start', name });
  await waitGo();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < iterations; i++) await fn(i);
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  emit({ msg: 'phase end', name, statements: iterations * perIteration, wallUsPerStatement: (wall * 1000) / (iterations * perIteration), clientCpuUsPerStatement: (cpu.user + cpu.system) / (iterations * perIteration) });
  await waitGo();
}

const row = (i: number) => ids[i % ids.length]!;
await phase('select: orm', 1, (i) => orm.em.fork().execute(SELECT_Q, [row(i).integration_id, row(i).client_id]));
await phase('select: pg', 1, (i) => pool.query(SELECT, [row(i).integration_id, row(i).client_id]));
await phase('select: prepared', 1, (i) => pool.query({ name: 'probe_select', text: SELECT, values: [row(i).integration_id, row(i).client_id] }));
await phase('update: orm', 1, (i) => orm.em.fork().execute(UPDATE_Q, [row(i).id]));
await phase('update: prepared', 1, (i) => pool.query({ name: 'probe_update', text: UPDATE, values: [row(i).id] }));
await phase('tx of 3 statements: orm transactional', 5, (i) =>
  orm.em.fork().transactional(async (em) => {
    await em.execute(`${SELECT_Q} for update`, [row(i).integration_id, row(i).client_id]);
    await em.execute(UPDATE_Q, [row(i).id]);
    await em.execute(UPDATE_Q, [row(i).id]);
  }),
);
await phase('tx of 3 statements: pg prepared', 5, async (i) => {
  const c = await pool.connect();
  try {
    await c.query('begin');
    await c.query({ name: 'probe_select_lock', text: `${SELECT} for update`, values: [row(i).integration_id, row(i).client_id] });
    await c.query({ name: 'probe_update', text: UPDATE, values: [row(i).id] });
    await c.query({ name: 'probe_update', text: UPDATE, values: [row(i).id] });
    await c.query('commit');
  } finally {
    c.release();
  }
});
await orm.close(true);
await pool.end();
emit({ msg: 'probe done' });
process.exit(0);
