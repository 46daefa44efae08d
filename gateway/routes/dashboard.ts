import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { type RequestHandler, type Response } from 'express';
import { contentVersion, IMMUTABLE_CACHE, SAME_ORIGIN_PAGE_DIRECTIVES } from '../http/page-assets.js';
import { defineRoute, type Route } from '../http/route.js';
import { STRING } from '../http/schemas.js';

/** The dashboard's static files (web/dashboard): no build step, served as they are. */
export const DASHBOARD_DIR = fileURLToPath(new URL('../../web/dashboard/', import.meta.url));

/**
 * CSP for the dashboard: only our own scripts, styles and API; no inline code, no string-to-DOM
 * sinks (Trusted Types), no framing, no native form submissions (a form submitted before the
 * script ran must not send a password anywhere).
 */
export const DASHBOARD_CSP = [...SAME_ORIGIN_PAGE_DIRECTIVES, "require-trusted-types-for 'script'", "trusted-types 'none'"].join('; ');

/** index.html names its assets under this placeholder; it becomes /app/<content hash>. */
const ASSETS_PLACEHOLDER = '{{ASSETS}}';

function listFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? listFiles(join(dir, e.name)) : e.isFile() ? [join(dir, e.name)] : []))
    .sort();
}

/** The dashboard's route and the handler of its files (mounted at /app/:version). */
export interface Dashboard {
  routes: readonly Route[];
  assets: RequestHandler;
}

/**
 * `GET /` → the dashboard document (never cached, strict CSP); `GET /app/<version>/…` → its
 * assets (cached for a year when <version> is the current one, revalidated otherwise). Nothing
 * else is answered here, so the API, health, metrics and widget routes are never shadowed.
 */
export function dashboard(options: { dir?: string } = {}): Dashboard {
  const dir = options.dir ?? DASHBOARD_DIR;
  const version = contentVersion(listFiles(dir).map((file) => [relative(dir, file), file] as const));
  const assetBase = `/app/${version}`;
  const html = readFileSync(join(dir, 'index.html'), 'utf8').replaceAll(ASSETS_PLACEHOLDER, assetBase);
  return {
    routes: [
      defineRoute({
        method: 'GET', path: '/', operationId: 'getDashboard', tag: 'Dashboard', access: 'public',
        summary: 'The dashboard (a single-page app using only this API); its files are under /app/<version>/',
        responses: { 200: { description: 'The dashboard document (strict Content-Security-Policy).', type: 'text/html', schema: STRING, example: '<!doctype html><html lang="en">…</html>' } },
        handler: ({ res }) => {
          res.setHeader('Content-Security-Policy', DASHBOARD_CSP);
          res.setHeader('Cache-Control', 'no-cache');
          res.type('html').send(html);
        },
      }),
    ],
    assets: express.static(dir, {
      index: false,
      redirect: false,
      dotfiles: 'ignore',
      cacheControl: false,
      setHeaders: (res: Response) => {
        const current = (res.req.params as Record<string, string | undefined>).version === version;
        res.setHeader('Cache-Control', current ? IMMUTABLE_CACHE : 'no-cache');
        res.setHeader('Content-Security-Policy', DASHBOARD_CSP);
      },
    }),
  };
}
