import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import swaggerUiDir from 'swagger-ui-dist/absolute-path.js';
import { notFound } from '../../lib/errors.js';
import type { OpenApiDocument } from '../http/openapi.js';
import { contentVersion, IMMUTABLE_CACHE, SAME_ORIGIN_PAGE_DIRECTIVES } from '../http/page-assets.js';
import { defineRoute, type Route } from '../http/route.js';
import { STRING } from '../http/schemas.js';

/** The docs page and its start-up script (web/api-docs): no build step. */
export const API_DOCS_DIR = fileURLToPath(new URL('../../web/api-docs/', import.meta.url));

/** What the page loads, and where each file is: nothing else is served (the UI itself comes from the swagger-ui-dist package). */
const ASSETS: Readonly<Record<string, string>> = {
  'swagger-ui.css': join(swaggerUiDir(), 'swagger-ui.css'),
  'swagger-ui-bundle.js': join(swaggerUiDir(), 'swagger-ui-bundle.js'),
  'favicon-32x32.png': join(swaggerUiDir(), 'favicon-32x32.png'),
  'init.js': join(API_DOCS_DIR, 'init.js'),
};

/**
 * CSP of the docs page: the pages' same-origin rules (the start-up script is a file, not
 * inline; swagger-ui's icons are data: URIs). No Trusted Types: swagger-ui renders the
 * descriptions' markdown as HTML strings.
 */
export const API_DOCS_CSP = SAME_ORIGIN_PAGE_DIRECTIVES.join('; ');

/** index.html names its assets under this placeholder; it becomes /api/docs/assets/<content hash>. */
const ASSETS_PLACEHOLDER = '{{ASSETS}}';

/**
 * `GET /api/openapi.json` (the document, serialised once), `GET /api/docs` (Swagger UI over
 * it) and `GET /api/docs/assets/<version>/<file>` (cached for a year when <version> is the
 * current hash of the files, revalidated otherwise). Public: the document holds no secret.
 * The document is asked for at the first request: it describes these routes too, so it is
 * built once every route is mounted (gateway/app.ts).
 */
export function apiDocsRoutes(document: () => OpenApiDocument): readonly Route[] {
  let json: Buffer | undefined;
  const version = contentVersion(Object.entries(ASSETS));
  const html = readFileSync(join(API_DOCS_DIR, 'index.html'), 'utf8').replaceAll(ASSETS_PLACEHOLDER, `/api/docs/assets/${version}`);
  return [
    defineRoute({
      method: 'GET', path: '/openapi.json', operationId: 'getOpenApiDocument', tag: 'Documentation', access: 'public',
      summary: 'This document: OpenAPI 3.1, generated at start from the schemas the routes validate with',
      responses: {
        200: {
          description: 'The OpenAPI document.',
          schema: { type: 'object', required: ['openapi', 'info', 'paths', 'components'], properties: { openapi: { const: '3.1.0' }, info: { type: 'object' }, paths: { type: 'object' }, components: { type: 'object' } } },
          example: { openapi: '3.1.0', info: { title: 'Messaging automation API', version: '0.1.0' }, paths: {}, components: {} },
        },
      },
      handler: ({ res }) => {
        json ??= Buffer.from(JSON.stringify(document()));
        res.type('application/json').send(json);
      },
    }),
    defineRoute({
      method: 'GET', path: '/docs', operationId: 'getApiDocs', tag: 'Documentation', access: 'public',
      summary: 'This document rendered by Swagger UI (served from the swagger-ui-dist package, no CDN)',
      responses: { 200: { description: 'The docs page.', type: 'text/html', schema: STRING, example: '<!doctype html><html lang="en">…</html>' } },
      handler: ({ res }) => {
        res.setHeader('Content-Security-Policy', API_DOCS_CSP);
        res.type('html').send(html);
      },
    }),
    defineRoute({
      method: 'GET', path: '/docs/assets/:version/:file', operationId: 'getApiDocsAsset', tag: 'Documentation', access: 'public',
      summary: "A file of the docs page (Swagger UI's script and styles, the page's start-up script)",
      params: [
        { name: 'version', in: 'path', description: 'A hash of the files: the current one is cached for a year.', schema: STRING, example: '0123456789ab' },
        { name: 'file', in: 'path', description: 'The file.', schema: { type: 'string', enum: Object.keys(ASSETS) }, example: 'swagger-ui.css' },
      ],
      responses: { 200: { description: 'The file.', type: '*/*', schema: STRING } },
      errors: { NOT_FOUND: 'not one of the files the page loads' },
      handler: ({ req, res }) => {
        const file = req.params.file as string;
        if (!Object.hasOwn(ASSETS, file)) throw notFound('File');
        res.setHeader('Cache-Control', req.params.version === version ? IMMUTABLE_CACHE : 'no-cache');
        // Fixed paths only; the package may live under a dot directory (a pnpm store).
        res.sendFile(ASSETS[file]!, { cacheControl: false, dotfiles: 'allow' });
      },
    }),
  ];
}
