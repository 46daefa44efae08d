import { randomBytes } from 'node:crypto';
import t from 'tap';
import { startGateway, type RunningGateway } from '../../gateway/server.js';
import { loadConfig, type LoadConfigOptions } from '../../lib/config.js';
import { openDatabase } from '../../lib/db.js';
import { createLogger } from '../../lib/logger.js';
import { connectNats } from '../../lib/nats.js';
import { createTestDatabase } from '../support/database.js';
import { apiClient, TEST_NATS_URL, uniqueEmail, type ApiClient } from '../support/service.js';
import { dropNatsPrefixAtEnd } from '../support/webhooks.js';
import { sql } from '../support/worker.js';

/**
 * Login lock-out is counted in PostgreSQL and counts failures only, with the shipped rules
 * (10 failures per email, 300 per IP, per 15 minutes): successful logins never lock anyone
 * out; ten failures lock the email for the window, even with the right password; the count
 * is shared by every gateway process and survives a restart.
 *
 * Each "process" here is a gateway with its own PostgreSQL pool and NATS connection on the
 * same database, as two `npm run gateway` would be.
 */
let clock = Date.now();
const now = () => clock;
const { url: databaseUrl, orm } = await createTestDatabase(t, 'loginlim');
const env = { NODE_ENV: 'test', DATABASE_URL: databaseUrl, NATS_URL: TEST_NATS_URL, NATS_PREFIX: `t${randomBytes(4).toString('hex')}` };
const config = loadConfig(env);
dropNatsPrefixAtEnd(t, { config });
const WINDOW_MS = config.rateLimits.loginPerEmail.windowSeconds * 1000;

interface Instance {
  gateway: RunningGateway;
  api: ApiClient;
  stop: () => Promise<void>;
}

/** A gateway "process": its own pool and NATS connection, the shared database. */
async function startInstance(label: string, overrides?: LoadConfigOptions['overrides']): Promise<Instance> {
  const instanceConfig = loadConfig(env, { overrides });
  const instanceOrm = await openDatabase({ url: databaseUrl, poolMax: 3 });
  const nc = await connectNats(instanceConfig.natsUrl, `test-loginlim-${label}`);
  const gateway = await startGateway({ config: instanceConfig, orm: instanceOrm, nc, logger: createLogger('silent'), now }, { port: 0, host: '127.0.0.1' });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await gateway.close();
    await nc.close();
    await instanceOrm.close(true);
  };
  t.teardown(stop);
  return { gateway, api: apiClient(gateway.url), stop };
}

const first = await startInstance('a');

async function newAccount(api: ApiClient) {
  const email = uniqueEmail('lock');
  const password = 'correct horse battery';
  const reg = await api('POST', '/api/auth/register', { body: { email, password, companyName: 'Lock Co' } });
  if (reg.status !== 201) throw new Error(`register: ${reg.status}`);
  return { email, password };
}
const login = (api: ApiClient, email: string, password: string) => api('POST', '/api/auth/login', { body: { email, password } });
const fail = (api: ApiClient, email: string) => login(api, email, 'wrong password!');

t.test('the shipped rules are in force', async (t) => {
  t.same(config.rateLimits.loginPerEmail, { limit: 10, windowSeconds: 900 });
  t.same(config.rateLimits.loginPerIp, { limit: 300, windowSeconds: 900 });
});

t.test('(a) 12 successful logins in a row are all 200', async (t) => {
  const user = await newAccount(first.api);
  const statuses: number[] = [];
  for (let i = 0; i < 12; i++) statuses.push((await login(first.api, user.email, user.password)).status);
  t.same(statuses, Array(12).fill(200));
  const [row] = await sql(orm, 'select failures from login_failures where key = ?', [`email:${user.email}`]);
  t.equal(row?.failures ?? 0, 0, 'no failure counted');
});

t.test('(b) 10 failures, then the right password → 429 with Retry-After, until the window ends', async (t) => {
  const user = await newAccount(first.api);
  const statuses: number[] = [];
  for (let i = 0; i < 10; i++) statuses.push((await fail(first.api, user.email)).status);
  t.same(statuses, Array(10).fill(401), 'ten failures are answered 401');
  const locked = await login(first.api, user.email, user.password);
  t.equal(locked.status, 429, 'the right password is refused while locked');
  t.equal(locked.body.error.code, 'RATE_LIMITED');
  const retryAfter = Number(locked.headers.get('retry-after'));
  t.ok(retryAfter > 0 && retryAfter <= 900, `Retry-After ${retryAfter} s, within the 15-minute window`);
  t.equal((await login(first.api, user.email, user.password)).status, 429, 'refusals do not unlock it');

  clock += WINDOW_MS - 5_000;
  t.equal((await login(first.api, user.email, user.password)).status, 429, 'still locked just before the window ends');
  clock += 6_000;
  t.equal((await login(first.api, user.email, user.password)).status, 200, 'open again once the window has ended');
  const other = await newAccount(first.api);
  t.equal((await login(first.api, other.email, other.password)).status, 200, 'another email was never affected');
});

t.test('(c) two gateway processes share the count', async (t) => {
  const second = await startInstance('b');
  const user = await newAccount(first.api);
  for (let i = 0; i < 5; i++) t.equal((await fail(first.api, user.email)).status, 401, `failure ${i + 1} on process A`);
  for (let i = 0; i < 5; i++) t.equal((await fail(second.api, user.email)).status, 401, `failure ${i + 6} on process B`);
  t.equal((await login(second.api, user.email, user.password)).status, 429, 'process B refuses after ten failures in all');
  t.equal((await login(first.api, user.email, user.password)).status, 429, 'and so does process A');
  t.equal((await fail(first.api, user.email)).status, 429, 'an eleventh guess is not even checked');
});

t.test('a burst of parallel guesses gets no more than the limit checked', async (t) => {
  const user = await newAccount(first.api);
  const statuses = await Promise.all(Array.from({ length: 20 }, () => fail(first.api, user.email).then((r) => r.status)));
  t.equal(statuses.filter((s) => s === 401).length, 10, 'ten guesses were checked');
  t.equal(statuses.filter((s) => s === 429).length, 10, 'the other ten were refused unchecked');
});

t.test('(d) the count survives a gateway restart', async (t) => {
  const before = await startInstance('before-restart');
  const user = await newAccount(before.api);
  for (let i = 0; i < 10; i++) await fail(before.api, user.email);
  await before.stop();
  const after = await startInstance('after-restart');
  const res = await login(after.api, user.email, user.password);
  t.equal(res.status, 429, 'still locked after the restart');
  t.ok(Number(res.headers.get('retry-after')) > 0);
});

t.test('per IP, only failures count too', async (t) => {
  const tight = await startInstance('ip', { rateLimits: { ...config.rateLimits, loginPerIp: { limit: 3, windowSeconds: 900 } } });
  clock += 2 * WINDOW_MS; // a fresh window for this IP (earlier tests failed from it)
  const user = await newAccount(tight.api);
  const successes: number[] = [];
  for (let i = 0; i < 5; i++) successes.push((await login(tight.api, user.email, user.password)).status);
  t.same(successes, Array(5).fill(200), 'five successes from one IP with an IP limit of 3');
  const failures: number[] = [];
  for (let i = 0; i < 4; i++) failures.push((await fail(tight.api, uniqueEmail('spray'))).status);
  t.same(failures, [401, 401, 401, 429], 'three failures across emails lock the IP');
  t.equal((await login(tight.api, user.email, user.password)).status, 429, 'for every email');
});

t.test('ended windows are swept away', async (t) => {
  clock += 2 * WINDOW_MS;
  const user = await newAccount(first.api);
  await login(first.api, user.email, user.password); // the first login after a minute sweeps
  const [{ stale }] = await sql(orm, 'select count(*)::int as stale from login_failures where window_ends_at <= ?', [new Date(clock)]);
  t.equal(stale, 0, 'no row of an ended window is left');
});
