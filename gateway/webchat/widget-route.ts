import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Router } from 'express';

/** The embeddable widget (web/widget/widget.js), served as is: no build step, no dependencies. */
export const WIDGET_FILE = fileURLToPath(new URL('../../web/widget/widget.js', import.meta.url));

/**
 * `GET /widget.js`. Loaded by other sites' pages (`<script src=".../widget.js"
 * data-integration-id="7">`), so it is explicitly cross-origin readable (helmet's default
 * Cross-Origin-Resource-Policy would block it); cached briefly, revalidated by ETag.
 */
export function widgetRoutes(options: { file?: string } = {}): Router {
  const source = readFileSync(options.file ?? WIDGET_FILE);
  const etag = `"${createHash('sha256').update(source).digest('hex').slice(0, 16)}"`;
  const router = Router();
  router.get('/widget.js', (req, res) => {
    res.setHeader('Content-Type', 'text/javascript; charset=utf-8');
    res.setHeader('Cross-Origin-Resource-Policy', 'cross-origin');
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.setHeader('Cache-Control', 'public, max-age=300');
    res.setHeader('ETag', etag);
    if (req.headers['if-none-match'] === etag) {
      res.status(304).end();
      return;
    }
    res.send(source);
  });
  return router;
}
