import type { IncomingMessage } from 'node:http';
import express, { type RequestHandler } from 'express';
import { AppError } from '../../lib/errors.js';
import { mayNeedStorable } from '../../lib/text.js';

const JSON_TYPES = ['application/json', 'application/*+json'];

/** Requests whose raw UTF-8 body has no `\u0000` nor surrogate escape: no string in it needs the walk. */
const STORABLE_AS_SENT = new WeakSet<IncomingMessage>();

/**
 * The API's JSON parser, up to `limit`. It also looks at the raw bytes once (a byte search,
 * ~0.1 ms for 180 KB) so that a body which cannot hold text PostgreSQL refuses is not walked
 * value by value (lib/text.ts unstorableFields): that walk of a 1 MB body of small objects held
 * the gateway's event loop for tens of milliseconds on every such request.
 */
export function jsonBody(limit: string | number): RequestHandler {
  return express.json({
    limit,
    type: JSON_TYPES,
    verify: (req, _res, raw, encoding) => {
      // Other UTF encodings spell an escape in other bytes: those bodies are walked.
      if (/^utf-?8$/i.test(encoding) && !mayNeedStorable(raw)) STORABLE_AS_SENT.add(req);
    },
  });
}

/** False when jsonBody saw that the body's strings are all storable; true when it cannot say. */
export const mayHoldUnstorable = (req: IncomingMessage): boolean => !STORABLE_AS_SENT.has(req);

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
