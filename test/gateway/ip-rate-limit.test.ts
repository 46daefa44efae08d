import t from 'tap';
import { startTestService, uniqueEmail } from '../support/service.js';

const svc = await startTestService(t, 'iplimit', {
  overrides: { rateLimits: { loginPerEmail: { limit: 100, windowSeconds: 60 }, loginPerIp: { limit: 5, windowSeconds: 60 }, registerPerIp: { limit: 2, windowSeconds: 3600 }, refreshPerIp: { limit: 100, windowSeconds: 60 } } },
});

t.test('login is limited per IP across emails (generous limit, here tightened)', async (t) => {
  const statuses: number[] = [];
  for (let i = 0; i < 7; i++) statuses.push((await svc.api('POST', '/api/auth/login', { body: { email: uniqueEmail(), password: 'whatever-pw' } })).status);
  t.same(statuses, [401, 401, 401, 401, 401, 429, 429]);
});

t.test('register is limited per IP', async (t) => {
  const statuses: number[] = [];
  for (let i = 0; i < 3; i++) statuses.push((await svc.api('POST', '/api/auth/register', { body: { email: uniqueEmail(), password: 'password-123', companyName: 'X' } })).status);
  t.same(statuses, [201, 201, 429]);
});
