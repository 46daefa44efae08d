import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import t from 'tap';
import { waitForDocument } from '../support/knowledge.js';
import { listenLocal } from '../support/local-server.js';
import { signUp, startTestService } from '../support/service.js';
import { createAgent } from '../support/webhooks.js';

/**
 * The operator's own helpdesk instances (HELPDESK_GLOBAL_URL, HELPDESK_EUROPE_URL) are
 * trusted: they may live on a private address. Where they redirect is not: every hop of a
 * chain that starts at a trusted origin is checked against the address rules like any other
 * (ALLOW_PRIVATE_URLS off, as in production). Here the "trusted helpdesk" is a local stand-in
 * on 127.0.0.1 that redirects to an internal service on 127.0.0.2, which must never hear a
 * request, and whose page must never reach a tenant.
 */
const SECRET_PAGE = 'internal-only admin page: db password hunter2';

const heard: string[] = [];
const internal = createServer((req, res) => {
  heard.push(`${req.method} ${req.url}`);
  res.writeHead(200, { 'content-type': 'text/html' }).end(`<html><body><h1>Admin</h1><p>${SECRET_PAGE}</p></body></html>`);
});
await new Promise<void>((resolve) => internal.listen(0, '127.0.0.2', resolve));
t.teardown(() => new Promise<void>((resolve) => {
  internal.closeAllConnections();
  internal.close(() => resolve());
}));
const internalUrl = `http://127.0.0.2:${(internal.address() as { port: number }).port}`;

/** The trusted helpdesk: answers its own API for token `good`, redirects to the internal service otherwise. */
function trustedHelpdesk(req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://x');
  const json = (status: number, body: unknown): void => void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  if (url.pathname === '/v1/companies/api_info') {
    if (req.headers.authorization === 'good') return json(200, { status: 'success', data: { company: 'ok' } });
    // Same origin: still the trusted instance.
    if (req.headers.authorization === 'hop' && !url.searchParams.has('again')) return void res.writeHead(302, { location: '/v1/companies/api_info?again=1' }).end();
    if (req.headers.authorization === 'hop') return json(200, { status: 'success', data: { company: 'ok' } });
    return void res.writeHead(302, { location: `${internalUrl}/admin` }).end();
  }
  if (url.pathname === '/v1/webhooks') return void res.writeHead(307, { location: `${internalUrl}/v1/webhooks` }).end();
  if (url.pathname === '/help') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('We open at nine.');
  if (url.pathname === '/docs') return void res.writeHead(302, { location: `${internalUrl}/admin` }).end();
  json(404, { status: 'error' });
}
const globalDesk = await listenLocal(createServer(trustedHelpdesk), t);
const europeDesk = await listenLocal(createServer(trustedHelpdesk), t);

const svc = await startTestService(t, 'trusted_redirects', {
  env: { ALLOW_PRIVATE_URLS: 'false', HELPDESK_GLOBAL_URL: globalDesk.url, HELPDESK_EUROPE_URL: europeDesk.url },
});
const user = await signUp(svc.api, 'Redirect Co');
const agentId = await createAgent(svc.api, user.token);
const leaks = (body: unknown) => JSON.stringify(body).includes('hunter2');

t.test('baseline: the trusted instance itself is reached, on a loopback address, and its same-origin redirects followed', async (t) => {
  const direct = await svc.api('POST', '/api/integrations', { token: user.token, body: { type: 'helpdesk', name: 'Direct', agentId, apiToken: 'good' } });
  t.equal(direct.status, 201, 'the token probe reached the trusted instance');
  t.equal(direct.body.integration.apiUrl, globalDesk.url);
  const hop = await svc.api('POST', '/api/integrations', { token: user.token, body: { type: 'helpdesk', name: 'Hop', agentId, apiToken: 'hop' } });
  t.equal(hop.status, 201, 'a redirect within the trusted origin is followed');
  t.same(heard, []);
});

t.test('the token probe: a redirect from the trusted instance to an internal address is refused', async (t) => {
  const res = await svc.api('POST', '/api/integrations', { token: user.token, body: { type: 'helpdesk', name: 'Probe', agentId, apiToken: 'redirect-me' } });
  t.equal(res.status, 502);
  t.match(res.body.error, { code: 'UPSTREAM_ERROR', message: /private, loopback or link-local/ });
  t.notOk(leaks(res.body), 'nothing of the internal page');
  t.same(heard, [], 'the internal service heard nothing');
});

t.test('register-webhook at the trusted instance: its redirect to an internal address is refused', async (t) => {
  const desk = await svc.api('POST', '/api/integrations', { token: user.token, body: { type: 'helpdesk', name: 'Hooks', agentId, apiUrl: globalDesk.url, apiToken: 'good' } });
  t.equal(desk.status, 201);
  const res = await svc.api('POST', `/api/integrations/${desk.body.integration.id}/register-webhook`, { token: user.token });
  t.equal(res.status, 502);
  t.match(res.body.error, { code: 'UPSTREAM_ERROR', message: /private, loopback or link-local/ });
  t.notOk(leaks(res.body));
  t.same(heard, [], 'the internal service heard nothing');
});

t.test('a document URL at the trusted origin: its redirect to an internal address fails the document, the page never stored', async (t) => {
  const kb = (await svc.api('POST', '/api/knowledge-bases', { token: user.token, body: { name: 'Docs' } })).body.knowledgeBase;
  const add = async (url: string) => {
    const res = await svc.api('POST', `/api/knowledge-bases/${kb.id}/documents`, { token: user.token, body: { url } });
    t.equal(res.status, 201, url);
    return waitForDocument(svc.api, user.token, kb.id, res.body.document.id);
  };
  t.match(await add(`${globalDesk.url}/help`), { status: 'ready' }, 'the trusted origin\'s own page is fetched');
  const doc = await add(`${globalDesk.url}/docs`);
  t.match(doc, { status: 'failed', error: /private, loopback|internal/ });
  const everything = await svc.api('GET', `/api/knowledge-bases/${kb.id}/documents/${doc.id}`, { token: user.token });
  const search = await svc.api('GET', `/api/knowledge-bases/${kb.id}/search?q=hunter2`, { token: user.token });
  t.notOk(leaks(everything.body) || leaks(search.body), 'nothing of the internal page reaches the tenant');
  t.same(heard, [], 'the internal service heard nothing');
});
