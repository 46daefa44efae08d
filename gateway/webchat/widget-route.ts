import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineRoute, type Route } from '../http/route.js';
import { STRING } from '../http/schemas.js';

/**
 * The embeddable widget, served as is (no build step, no dependencies): web/widget/identity.js
 * (the host page's `MAS.identify`, the pre-chat form) then web/widget/widget.js, joined into
 * one script. Two plain files keep each readable; widget.js runs alone too (nobody identified).
 */
export const WIDGET_FILES = ['identity.js', 'widget.js'].map((name) => fileURLToPath(new URL(`../../web/widget/${name}`, import.meta.url)));

/**
 * `GET /widget.js`. Loaded by other sites' pages (`<script src=".../widget.js"
 * data-integration-id="7">`), so it is explicitly cross-origin readable (helmet's default
 * Cross-Origin-Resource-Policy would block it); cached briefly, revalidated by ETag.
 */
export function widgetRoute(options: { files?: readonly string[] } = {}): Route {
  const source = Buffer.concat((options.files ?? WIDGET_FILES).flatMap((file) => [readFileSync(file), Buffer.from('\n')]));
  const etag = `"${createHash('sha256').update(source).digest('hex').slice(0, 16)}"`;
  return defineRoute({
    method: 'GET', path: '/widget.js', operationId: 'getWidget', tag: 'Webchat', access: 'public',
    summary: 'The embeddable chat widget',
    description: 'Embed it: `<script src="https://your.host/widget.js" data-integration-id="7" async></script>`.',
    params: [{ name: 'If-None-Match', in: 'header', description: 'The ETag of a copy the browser holds.', schema: STRING }],
    responses: {
      200: { description: 'The script (cross-origin readable, cached 5 minutes, with an ETag).', type: 'text/javascript', schema: STRING, example: '(() => { /* the widget */ })();' },
      304: { description: 'The copy the browser holds is current.' },
    },
    handler: ({ req, res }) => {
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
    },
  });
}
