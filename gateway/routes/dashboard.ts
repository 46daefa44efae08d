import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { Router, type Response } from 'express';

/** The dashboard's static files (web/dashboard): no build step, served as they are. */
export const DASHBOARD_DIR = fileURLToPath(new URL('../../web/dashboard/', import.meta.url));

/**
 * CSP for the dashboard: only our own scripts, styles and API; no inline code, no string-to-DOM
 * sinks (Trusted Types), no framing, no native form submissions (a form submitted before the
 * script ran must not send a password anywhere).
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join('; ');

/** index.html names its assets under this placeholder; it becomes /app/<content hash>. */
const ASSETS_PLACEHOLDER = '{{ASSETS}}';
const IMMUTABLE = 'public, max-age=31536000, immutable';

function listFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? listFiles(join(dir, e.name)) : e.isFile() ? [join(dir, e.name)] : []))
    .sort();
}

/** A short hash over every file's path and bytes: a new release gets new asset URLs. */
function versionOf(dir: string): string {
  const hash = createHash('sha256');
  for (const file of listFiles(dir)) hash.update(relative(dir, file)).update('\0').update(readFileSync(file)).update('\0');
  return hash.digest('hex').slice(0, 12);
}

/**
 * `GET /` → the dashboard document (never cached, strict CSP); `GET /app/<version>/…` → its
 * assets (cached for a year when <version> is the current one, revalidated otherwise). Nothing
 * else is answered here, so the API, health, metrics and widget routes are never shadowed.
 */
export function dashboardRoutes(options: { dir?: string } = {}): Router {
  const dir = options.dir ?? DASHBOARD_DIR;
  const version = versionOf(dir);
  const assetBase = `/app/${version}`;
  const html = readFileSync(join(dir, 'index.html'), 'utf8').replaceAll(ASSETS_PLACEHOLDER, assetBase);

  const router = Router();
  router.get('/', (_req, res) => {
    res.setHeader('Content-Security-Policy', DASHBOARD_CSP);
    res.setHeader('Cache-Control', 'no-cache');
    res.type('html').send(html);
  });

  router.use(
    '/app/:version',
    express.static(dir, {
      index: false,
      redirect: false,
      dotfiles: 'ignore',
      cacheControl: false,
      setHeaders: (res: Response) => {
        const current = (res.req.params as Record<string, string | undefined>).version === version;
        res.setHeader('Cache-Control', current ? IMMUTABLE : 'no-cache');
        res.setHeader('Content-Security-Policy', DASHBOARD_CSP);
      },
    }),
  );
  return router;
}
