import { createServer } from 'node:http';
import type { Test } from 'tap';
import { listenLocal } from './local-server.js';

/**
 * The customer's site of the widget tests: a page that embeds the widget script of a gateway,
 * on an origin of its own. `/?gw=<base URL>` embeds the script of another gateway process.
 * `integrationId` is read per request (the integration may be created after the site, with
 * the site's origin among its allowedOrigins).
 */
export async function startSite(t: Test, gatewayUrl: string, integrationId: () => number): Promise<string> {
  const site = createServer((req, res) => {
    if (req.url === '/' || req.url?.startsWith('/?')) {
      const gw = new URL(req.url, 'http://site').searchParams.get('gw') ?? gatewayUrl;
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title></head>
<body style="font-family:sans-serif;background:#fafafa"><h1>Our shop</h1><p>Questions? Use the chat.</p>
<script src="${gw}/widget.js" data-integration-id="${integrationId()}" async></script></body></html>`);
      return;
    }
    res.writeHead(404).end();
  });
  return (await listenLocal(site, t)).url;
}
