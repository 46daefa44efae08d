import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { BlockedAddressError, guardedLookup, guardOf, hostOf, type AddressGuard } from './address-guard.js';
import { OutboundError } from './outbound-errors.js';

/**
 * Every HTTP call the service makes to somebody else's server (the helpdesk API, model and
 * embedding servers, fetched pages) goes through here, so each one:
 * - waits a bounded time (`timeoutMs` covers connect, headers and body) and reads a bounded
 *   body (`maxBodyBytes`: a server that sends more is cut off with BODY_TOO_LARGE, never
 *   buffered whole: a 560 MiB answer once crashed the worker with ERR_STRING_TOO_LONG);
 * - connects only to addresses its `guard` allows (tenant-supplied URLs: public addresses
 *   only; lib/address-guard.ts), checked on the address actually dialled, at every redirect,
 *   each hop judged on its own URL (a guard's exempt origins, the operator's helpdesk
 *   instances, are exempt only for requests to them, never for where they redirect);
 * - follows at most `maxRedirects` (3) redirects; one to another origin carries none of the
 *   caller's headers but Accept, Accept-Language and User-Agent, and no body (a 307 / 308 too);
 * - reuses keep-alive connections (one pool per protocol, guarded and trusted apart; a model
 *   server gets a pool of its own: lib/agents/model-servers.ts).
 * Failures are OutboundError (lib/outbound-errors.ts) with a stable `code`; nothing here
 * throws outside the promise. An answer of any status resolves: the caller judges it
 * (statusFailure).
 */
export const DEFAULT_MAX_REDIRECTS = 3;

export interface OutboundRequest {
  method: string;
  url: string | URL;
  headers?: OutgoingHttpHeaders;
  body?: Buffer;
  /** Deadline of the whole exchange, redirects and body included. */
  timeoutMs: number;
  /** Largest response body read; beyond it the exchange fails with BODY_TOO_LARGE. */
  maxBodyBytes: number;
  /** Addresses that may be dialled, at every hop; null / undefined: any (operator-configured URLs). */
  guard?: AddressGuard | null;
  maxRedirects?: number;
  signal?: AbortSignal;
  /**
   * Called once, right before the request's bytes are handed to the network, in the same turn
   * of the event loop as that write (node writes a request to a kept-alive socket in the turn
   * it assigns it, to a new one in the turn it connects): a process killed after it has, all
   * but certainly, sent the request. A refused connection or address never calls it. Only the
   * first hop's; not called again for redirects or a repeat on a fresh socket. What it throws
   * is ignored.
   */
  onWritten?: () => void;
}

export interface OutboundResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** Where the answer came from (after redirects). */
  url: URL;
}

// Idle sockets are closed before the server's announced Keep-Alive timeout (node does it
// from the response header); this bounds the ones of servers announcing none.
const IDLE_SOCKET_MS = 30_000;

/** Keep-alive connections for one kind of request, per protocol (node pools them per host and port). */
export interface ConnectionPool {
  http: HttpAgent;
  https: HttpsAgent;
}

/**
 * A pool of its own, for a server that gets many requests at once (a model server: up to
 * MODEL_MAX_CONCURRENCY): it keeps up to `maxFreeSockets` idle connections instead of the
 * default 256, so a wave of answers does not close connections the next wave opens again.
 */
export function connectionPool(maxFreeSockets: number): ConnectionPool {
  return {
    http: new HttpAgent({ keepAlive: true, timeout: IDLE_SOCKET_MS, maxFreeSockets }),
    https: new HttpsAgent({ keepAlive: true, timeout: IDLE_SOCKET_MS, maxFreeSockets }),
  };
}

/**
 * Connections per server of the shared pools, at most: as many as stay open when idle (node's
 * default 256), so a burst of sends to one helpdesk waits for a connection instead of opening
 * more that are closed again as soon as they are free.
 */
const SOCKETS_PER_HOST = 256;
const shared = { keepAlive: true, timeout: IDLE_SOCKET_MS, maxSockets: SOCKETS_PER_HOST, maxFreeSockets: SOCKETS_PER_HOST };
const agents = {
  trusted: { http: new HttpAgent(shared), https: new HttpsAgent(shared) },
  guarded: { http: new HttpAgent(shared), https: new HttpsAgent(shared) },
};

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** The headers a redirect to another origin keeps: none that could carry a secret. */
const CARRIED_ACROSS_ORIGINS = new Set(['accept', 'accept-language', 'user-agent']);

/** Rejects before connecting when the URL cannot be used (scheme, or an IP literal the guard refuses). */
function checkTarget(url: URL, guard: AddressGuard | null | undefined): void {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new OutboundError('BAD_URL', `unsupported protocol ${url.protocol}`);
  const host = hostOf(url);
  if (guard && isIP(host) && !guard(host)) throw new BlockedAddressError(host);
}

interface Hop {
  method: string;
  url: URL;
  headers: OutgoingHttpHeaders;
  body: Buffer | undefined;
}

/** The next request of a redirect chain (fetch's rules), or null when `res` is the answer. */
function nextHop(hop: Hop, res: IncomingMessage): Hop | null {
  const location = res.headers.location;
  if (!REDIRECTS.has(res.statusCode ?? 0) || !location) return null;
  let url: URL;
  try {
    url = new URL(location, hop.url);
  } catch {
    throw new OutboundError('BAD_URL', 'the server redirected to an invalid URL');
  }
  let { method, headers, body } = hop;
  if (res.statusCode === 303 ? method !== 'HEAD' : (res.statusCode === 301 || res.statusCode === 302) && method === 'POST') {
    method = 'GET';
    body = undefined;
    headers = Object.fromEntries(Object.entries(headers).filter(([k]) => k.toLowerCase() !== 'content-type'));
  }
  if (url.origin !== hop.url.origin) {
    // Another origin gets none of the caller's headers (API keys, cookies, sessions) and, on
    // 307 / 308, not the body either: only what says what answer is wanted.
    headers = Object.fromEntries(Object.entries(headers).filter(([k]) => CARRIED_ACROSS_ORIGINS.has(k.toLowerCase())));
    body = undefined;
  }
  return { method, url, headers, body };
}

type StaleSocketError = Error & { staleSocket?: boolean; code?: string };

/** One request; resolves with the response stream once its headers arrived. */
function send(hop: Hop, chainGuard: AddressGuard | null | undefined, abort: AbortSignal, own?: ConnectionPool, onWritten?: () => void): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    if (abort.aborted) return reject(abort.reason);
    const guard = guardOf(chainGuard, hop.url);
    checkTarget(hop.url, guard);
    const https = hop.url.protocol === 'https:';
    const pool = own ?? (guard ? agents.guarded : agents.trusted);
    let answered = false;
    const req = (https ? httpsRequest : httpRequest)(hop.url, {
      method: hop.method,
      headers: hop.body === undefined ? hop.headers : { ...hop.headers, 'content-length': hop.body.length },
      agent: https ? pool.https : pool.http,
      ...(guard ? { lookup: guardedLookup(guard) as never } : {}),
    });
    const onAbort = () => req.destroy(abort.reason instanceof Error ? abort.reason : new OutboundError('ABORTED', 'aborted'));
    abort.addEventListener('abort', onAbort, { once: true });
    req.on('error', (err: StaleSocketError) => {
      abort.removeEventListener('abort', onAbort);
      if (!answered && req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) err.staleSocket = true;
      reject(err);
    });
    if (onWritten) {
      req.once('socket', (socket) => {
        // node flushes the request right after this event (kept-alive socket), or on the socket's
        // connect after this listener (new one): this runs in the same turn, just before.
        if (!socket.connecting) return onWritten();
        socket.once((socket as { encrypted?: boolean }).encrypted ? 'secureConnect' : 'connect', onWritten);
      });
    }
    req.on('response', (res) => {
      answered = true;
      abort.removeEventListener('abort', onAbort);
      resolve(res);
    });
    req.end(hop.body);
  });
}

/** Methods that may be sent twice without doing twice (RFC 9110 § 9.2.2). */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS']);

/**
 * Sends once more on a fresh socket when a kept-alive one was closed by the server as we
 * reused it: usually the request never arrived, but a server may also have carried it out
 * and then reset, so only idempotent requests are repeated here (a POST's caller decides:
 * the outbox reconciles it against the helpdesk's history).
 */
async function sendWithStaleRetry(hop: Hop, guard: AddressGuard | null | undefined, abort: AbortSignal, pool?: ConnectionPool, onWritten?: () => void): Promise<IncomingMessage> {
  try {
    return await send(hop, guard, abort, pool, onWritten);
  } catch (err) {
    if ((err as StaleSocketError).staleSocket && IDEMPOTENT.has(hop.method)) return send(hop, guard, abort, pool, onWritten);
    throw err;
  }
}

/** Follows redirects (at most maxRedirects, each target checked again); resolves with the final response stream. */
async function exchange(
  first: Hop,
  guard: AddressGuard | null | undefined,
  maxRedirects: number,
  abort: AbortSignal,
  pool?: ConnectionPool,
  onWritten?: () => void,
): Promise<{ res: IncomingMessage; url: URL }> {
  let hop = first;
  for (let redirects = 0; ; redirects++) {
    const res = await sendWithStaleRetry(hop, guard, abort, pool, redirects === 0 ? onWritten : undefined);
    const next = nextHop(hop, res);
    if (!next) return { res, url: hop.url };
    res.resume(); // the redirect's own body is not needed
    if (redirects >= maxRedirects) throw new OutboundError('TOO_MANY_REDIRECTS', `more than ${maxRedirects} redirects`);
    hop = next;
  }
}

/** Maps whatever a failed exchange threw to an OutboundError. */
function asOutboundError(err: unknown, timedOut: boolean, timeoutMs: number): OutboundError {
  if (err instanceof OutboundError) return err;
  if (timedOut) return new OutboundError('TIMEOUT', `no complete answer within ${timeoutMs} ms`, { cause: err });
  if ((err as Error)?.name === 'AbortError' || (err as Error)?.name === 'TimeoutError') return new OutboundError('ABORTED', 'aborted', { cause: err });
  const code = (err as { code?: string })?.code;
  if (code === 'ERR_INVALID_CHAR' || code === 'ERR_INVALID_HTTP_TOKEN') return new OutboundError('BAD_HEADER', 'a header has characters HTTP does not allow', { cause: err });
  return new OutboundError('NETWORK', `unreachable${code ? ` (${code})` : ''}`, { cause: err });
}

/** Reads a response body up to `max` bytes. */
function readCapped(res: IncomingMessage, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(res.headers['content-length']);
    if (declared > max) {
      res.destroy();
      return reject(new OutboundError('BODY_TOO_LARGE', `the answer is larger than ${max} bytes`));
    }
    const chunks: Buffer[] = [];
    let size = 0;
    res.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        res.destroy();
        reject(new OutboundError('BODY_TOO_LARGE', `the answer is larger than ${max} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    let ended = false;
    res.on('error', reject);
    // 'close' follows every 'end': only a close without one is a cut (an error is not built, stack and all, for every answer).
    res.on('close', () => {
      if (!ended) reject(new OutboundError('NETWORK', 'the answer was cut off'));
    });
    res.on('end', () => {
      ended = true;
      resolve(Buffer.concat(chunks, size));
    });
  });
}

/** `fn` called at most once, whatever it throws ignored (it runs in an event handler). */
function onceQuietly(fn: () => void): () => void {
  let called = false;
  return () => {
    if (called) return;
    called = true;
    try {
      fn();
    } catch {
      // the caller's bookkeeping failing must not become an uncaught exception of the socket
    }
  };
}

/** One HTTP exchange with a deadline, a body cap, the guard and redirect rules above. */
export async function outboundRequest(r: OutboundRequest): Promise<OutboundResponse> {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new OutboundError('TIMEOUT', `no complete answer within ${r.timeoutMs} ms`));
  }, r.timeoutMs);
  const onOuterAbort = () => controller.abort(new OutboundError('ABORTED', 'aborted'));
  r.signal?.addEventListener('abort', onOuterAbort, { once: true });
  try {
    if (r.signal?.aborted) throw new OutboundError('ABORTED', 'aborted');
    let url: URL;
    try {
      url = new URL(r.url);
    } catch {
      throw new OutboundError('BAD_URL', 'not a valid URL');
    }
    const { res, url: final } = await exchange(
      { method: r.method, url, headers: r.headers ?? {}, body: r.body },
      r.guard,
      r.maxRedirects ?? DEFAULT_MAX_REDIRECTS,
      controller.signal,
      undefined,
      r.onWritten ? onceQuietly(r.onWritten) : undefined,
    );
    const onAbort = () => res.destroy(controller.signal.reason as Error);
    controller.signal.addEventListener('abort', onAbort, { once: true });
    try {
      const body = await readCapped(res, r.maxBodyBytes);
      return { status: res.statusCode ?? 0, headers: res.headers, body, url: final };
    } finally {
      controller.signal.removeEventListener('abort', onAbort);
    }
  } catch (err) {
    throw asOutboundError(err, timedOut, r.timeoutMs);
  } finally {
    clearTimeout(timer);
    r.signal?.removeEventListener('abort', onOuterAbort);
  }
}

/** The body as UTF-8 text (a byte order mark is not part of it), for JSON parsing. */
export function bodyText(body: Buffer): string {
  const text = body.toString('utf8');
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** Parsed JSON, or undefined when the body is not JSON (never throws). */
export function parseJsonBody(body: Buffer): unknown {
  const text = bodyText(body);
  if (!text) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

export interface OutboundFetchOptions {
  guard?: AddressGuard | null;
  maxBodyBytes: number;
  maxRedirects?: number;
  /** Connections of its own (connectionPool) instead of the shared pools; the guard still applies to every connection it opens. */
  pool?: ConnectionPool;
}

const NO_BODY_STATUS = new Set([101, 204, 205, 304]);

function requestBody(body: unknown): Buffer | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return Buffer.from(body);
  if (body instanceof Uint8Array) return Buffer.from(body);
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  throw new OutboundError('BAD_URL', 'unsupported request body type');
}

/** The response stream as a web ReadableStream that errors with BODY_TOO_LARGE past the cap. */
function cappedStream(res: IncomingMessage, max: number): ReadableStream<Uint8Array> {
  let size = 0;
  let ended = false;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      res.on('data', (chunk: Buffer) => {
        // Data still in flight after the reader cancelled (or after the cap) has nowhere to go.
        if (ended) return;
        size += chunk.length;
        if (size > max) {
          ended = true;
          controller.error(new OutboundError('BODY_TOO_LARGE', `the answer is larger than ${max} bytes`));
          res.destroy();
          return;
        }
        controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        if ((controller.desiredSize ?? 1) <= 0) res.pause();
      });
      res.on('end', () => {
        if (ended) return;
        ended = true;
        controller.close();
      });
      res.on('error', (err) => {
        if (ended) return;
        ended = true;
        controller.error(err);
      });
      res.on('close', () => {
        if (ended) return;
        ended = true;
        controller.error(new OutboundError('NETWORK', 'the answer was cut off'));
      });
    },
    pull() {
      res.resume();
    },
    cancel() {
      ended = true;
      res.destroy();
    },
  });
}

/**
 * A `fetch` for clients that take one (the `openai` package): the same guard, redirect rules
 * and keep-alive pools as outboundRequest, the body streamed with the cap applied. Deadlines
 * come from the caller's `signal` (the package sets its own per attempt).
 */
export function outboundFetch(options: OutboundFetchOptions): typeof fetch {
  return async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const signal = init.signal ?? (input instanceof Request ? input.signal : undefined);
    const abort = new AbortController();
    const onAbort = () => abort.abort(signal?.reason ?? new DOMException('This operation was aborted', 'AbortError'));
    if (signal?.aborted) throw signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
    signal?.addEventListener('abort', onAbort, { once: true });
    const url = new URL(input instanceof Request ? input.url : input);
    const headers: OutgoingHttpHeaders = {};
    new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined)).forEach((v, k) => {
      headers[k] = v;
    });
    try {
      const { res } = await exchange(
        { method: (init.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase(), url, headers, body: requestBody(init.body) },
        options.guard,
        options.maxRedirects ?? DEFAULT_MAX_REDIRECTS,
        abort.signal,
        options.pool,
      );
      const onLateAbort = () => res.destroy(abort.signal.reason as Error);
      abort.signal.addEventListener('abort', onLateAbort, { once: true });
      res.once('close', () => {
        abort.signal.removeEventListener('abort', onLateAbort);
        signal?.removeEventListener('abort', onAbort);
      });
      const responseHeaders = new Headers();
      for (const [k, v] of Object.entries(res.headers)) {
        if (Array.isArray(v)) for (const one of v) responseHeaders.append(k, one);
        else if (v !== undefined) responseHeaders.set(k, v);
      }
      const status = res.statusCode ?? 0;
      const declared = Number(res.headers['content-length']);
      if (declared > options.maxBodyBytes) {
        res.destroy();
        throw new OutboundError('BODY_TOO_LARGE', `the answer is larger than ${options.maxBodyBytes} bytes`);
      }
      if (NO_BODY_STATUS.has(status)) {
        res.resume();
        return new Response(null, { status, headers: responseHeaders });
      }
      return new Response(cappedStream(res, options.maxBodyBytes), { status, headers: responseHeaders });
    } catch (err) {
      signal?.removeEventListener('abort', onAbort);
      if (signal?.aborted) throw signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
      throw asOutboundError(err, false, 0);
    }
  };
}
