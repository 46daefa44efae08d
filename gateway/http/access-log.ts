import type { Logger } from '../../lib/logger.js';
import type { RequestObserver } from './request-observer.js';

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
