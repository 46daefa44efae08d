import { createServer } from 'node:http';
import { escapeHtml, listen, type ListeningServer } from './http.js';

export interface ShopSiteOptions {
  /** The gateway whose widget script the page embeds. */
  gatewayUrl: string;
  /** Read per request: the integration may be created after the site, with the site's origin among its allowedOrigins. */
  integrationId: () => number;
  /** Lines of text shown on the page (suggested questions, say). */
  lines?: string[];
  port?: number;
  host?: string;
}

/**
 * A customer's website embedding the webchat widget, on an origin of its own: the demo's test
 * page and the widget tests' site. `/?gw=<base URL>` embeds the script of another gateway
 * process.
 */
export async function startShopSite(options: ShopSiteOptions): Promise<ListeningServer> {
  const site = createServer((req, res) => {
    if (req.url === '/' || req.url?.startsWith('/?')) {
      const asked = new URL(req.url, 'http://site').searchParams.get('gw');
      const gw = asked && /^https?:\/\/[^\s"'<>]+$/.test(asked) ? asked : options.gatewayUrl;
      const lines = (options.lines ?? ['Questions? Use the chat.']).map((l) => `<p>${escapeHtml(l)}</p>`).join('\n');
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title></head>
<body style="font-family:sans-serif;background:#fafafa"><h1>Our shop</h1>${lines}
<script src="${escapeHtml(gw)}/widget.js" data-integration-id="${options.integrationId()}" async></script></body></html>`);
      return;
    }
    res.writeHead(404).end();
  });
  return listen(site, options.port, options.host);
}
