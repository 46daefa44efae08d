import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import t, { type Test } from 'tap';
import { guardForUrl, isPublicAddress, publicAddressesOnly, type AddressGuard } from '../../lib/address-guard.js';
import { OutboundError } from '../../lib/outbound-errors.js';
import { outboundFetch, outboundRequest } from '../../lib/outbound-http.js';
import { listenLocal } from '../support/local-server.js';

/**
 * Every outbound call (helpdesk, models, fetched pages) goes through lib/outbound-http.ts.
 * These tests talk to real local servers: a server that never stops sending, one that never
 * answers, servers that redirect to where they should not.
 */
interface Listener {
  url: string;
  port: number;
  hits: { path: string; headers: IncomingMessage['headers'] }[];
  /** Bytes the server managed to write before the client hung up. */
  written: () => number;
}

async function listen(t: Test, handler: (req: IncomingMessage, res: ServerResponse, l: Listener) => void, host = '127.0.0.1'): Promise<Listener> {
  let written = 0;
  const l: Listener = { url: '', port: 0, hits: [], written: () => written };
  const server = createServer((req, res) => {
    l.hits.push({ path: req.url ?? '', headers: req.headers });
    const write = res.write.bind(res);
    res.write = ((chunk: Buffer | string, ...rest: never[]) => {
      written += Buffer.byteLength(chunk);
      return write(chunk, ...rest);
    }) as typeof res.write;
    handler(req, res, l);
  });
  if (host === '127.0.0.1') {
    const { url } = await listenLocal(server, t);
    l.url = url;
  } else {
    await new Promise<void>((resolve) => server.listen(0, host, resolve));
    l.url = `http://${host}:${(server.address() as { port: number }).port}`;
    t.teardown(() => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }));
  }
  l.port = Number(new URL(l.url).port);
  return l;
}

/** Streams 64 KiB chunks until the client goes away (a ~560 MiB answer, or an endless one). */
function endless(res: ServerResponse, contentLength?: number): void {
  res.writeHead(200, { 'content-type': 'application/json', ...(contentLength ? { 'content-length': String(contentLength) } : {}) });
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  const pump = () => {
    while (!res.destroyed && res.write(chunk));
    if (!res.destroyed) res.once('drain', pump);
  };
  res.write('{"data":"');
  pump();
}

const errorOf = async (p: Promise<unknown>): Promise<OutboundError> => {
  try {
    await p;
  } catch (err) {
    return err as OutboundError;
  }
  throw new Error('expected a failure');
};

t.test('an answer larger than the cap is cut off, never buffered whole', async (t) => {
  const server = await listen(t, (_req, res) => endless(res));
  const started = Date.now();
  const memBefore = process.memoryUsage().rss;
  const err = await errorOf(outboundRequest({ method: 'POST', url: `${server.url}/v1/messages`, body: Buffer.from('{}'), timeoutMs: 10_000, maxBodyBytes: 1024 * 1024 }));
  t.type(err, OutboundError);
  t.equal(err.code, 'BODY_TOO_LARGE');
  t.ok(Date.now() - started < 5000, 'refused as soon as the cap is passed');
  t.ok(process.memoryUsage().rss - memBefore < 64 * 1024 * 1024, 'the process did not take the body into memory');
  await new Promise((r) => setTimeout(r, 100));
  t.ok(server.written() < 64 * 1024 * 1024, `the connection was closed early (the server wrote ${(server.written() / 1048576).toFixed(1)} MiB)`);

  const declared = await listen(t, (_req, res) => endless(res, 600 * 1024 * 1024));
  const err2 = await errorOf(outboundRequest({ method: 'GET', url: declared.url, timeoutMs: 10_000, maxBodyBytes: 1024 * 1024 }));
  t.equal(err2.code, 'BODY_TOO_LARGE', 'a declared 600 MiB answer is refused from its header');
});

t.test('a server that never answers: TIMEOUT at the deadline', async (t) => {
  const server = await listen(t, () => {});
  const started = Date.now();
  const err = await errorOf(outboundRequest({ method: 'GET', url: server.url, timeoutMs: 300, maxBodyBytes: 1024 }));
  t.equal(err.code, 'TIMEOUT');
  t.ok(Date.now() - started < 2000);
  const slowBody = await listen(t, (_req, res) => {
    res.writeHead(200);
    res.write('{"a":');
  });
  t.equal((await errorOf(outboundRequest({ method: 'GET', url: slowBody.url, timeoutMs: 300, maxBodyBytes: 1024 }))).code, 'TIMEOUT', 'the deadline covers the body too');
});

t.test('internal addresses are refused before anything is sent, in every spelling', async (t) => {
  const internal = await listen(t, (_req, res) => res.end('{"secret":"internal"}'));
  const p = internal.port;
  for (const url of [
    `http://127.0.0.1:${p}/`,
    `http://localhost:${p}/`,
    `http://2130706433:${p}/`,
    `http://0x7f000001:${p}/`,
    `http://0x7f.0.0.1:${p}/`,
    `http://017700000001:${p}/`,
    `http://127.1:${p}/`,
    `http://[::ffff:127.0.0.1]:${p}/`,
    `http://[::ffff:7f00:1]:${p}/`,
    `http://[::ffff:0:127.0.0.1]:${p}/`,
    `http://[::ffff:0:7f00:1]:${p}/`,
    `http://[64:ff9b::127.0.0.1]:${p}/`,
    `http://[::1]:${p}/`,
    `http://169.254.169.254:${p}/latest/meta-data/`,
    `http://10.0.0.1:${p}/`,
    `http://[fd00:ec2::254]:${p}/`,
  ]) {
    const err = await errorOf(outboundRequest({ method: 'GET', url, timeoutMs: 2000, maxBodyBytes: 1024, guard: publicAddressesOnly }));
    t.equal(err.code, 'BLOCKED_ADDRESS', url);
  }
  t.equal(internal.hits.length, 0, 'the internal service heard nothing');
  // Without a guard (operator-configured URLs, ALLOW_PRIVATE_URLS) the same call goes through.
  const ok = await outboundRequest({ method: 'GET', url: `http://127.0.0.1:${p}/`, timeoutMs: 2000, maxBodyBytes: 1024 });
  t.equal(ok.status, 200);
});

t.test('redirects: at most 3, each target checked again, Authorization kept to its origin', async (t) => {
  const target = await listen(t, (_req, res) => res.end('{"reached":true}'), '127.0.0.2');
  // The guard of this test: one loopback address stands for "public", the other for "internal".
  const onlyFirst: AddressGuard = (a) => a === '127.0.0.1';
  const redirector = await listen(t, (req, res) => {
    const n = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('n') ?? 0);
    if (req.url?.startsWith('/to-internal')) res.writeHead(302, { location: `${target.url}/` }).end();
    else if (n > 0) res.writeHead(307, { location: `/hop?n=${n - 1}` }).end();
    else res.end('{"done":true}');
  });
  const blocked = await errorOf(outboundRequest({ method: 'GET', url: `${redirector.url}/to-internal`, timeoutMs: 2000, maxBodyBytes: 1024, guard: onlyFirst }));
  t.equal(blocked.code, 'BLOCKED_ADDRESS', 'a redirect to an internal address is refused');
  t.equal(target.hits.length, 0, 'and the internal address heard nothing');

  const three = await outboundRequest({ method: 'GET', url: `${redirector.url}/hop?n=3`, timeoutMs: 2000, maxBodyBytes: 1024, guard: onlyFirst });
  t.equal(three.status, 200, 'three redirects are followed');
  const four = await errorOf(outboundRequest({ method: 'GET', url: `${redirector.url}/hop?n=4`, timeoutMs: 2000, maxBodyBytes: 1024, guard: onlyFirst }));
  t.equal(four.code, 'TOO_MANY_REDIRECTS');

  const other = await listen(t, (_req, res) => res.end('{}'));
  const hopper = await listen(t, (_req, res) => res.writeHead(302, { location: `${other.url}/x` }).end());
  await outboundRequest({ method: 'GET', url: hopper.url, headers: { authorization: 'secret-token' }, timeoutMs: 2000, maxBodyBytes: 1024 });
  t.equal(hopper.hits[0]!.headers.authorization, 'secret-token');
  t.equal(other.hits[0]!.headers.authorization, undefined, 'the token does not follow a redirect to another origin');
});

t.test('a redirect to another origin carries none of the stored headers, and a 307 / 308 not the body; the same origin keeps both', async (t) => {
  const bodies: string[] = [];
  const kept: string[] = [];
  const elsewhere = await listen(t, (req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => (bodies.push(body), res.end('{}')));
  });
  const api = await listen(t, (req, res) => {
    const status = Number(req.url!.slice(1, 4));
    const same = req.url!.includes('same');
    if (req.url!.startsWith('/done')) {
      let body = '';
      req.on('data', (c) => (body += c));
      return req.on('end', () => (kept.push(body), res.end('{}')));
    }
    req.resume();
    res.writeHead(status, { location: same ? '/done' : `${elsewhere.url}/stolen` }).end();
  });
  const stored = { 'x-api-key': 'k-123456', cookie: 'session=abcdef', authorization: 'Bearer t-987654', 'x-custom': 'v', accept: 'application/json', 'content-type': 'application/json' };
  for (const status of [301, 302, 303, 307, 308]) {
    await outboundRequest({ method: 'POST', url: `${api.url}/${status}`, headers: stored, body: Buffer.from('{"card":"4111"}'), timeoutMs: 2000, maxBodyBytes: 1024 });
    const hop = elsewhere.hits.at(-1)!;
    for (const name of ['x-api-key', 'cookie', 'authorization', 'x-custom', 'content-type']) t.equal(hop.headers[name], undefined, `${status}: ${name} does not reach another origin`);
    t.equal(hop.headers.accept, 'application/json', `${status}: what answer is wanted still goes`);
    t.equal(bodies.at(-1), '', `${status}: nor does the body`);
  }
  for (const status of [307, 308]) {
    await outboundRequest({ method: 'POST', url: `${api.url}/${status}-same`, headers: stored, body: Buffer.from('{"card":"4111"}'), timeoutMs: 2000, maxBodyBytes: 1024 });
    const hop = api.hits.at(-1)!;
    t.match(hop.headers, { 'x-api-key': 'k-123456', cookie: 'session=abcdef', authorization: 'Bearer t-987654' }, `${status} within the origin: the stored headers stay`);
    t.equal(kept.at(-1), '{"card":"4111"}', `${status} within the origin: so does the body`);
  }
});

t.test('a trusted helpdesk origin is exempt for itself only: every hop it redirects to is guarded', async (t) => {
  const internal = await listen(t, (_req, res) => res.end('{"internal":true}'), '127.0.0.2');
  const trusted = await listen(t, (req, res) => {
    if (req.url === '/away') res.writeHead(302, { location: `${internal.url}/admin` }).end();
    else if (req.url === '/around') res.writeHead(307, { location: `${other.url}/back` }).end();
    else if (req.url === '/within') res.writeHead(301, { location: '/home' }).end();
    else res.end('{"trusted":true}');
  });
  // Another server that sends the chain back to the trusted origin.
  const other = await listen(t, (_req, res) => res.writeHead(302, { location: `${trusted.url}/home` }).end());
  const config = { allowPrivateUrls: false, helpdeskGlobalUrl: trusted.url, helpdeskEuropeUrl: 'https://api.chat24.io' };
  const guard = guardForUrl(config, `${trusted.url}/away`);
  t.same(guard?.exempt && [...guard.exempt], [trusted.url, 'https://api.chat24.io'], 'the exempt origins');
  t.equal(guardForUrl(config, `${other.url}/x`), publicAddressesOnly, 'a URL elsewhere: public addresses only, nothing exempt');
  t.equal(guardForUrl({ ...config, allowPrivateUrls: true }, `${other.url}/x`), null, 'ALLOW_PRIVATE_URLS: any address');

  const request = (path: string) => outboundRequest({ method: 'GET', url: `${trusted.url}${path}`, timeoutMs: 2000, maxBodyBytes: 1024, guard });
  t.equal((await request('/home')).status, 200, 'the trusted origin itself, on loopback');
  t.equal((await request('/within')).status, 200, 'a redirect within the trusted origin');
  t.equal((await errorOf(request('/away'))).code, 'BLOCKED_ADDRESS', 'a redirect from it to an internal address');
  t.equal((await errorOf(request('/around'))).code, 'BLOCKED_ADDRESS', 'a redirect from it to another loopback server');
  await t.rejects(outboundFetch({ guard, maxBodyBytes: 1024 })(`${trusted.url}/away`), { code: 'BLOCKED_ADDRESS' }, 'the fetch adapter too');
  t.equal(internal.hits.length + other.hits.length, 0, 'neither heard a request');
});

t.test('the fetch adapter (model clients): the same guard and cap, streamed', async (t) => {
  const internal = await listen(t, (_req, res) => res.end('{}'));
  const guarded = outboundFetch({ guard: publicAddressesOnly, maxBodyBytes: 1024 * 1024 });
  await t.rejects(guarded(`${internal.url}/v1/chat/completions`, { method: 'POST', body: '{}' }), { code: 'BLOCKED_ADDRESS' });
  t.equal(internal.hits.length, 0);

  const huge = await listen(t, (_req, res) => endless(res));
  const res = await outboundFetch({ maxBodyBytes: 1024 * 1024 })(`${huge.url}/v1/chat/completions`, { method: 'POST', body: '{}' });
  t.equal(res.status, 200);
  await t.rejects(res.text(), { code: 'BODY_TOO_LARGE' }, 'reading past the cap fails');

  const small = await listen(t, (req, res) => res.end(JSON.stringify({ echo: req.headers['x-test'] })));
  const ok = await outboundFetch({ maxBodyBytes: 1024 })(small.url, { headers: { 'x-test': 'yes' } });
  t.same(await ok.json(), { echo: 'yes' });

  const silent = await listen(t, () => {});
  const abort = new AbortController();
  setTimeout(() => abort.abort(), 100);
  await t.rejects(outboundFetch({ maxBodyBytes: 1024 })(silent.url, { signal: abort.signal }), { name: 'AbortError' }, 'the caller can abort');
});

t.test('which addresses are public', async (t) => {
  for (const a of ['8.8.8.8', '1.1.1.1', '93.184.216.34', '2606:4700:4700::1111', '2a00:1450:4001:82a::200e', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:0808:0808::1']) {
    t.ok(isPublicAddress(a), `${a} is public`);
  }
  for (const a of [
    '127.0.0.1', '127.255.255.254', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '224.0.0.1',
    '255.255.255.255', '198.18.0.1', '::', '::1', 'fe80::1', 'fc00::1', 'fd12:3456::1', 'ff02::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1', '::127.0.0.1',
    '64:ff9b::7f00:1', '2002:7f00:0001::1', '2001:db8::1', '2001::1', 'not an address',
    // IPv4-translated (RFC 2765) and NAT64's local-use prefix carry a private address too.
    '::ffff:0:127.0.0.1', '::ffff:0:7f00:1', '::ffff:0:a00:1', '64:ff9b:1::a00:1',
  ]) {
    t.notOk(isPublicAddress(a), `${a} is not public`);
  }
});
