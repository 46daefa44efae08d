import { connect, type Socket } from 'node:net';
import t from 'tap';
import { signUp, startTestService } from '../support/service.js';
import { createAgent, createIntegration, dropNatsPrefixAtEnd } from '../support/webhooks.js';
import { signBody } from '../../gateway/webhook/signature.js';

/**
 * Request size limits (bodies, headers) and slow-loris connections: hundreds of sockets
 * trickling their headers do not exhaust the gateway; a normal request still answers quickly.
 */
const svc = await startTestService(t, 'limits');
dropNatsPrefixAtEnd(t, svc);
const owner = await signUp(svc.api, 'Limits Co');
const agentId = await createAgent(svc.api, owner.token);
const integration = await createIntegration(svc.api, owner.token, { name: 'Desk', agentId });
const { hostname, port } = new URL(svc.url);

/** Sends raw bytes, returns the status line (or '' when the server closed without answering). */
function raw(bytes: string | Buffer, timeoutMs = 5000): Promise<string> {
  return new Promise((resolve) => {
    const s = connect(Number(port), hostname);
    let got = '';
    const done = () => {
      clearTimeout(timer);
      s.destroy();
      resolve(got.split('\r\n')[0] ?? '');
    };
    const timer = setTimeout(done, timeoutMs);
    s.on('data', (d) => {
      got += d.toString('latin1');
      if (got.includes('\r\n\r\n')) done();
    });
    s.on('error', done);
    s.on('close', done);
    s.write(bytes);
  });
}

t.test('body limits', async (t) => {
  const big = await svc.api('POST', '/api/agents', { token: owner.token, body: { name: 'x', systemPrompt: 'y'.repeat(1.2 * 1024 * 1024) } });
  t.equal(big.status, 413, 'API JSON over 1 MiB → 413');
  t.equal(big.body.error.code, 'PAYLOAD_TOO_LARGE');
  const body = Buffer.from(JSON.stringify({ text: 'z'.repeat(1.1 * 1024 * 1024), client_id: 'c' }));
  const hook = await svc.api('POST', `/api/webhook/helpdesk/${integration.id}`, { rawBody: body, headers: { 'content-type': 'application/json', 'x-webhook-signature': signBody(integration.webhookSecret, body) } });
  t.equal(hook.status, 413, 'signed webhook over 1 MiB → 413');
  const declared = await raw(`POST /api/webhook/helpdesk/${integration.id} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${64 * 1024 * 1024}\r\n\r\n{`);
  t.match(declared, /^HTTP\/1\.1 413/, 'a declared 64 MiB body is refused before it is read');
});

t.test('header limits', async (t) => {
  const huge = await raw(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(64 * 1024)}\r\n\r\n`);
  t.match(huge, /^HTTP\/1\.1 431/, 'headers over the limit → 431');
  const many = await raw(`GET /healthz HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 3000 }, (_, i) => `X-H${i}: v`).join('\r\n')}\r\n\r\n`);
  t.match(many, /^HTTP\/1\.1 (431|400)/, 'thousands of headers → refused');
  const bearer = await svc.api('GET', '/api/agents', { headers: { authorization: `Bearer ${'a'.repeat(12_000)}` } });
  t.equal(bearer.status, 401, 'an absurd bearer token is a plain 401');
});

t.test('slow-loris: 300 sockets trickling headers do not starve a normal request', async (t) => {
  const sockets: Socket[] = [];
  t.teardown(() => {
    for (const s of sockets) s.destroy();
  });
  for (let i = 0; i < 300; i++) {
    const s = connect(Number(port), hostname);
    s.on('error', () => {});
    s.write(`POST /api/webhook/helpdesk/${integration.id} HTTP/1.1\r\nHost: x\r\n`);
    sockets.push(s);
  }
  const trickle = setInterval(() => {
    for (const s of sockets) if (!s.destroyed) s.write(`X-Slow-${Math.random().toString(36).slice(2, 6)}: 1\r\n`);
  }, 500);
  t.teardown(() => clearInterval(trickle));
  await new Promise((r) => setTimeout(r, 1500));
  for (let i = 0; i < 5; i++) {
    const started = Date.now();
    const res = await svc.api('GET', '/api/agents', { token: owner.token });
    const took = Date.now() - started;
    t.equal(res.status, 200, 'a normal request succeeds');
    t.ok(took < 1000, `quickly (${took} ms)`);
  }
  t.ok(svc.gateway.server.headersTimeout > 0 && svc.gateway.server.headersTimeout <= 20_000, `slow headers are cut after ${svc.gateway.server.headersTimeout} ms`);
  t.ok(svc.gateway.server.requestTimeout > 0 && svc.gateway.server.requestTimeout <= 60_000, `a whole request is bounded by ${svc.gateway.server.requestTimeout} ms`);
});
