import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';
import { Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Logger } from '../../lib/logger.js';
import { traceIdOf, type Span } from '../../lib/tracing.js';

/**
 * What is told about every HTTP request when its response closes (express routes, webhook
 * POSTs, webchat upgrades): its ids, its duration in the metrics, its access log line.
 */

declare module 'express-serve-static-core' {
  interface Request {
    /** The request's trace id (requestTraceId below); its requestId is the same digits as a UUID. */
    traceId?: string;
  }
}

/** One HTTP request as its observers (metrics, the access log) see it when its response closes. */
export interface ObservedRequest {
  method: string;
  /** The pattern of the route it matched (`/api/agents/:id`), never its raw path; null when it matched none. */
  route: string | null;
  /** The status answered; null when the client went away before any was sent. */
  status: number | null;
  durationMs: number;
  traceId: string;
  /** The client went away before the whole answer was sent. */
  aborted: boolean;
}

export type RequestObserver = (request: ObservedRequest) => void;

/** Names a request by its route pattern (`/api/agents/:id`), or null when no route matches it. */
export type RouteOf = (method: string, path: string) => string | null;

/**
 * Tells `observe` about the request once its response closes: 'close' comes once, after the
 * answer was sent or when the client went away first. `route` is asked then, once, for every
 * observer: by then the route that answered is known.
 */
export function observeOnClose(
  res: ServerResponse,
  request: { method: string; started: bigint; traceId: string },
  route: () => string | null,
  observe: RequestObserver,
): void {
  res.once('close', () => {
    observe({
      method: request.method,
      route: route(),
      status: res.headersSent ? res.statusCode : null,
      durationMs: Number(process.hrtime.bigint() - request.started) / 1e6,
      traceId: request.traceId,
      aborted: !res.writableFinished,
    });
  });
}

/**
 * Express middleware, first of all: gives the request its ids (`req.traceId`, `req.requestId`
 * and X-Request-Id) and has it observed when its response closes, named by the route pattern
 * it matched.
 */
export function observeRequests(routeOf: RouteOf, observe: RequestObserver): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    const traceId = requestTraceId();
    req.traceId = traceId;
    req.requestId = requestIdOf(traceId);
    res.setHeader('X-Request-Id', req.requestId);
    observeOnClose(res, { method: req.method, started, traceId }, () => routeOf(req.method, req.originalUrl.split('?', 1)[0]!), observe);
    next();
  };
}

/**
 * Every request has one id, a W3C trace id (32 lowercase hex): its span's when tracing is on,
 * else a fresh random one. Its access log line carries it as `traceId`; an INTERNAL_ERROR
 * answer (and X-Request-Id) shows it as `requestId`, the same digits spelled as a UUID, so an
 * operator given either finds the other, and with tracing on the trace itself.
 */
export function requestTraceId(span?: Span): string {
  // A v4 UUID's digits: random, never all zeros (W3C), and spelled back into the same UUID.
  return (span && traceIdOf(span)) || randomUUID().replaceAll('-', '');
}

/** The request id of a trace id: its 32 digits as a UUID (8-4-4-4-12). */
export function requestIdOf(traceId: string): string {
  return `${traceId.slice(0, 8)}-${traceId.slice(8, 12)}-${traceId.slice(12, 16)}-${traceId.slice(16, 20)}-${traceId.slice(20)}`;
}

/** The route label of every request that matches no route (whatever its path and status). */
export const UNMATCHED_ROUTE = 'unmatched';

/** One registry per process; the HTTP layer records every request's duration by route and status. */
export interface Metrics {
  registry: Registry;
  /** Records a request whose answer was sent (one the client left before its end is not timed). */
  record: RequestObserver;
}

/**
 * Requests are labelled by the pattern of the route they match, never by their raw path:
 * the label set is bounded by the route table, whatever paths clients send (junk under an
 * authenticated router that answers 401 before any route runs included).
 */
export function createMetrics(shared?: Registry): Metrics {
  // A process's registry (lib/runtime.ts) already collects the process figures.
  const registry = shared ?? new Registry();
  if (!shared) collectDefaultMetrics({ register: registry });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  const record: RequestObserver = ({ method, route, status, durationMs, aborted }) => {
    if (aborted || status === null) return;
    duration.observe({ method, route: route ?? UNMATCHED_ROUTE, status: String(status) }, durationMs / 1e3);
  };
  return { registry, record };
}

/** The message of every access line. */
export const ACCESS_LOG_MESSAGE = 'request';

/**
 * The access log: one `info` line per HTTP request (express routes, webhook POSTs, webchat
 * upgrades) when its response closes, with the route pattern it matched, never its path or
 * query, and its trace id: nothing a client sent is repeated in it.
 */
export function accessLog(logger: Logger): RequestObserver {
  // Its fields are the gateway's own (a method, a route pattern, numbers, a hex id), never one a
  // credential could hide in: redaction, about two thirds of a line's cost, has nothing to find.
  const lines = logger.child({}, { redact: [] });
  return ({ method, route, status, durationMs, traceId, aborted }) => {
    lines.info({ method, route, status, durationMs: Math.round(durationMs * 100) / 100, traceId, ...(aborted ? { aborted } : {}) }, ACCESS_LOG_MESSAGE);
  };
}
