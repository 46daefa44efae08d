import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';

/**
 * What the pages the gateway serves (the dashboard, the API docs) share: their
 * Content-Security-Policy rules, and how their files are versioned and cached.
 */

/** Only our own scripts, styles, images (data: URIs too) and API; no inline code, no base URL, no native form submissions, no framing. */
export const SAME_ORIGIN_PAGE_DIRECTIVES: readonly string[] = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
];

/** Cache-Control of a file under its current version: its URL changes with its bytes. */
export const IMMUTABLE_CACHE = 'public, max-age=31536000, immutable';

/** A short hash over every file's name and bytes: a release that changes any file gets new asset URLs. */
export function contentVersion(files: readonly (readonly [name: string, path: string])[]): string {
  const hash = createHash('sha256');
  for (const [name, path] of files) hash.update(name).update('\0').update(readFileSync(path)).update('\0');
  return hash.digest('hex').slice(0, 12);
}
