import t from 'tap';
import { SignJWT } from 'jose';
import { signUp, startTestService } from '../support/service.js';

/**
 * Auth hardening: the JWT algorithm allow-list, issuer / audience, the token type (refresh
 * tokens, webchat visitor tokens and other-typed JWTs are never access tokens), session
 * revocation (logout, refresh-token reuse), rate limits on login / register / refresh,
 * security headers on the dashboard and the API, and CORS closed by default.
 */
const svc = await startTestService(t, 'authhard', {
  overrides: { rateLimits: { refreshPerIp: { limit: 6, windowSeconds: 60 }, registerPerIp: { limit: 4, windowSeconds: 60 } } as never },
});
const user = await signUp(svc.api, 'Hard Co');
const key = new TextEncoder().encode(svc.config.jwtSecret);
const now = Math.floor(Date.now() / 1000);
const claims = { companyId: user.companyId, sid: JSON.parse(Buffer.from(user.token.split('.')[1]!, 'base64url').toString()).sid, typ: 'access' };
const forge = (over: Record<string, unknown> = {}, header: Record<string, unknown> = { alg: 'HS256' }, k: Uint8Array = key) =>
  new SignJWT({ ...claims, ...over })
    .setProtectedHeader(header as never)
    .setSubject(user.userId)
    .setIssuer((over.iss as string) ?? svc.config.jwtIssuer)
    .setAudience((over.aud as string) ?? svc.config.jwtAudience)
    .setIssuedAt(now)
    .setExpirationTime(now + 600)
    .sign(k);
const me = (token: string) => svc.api('GET', '/api/auth/me', { token });
const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');

t.test('a correctly forged access token works (the baseline of the checks below)', async (t) => {
  t.equal((await me(await forge())).status, 200);
});

t.test('algorithm allow-list, issuer, audience, type', async (t) => {
  const cases: [string, string][] = [
    ['alg none', `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ ...claims, sub: user.userId, iss: svc.config.jwtIssuer, aud: svc.config.jwtAudience, exp: now + 600 })}.`],
    ['alg HS512, same key', await forge({}, { alg: 'HS512' })],
    ['alg HS384, same key', await forge({}, { alg: 'HS384' })],
    ['wrong issuer', await forge({ iss: 'someone-else' })],
    ['wrong audience', await forge({ aud: 'mas-webchat' })],
    ['typ refresh', await forge({ typ: 'refresh' })],
    ['typ visitor', await forge({ typ: 'visitor', iid: 1 })],
    ['no typ', await forge({ typ: undefined })],
    ['wrong key', await forge({}, { alg: 'HS256' }, new TextEncoder().encode('x'.repeat(48)))],
    ['expired', await new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setSubject(user.userId).setIssuer(svc.config.jwtIssuer).setAudience(svc.config.jwtAudience).setIssuedAt(now - 4000).setExpirationTime(now - 3000).sign(key)],
    ['companyId as a string', await forge({ companyId: String(user.companyId) })],
    ['the refresh token itself', user.refreshToken],
    ['a truncated token', user.token.slice(0, -3)],
  ];
  // A real webchat visitor token (when the webchat gateway is there).
  try {
    const { VisitorTokens } = await import('../../gateway/webchat/visitor-token.js');
    const visitor = await new VisitorTokens(svc.config).issue({ integrationId: 1, visitorId: 'v_0123456789abcdef0123' } as never);
    cases.push(['a webchat visitor token', typeof visitor === 'string' ? visitor : (visitor as { token: string }).token]);
  } catch (err) {
    t.comment(`no webchat visitor tokens to try: ${(err as Error).message}`);
  }
  for (const [label, token] of cases) {
    const res = await me(token);
    t.equal(res.status, 401, `${label} → 401`);
    t.equal((await svc.api('GET', '/api/agents', { token })).status, 401, `${label} → 401 on any route`);
  }
});

t.test('token lifetime: longer than ACCESS_TOKEN_TTL_SECONDS is refused, even signed with the real key', async (t) => {
  const ttl = svc.config.accessTokenTtlSeconds;
  const signed = (iat: number | undefined, exp: number) => {
    const jwt = new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setSubject(user.userId).setIssuer(svc.config.jwtIssuer).setAudience(svc.config.jwtAudience).setExpirationTime(exp);
    return (iat === undefined ? jwt : jwt.setIssuedAt(iat)).sign(key);
  };
  const at = Math.floor(Date.now() / 1000);
  t.equal((await me(await signed(at, at + ttl))).status, 200, 'exactly the configured lifetime: accepted');
  const cases: [string, string][] = [
    ['ten years', await signed(at, at + 10 * 365 * 86400)],
    ['one second too long', await signed(at, at + ttl + 1)],
    ['issued an hour ago, a lifetime of a day', await signed(at - 3600, at - 3600 + 86400)],
    ['no iat', await signed(undefined, at + 60)],
    ['issued in the future, to outlive the rule', await signed(at + 10 * 365 * 86400, at + 10 * 365 * 86400 + 60)],
  ];
  for (const [label, token] of cases) {
    const res = await me(token);
    t.equal(res.status, 401, `${label} → 401`);
    t.equal(res.body.error.code, 'UNAUTHORIZED');
    t.equal((await svc.api('GET', '/api/agents', { token })).status, 401, `${label} → 401 on any route`);
  }
});

t.test('sessions: logout revokes; refresh-token reuse revokes the whole session', async (t) => {
  const s = await signUp(svc.api, 'Sessions Co');
  const r1 = await svc.api('POST', '/api/auth/refresh', { body: { refresh_token: s.refreshToken } });
  t.equal(r1.status, 200);
  const reuse = await svc.api('POST', '/api/auth/refresh', { body: { refresh_token: s.refreshToken } });
  t.equal(reuse.status, 401, 'the rotated refresh token is refused');
  t.equal(reuse.body.error.code, 'REFRESH_FAILED');
  t.equal((await me(r1.body.session.access_token)).status, 401, 'the whole session is revoked: its newest access token too');
  t.equal((await svc.api('POST', '/api/auth/refresh', { body: { refresh_token: r1.body.session.refresh_token } })).status, 401, 'and its newest refresh token');

  const s2 = await signUp(svc.api, 'Logout Co');
  t.equal((await svc.api('POST', '/api/auth/logout', { token: s2.token })).status, 204);
  t.equal((await me(s2.token)).status, 401, 'the access token stops at logout');
  t.equal((await svc.api('POST', '/api/auth/refresh', { body: { refresh_token: s2.refreshToken } })).status, 401, 'and the refresh token');
  const apiTokenRes = await svc.api('POST', '/api/api-tokens', { token: user.token, body: { name: 'x' } });
  t.equal((await svc.api('POST', '/api/auth/logout', { token: apiTokenRes.body.apiToken.token })).status, 401, 'logout needs a session, not an API token');
});

t.test('rate limits on refresh and register', async (t) => {
  let refresh = 0;
  let last;
  for (let i = 0; i < 8; i++) {
    last = await svc.api('POST', '/api/auth/refresh', { body: { refresh_token: `rt_nope${i}` } });
    if (last.status === 429) break;
    refresh++;
  }
  t.equal(last!.status, 429, `refresh limited after ${refresh} tries`);
  t.ok(Number(last!.headers.get('retry-after')) > 0, 'with Retry-After');
  let reg;
  for (let i = 0; i < 8; i++) {
    reg = await svc.api('POST', '/api/auth/register', { body: { email: 'not-an-email', password: 'x', companyName: 'y' } });
    if (reg.status === 429) break;
  }
  t.equal(reg!.status, 429, 'register limited per IP');
  t.equal(reg!.body.error.code, 'RATE_LIMITED');
});

t.test('security headers on the API and the dashboard', async (t) => {
  for (const path of ['/api/agents', '/healthz', '/', '/api/nothing']) {
    const res = await fetch(svc.url + path, { headers: { authorization: `Bearer ${user.token}` } });
    await res.arrayBuffer();
    t.equal(res.headers.get('x-content-type-options'), 'nosniff', `${path}: nosniff`);
    t.ok(res.headers.get('x-frame-options') || /frame-ancestors/.test(res.headers.get('content-security-policy') ?? ''), `${path}: no framing`);
    t.ok(res.headers.get('strict-transport-security'), `${path}: HSTS`);
    t.equal(res.headers.get('x-powered-by'), null, `${path}: no x-powered-by`);
    t.ok(res.headers.get('referrer-policy'), `${path}: referrer policy`);
  }
  const dash = await fetch(svc.url + '/');
  await dash.arrayBuffer();
  t.match(dash.headers.get('content-security-policy') ?? '', /default-src 'self'|script-src/, 'the dashboard has a Content-Security-Policy');
});

t.test('CORS closed by default', async (t) => {
  const origin = 'https://evil.example';
  const get = await fetch(svc.url + '/api/agents', { headers: { origin, authorization: `Bearer ${user.token}` } });
  await get.arrayBuffer();
  t.equal(get.headers.get('access-control-allow-origin'), null, 'no Access-Control-Allow-Origin on API answers');
  t.equal(get.headers.get('access-control-allow-credentials'), null);
  const pre = await fetch(svc.url + '/api/agents', { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' } });
  await pre.arrayBuffer();
  t.equal(pre.headers.get('access-control-allow-origin'), null, 'preflight not granted');
  t.equal(pre.headers.get('access-control-allow-methods'), null);
  t.equal(pre.headers.get('access-control-allow-headers'), null);
  const login = await fetch(svc.url + '/api/auth/login', { method: 'POST', headers: { origin, 'content-type': 'application/json' }, body: JSON.stringify({ email: user.email, password: user.password }) });
  await login.arrayBuffer();
  t.equal(login.headers.get('access-control-allow-origin'), null, 'not on login either');
});
