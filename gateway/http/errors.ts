import type { ErrorRequestHandler, RequestHandler } from 'express';
import type { Logger } from '../../lib/logger.js';
import { writeError } from '../../lib/error-response.js';
import { AppError, ERRORS } from '../../lib/errors.js';
import { pgErrorKind } from '../../lib/pg-errors.js';
import { arrayOf, object, STRING, UUID } from './schemas.js';

/** A request ended by the statement timeout (503 TIMEOUT) may be tried again after this long. */
export const TIMEOUT_RETRY_AFTER_SECONDS = 5;

/** What errorBody (lib/error-response.ts) writes, as a JSON Schema (for the OpenAPI document): `code` is one of the catalog's. */
export const ERROR_SCHEMA = object(
  {
    error: object(
      {
        code: { title: 'ErrorCode', type: 'string', enum: Object.keys(ERRORS), description: 'A stable code from the one catalog (lib/errors.ts).' },
        message: { type: 'string', description: 'For people; may change.' },
        details: { ...arrayOf(object({ field: STRING, message: STRING }, { title: 'FieldError' })), description: 'VALIDATION_ERROR: one entry per bad field; QUOTA_EXCEEDED: the resource and its limit (`{"field":"agents","message":"limit 100"}`).' },
        requestId: { ...UUID, description: 'INTERNAL_ERROR: the id of the request in the logs (also the X-Request-Id header): its access line\'s `traceId`, the same 32 hex digits spelled as a UUID.' },
      },
      { optional: ['details', 'requestId'] },
    ),
  },
  { title: 'Error' },
);

/**
 * Runs a write whose unique key decides a name's owner (two at once cannot both take it): a
 * taken one is 409 CONFLICT with `message`.
 */
export async function conflictOnUnique<T>(message: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (pgErrorKind(err) === 'unique') throw new AppError('CONFLICT', message, { cause: err });
    throw err;
  }
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
    } else if (pgErrorKind(err) === 'timeout') {
      // A statement of this request ran past DB_STATEMENT_TIMEOUT_MS: the database is busy, or the request asks too much of it.
      logger.warn({ requestId: req.requestId, traceId: req.traceId, method: req.method, path: req.path }, 'a statement ran past the statement timeout');
      appError = new AppError('TIMEOUT', undefined, { cause: err, headers: { 'Retry-After': String(TIMEOUT_RETRY_AFTER_SECONDS) } });
    } else if (err instanceof URIError) {
      // The router could not decode a path segment (`%E0%A4%A`, `%`): such a path names nothing.
      appError = new AppError('NOT_FOUND', 'No resource at this path: it is not valid percent-encoded UTF-8.');
    } else {
      logger.error({ err, requestId: req.requestId, traceId: req.traceId, method: req.method, path: req.path }, 'unhandled error');
      appError = new AppError('INTERNAL_ERROR', `Internal server error (request ${req.requestId}).`);
    }
    writeError(res, appError, req.requestId);
  };
}
