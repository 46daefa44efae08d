import t from 'tap';
import { signUp, startTestService } from '../support/service.js';
import { dropNatsPrefixAtEnd } from '../support/webhooks.js';

/**
 * ENFORCE_HTTPS covers the whole API, not only webhooks: an `/api/*` request that did not
 * arrive over TLS (directly, or through a trusted proxy saying `X-Forwarded-Proto: https`)
 * gets 403 HTTPS_REQUIRED before any route runs, so no password or token is accepted in
 * clear text. Health, readiness, metrics and the dashboard's files stay reachable.
 */
const svc = await startTestService(t, 'httpsapi');
dropNatsPrefixAtEnd(t, svc);
const user = await signUp(svc.api, 'TLS Co');

t.test('ENFORCE_HTTPS=true: plain HTTP to the API is refused', async (t) => {
  const strict = await startTestService(t, 'httpsstrict', { env: { ENFORCE_HTTPS: 'true' } });
  dropNatsPrefixAtEnd(t, strict);
  const cases: [string, string, Parameters<typeof strict.api>[2]][] = [
    ['POST', '/api/auth/login', { body: { email: user.email, password: user.password } }],
    ['POST', '/api/auth/register', { body: { email: 'x@example.com', password: 'password-123', companyName: 'X' } }],
    ['GET', '/api/agents', { token: user.token }],
    ['GET', '/api/no-such-route', {}],
    ['GET', '/api/webhook/helpdesk/1', {}],
  ];
  for (const [method, path, options] of cases) {
    const res = await strict.api(method, path, options);
    t.equal(res.status, 403, `${method} ${path} → 403`);
    t.equal(res.body.error?.code, 'HTTPS_REQUIRED', `${method} ${path}: HTTPS_REQUIRED`);
  }
  const spoofed = await strict.api('GET', '/api/auth/me', { token: user.token, headers: { 'x-forwarded-proto': 'https' } });
  t.equal(spoofed.status, 403, 'without TRUST_PROXY a client cannot claim https');

  for (const path of ['/healthz', '/readyz', '/metrics', '/']) t.equal((await strict.api('GET', path)).status, 200, `${path} stays reachable`);
  const html = (await strict.api('GET', '/')).body as string;
  const asset = /src="(\/app\/[^"]+\.js)"/.exec(html)?.[1];
  t.ok(asset, 'the dashboard names its script');
  t.equal((await strict.api('GET', asset!)).status, 200, 'the dashboard\'s files stay reachable');
});

t.test('ENFORCE_HTTPS=true behind a trusted proxy (TRUST_PROXY=1): X-Forwarded-Proto https is allowed', async (t) => {
  const proxied = await startTestService(t, 'httpsproxy', { env: { ENFORCE_HTTPS: 'true', TRUST_PROXY: '1' } });
  dropNatsPrefixAtEnd(t, proxied);
  const https = { 'x-forwarded-proto': 'https' };
  const register = await proxied.api('POST', '/api/auth/register', { body: { email: user.email, password: user.password, companyName: 'Proxied Co' }, headers: https });
  t.equal(register.status, 201, 'sign-up through the proxy');
  const login = await proxied.api('POST', '/api/auth/login', { body: { email: user.email, password: user.password }, headers: https });
  t.equal(login.status, 200, 'login through the proxy');
  const me = await proxied.api('GET', '/api/auth/me', { token: login.body.session.access_token, headers: https });
  t.equal(me.status, 200, 'an authenticated call through the proxy');
  const plain = await proxied.api('GET', '/api/auth/me', { token: login.body.session.access_token, headers: { 'x-forwarded-proto': 'http' } });
  t.equal(plain.status, 403, 'the proxy saying http is refused');
  t.equal(plain.body.error.code, 'HTTPS_REQUIRED');
});

t.test('not enforced (the default outside production): plain HTTP works', async (t) => {
  t.equal(svc.config.enforceHttps, false);
  t.equal((await svc.api('GET', '/api/auth/me', { token: user.token })).status, 200);
});

