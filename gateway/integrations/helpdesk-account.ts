import type { Config } from '../../lib/config.js';
import { AppError } from '../../lib/errors.js';
import { HelpdeskClient, HelpdeskError, type HelpdeskWebhook } from '../../lib/helpdesk-client.js';

/**
 * What the integration routes ask the helpdesk (Chat2Desk API v1) on the user's behalf:
 * which instance (global / Europe) holds the account, and the webhook registration.
 * Failures become AppErrors whose message carries the helpdesk's own text (the dashboard
 * shows it) and never the token.
 */
export type HelpdeskRegion = 'global' | 'europe';

/** The events the service acts on (contract.md § Integrations). */
export const WEBHOOK_EVENTS = ['inbox', 'close_dialog', 'close_request', 'dialog_transferred'];

const MAX_UPSTREAM_TEXT = 300;

export const regionUrl = (config: Config, region: HelpdeskRegion): string =>
  region === 'europe' ? config.helpdeskEuropeUrl : config.helpdeskGlobalUrl;

/** The region whose configured instance is this URL, if any. */
export function regionOfUrl(config: Config, url: string): HelpdeskRegion | null {
  const u = url.replace(/\/+$/, '');
  if (u === config.helpdeskGlobalUrl) return 'global';
  if (u === config.helpdeskEuropeUrl) return 'europe';
  return null;
}

/** The helpdesk's own words for a failure, without the token. */
export function upstreamText(err: unknown, token: string | null): string {
  let text: string;
  if (err instanceof HelpdeskError) {
    const body = err.body as { message?: unknown; error?: unknown; errors?: unknown; description?: unknown } | string | null;
    let said: unknown = body;
    if (body && typeof body === 'object') said = body.message ?? body.error ?? body.errors ?? body.description ?? body;
    const saidText = said === null || said === undefined || said === '' ? '' : typeof said === 'string' ? said : JSON.stringify(said);
    text = err.status === null ? err.message : `HTTP ${err.status}${saidText ? `: ${saidText}` : ''}`;
  } else {
    text = (err as Error)?.message ?? String(err);
  }
  if (token) text = text.split(token).join('[redacted]');
  return text.length > MAX_UPSTREAM_TEXT ? `${text.slice(0, MAX_UPSTREAM_TEXT)}…` : text;
}

const refusesToken = (err: unknown): boolean => err instanceof HelpdeskError && err.status !== null && !err.retryable;

/**
 * Asks both instances at once which one accepts the token. Neither accepts → 400 on
 * apiToken; none answered usefully (down, timed out, 5xx) → 502 UPSTREAM_ERROR.
 */
export async function probeRegion(config: Config, token: string): Promise<{ apiUrl: string; region: HelpdeskRegion }> {
  const regions: HelpdeskRegion[] = ['global', 'europe'];
  const results = await Promise.allSettled(
    regions.map(async (region) => {
      const info = (await new HelpdeskClient(regionUrl(config, region), token).apiInfo()) as { status?: unknown } | null;
      if (info && typeof info === 'object' && info.status === 'error') throw new HelpdeskError('token refused', 401, info);
    }),
  );
  const accepted = results.findIndex((r) => r.status === 'fulfilled');
  if (accepted >= 0) return { apiUrl: regionUrl(config, regions[accepted]!), region: regions[accepted]! };
  const reasons = results.map((r) => (r as PromiseRejectedResult).reason);
  if (reasons.every(refusesToken)) {
    throw new AppError('VALIDATION_ERROR', 'The helpdesk token is not accepted by the global or the Europe instance.', {
      details: [{ field: 'apiToken', message: 'is not accepted by the helpdesk' }],
    });
  }
  const said = regions.map((region, i) => `${region}: ${upstreamText(reasons[i], token)}`).join('; ');
  throw new AppError('UPSTREAM_ERROR', `Could not check the helpdesk token (${said}).`);
}

/**
 * Creates our webhook at the helpdesk, or updates it when one with our id, URL or name
 * exists (so re-registering never adds a duplicate). Returns the helpdesk's id of it.
 */
export async function registerHelpdeskWebhook(
  client: HelpdeskClient,
  hook: { url: string; name: string; knownRemoteId: string | null },
): Promise<string> {
  const desired = { url: hook.url, name: hook.name, events: WEBHOOK_EVENTS };
  const existing = await client.listWebhooks();
  const match =
    (hook.knownRemoteId !== null && existing.find((w) => String(w.id) === hook.knownRemoteId)) ||
    existing.find((w) => w.url === hook.url) ||
    existing.find((w) => w.name === hook.name);
  if (match) {
    await client.updateWebhook(match.id, desired);
    return String(match.id);
  }
  const created = (await client.createWebhook(desired)) as { data?: HelpdeskWebhook } & Partial<HelpdeskWebhook>;
  const id = created?.data?.id ?? created?.id;
  if (id === undefined || id === null) throw new HelpdeskError('the helpdesk did not return the id of the new webhook', 200, created);
  return String(id);
}
