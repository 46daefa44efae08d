import { guardForUrl } from '../../lib/address-guard.js';
import type { Config } from '../../lib/config.js';
import type { OutboundError } from '../../lib/outbound-errors.js';
import { outboundRequest } from '../../lib/outbound-http.js';
import { ExtractionError, formatOf, type DocumentFormat } from './extract.js';

/**
 * Fetching a document's page: only through lib/outbound-http.ts with the tenant guard
 * (public addresses only unless ALLOW_PRIVATE_URLS; at most 3 redirects, each re-checked),
 * a size cap and a deadline. Failures are ExtractionError with the reason the user sees.
 */
export const MAX_PAGE_BYTES = 5 * 1024 * 1024;
export const PAGE_DEADLINE_MS = 15_000;

export interface FetchedPage {
  bytes: Buffer;
  format: DocumentFormat;
  contentType: string | undefined;
}

const REASONS: Partial<Record<OutboundError['code'], string>> = {
  BODY_TOO_LARGE: `the page is larger than ${MAX_PAGE_BYTES / 1024 / 1024} MiB`,
  BLOCKED_ADDRESS: 'the address is private, loopback, link-local or otherwise internal',
  TOO_MANY_REDIRECTS: 'the page redirects more than 3 times',
  BAD_URL: 'the address cannot be fetched (only http and https)',
};

export async function fetchPage(
  config: Pick<Config, 'allowPrivateUrls' | 'helpdeskGlobalUrl' | 'helpdeskEuropeUrl'>,
  url: string,
  options: { signal?: AbortSignal; deadlineMs?: number } = {},
): Promise<FetchedPage> {
  const deadlineMs = options.deadlineMs ?? PAGE_DEADLINE_MS;
  let res;
  try {
    res = await outboundRequest({
      method: 'GET',
      url,
      headers: { accept: 'text/html,application/xhtml+xml,text/plain,text/markdown,application/pdf;q=0.9,*/*;q=0.1', 'user-agent': 'mas-knowledge/1.0' },
      timeoutMs: deadlineMs,
      maxBodyBytes: MAX_PAGE_BYTES,
      guard: guardForUrl(config, url),
      signal: options.signal,
    });
  } catch (err) {
    const code = (err as OutboundError).code;
    const reason = code === 'TIMEOUT' ? `the page did not answer within ${deadlineMs / 1000} s` : REASONS[code];
    throw new ExtractionError(reason ?? 'the page could not be reached', { cause: err });
  }
  if (res.status < 200 || res.status >= 300) throw new ExtractionError(`the page answered HTTP ${res.status}`);
  const contentType = typeof res.headers['content-type'] === 'string' ? res.headers['content-type'] : undefined;
  const format = formatOf(res.url.pathname, contentType) ?? (contentType ? null : 'html');
  if (!format) throw new ExtractionError(`the page is ${contentType!.split(';')[0]}, not HTML, text, markdown or PDF`);
  if (!res.body.length) throw new ExtractionError('the page is empty');
  return { bytes: res.body, format, contentType };
}
