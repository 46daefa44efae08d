import type { RequestHandler } from 'express';
import { AppError } from '../../lib/errors.js';

/**
 * After the API's JSON parser: a request that carries a body the parser did not take (sent
 * without `Content-Type: application/json`, e.g. curl's `-d` default of
 * application/x-www-form-urlencoded) is refused with 415 saying so, rather than reaching a
 * route as "no body" and getting a puzzling "is required" for every field. Multipart bodies
 * are read by their route, and the documents route, which takes files too, says itself what
 * it takes.
 */
const TAKES_OTHER_TYPES = /^\/api\/knowledge-bases\/[^/]+\/documents\/?$/;

export const jsonBodyOnly: RequestHandler = (req, _res, next) => {
  if (req.body !== undefined || !carriesBody(req.headers) || req.is('multipart/form-data')) return next();
  if (TAKES_OTHER_TYPES.test(req.originalUrl.split('?', 1)[0]!)) return next();
  const type = req.headers['content-type']?.split(';', 1)[0]?.trim();
  throw new AppError(
    'UNSUPPORTED_MEDIA_TYPE',
    type
      ? `The body was sent as ${type.slice(0, 100)}; send it as JSON with the header Content-Type: application/json.`
      : 'The body was sent without a Content-Type; send it as JSON with the header Content-Type: application/json.',
  );
};

function carriesBody(headers: { 'content-length'?: string; 'transfer-encoding'?: string }): boolean {
  if (headers['transfer-encoding'] !== undefined) return true;
  const length = Number(headers['content-length']);
  return Number.isFinite(length) && length > 0;
}
