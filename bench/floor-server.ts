import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { endOfTurn } from '../lib/inbound.js';
import { ensureStreams, streamNames } from '../lib/streams.js';

/**
 * The ingress floor: the least any webhook endpoint with our guarantees must do per request,
 * hand-written on node:http. Read the raw body, check its HMAC-SHA256 (`x-webhook-signature:
 * sha256=<hex>`) against the integration's secret with timingSafeEqual, publish the body to
 * JetStream and await the ack, answer 200 {"ok":true}. The stream has the same settings as the
 * gateway's (lib/streams.ts ensureStreams) and every publish carries a Nats-Msg-Id (the
 * signature, unique per body), so the server does the same dedup work as for the gateway.
 * No routing, no JSON parsing, no validation, no metrics, no logging.
 *
 * Env: PORT (0 = any), NATS_URL, NATS_PREFIX (its own stream), SECRET; NO_ASYNC_TRACES=1 connects
 * with the client's `noAsyncTraces` (no Error created per request to keep the caller's stack);
 * COALESCE=1 holds each publish to the end of the event loop's turn, as the gateway does, so
 * that the publishes of one turn leave in one socket write (lib/inbound.ts).
 * Prints one JSON line {"msg":"floor listening","url":...} when ready; SIGTERM stops it.
 */
const prefix = process.env.NATS_PREFIX ?? 'benchfloor';
const secret = process.env.SECRET ?? '';
const nc = await connect({ servers: process.env.NATS_URL ?? 'nats://127.0.0.1:4222', name: `bench-floor-${process.pid}`, noAsyncTraces: process.env.NO_ASYNC_TRACES === '1' });
const names = streamNames(prefix);
await ensureStreams(nc, names);
const js = jetstream(nc);
const subject = names.inboundSubject(0, 0);
const OK = Buffer.from('{"ok":true}');
const coalesce = process.env.COALESCE === '1';
const HEADER = 'x-webhook-signature';

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    const claimed = String(req.headers[HEADER] ?? '');
    const hex = claimed.startsWith('sha256=') ? claimed.slice(7) : claimed;
    const expected = createHmac('sha256', secret).update(body).digest();
    const given = Buffer.from(hex, 'hex');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"ok":false}');
      return;
    }
    const publish = () =>
      void js.publish(subject, body, { msgID: hex, timeout: 2500 }).then(
        () => res.writeHead(200, { 'content-type': 'application/json', 'content-length': OK.length }).end(OK),
        () => res.writeHead(503, { 'content-type': 'application/json' }).end('{"ok":false}'),
      );
    if (coalesce) void endOfTurn().then(publish);
    else publish();
  });
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ msg: 'floor listening', url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })}\n`);
});

const stop = () => {
  server.close();
  server.closeAllConnections();
  void nc.drain().finally(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
