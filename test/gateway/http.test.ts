import t from 'tap';
import { startTestService, signUp } from '../support/service.js';

t.test('health, readiness and metrics', async (t) => {
  const svc = await startTestService(t, 'health');
  t.same((await svc.api('GET', '/healthz')).body, { ok: true });
  const ready = await svc.api('GET', '/readyz');
  t.equal(ready.status, 200);
  t.same(ready.body, { ok: true, checks: { postgres: 'ok', nats: 'ok' } }, 'ready (how the streams are replicated only for the metrics token: test/security/metrics.test.ts)');
  await svc.api('GET', '/api/billing');
  const metrics = await svc.api('GET', '/metrics');
  t.equal(metrics.status, 200);
  t.match(metrics.body, /http_request_duration_seconds_count\{method="GET",route="\/api\/billing",status="401"\} 1/);
  await svc.nc.close();
  const down = await svc.api('GET', '/readyz');
  t.equal(down.status, 503);
  t.same(down.body.checks, { postgres: 'ok', nats: 'unreachable' });
  t.match(down.body.error, { code: 'NOT_READY', message: /NATS/ });
});

t.test('error shapes: unknown route, malformed JSON, unexpected failure', async (t) => {
  const svc = await startTestService(t, 'errors');
  const s = await signUp(svc.api);
  const nf = await svc.api('GET', '/api/nothing-here');
  t.equal(nf.status, 404);
  t.same(Object.keys(nf.body.error).sort(), ['code', 'message']);
  t.equal(nf.body.error.code, 'NOT_FOUND');
  const bad = await svc.api('POST', '/api/agents', { token: s.token, rawBody: '{"name": "x",', headers: { 'content-type': 'application/json' } });
  t.equal(bad.status, 400);
  t.equal(bad.body.error.code, 'VALIDATION_ERROR');
  const big = await svc.api('POST', '/api/agents', { token: s.token, body: { name: 'x', systemPrompt: 'y'.repeat(1.1 * 1024 * 1024) } });
  t.equal(big.status, 413);
  t.equal(big.body.error.code, 'PAYLOAD_TOO_LARGE');

  // An unexpected database failure: the table the route reads is gone (put back afterwards).
  await svc.orm.em.getConnection().execute('alter table agents rename to agents_away');
  t.teardown(() => svc.orm.em.getConnection().execute('alter table agents_away rename to agents'));
  const res = await svc.api('GET', '/api/agents', { token: s.token });
  t.equal(res.status, 500);
  t.equal(res.body.error.code, 'INTERNAL_ERROR');
  t.match(res.body.error.requestId, /^[0-9a-f-]{36}$/);
  t.equal(res.headers.get('x-request-id'), res.body.error.requestId);
  t.notMatch(JSON.stringify(res.body), /at .*\.ts|Error:|stack/i, 'no stack trace in the body');
});
