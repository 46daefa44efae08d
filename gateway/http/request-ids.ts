import { randomUUID } from 'node:crypto';
import { traceIdOf, type Span } from '../../lib/tracing.js';

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
