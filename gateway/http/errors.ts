import type { ServerResponse } from 'node:http';
import type { ErrorRequestHandler, RequestHandler } from 'express';
import type { Logger } from '../../lib/logger.js';
import { AppError } from '../../lib/errors.js';

/** Writes `{"error":{"code","message"}}` (+ details, + requestId on 500) on any Node response, express or not. */
export function writeError(res: ServerResponse, err: AppError, requestId?: string): void {
  if (err.headers) for (const [k, v] of Object.entries(err.headers)) res.setHeader(k, v);
  const body: Record<string, unknown> = { code: err.code, message: err.message };
  if (err.details) body.details = err.details;
  if (err.code === 'INTERNAL_ERROR' && requestId) body.requestId = requestId;
  if (requestId) res.setHeader('X-Request-Id', requestId);
  res.statusCode = err.status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.end(JSON.stringify({ error: body }));
}

export const notFoundHandler: RequestHandler = (req) => {
  throw new AppError('NOT_FOUND', `No route for ${req.method} ${req.path}.`);
};

/** Turns every failure into the catalog's shape; unexpected errors are logged and hidden behind a request id. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err, req, res, _next) => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    let appError: AppError;
    if (err instanceof AppError) {
      appError = err;
    } else if (err?.type === 'entity.parse.failed') {
      appError = new AppError('VALIDATION_ERROR', 'The body is not valid JSON.', { details: [{ field: '(body)', message: 'must be valid JSON' }] });
    } else if (err?.type === 'entity.too.large') {
      appError = new AppError('PAYLOAD_TOO_LARGE');
    } else if (err?.type === 'charset.unsupported' || err?.type === 'encoding.unsupported') {
      appError = new AppError('UNSUPPORTED_MEDIA_TYPE', 'Unsupported body encoding.');
    } else {
      logger.error({ err, requestId: req.requestId, method: req.method, path: req.path }, 'unhandled error');
      appError = new AppError('INTERNAL_ERROR', `Internal server error (request ${req.requestId}).`);
    }
    writeError(res, appError, req.requestId);
  };
}
