import t from 'tap';
import { signUp, startTestService } from '../support/service.js';
import { createAgent, createIntegration, deliver, dropNatsPrefixAtEnd, eventually, inboundCount, startPeerGateway, startPrivateNats } from '../support/webhooks.js';

const svc = await startTestService(t, 'webhook_cache');
dropNatsPrefixAtEnd(t, svc);
const { api } = svc;
const owner = await signUp(api, 'Cache Co');
const agentId = await createAgent(api, owner.token);
let n = 0;
const message = () => ({ hook_type: 'inbox', message_id: ++n, text: 'hi', client_id: 1, channel_id: 2, transport: 'telegram' });
const patch = (id: number, body: unknown) => api('PATCH', `/api/integrations/${id}`, { token: owner.token, body });

t.test('a change applies to the next webhook of this gateway, without a restart', async (t) => {
  const i = await createIntegration(api, owner.token, { name: 'Desk', agentId });
  t.equal((await deliver(api, i.id, message(), { secret: i.webhookSecret })).status, 200, 'cached as active');
  t.equal((await patch(i.id, { active: false })).status, 200);
  t.equal((await deliver(api, i.id, message(), { secret: i.webhookSecret })).status, 403, 'right after PATCH {active:false}');
  t.equal((await patch(i.id, { active: true })).status, 200);
  t.equal((await deliver(api, i.id, message(), { secret: i.webhookSecret })).status, 200, 'right after PATCH {active:true}');
  const rotated = await api('POST', `/api/integrations/${i.id}/rotate-secret`, { token: owner.token });
  t.equal((await deliver(api, i.id, message(), { secret: rotated.body.integration.webhookSecret })).status, 200, 'the new secret right after rotation');
  t.equal((await api('DELETE', `/api/integrations/${i.id}`, { token: owner.token })).status, 204);
  t.equal((await deliver(api, i.id, message(), { secret: rotated.body.integration.webhookSecret })).status, 404, 'right after DELETE');
});

t.test('changes reach another gateway instance through NATS', async (t) => {
  const peer = await startPeerGateway(t, svc);
  const i = await createIntegration(api, owner.token, { name: 'Shared', agentId });
  const via = (secret: string) => deliver(peer.api, i.id, message(), { secret });
  t.equal((await via(i.webhookSecret)).status, 200, 'the peer loaded it (and now serves it from memory)');
  t.equal((await via(i.webhookSecret)).status, 200);

  t.equal((await patch(i.id, { active: false })).status, 200);
  t.ok(await eventually(async () => (await via(i.webhookSecret)).status === 403), 'the peer answers 403 soon after the deactivation');
  t.equal((await patch(i.id, { active: true })).status, 200);
  t.ok(await eventually(async () => (await via(i.webhookSecret)).status === 200), 'and 200 again after reactivation');

  const rotated = await api('POST', `/api/integrations/${i.id}/rotate-secret`, { token: owner.token });
  const fresh: string = rotated.body.integration.webhookSecret;
  t.ok(await eventually(async () => (await via(fresh)).status === 200), 'the peer accepts the new secret');

  t.equal((await api('DELETE', `/api/integrations/${i.id}`, { token: owner.token })).status, 204);
  t.ok(await eventually(async () => (await via(fresh)).status === 404), 'the peer forgets a deleted integration');

  // An id that did not exist yet is remembered as unknown only briefly, and creation clears it.
  const next = i.id + 1;
  t.equal((await deliver(peer.api, next, message(), { secret: 'x' })).status, 404);
  const created = await createIntegration(api, owner.token, { name: 'Next', agentId });
  t.equal(created.id, next);
  t.ok(await eventually(async () => (await deliver(peer.api, next, message(), { secret: created.webhookSecret })).status === 200), 'a new integration is found at once');
});

t.test('503 QUEUE_UNAVAILABLE, quickly, when NATS cannot take the message', async (t) => {
  const nats = await startPrivateNats(t);
  // PUBLISH_TIMEOUT_MS bounds how long a publish rides out an outage before 503.
  const peer = await startPeerGateway(t, svc, { config: { natsUrl: nats.url, publishTimeoutMs: 2500 } });
  const i = await createIntegration(api, owner.token, { name: 'Outage', agentId });
  t.equal((await deliver(peer.api, i.id, message(), { secret: i.webhookSecret })).status, 200, 'accepted while NATS is up');
  t.equal(await inboundCount(peer.nc, svc.config.natsPrefix), 1, 'stored in that NATS');

  await nats.kill();
  const started = Date.now();
  const res = await deliver(peer.api, i.id, message(), { secret: i.webhookSecret });
  const took = Date.now() - started;
  t.equal(res.status, 503);
  t.equal(res.body.error.code, 'QUEUE_UNAVAILABLE');
  t.ok(took < 4000, `answered in ${took} ms`);

  // A closed connection answers at once.
  await peer.nc.close();
  const startedClosed = Date.now();
  const closed = await deliver(peer.api, i.id, message(), { secret: i.webhookSecret });
  t.equal(closed.status, 503);
  t.ok(Date.now() - startedClosed < 1000, 'without waiting for a timeout');
});

t.test('HTTPS enforced: plain HTTP is refused, a trusted proxy saying https is not', async (t) => {
  const peer = await startPeerGateway(t, svc, { config: { enforceHttps: true, trustProxy: 'loopback' } });
  const i = await createIntegration(api, owner.token, { name: 'TLS only', agentId });
  const plain = await deliver(peer.api, i.id, message(), { secret: i.webhookSecret });
  t.equal(plain.status, 403);
  t.equal(plain.body.error.code, 'HTTPS_REQUIRED');
  t.equal((await deliver(peer.api, 999_999, message(), { secret: i.webhookSecret })).status, 404, 'an unknown integration is still 404');
  const proxied = await peer.api('POST', `/api/webhook/helpdesk/${i.id}`, {
    rawBody: JSON.stringify(message()),
    headers: { 'x-forwarded-proto': 'https', 'x-webhook-signature': 'sha256=' + '0'.repeat(64) },
  });
  t.equal(proxied.status, 401, 'through the proxy it reaches the signature check');

  const untrusting = await startPeerGateway(t, svc, { config: { enforceHttps: true, trustProxy: false } });
  const spoofed = await untrusting.api('POST', `/api/webhook/helpdesk/${i.id}`, {
    rawBody: JSON.stringify(message()),
    headers: { 'x-forwarded-proto': 'https', 'x-webhook-signature': 'sha256=' + '0'.repeat(64) },
  });
  t.equal(spoofed.status, 403, 'a client that is not a trusted proxy cannot claim https');
  t.equal(spoofed.body.error.code, 'HTTPS_REQUIRED');
});
