import { randomBytes } from 'node:crypto';
import type { Config } from '../../lib/config.js';
import type { SqlPool } from '../../lib/db.js';
import { AppError, notFound, type FieldError } from '../../lib/errors.js';
import { guardForUrl } from '../../lib/address-guard.js';
import { withinDeadline } from '../../lib/deadline.js';
import { DEFAULT_HELPDESK_TIMEOUT_MS, HelpdeskClient } from '../../lib/helpdesk-client.js';
import type { SecretBox } from '../../lib/secrets.js';
import type { TenantScope } from '../../lib/tenancy.js';
import { withinQuota } from '../../lib/quotas.js';
import { AgentSchema, IntegrationSchema, type Integration, type IntegrationType } from '../../schema/entities.js';
import { deleteById } from '../http/delete-by-id.js';
import { BAD_PAGE, examplePage, PAGE_QUERY, pageOf } from '../http/pagination.js';
import { defineRoute, type Route } from '../http/route.js';
import { EXAMPLE_TIME, nullable, object, STRING, TIMESTAMP, type JsonSchema } from '../http/schemas.js';
import { idParam, invalidFields } from '../http/validate.js';
import { registerHelpdeskWebhook, resolveHelpdeskUrl, upstreamText, WebhookRegistrationError } from '../integrations/helpdesk-account.js';
import type { AgentChanges } from '../lib/agent-changes.js';
import { activityOf, readWebhookActivity } from '../webhook/activity.js';
import type { IntegrationCache } from '../webhook/integration-cache.js';
import {
  BAD_INTEGRATION,
  createBody,
  EXAMPLE_INTEGRATION,
  INTEGRATION,
  INTEGRATION_ID,
  integrationView,
  NO_INTEGRATION,
  ONE_INTEGRATION,
  ONE_WITH_SECRET,
  patchBody,
  PROBE_FAILED,
  type IntegrationInput,
} from './integration-schemas.js';

/** Why a new integration's webhook is not registered: as the register route's error would say it. */
interface WebhookError {
  code: 'UPSTREAM_ERROR';
  message: string;
}

/**
 * The create answer: the integration with its secret (the record GET shows, and the secret),
 * and beside it `webhookError`: null when the webhook was registered or there was nothing to
 * register, else why not.
 */
const CREATED = {
  schema: object({
    integration: (ONE_WITH_SECRET.schema.properties as Record<string, JsonSchema>).integration!,
    webhookError: {
      ...nullable(object({ code: { type: 'string', enum: ['UPSTREAM_ERROR'] }, message: STRING })),
      description: 'Why the webhook was not registered at creation (the helpdesk refused, was down or slow); null when it was, or when there was nothing to register (no apiToken, a webchat integration).',
    },
  }),
  example: { integration: { ...ONE_WITH_SECRET.example.integration, webhookStatus: 'ok', webhookRegisteredAt: EXAMPLE_TIME }, webhookError: null },
};

/** 32 random bytes as hex: the shared secret senders key their HMAC with. */
const newWebhookSecret = (): string => randomBytes(32).toString('hex');

const HELPDESK_ONLY = ['apiUrl', 'apiToken', 'region', 'webhookSecret', 'handoffGroupId'] as const;
const WEBCHAT_ONLY = ['allowedOrigins', 'prechatForm'] as const;

function checkFieldsFitType(type: IntegrationType, body: IntegrationInput): void {
  const wrong = (type === 'helpdesk' ? WEBCHAT_ONLY : HELPDESK_ONLY).filter((f) => body[f] !== undefined && body[f] !== null);
  if (wrong.length) {
    const details: FieldError[] = wrong.map((field) => ({ field, message: `is not used by ${type} integrations` }));
    throw invalidFields(details);
  }
}

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
  const registered = async (tenant: TenantScope, integration: Integration, remoteId: string): Promise<Date> => {
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

  const load = async (tenant: TenantScope, rawId: unknown, withSecret = false): Promise<Integration> => {
    const populate = withSecret ? (['apiTokenSealed', 'webhookSecretSealed'] as const) : (['apiTokenSealed'] as const);
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
        const [rows, total] = await req.tenant!.em.findAndCount(IntegrationSchema, {}, { orderBy: { id: 'asc' }, populate: ['apiTokenSealed'], ...page });
        res.json({ integrations: await views(req.tenant!, rows), total, ...page });
      },
    }),
    defineRoute({
      method: 'POST', path: '/', operationId: 'createIntegration', tag: 'Integrations', access: 'any',
      summary: 'Create a helpdesk (Chat2Desk) or webchat integration; its webhook secret is shown in this answer',
      description: 'With an `apiToken` and no `apiUrl` both helpdesk instances are asked which one knows the token; `region` forces one.',
      body: { validators: [createBody], example: { type: 'helpdesk', name: 'Chat2Desk', agentId: 1, apiUrl: 'https://api.chat2desk.com', apiToken: 'chat2desk-api-token' } },
      responses: { 201: { description: 'The new integration with its `webhookSecret`; a helpdesk one with an `apiToken` has its webhook registered (`webhookStatus` `ok`), or is `pending` and `webhookError` says why.', ...CREATED } },
      errors: { VALIDATION_ERROR: BAD_INTEGRATION, UPSTREAM_ERROR: PROBE_FAILED, QUOTA_EXCEEDED: 'the company has QUOTA_INTEGRATIONS integrations (100 by default)' },
      handler: async ({ req, res, body }) => {
        const tenant = req.tenant!;
        checkFieldsFitType(body.type, body);
        await checkAgent(tenant, body.agentId);
        const token = body.apiToken ?? null;
        const where = body.type === 'helpdesk' ? await resolveHelpdeskUrl(config, body, token, null) : undefined;
        checkTokenWithUrl(where?.apiUrl ?? null, token !== null);
        const secret = newWebhookSecret();
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
          createdAt: at,
          updatedAt: at,
        } as never);
        const quota = { companyId: tenant.companyId, field: 'integrations', limit: config.quotas.integrations, entity: IntegrationSchema };
        await withinQuota(tenant.em, quota, () => tenant.em.flush());
        await announce(tenant, integration.id);
        const webhookError = await registerOnCreation(tenant, integration, token);
        res.status(201).json({ integration: { ...(await viewOne(tenant, integration)), webhookSecret: secret }, webhookError });
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
      description: '`{"active":false}` makes its webhooks answer 403 at once; `webhookSecret` sets the secret the helpdesk issued (write-only; the previous one verifies through the grace period).',
      params: [INTEGRATION_ID],
      body: { validators: [patchBody], example: { active: false, handoffGroupId: 7 } },
      responses: { 200: { description: 'The integration as it is now.', ...ONE_INTEGRATION } },
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
        if (body.name !== undefined) integration.name = body.name.trim();
        if (body.agentId !== undefined) integration.agentId = body.agentId;
        if (body.active !== undefined) integration.active = body.active;
        if (body.allowedOrigins !== undefined) integration.allowedOrigins = normaliseOrigins(body.allowedOrigins);
        if (body.prechatForm !== undefined) integration.prechatForm = body.prechatForm;
        integration.updatedAt = new Date();
        await tenant.em.flush();
        await announce(tenant, integration.id);
        res.json({ integration: await viewOne(tenant, integration) });
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
      params: [INTEGRATION_ID],
      responses: { 200: { description: 'The integration with its new `webhookSecret`.', ...ONE_WITH_SECRET } },
      errors: { NOT_FOUND: NO_INTEGRATION },
      load: (req) => load(req.tenant!, req.params.id, true),
      handler: async ({ req, res, loaded: integration }) => {
        const tenant = req.tenant!;
        const secret = newWebhookSecret();
        replaceSecret(integration, secret);
        integration.updatedAt = new Date();
        await tenant.em.flush();
        cache.announce(integration.id);
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
        not_supported: 'the integration has no apiUrl (or is a webchat one)',
        VALIDATION_ERROR: 'no helpdesk apiToken is set',
        UPSTREAM_ERROR: 'the helpdesk refused or could not be reached (the message says which status came back)',
      },
      load: (req) => load(req.tenant!, req.params.id),
      handler: async ({ req, res, loaded: integration }) => {
        const tenant = req.tenant!;
        if (integration.type !== 'helpdesk' || !integration.apiUrl) {
          throw new AppError('not_supported', integration.type === 'helpdesk' ? undefined : 'Webchat integrations receive messages over a WebSocket; there is no webhook to register.');
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
