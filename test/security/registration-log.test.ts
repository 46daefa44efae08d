import t from 'tap';
import { createLogger } from '../../lib/logger.js';
import { startTestService, uniqueEmail } from '../support/service.js';

/**
 * A failed registration is logged by its database error code only: never the SQL text or
 * its parameters, which hold the new account's email and password hash.
 */
const lines: string[] = [];
const svc = await startTestService(t, 'reglog', { logger: createLogger('debug', { write: (s: string) => void lines.push(s) }) });

t.test('a duplicate email logs the SQLSTATE, no SQL and no password hash', async (t) => {
  const email = uniqueEmail('dup');
  const first = await svc.api('POST', '/api/auth/register', { body: { email, password: 'first password 1', companyName: 'First Co' } });
  t.equal(first.status, 201);
  lines.length = 0;
  const again = await svc.api('POST', '/api/auth/register', { body: { email, password: 'second password 2', companyName: 'Second Co' } });
  t.equal(again.status, 500);
  t.equal(again.body.error.code, 'USER_CREATION_FAILED');
  const log = lines.join('');
  const failure = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'registration failed');
  t.ok(failure, 'the failure is logged');
  t.equal(failure?.code, '23505', 'with the PostgreSQL error code (unique_violation)');
  t.notMatch(log, /\$argon2/, 'no password hash');
  t.notMatch(log, /insert into|values \(|"users"|duplicate key/i, 'no SQL text or database message');
  t.notOk(log.includes(email), 'not the email either');
  t.notOk(log.includes('second password 2'), 'nor the password');
});
