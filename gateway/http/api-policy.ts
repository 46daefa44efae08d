import type { RequestHandler } from 'express';
import { AppError } from '../../lib/errors.js';
import type { IsSecure } from './secure-request.js';

/** Every `/api/*` answer carries account data or credentials: no cache (browser, proxy) may keep one. */
export const API_CACHE_CONTROL = 'no-store';

/**
 * What every `/api/*` request goes through before any route: `Cache-Control: no-store` on
 * whatever answers it (success or error), and, with ENFORCE_HTTPS, 403 HTTPS_REQUIRED for a
 * request that did not arrive over TLS (directly or through a trusted proxy): a token or
 * password sent in clear text has already leaked, but the client learns it at once.
 */
export function apiPolicy(deps: { enforceHttps: boolean; isSecure: IsSecure }): RequestHandler {
  return (req, res, next) => {
    res.setHeader('Cache-Control', API_CACHE_CONTROL);
    if (deps.enforceHttps && !deps.isSecure(req)) throw new AppError('HTTPS_REQUIRED', 'The API must be used over HTTPS.');
    next();
  };
}
