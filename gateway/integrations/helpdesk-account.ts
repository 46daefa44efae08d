import { guardForUrl } from '../../lib/address-guard.js';
import type { Config } from '../../lib/config.js';
import { AppError } from '../../lib/errors.js';
import { HelpdeskClient, HelpdeskError, helpdeskFailureText, type HelpdeskWebhook } from '../../lib/helpdesk-client.js';
import { assertTenantUrl } from '../http/validate.js';

/**
 * What the integration routes ask the helpdesk (Chat2Desk API v1) on the user's behalf:
 * which instance (global / Europe) holds the account, and the webhook registration.
 * Failures become AppErrors whose message says which status came back (never the
 * helpdesk's own text, never the token).
 */
export type HelpdeskRegion = 'global' | 'europe';

/** The events the service acts on (contract.md § Integrations). */
export const WEBHOOK_EVENTS = ['inbox', 'close_dialog', 'close_request', 'dialog_transferred'];

const regionUrl = (config: Config, region: HelpdeskRegion): string =>
  region === 'europe' ? config.helpdeskEuropeUrl : config.helpdeskGlobalUrl;

/** The region whose configured instance is this URL, if any. */
function regionOfUrl(config: Config, url: string): HelpdeskRegion | null {
  const u = url.replace(/\/+$/, '');
  if (u === config.helpdeskGlobalUrl) return 'global';
  if (u === config.helpdeskEuropeUrl) return 'europe';
  return null;
}

/**
 * What to tell the user about a failed helpdesk call: which status (or which failure) came
 * back, never the helpdesk's own body (somebody else's text must not reach a tenant, and a
 * tenant-chosen URL could make it say anything).
 */
export function upstreamText(err: unknown): string {
  if (err instanceof HelpdeskError) {
    if (err.status === 401 || err.status === 403) return `the helpdesk refused the API token (HTTP ${err.status})`;
    return `the helpdesk ${helpdeskFailureText(err)}`;
  }
  if (err instanceof WebhookRegistrationError) return err.message;
  return 'the helpdesk could not be reached';
}

/** The instance answered, and its answer refuses (a 4xx other than 408 / 409 / 429, or `{"status":"error"}`). */
const refusesToken = (err: unknown): boolean => err instanceof HelpdeskError && err.status !== null && err.permanent;

/**
 * Asks both instances at once which one accepts the token. Neither accepts → 400 on
 * apiToken; none answered usefully (down, timed out, 5xx) → 502 UPSTREAM_ERROR.
 */
async function probeRegion(config: Config, token: string): Promise<{ apiUrl: string; region: HelpdeskRegion }> {
  const regions: HelpdeskRegion[] = ['global', 'europe'];
  const results = await Promise.allSettled(
    // A `{"status":"error"}` answer is a refusal too (HelpdeskClient throws it, permanent).
    // The instances are trusted, where they redirect is not: the guard checks every other hop.
    regions.map((region) => new HelpdeskClient(regionUrl(config, region), token, { guard: guardForUrl(config, regionUrl(config, region)) }).apiInfo()),
  );
  const accepted = results.findIndex((r) => r.status === 'fulfilled');
  if (accepted >= 0) return { apiUrl: regionUrl(config, regions[accepted]!), region: regions[accepted]! };
  const reasons = results.map((r) => (r as PromiseRejectedResult).reason);
  if (reasons.every(refusesToken)) {
    throw new AppError('VALIDATION_ERROR', 'The helpdesk token is not accepted by the global or the Europe instance.', {
      details: [{ field: 'apiToken', message: 'is not accepted by the helpdesk' }],
    });
  }
  const said = regions.map((region, i) => `${region}: ${upstreamText(reasons[i])}`).join('; ');
  throw new AppError('UPSTREAM_ERROR', `Could not check the helpdesk token (${said}).`);
}

/**
 * Where the helpdesk account lives, from what an integration's create or change sends. An
 * explicit apiUrl wins; else `region` forces an instance; else, with a token, both instances
 * are asked. Returns undefined to keep what is stored.
 */
export async function resolveHelpdeskUrl(
  config: Config,
  input: { apiUrl?: string | null; region?: HelpdeskRegion },
  token: string | null,
  currentUrl: string | null,
): Promise<{ apiUrl: string | null; region: HelpdeskRegion | null } | undefined> {
  if (input.apiUrl !== undefined && input.apiUrl !== null) {
    const apiUrl = input.apiUrl.replace(/\/+$/, '');
    await assertTenantUrl(config, 'apiUrl', apiUrl);
    return { apiUrl, region: input.region ?? regionOfUrl(config, apiUrl) };
  }
  if (input.region) return { apiUrl: regionUrl(config, input.region), region: input.region };
  // An explicit null clears it (the stored token is kept, and not used to find an instance again).
  if (input.apiUrl === null) return { apiUrl: null, region: null };
  if (currentUrl === null && token) return probeRegion(config, token);
  return undefined;
}

/** What we ask for: our URL and name, the events we act on, switched on. */
const ENABLED = 'enable';

/** Whether the helpdesk reports the hook switched on (a helpdesk that does not say counts as on). */
export function webhookEnabled(hook: HelpdeskWebhook & { enabled?: unknown; active?: unknown }): boolean {
  if (hook.enabled === false || hook.active === false || hook.status === false) return false;
  return typeof hook.status !== 'string' || !/^(disabled?|inactive|off)$/i.test(hook.status);
}

/** The registration failed in a way the helpdesk's answers show (not a transport error). */
export class WebhookRegistrationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookRegistrationError';
  }
}

/**
 * Creates our webhook at the helpdesk, or updates it when one with our id, URL or name
 * exists (so re-registering never adds a duplicate), always asking for it switched on
 * (Chat2Desk switches off a webhook after 5 h of failed deliveries). Then reads the list
 * back: the registration counts only when the hook is there, with our URL, switched on.
 * Returns the helpdesk's id of it.
 */
export async function registerHelpdeskWebhook(
  client: HelpdeskClient,
  hook: { url: string; name: string; knownRemoteId: string | null },
): Promise<string> {
  const desired = { url: hook.url, name: hook.name, events: WEBHOOK_EVENTS, status: ENABLED };
  const existing = await client.listWebhooks();
  const match =
    (hook.knownRemoteId !== null && existing.find((w) => String(w.id) === hook.knownRemoteId)) ||
    existing.find((w) => w.url === hook.url) ||
    existing.find((w) => w.name === hook.name);
  let id: HelpdeskWebhook['id'];
  if (match) {
    await client.updateWebhook(match.id, desired);
    id = match.id;
  } else {
    const created = (await client.createWebhook(desired)) as { data?: HelpdeskWebhook } & Partial<HelpdeskWebhook>;
    const newId = created?.data?.id ?? created?.id;
    if (newId === undefined || newId === null) throw new WebhookRegistrationError('the helpdesk did not return the id of the new webhook');
    id = newId;
  }
  const stored = (await client.listWebhooks()).find((w) => String(w.id) === String(id));
  if (!stored) throw new WebhookRegistrationError('the helpdesk does not list the webhook after registering it');
  if (stored.url !== hook.url) throw new WebhookRegistrationError('the helpdesk lists the webhook with another URL');
  if (!webhookEnabled(stored)) throw new WebhookRegistrationError('the helpdesk keeps the webhook switched off');
  return String(id);
}
