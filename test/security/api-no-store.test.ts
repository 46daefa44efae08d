import t from 'tap';
import { signUp, startTestService } from '../support/service.js';
import { createAgent, createIntegration, deliver, dropNatsPrefixAtEnd } from '../support/webhooks.js';

/**
 * Every `/api/*` answer carries account data, tokens or at least who asked: none may be kept
 * by a browser or a shared cache. `Cache-Control: no-store` on successes and errors alike,
 * including answers given before any route runs (401 from a router's authentication, 404 of
 * no route, 400 of a body refused by the parser) and the webhook fast path outside express.
 */
const svc = await startTestService(t, 'nostore');
dropNatsPrefixAtEnd(t, svc);
const user = await signUp(svc.api, 'No Store Co');
const agentId = await createAgent(svc.api, user.token);
const integration = await createIntegration(svc.api, user.token, { name: 'Desk', agentId });
const message = { message_id: 1, type: 'from_client', text: 'hi', client_id: 'c-1', channel_id: 'ch', transport: 'telegram', request_id: 3 };

t.test('no-store on every /api answer, success or error', async (t) => {
  const cases: [string, () => ReturnType<typeof svc.api>, number][] = [
    ['GET /api/agents', () => svc.api('GET', '/api/agents', { token: user.token }), 200],
    ['POST /api/agents', () => svc.api('POST', '/api/agents', { token: user.token, body: { name: 'Second' } }), 201],
    ['GET /api/auth/me', () => svc.api('GET', '/api/auth/me', { token: user.token }), 200],
    ['POST /api/auth/login', () => svc.api('POST', '/api/auth/login', { body: { email: user.email, password: user.password } }), 200],
    ['POST /api/auth/login, wrong password', () => svc.api('POST', '/api/auth/login', { body: { email: user.email, password: 'wrong password' } }), 401],
    ['GET /api/agents without a token', () => svc.api('GET', '/api/agents'), 401],
    ['GET /api/api-tokens/x/y without a token (router-level 401)', () => svc.api('GET', '/api/api-tokens/x/y'), 401],
    ['GET /api/agents/999999', () => svc.api('GET', '/api/agents/999999', { token: user.token }), 404],
    ['GET /api/no-such-route', () => svc.api('GET', '/api/no-such-route'), 404],
    ['POST malformed JSON', () => svc.api('POST', '/api/agents', { token: user.token, rawBody: '{"name":', headers: { 'content-type': 'application/json' } }), 400],
    ['GET webhook verification', () => svc.api('GET', `/api/webhook/helpdesk/${integration.id}`), 200],
    ['GET webhook verification, unknown integration', () => svc.api('GET', '/api/webhook/helpdesk/999999'), 404],
    ['POST webhook (fast path)', () => deliver(svc.api, integration.id, message, { secret: integration.webhookSecret }), 200],
    ['POST webhook, bad signature (fast path)', () => deliver(svc.api, integration.id, message, { secret: 'not-the-secret' }), 401],
    ['POST webhook, unknown integration (fast path)', () => deliver(svc.api, 999_999, message, { secret: 'x' }), 404],
    ['POST webhook, not JSON (fast path)', () => deliver(svc.api, integration.id, 'not json', { secret: integration.webhookSecret }), 400],
  ];
  for (const [label, send, status] of cases) {
    const res = await send();
    t.equal(res.status, status, `${label} → ${status}`);
    t.equal(res.headers.get('cache-control'), 'no-store', `${label}: Cache-Control: no-store`);
  }
});

t.test('outside /api the dashboard and health keep their own caching', async (t) => {
  const health = await svc.api('GET', '/healthz');
  t.equal(health.status, 200);
  t.not(health.headers.get('cache-control'), 'no-store', '/healthz is not an API answer');
  const dashboard = await svc.api('GET', '/');
  t.equal(dashboard.headers.get('cache-control'), 'no-cache', 'the dashboard document revalidates');
});
