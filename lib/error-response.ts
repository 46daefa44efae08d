import type { ServerResponse } from 'node:http';
import type { AppError } from './errors.js';

/**
 * An AppError as an HTTP answer, the one shape every server of the service writes (the API,
 * the webhook route, a worker's metrics endpoint): `{"error":{"code","message"}}`, with
 * `details` when the error has them and `requestId` on INTERNAL_ERROR.
 */
export function errorBody(err: AppError, requestId?: string): { error: Record<string, unknown> } {
  const body: Record<string, unknown> = { code: err.code, message: err.message };
  if (err.details) body.details = err.details;
  if (err.code === 'INTERNAL_ERROR' && requestId) body.requestId = requestId;
  return { error: body };
}

/** Writes errorBody on any Node response, express or not, with the error's status and headers. */
export function writeError(res: ServerResponse, err: AppError, requestId?: string): void {
  if (err.headers) for (const [k, v] of Object.entries(err.headers)) res.setHeader(k, v);
  if (requestId) res.setHeader('X-Request-Id', requestId);
  res.statusCode = err.status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.end(JSON.stringify(errorBody(err, requestId)));
}
