import type { ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';
import { requestIdOf, requestTraceId } from './request-ids.js';

declare module 'express-serve-static-core' {
  interface Request {
    /** The request's trace id (gateway/http/request-ids.ts); its requestId is the same digits as a UUID. */
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
