import t from 'tap';
import { SignJWT } from 'jose';
import { startTestService, uniqueEmail, signUp } from '../support/service.js';

let clock = Date.now();
const svc = await startTestService(t, 'auth', {
  now: () => clock,
  overrides: { rateLimits: { loginPerEmail: { limit: 3, windowSeconds: 60 }, loginPerIp: { limit: 1000, windowSeconds: 60 }, registerPerIp: { limit: 1000, windowSeconds: 60 }, refreshPerIp: { limit: 1000, windowSeconds: 60 } } },
});
const { api } = svc;

t.test('register answers 201 with user and company', async (t) => {
  const email = uniqueEmail();
  const res = await api('POST', '/api/auth/register', { body: { email, password: 'long enough pw', companyName: 'Acme Ltd' } });
  t.equal(res.status, 201);
  t.match(res.body.user, { id: /^[0-9a-f-]{36}$/, email });
  t.match(res.body.company, { id: Number, companyId: /^[0-9a-f-]{36}$/, companyName: 'Acme Ltd' });
  t.notOk('password' in res.body.user || 'passwordHash' in res.body.user, 'no password material');

  const again = await api('POST', '/api/auth/register', { body: { email: email.toUpperCase(), password: 'another pw 123', companyName: 'Other' } });
  t.equal(again.status, 500, 'a taken email (any case) fails');
  t.equal(again.body.error.code, 'USER_CREATION_FAILED');
});

t.test('register validates each field', async (t) => {
  const res = await api('POST', '/api/auth/register', { body: { email: 'not-an-email', password: 'short' } });
  t.equal(res.status, 400);
  t.equal(res.body.error.code, 'VALIDATION_ERROR');
  const fields = res.body.error.details.map((d: { field: string }) => d.field).sort();
  t.same(fields, ['companyName', 'email', 'password']);
  const notObject = await api('POST', '/api/auth/register', { body: [1, 2] });
  t.equal(notObject.status, 400);
  const malformed = await api('POST', '/api/auth/register', { rawBody: '{"email":', headers: { 'content-type': 'application/json' } });
  t.equal(malformed.status, 400);
  t.equal(malformed.body.error.code, 'VALIDATION_ERROR');
});

t.test('login, me and the session shape', async (t) => {
  const email = uniqueEmail();
  const reg = await api('POST', '/api/auth/register', { body: { email, password: 'password-123', companyName: 'Globex' } });
  const login = await api('POST', '/api/auth/login', { body: { email, password: 'password-123' } });
  t.equal(login.status, 200);
  const { session, user } = login.body;
  t.match(session, { access_token: /^[\w-]+\.[\w-]+\.[\w-]+$/, refresh_token: String, expires_at: Number });
  t.ok(Number.isInteger(session.expires_at));
  t.ok(Math.abs(session.expires_at - (Math.floor(clock / 1000) + 900)) <= 1, 'expires_at is Unix seconds, 15 minutes ahead');
  t.same(user, { id: reg.body.user.id, email, companyId: reg.body.company.id });

  const me = await api('GET', '/api/auth/me', { token: session.access_token });
  t.equal(me.status, 200);
  t.same(me.body.user, { id: reg.body.user.id, email, companyId: reg.body.company.id, isSuperadmin: false, role: 'owner', displayName: null });
  t.match(me.body.company, { id: reg.body.company.id, companyId: reg.body.company.companyId, companyName: 'Globex' });
  t.match(me.body.company.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

  const wrong = await api('POST', '/api/auth/login', { body: { email, password: 'wrong-password' } });
  t.equal(wrong.status, 401);
  t.same(wrong.body, { error: { code: 'INVALID_CREDENTIALS', message: 'Wrong email or password.' } });
  const unknown = await api('POST', '/api/auth/login', { body: { email: uniqueEmail(), password: 'password-123' } });
  t.equal(unknown.status, 401);
  t.equal(unknown.body.error.code, 'INVALID_CREDENTIALS');
});

t.test('refresh rotates; a reused refresh token revokes the whole session', async (t) => {
  const s = await signUp(api);
  const r1 = await api('POST', '/api/auth/refresh', { body: { refresh_token: s.refreshToken } });
  t.equal(r1.status, 200);
  t.not(r1.body.session.refresh_token, s.refreshToken, 'a new refresh token');
  t.equal((await api('GET', '/api/auth/me', { token: r1.body.session.access_token })).status, 200);

  const reuse = await api('POST', '/api/auth/refresh', { body: { refresh_token: s.refreshToken } });
  t.equal(reuse.status, 401);
  t.equal(reuse.body.error.code, 'REFRESH_FAILED');
  const afterReuse = await api('POST', '/api/auth/refresh', { body: { refresh_token: r1.body.session.refresh_token } });
  t.equal(afterReuse.status, 401, 'the newest refresh token of that session is dead too');
  t.equal((await api('GET', '/api/auth/me', { token: r1.body.session.access_token })).status, 401, 'and so are its access tokens');

  t.equal((await api('POST', '/api/auth/refresh', { body: { refresh_token: 'rt_garbage' } })).body.error.code, 'REFRESH_FAILED');
  t.equal((await api('POST', '/api/auth/refresh', { body: {} })).body.error.code, 'REFRESH_FAILED');
});

t.test('logout revokes the session', async (t) => {
  const s = await signUp(api);
  const out = await api('POST', '/api/auth/logout', { token: s.token });
  t.equal(out.status, 204);
  t.equal((await api('POST', '/api/auth/refresh', { body: { refresh_token: s.refreshToken } })).status, 401);
  const me = await api('GET', '/api/auth/me', { token: s.token });
  t.equal(me.status, 401);
  t.equal(me.body.error.code, 'UNAUTHORIZED');
});

t.test('forged, expired, alg:none and wrong-audience tokens are refused', async (t) => {
  const s = await signUp(api);
  const [header, payload] = s.token.split('.');
  const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
  const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${payload}.`;
  const forged = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode('not-the-server-secret-not-the-server-secret'));
  const key = new TextEncoder().encode(svc.config.jwtSecret);
  const wrongAud = await new SignJWT({ ...claims, aud: 'someone-else' }).setProtectedHeader({ alg: 'HS256' }).sign(key);
  const notAccess = await new SignJWT({ ...claims, typ: 'refresh' }).setProtectedHeader({ alg: 'HS256' }).sign(key);
  const hs512 = await new SignJWT(claims).setProtectedHeader({ alg: 'HS512' }).sign(key);
  for (const [name, token] of Object.entries({ none, forged, wrongAud, notAccess, hs512, tampered: `${header}.${payload}x.sig`, refreshAsAccess: s.refreshToken })) {
    const res = await api('GET', '/api/auth/me', { token });
    t.equal(res.status, 401, name);
    t.equal(res.body.error.code, 'UNAUTHORIZED', name);
  }
  t.equal((await api('GET', '/api/auth/me')).status, 401, 'no header');
  t.equal((await api('GET', '/api/auth/me', { headers: { authorization: `Basic ${s.token}` } })).status, 401, 'not Bearer');

  clock += 16 * 60 * 1000;
  t.teardown(() => {
    clock -= 16 * 60 * 1000;
  });
  t.equal((await api('GET', '/api/auth/me', { token: s.token })).status, 401, 'expired after 15 minutes');
  const renewed = await api('POST', '/api/auth/refresh', { body: { refresh_token: s.refreshToken } });
  t.equal(renewed.status, 200, 'a refresh gets a new session without a login');
  t.equal((await api('GET', '/api/auth/me', { token: renewed.body.session.access_token })).status, 200);
});

t.test('login is rate limited per email with Retry-After', async (t) => {
  const s = await signUp(api); // a successful login: not counted (only failures are)
  for (let i = 0; i < 3; i++) t.equal((await api('POST', '/api/auth/login', { body: { email: s.email, password: 'bad-password' } })).status, 401);
  const limited = await api('POST', '/api/auth/login', { body: { email: s.email, password: s.password } });
  t.equal(limited.status, 429, 'even the right password waits');
  t.equal(limited.body.error.code, 'RATE_LIMITED');
  t.ok(Number(limited.headers.get('retry-after')) > 0 && Number(limited.headers.get('retry-after')) <= 60);
  const other = await signUp(api);
  t.equal(other.token.length > 0, true, 'another email is not affected');
  clock += 61_000;
  t.equal((await api('POST', '/api/auth/login', { body: { email: s.email, password: s.password } })).status, 200, 'the window passes');
});
