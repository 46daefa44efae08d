import { randomBytes } from 'node:crypto';
import type { Config } from '../../lib/config.js';
import type { SqlPool } from '../../lib/db.js';
import { AppError, notFound } from '../../lib/errors.js';
import { guardForUrl } from '../../lib/address-guard.js';
import { withinDeadline } from '../../lib/deadline.js';
import { DEFAULT_HELPDESK_TIMEOUT_MS, HelpdeskClient } from '../../lib/helpdesk-client.js';
import type { SecretBox } from '../../lib/secrets.js';
import type { TenantScope } from '../../lib/tenancy.js';
import { withinQuota } from '../../lib/quotas.js';
import { AgentSchema, IntegrationSchema, type Integration } from '../../schema/entities.js';
import { deleteById } from '../http/delete-by-id.js';
import { BAD_PAGE, examplePage, PAGE_QUERY, pageOf } from '../http/pagination.js';
import { defineRoute, type Route } from '../http/route.js';
import { EXAMPLE_TIME, object, TIMESTAMP } from '../http/schemas.js';
import { idParam } from '../http/validate.js';
import { registerHelpdeskWebhook, resolveHelpdeskUrl, upstreamText, WebhookRegistrationError } from '../integrations/helpdesk-account.js';
import { registerTelegramWebhook, telegramFailureText } from '../integrations/telegram-account.js';
import { TelegramApiError } from '../../lib/channels/telegram/bot-api.js';
import type { AgentChanges } from '../lib/agent-changes.js';
import { activityOf, readWebhookActivity } from '../webhook/activity.js';
import type { IntegrationCache } from '../webhook/integration-cache.js';
import {
  BAD_INTEGRATION,
  checkFieldsFitType,
  createBody,
  CREATED,
  EXAMPLE_INTEGRATION,
  INTEGRATION,
  INTEGRATION_ID,
  integrationView,
  NO_INTEGRATION,
  ONE_INTEGRATION,
  ONE_WITH_SECRET,
  patchBody,
  NOT_REGISTERED_HERE,
  PATCHED,
  PROBE_FAILED,
  type WebhookError,
} from './integration-schemas.js';

/** 32 random bytes as hex: the shared secret senders key their HMAC with (64 of [0-9a-f]: a valid Telegram secret_token too). */
const newWebhookSecret = (): string => randomBytes(32).toString('hex');

async function checkAgent(tenant: TenantScope, agentId: number | undefined): Promise<void> {
  if (agentId === undefined) return;
  if (!(await tenant.em.count(AgentSchema, { id: agentId }))) {
    throw new AppError('VALIDATION_ERROR', 'Invalid agentId.', { details: [{ field: 'agentId', message: 'no such agent' }] });
  }
}

const normaliseOrigins = (origins: string[]): string[] => [...new Set(origins.map((o) => new URL(o).origin))];

/** A helpdesk integration with an apiUrl needs its token: replies are sent and the webhook registered with it. */
function checkTokenWithUrl(apiUrl: string | null, hasToken: boolean): void {
  if (apiUrl !== null && !hasToken) {
    throw new AppError('VALIDATION_ERROR', 'Set the helpdesk apiToken together with apiUrl (or region): without it no reply can be sent and the webhook cannot be registered.', {
      details: [{ field: 'apiToken', message: 'is required when apiUrl is set (or send apiUrl: null to clear it)' }],
    });
  }
}

export interface IntegrationRoutesDeps {
  config: Config;
  box: SecretBox;
  cache: IntegrationCache;
  /** Flushes the announcement to the workers (they cache which agent answers an integration) before the answer. */
  changes: AgentChanges;
  /** Reads the webhook activity the gateways recorded. */
  sql: SqlPool;
  /** Clock of secret grace periods (the webhook verifier uses the same one). */
  now: () => number;
}

/**
 * Integrations (contract.md § Integrations, § Chat2Desk as it is): CRUD, secret rotation,
 * helpdesk region choice and webhook registration. The webhook secret is shown only by
 * create and rotate-secret; a secret the helpdesk issued can be set (`PATCH {webhookSecret}`,
 * write-only); the helpdesk token is write-only. Every view says how its webhooks fare
 * (`lastWebhookAt`, `signatureFailuresLastHour`, `lastSignatureFailure`, `webhookStatus`),
 * as the gateways recorded it (gateway/webhook/activity.ts). Every change is announced so
 * every gateway's webhook cache drops the integration.
 */
export function integrationRoutes({ config, box, cache, changes, sql, now }: IntegrationRoutesDeps): readonly Route[] {
  /** Every gateway's webhook cache and every worker's integration → agent entry drop it, before the client hears of the change. */
  const announce = async (tenant: TenantScope, id: number) => {
    cache.announce(id);
    await changes.announce(tenant.companyId);
  };
  const webhookUrl = (i: Integration) => `${config.publicBaseUrl}/api/webhook/${i.type}/${i.id}`;
  /** The views of some of a company's integrations, with their webhook activity (one query). */
  const views = async (tenant: TenantScope, rows: Integration[]) => {
    const activity = await readWebhookActivity(sql, tenant.companyId, rows.map((i) => i.id), now());
    return rows.map((i) => integrationView(i, activityOf(activity, i.id), webhookUrl(i), now()));
  };
  const viewOne = async (tenant: TenantScope, i: Integration) => (await views(tenant, [i]))[0]!;

  /** Registers (or updates) the integration's webhook at its helpdesk; the helpdesk's id of it. */
  const registerAt = (integration: Integration & { apiUrl: string }, token: string): Promise<string> =>
    registerHelpdeskWebhook(new HelpdeskClient(integration.apiUrl, token, { guard: guardForUrl(config, integration.apiUrl) }), {
      url: webhookUrl(integration),
      name: `mas-integration-${integration.id}`,
      knownRemoteId: integration.webhookRemoteId,
    });

  /** Records a registration the helpdesk confirmed: the badge says OK. */
  const registered = async (tenant: TenantScope, integration: Integration, remoteId: string | null): Promise<Date> => {
    const at = new Date();
    integration.webhookStatus = 'ok';
    integration.webhookRegisteredAt = at;
    integration.webhookRemoteId = remoteId;
    integration.updatedAt = at;
    await tenant.em.flush();
    cache.announce(integration.id);
    return at;
  };

  /**
   * A new helpdesk integration with a token registers its webhook at once (nobody has to find
   * "Register webhook"). The integration exists whatever the helpdesk says: when it refuses,
   * is down or is slow (bounded by the helpdesk timeout, all calls together) it stays
   * `pending`, and the answer says why, in the words of the register route's 502.
   */
  const registerOnCreation = async (tenant: TenantScope, integration: Integration, token: string | null): Promise<WebhookError | null> => {
    if (integration.type !== 'helpdesk' || !integration.apiUrl || token === null) return null;
    let remoteId: string;
    try {
      remoteId = await withinDeadline(
        registerAt(integration as Integration & { apiUrl: string }, token),
        DEFAULT_HELPDESK_TIMEOUT_MS,
        () => new WebhookRegistrationError(`the helpdesk did not answer within ${DEFAULT_HELPDESK_TIMEOUT_MS / 1000} s`),
      );
    } catch (err) {
      return { code: 'UPSTREAM_ERROR', message: `The helpdesk did not register the webhook: ${upstreamText(err)}.` };
    }
    await registered(tenant, integration, remoteId);
    return null;
  };

  /** The new secret verifies from now on; the one it replaces keeps verifying for the grace period. */
  const replaceSecret = (integration: Integration, secret: string) => {
    integration.previousSecretSealed = integration.webhookSecretSealed;
    integration.previousSecretExpiresAt = new Date(now() + config.secretGraceSeconds * 1000);
    integration.webhookSecretSealed = box.seal(secret);
  };

  /**
   * Registers a Telegram integration's webhook (`setWebhook` with our URL and `secret`); true
   * when Telegram confirmed it (recorded: the badge says OK), else why not, in the words of
   * the register route's 502 (Telegram's refusal, e.g. of a revoked token, turns an OK badge
   * back to pending; a timeout or a network failure says nothing of the registration there).
   */
  const registerTelegram = async (tenant: TenantScope, integration: Integration, token: string, secret: string): Promise<WebhookError | null> => {
    try {
      await registerTelegramWebhook(config, token, webhookUrl(integration), secret);
    } catch (err) {
      if (integration.webhookStatus === 'ok' && err instanceof TelegramApiError && err.errorCode !== null) {
        integration.webhookStatus = 'pending';
        integration.updatedAt = new Date();
        await tenant.em.flush();
      }
      return { code: 'UPSTREAM_ERROR', message: `Telegram did not register the webhook: ${telegramFailureText(err)}.` };
    }
    await registered(tenant, integration, null);
    return null;
  };

  const load = async (tenant: TenantScope, rawId: unknown, withSecret = false): Promise<Integration> => {
    const populate = withSecret ? (['apiTokenSealed', 'webhookSecretSealed', 'verifyToken'] as const) : (['apiTokenSealed', 'verifyToken'] as const);
    const integration = await tenant.em.findOne(IntegrationSchema, { id: idParam(rawId, 'Integration') }, { populate });
    if (!integration) throw notFound('Integration');
    return integration;
  };

  return [
    defineRoute({
      method: 'GET', path: '/', operationId: 'listIntegrations', tag: 'Integrations', access: 'any',
      summary: "The company's integrations (never their secrets or tokens), oldest first, paged",
      query: PAGE_QUERY,
      responses: { 200: { description: 'A page of integrations, with how their webhooks fare.', schema: pageOf('integrations', INTEGRATION), example: examplePage('integrations', EXAMPLE_INTEGRATION) } },
      errors: { VALIDATION_ERROR: BAD_PAGE },
      handler: async ({ req, res, query: page }) => {
        const [rows, total] = await req.tenant!.em.findAndCount(IntegrationSchema, {}, { orderBy: { id: 'asc' }, populate: ['apiTokenSealed', 'verifyToken'], ...page });
        res.json({ integrations: await views(req.tenant!, rows), total, ...page });
      },
    }),
    defineRoute({
      method: 'POST', path: '/', operationId: 'createIntegration', tag: 'Integrations', access: 'any',
      summary: 'Create a helpdesk (Chat2Desk), webchat, WhatsApp Cloud API or Telegram integration; its webhook secret is shown in this answer',
      description:
        'Helpdesk: with an `apiToken` and no `apiUrl` both helpdesk instances are asked which one knows the token; `region` forces one. ' +
        'WhatsApp: `phoneNumberId`, `accessToken` and `appSecret` (both write-only; the app secret verifies X-Hub-Signature-256); the answer has a generated `verifyToken` to paste with `webhookUrl` into the Meta App Dashboard, and no `webhookSecret`. ' +
        'Telegram: `botToken` (write-only); the webhook is registered at once with `setWebhook`.',
      body: { validators: [createBody], example: { type: 'helpdesk', name: 'Chat2Desk', agentId: 1, apiUrl: 'https://api.chat2desk.com', apiToken: 'chat2desk-api-token' } },
      responses: { 201: { description: 'The new integration with its `webhookSecret` (not for WhatsApp); a helpdesk one with an `apiToken` and a Telegram one have their webhook registered (`webhookStatus` `ok`), or are `pending` and `webhookError` says why.', ...CREATED } },
      errors: { VALIDATION_ERROR: BAD_INTEGRATION, UPSTREAM_ERROR: PROBE_FAILED, QUOTA_EXCEEDED: 'the company has QUOTA_INTEGRATIONS integrations (100 by default)' },
      handler: async ({ req, res, body }) => {
        const tenant = req.tenant!;
        checkFieldsFitType(body.type, body, true);
        await checkAgent(tenant, body.agentId);
        const token = body.apiToken ?? body.accessToken ?? body.botToken ?? null;
        const where = body.type === 'helpdesk' ? await resolveHelpdeskUrl(config, body, token, null) : undefined;
        checkTokenWithUrl(where?.apiUrl ?? null, token !== null);
        // WhatsApp's deliveries are signed with the Meta app secret: that is the webhook secret.
        const secret = body.type === 'whatsapp' ? body.appSecret! : newWebhookSecret();
        const at = new Date();
        const integration = tenant.em.create(IntegrationSchema, {
          companyId: tenant.companyId,
          type: body.type,
          name: body.name.trim(),
          agentId: body.agentId,
          active: body.active ?? true,
          apiUrl: where?.apiUrl ?? null,
          region: where?.region ?? null,
          apiTokenSealed: token === null ? null : box.seal(token),
          webhookSecretSealed: box.seal(secret),
          previousSecretSealed: null,
          previousSecretExpiresAt: null,
          webhookStatus: 'pending',
          webhookRegisteredAt: null,
          webhookRemoteId: null,
          allowedOrigins: normaliseOrigins(body.allowedOrigins ?? []),
          handoffGroupId: body.handoffGroupId ?? null,
          prechatForm: body.prechatForm ?? 'off',
          phoneNumberId: body.phoneNumberId ?? null,
          verifyToken: body.type === 'whatsapp' ? newWebhookSecret() : null,
          createdAt: at,
          updatedAt: at,
        } as never);
        const quota = { companyId: tenant.companyId, field: 'integrations', limit: config.quotas.integrations, entity: IntegrationSchema };
        await withinQuota(tenant.em, quota, () => tenant.em.flush());
        await announce(tenant, integration.id);
        const webhookError = body.type === 'telegram' ? await registerTelegram(tenant, integration, token!, secret) : await registerOnCreation(tenant, integration, token);
        const view = await viewOne(tenant, integration);
        res.status(201).json({ integration: body.type === 'whatsapp' ? view : { ...view, webhookSecret: secret }, webhookError });
      },
    }),
    defineRoute({
      method: 'GET', path: '/:id', operationId: 'getIntegration', tag: 'Integrations', access: 'any',
      summary: 'One integration',
      params: [INTEGRATION_ID],
      responses: { 200: { description: 'The integration.', ...ONE_INTEGRATION } },
      errors: { NOT_FOUND: NO_INTEGRATION },
      load: (req) => load(req.tenant!, req.params.id),
      handler: async ({ req, res, loaded: integration }) => {
        res.json({ integration: await viewOne(req.tenant!, integration) });
      },
    }),
    defineRoute({
      method: 'PATCH', path: '/:id', operationId: 'updateIntegration', tag: 'Integrations', access: 'any',
      summary: 'Change an integration (only the fields sent)',
      description:
        '`{"active":false}` makes its webhooks answer 403 at once; `webhookSecret` sets the secret the helpdesk issued, `appSecret` the WhatsApp app secret (write-only; the previous one verifies through the grace period). ' +
        'A new Telegram `botToken` registers the webhook with it (`webhookError` beside the integration says whether that worked).',
      params: [INTEGRATION_ID],
      body: { validators: [patchBody], example: { active: false, handoffGroupId: 7 } },
      responses: { 200: { description: 'The integration as it is now (with `webhookError` when a Telegram `botToken` was sent).', ...PATCHED } },
      errors: { NOT_FOUND: NO_INTEGRATION, VALIDATION_ERROR: BAD_INTEGRATION, UPSTREAM_ERROR: PROBE_FAILED },
      load: (req) => load(req.tenant!, req.params.id, true),
      handler: async ({ req, res, loaded: integration, body }) => {
        const tenant = req.tenant!;
        checkFieldsFitType(integration.type, body);
        await checkAgent(tenant, body.agentId);
        if (integration.type === 'helpdesk') {
          // Only a change of where or who asks for a new answer; otherwise keep the stored one.
          const asks = body.apiUrl !== undefined || body.region !== undefined || (body.apiToken && !integration.apiUrl);
          const storedToken = () => (integration.apiTokenSealed ? box.open(integration.apiTokenSealed) : null);
          const where = asks ? await resolveHelpdeskUrl(config, body, body.apiToken !== undefined ? body.apiToken : storedToken(), integration.apiUrl) : undefined;
          if (where) {
            // A stolen API token must not steer the stored helpdesk token to a listener of its choice.
            if (where.apiUrl !== integration.apiUrl && where.apiUrl !== null && integration.apiTokenSealed && body.apiToken === undefined) {
              throw new AppError('VALIDATION_ERROR', 'Send the helpdesk apiToken again to change where it is used.', {
                details: [{ field: 'apiToken', message: 'is required when apiUrl or region changes (the stored token is never sent to a new address)' }],
              });
            }
            if (where.apiUrl !== integration.apiUrl) {
              // Another account or instance: the old registration says nothing about this one.
              integration.webhookStatus = 'pending';
              integration.webhookRegisteredAt = null;
              integration.webhookRemoteId = null;
            }
            integration.apiUrl = where.apiUrl;
            integration.region = where.region;
          }
          if (body.apiToken !== undefined) integration.apiTokenSealed = body.apiToken === null ? null : box.seal(body.apiToken);
          if (asks || body.apiToken !== undefined) checkTokenWithUrl(integration.apiUrl, integration.apiTokenSealed !== null);
          // The secret the helpdesk signs with (Chat2Desk issues its own): write-only, the old one in grace.
          if (body.webhookSecret !== undefined && body.webhookSecret !== box.open(integration.webhookSecretSealed)) replaceSecret(integration, body.webhookSecret);
          if (body.handoffGroupId !== undefined) integration.handoffGroupId = body.handoffGroupId;
        }
        if (integration.type === 'whatsapp') {
          if (body.phoneNumberId !== undefined) integration.phoneNumberId = body.phoneNumberId;
          if (body.accessToken !== undefined) integration.apiTokenSealed = box.seal(body.accessToken);
          if (body.appSecret !== undefined && body.appSecret !== box.open(integration.webhookSecretSealed)) replaceSecret(integration, body.appSecret);
        }
        if (body.botToken !== undefined) {
          // Another bot (or the same one again): registered below, until then not.
          integration.apiTokenSealed = box.seal(body.botToken);
          integration.webhookStatus = 'pending';
          integration.webhookRegisteredAt = null;
        }
        if (body.name !== undefined) integration.name = body.name.trim();
        if (body.agentId !== undefined) integration.agentId = body.agentId;
        if (body.active !== undefined) integration.active = body.active;
        if (body.allowedOrigins !== undefined) integration.allowedOrigins = normaliseOrigins(body.allowedOrigins);
        if (body.prechatForm !== undefined) integration.prechatForm = body.prechatForm;
        integration.updatedAt = new Date();
        await tenant.em.flush();
        await announce(tenant, integration.id);
        // Another bot: its webhook is registered with our URL and the current secret.
        const webhookError = body.botToken !== undefined ? await registerTelegram(tenant, integration, body.botToken, box.open(integration.webhookSecretSealed)) : undefined;
        res.json({ integration: await viewOne(tenant, integration), ...(webhookError !== undefined ? { webhookError } : {}) });
      },
    }),
    defineRoute({
      method: 'DELETE', path: '/:id', operationId: 'deleteIntegration', tag: 'Integrations', access: 'any',
      summary: 'Delete an integration',
      params: [INTEGRATION_ID],
      responses: { 204: { description: 'Deleted.' } },
      errors: { NOT_FOUND: NO_INTEGRATION },
      handler: async ({ req, res }) => {
        await announce(req.tenant!, await deleteById(req.tenant!, IntegrationSchema, req.params.id, 'Integration'));
        res.status(204).end();
      },
    }),
    defineRoute({
      method: 'POST', path: '/:id/rotate-secret', operationId: 'rotateWebhookSecret', tag: 'Integrations', access: 'any',
      summary: 'A new webhook secret (shown once); the previous one keeps verifying for SECRET_GRACE_SECONDS',
      description: 'Telegram: the new secret is registered with `setWebhook` (both verify meanwhile); if Telegram does not take it the answer is 502 and the old secret stays current. WhatsApp: 400 (the app secret is Meta\'s: send `PATCH {appSecret}`).',
      params: [INTEGRATION_ID],
      responses: { 200: { description: 'The integration with its new `webhookSecret`.', ...ONE_WITH_SECRET } },
      errors: {
        NOT_FOUND: NO_INTEGRATION,
        not_supported: 'a WhatsApp integration (its secret is the Meta app secret: PATCH appSecret)',
        UPSTREAM_ERROR: 'Telegram did not take the new secret (the old one stays current)',
      },
      load: (req) => load(req.tenant!, req.params.id, true),
      handler: async ({ req, res, loaded: integration }) => {
        const tenant = req.tenant!;
        if (integration.type === 'whatsapp') {
          throw new AppError('not_supported', "A WhatsApp integration's webhook secret is the Meta app secret: rotate it in the Meta App Dashboard, then send PATCH {appSecret} with the new one.");
        }
        const secret = newWebhookSecret();
        const before = integration.webhookSecretSealed;
        // Both verify while Telegram switches over (updates it sends meanwhile carry either).
        replaceSecret(integration, secret);
        integration.updatedAt = new Date();
        await tenant.em.flush();
        cache.announce(integration.id);
        if (integration.type === 'telegram' && integration.apiTokenSealed) {
          const failed = await registerTelegram(tenant, integration, box.open(integration.apiTokenSealed), secret);
          if (failed) {
            // The old secret stays current; the new one verifies through the grace period (a call that timed out may have set it).
            integration.webhookSecretSealed = before;
            integration.previousSecretSealed = box.seal(secret);
            integration.previousSecretExpiresAt = new Date(now() + config.secretGraceSeconds * 1000);
            integration.updatedAt = new Date();
            await tenant.em.flush();
            cache.announce(integration.id);
            throw new AppError('UPSTREAM_ERROR', `${failed.message} The previous secret stays in use.`);
          }
        }
        res.json({ integration: { ...(await viewOne(tenant, integration)), webhookSecret: secret } });
      },
    }),
    defineRoute({
      method: 'POST', path: '/:id/register-webhook', operationId: 'registerWebhook', tag: 'Integrations', access: 'any',
      summary: "Register (or re-register) the webhook at the helpdesk, with events inbox, close_dialog, close_request, dialog_transferred",
      params: [INTEGRATION_ID],
      responses: {
        200: {
          description: 'Registered; `webhookStatus` becomes `ok`.',
          schema: object({ ok: { const: true }, webhookRegisteredAt: TIMESTAMP }),
          example: { ok: true, webhookRegisteredAt: EXAMPLE_TIME },
        },
      },
      errors: {
        NOT_FOUND: NO_INTEGRATION,
        not_supported: 'the integration has no apiUrl, is a webchat one, or a WhatsApp one (set in the Meta App Dashboard)',
        VALIDATION_ERROR: 'no helpdesk apiToken is set',
        UPSTREAM_ERROR: 'the helpdesk or Telegram refused or could not be reached (the message says which status came back)',
      },
      load: (req) => load(req.tenant!, req.params.id, true),
      handler: async ({ req, res, loaded: integration }) => {
        const tenant = req.tenant!;
        if (integration.type === 'telegram' && integration.apiTokenSealed) {
          const failed = await registerTelegram(tenant, integration, box.open(integration.apiTokenSealed), box.open(integration.webhookSecretSealed));
          if (failed) throw new AppError('UPSTREAM_ERROR', failed.message);
          res.json({ ok: true, webhookRegisteredAt: integration.webhookRegisteredAt!.toISOString() });
          return;
        }
        if (integration.type !== 'helpdesk' || !integration.apiUrl) {
          throw new AppError('not_supported', NOT_REGISTERED_HERE[integration.type]);
        }
        if (!integration.apiTokenSealed) {
          throw new AppError('VALIDATION_ERROR', 'Set the helpdesk apiToken before registering the webhook.', {
            details: [{ field: 'apiToken', message: 'is required to register the webhook' }],
          });
        }
        const token = box.open(integration.apiTokenSealed);
        let remoteId: string;
        try {
          remoteId = await registerAt(integration as Integration & { apiUrl: string }, token);
        } catch (err) {
          if (err instanceof WebhookRegistrationError && integration.webhookStatus === 'ok') {
            // The helpdesk shows it is not delivering to us: the badge must not say OK any more.
            integration.webhookStatus = 'pending';
            integration.updatedAt = new Date();
            await tenant.em.flush();
          }
          throw new AppError('UPSTREAM_ERROR', `The helpdesk did not register the webhook: ${upstreamText(err)}.`);
        }
        const at = await registered(tenant, integration, remoteId);
        res.json({ ok: true, webhookRegisteredAt: at.toISOString() });
      },
    }),
  ];
}
