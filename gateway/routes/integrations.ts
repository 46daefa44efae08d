import { randomBytes } from 'node:crypto';
import { Router } from 'express';
import type { Config } from '../../lib/config.js';
import { AppError, notFound, type FieldError } from '../../lib/errors.js';
import { HelpdeskClient } from '../../lib/helpdesk-client.js';
import type { SecretBox } from '../../lib/secrets.js';
import type { TenantScope } from '../../lib/tenancy.js';
import { AgentSchema, IntegrationSchema, type Integration, type IntegrationType } from '../../schema/entities.js';
import type { Authenticator } from '../auth/authenticate.js';
import { bodyValidator, idParam } from '../http/validate.js';
import { probeRegion, regionOfUrl, regionUrl, registerHelpdeskWebhook, upstreamText, type HelpdeskRegion } from '../integrations/helpdesk-account.js';
import type { IntegrationCache } from '../webhook/integration-cache.js';

/**
 * Integrations (contract.md § Integrations): CRUD, secret rotation, helpdesk region choice
 * and webhook registration. The webhook secret is shown only by create and rotate-secret;
 * the helpdesk token is write-only. Every change is announced so every gateway's webhook
 * cache drops the integration.
 */
interface IntegrationInput {
  name?: string;
  agentId?: number;
  active?: boolean;
  apiUrl?: string | null;
  apiToken?: string | null;
  region?: HelpdeskRegion;
  allowedOrigins?: string[];
}

const properties = {
  name: { type: 'string', minLength: 1, maxLength: 200, pattern: '\\S' },
  agentId: { type: 'integer', minimum: 1, maximum: 2_147_483_647 },
  active: { type: 'boolean' },
  apiUrl: { type: ['string', 'null'], format: 'uri', pattern: '^https?://', maxLength: 2000 },
  apiToken: { type: ['string', 'null'], minLength: 1, maxLength: 4096 },
  region: { type: 'string', enum: ['global', 'europe'] },
  allowedOrigins: { type: 'array', maxItems: 100, items: { type: 'string', pattern: '^https?://[^/\\s]+/?$', maxLength: 500 } },
};
const createBody = bodyValidator<IntegrationInput & { type: IntegrationType; name: string; agentId: number }>({
  type: 'object',
  additionalProperties: false,
  required: ['type', 'name', 'agentId'],
  properties: { type: { type: 'string', enum: ['helpdesk', 'webchat'] }, ...properties },
});
const patchBody = bodyValidator<IntegrationInput>({ type: 'object', additionalProperties: false, properties });

/** 32 random bytes as hex: the shared secret senders key their HMAC with. */
const newWebhookSecret = (): string => randomBytes(32).toString('hex');

const HELPDESK_ONLY = ['apiUrl', 'apiToken', 'region'] as const;
const WEBCHAT_ONLY = ['allowedOrigins'] as const;

function checkFieldsFitType(type: IntegrationType, body: IntegrationInput): void {
  const wrong = (type === 'helpdesk' ? WEBCHAT_ONLY : HELPDESK_ONLY).filter((f) => body[f] !== undefined && body[f] !== null);
  if (wrong.length) {
    const details: FieldError[] = wrong.map((field) => ({ field, message: `is not used by ${type} integrations` }));
    throw new AppError('VALIDATION_ERROR', `Invalid ${wrong.join(', ')}.`, { details });
  }
}

async function checkAgent(tenant: TenantScope, agentId: number | undefined): Promise<void> {
  if (agentId === undefined) return;
  if (!(await tenant.em.count(AgentSchema, { id: agentId }))) {
    throw new AppError('VALIDATION_ERROR', 'Invalid agentId.', { details: [{ field: 'agentId', message: 'no such agent' }] });
  }
}

const normaliseOrigins = (origins: string[]): string[] => [...new Set(origins.map((o) => new URL(o).origin))];

export interface IntegrationRoutesDeps {
  auth: Authenticator;
  config: Config;
  box: SecretBox;
  cache: IntegrationCache;
  /** Clock of secret grace periods (the webhook verifier uses the same one). */
  now: () => number;
}

export function integrationRoutes({ auth, config, box, cache, now }: IntegrationRoutesDeps): Router {
  const router = Router();
  router.use(auth.any);

  const webhookUrl = (i: Integration) => `${config.publicBaseUrl}/api/webhook/${i.type}/${i.id}`;
  const view = (i: Integration) => ({
    id: i.id,
    type: i.type,
    name: i.name,
    agentId: i.agentId,
    active: i.active,
    apiUrl: i.apiUrl,
    region: i.region,
    hasApiToken: i.apiTokenSealed !== null,
    allowedOrigins: i.allowedOrigins,
    webhookUrl: webhookUrl(i),
    webhookStatus: i.webhookStatus,
    webhookRegisteredAt: i.webhookRegisteredAt ? i.webhookRegisteredAt.toISOString() : null,
    createdAt: i.createdAt.toISOString(),
    updatedAt: i.updatedAt.toISOString(),
  });

  /**
   * Where the helpdesk account lives. An explicit apiUrl wins; else `region` forces an
   * instance; else, with a token, both instances are asked. Returns undefined to keep it.
   */
  async function resolveApiUrl(body: IntegrationInput, token: string | null, currentUrl: string | null): Promise<{ apiUrl: string | null; region: HelpdeskRegion | null } | undefined> {
    if (body.apiUrl !== undefined && body.apiUrl !== null) {
      const apiUrl = body.apiUrl.replace(/\/+$/, '');
      return { apiUrl, region: body.region ?? regionOfUrl(config, apiUrl) };
    }
    if (body.region) return { apiUrl: regionUrl(config, body.region), region: body.region };
    const url = body.apiUrl === null ? null : currentUrl;
    if (url === null && token) return probeRegion(config, token);
    return body.apiUrl === null ? { apiUrl: null, region: null } : undefined;
  }

  const load = async (tenant: TenantScope, rawId: unknown, withSecret = false): Promise<Integration> => {
    const populate = withSecret ? (['apiTokenSealed', 'webhookSecretSealed'] as const) : (['apiTokenSealed'] as const);
    const integration = await tenant.em.findOne(IntegrationSchema, { id: idParam(rawId, 'Integration') }, { populate });
    if (!integration) throw notFound('Integration');
    return integration;
  };

  router.get('/', async (req, res) => {
    const rows = await req.tenant!.em.find(IntegrationSchema, {}, { orderBy: { id: 'asc' }, populate: ['apiTokenSealed'] });
    res.json({ integrations: rows.map(view) });
  });

  router.post('/', async (req, res) => {
    const body = createBody(req.body);
    const tenant = req.tenant!;
    checkFieldsFitType(body.type, body);
    await checkAgent(tenant, body.agentId);
    const token = body.apiToken ?? null;
    const where = body.type === 'helpdesk' ? await resolveApiUrl(body, token, null) : undefined;
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
      createdAt: at,
      updatedAt: at,
    } as never);
    await tenant.em.flush();
    cache.announce(integration.id);
    res.status(201).json({ integration: { ...view(integration), webhookSecret: secret } });
  });

  router.get('/:id', async (req, res) => {
    res.json({ integration: view(await load(req.tenant!, req.params.id)) });
  });

  router.patch('/:id', async (req, res) => {
    const tenant = req.tenant!;
    const integration = await load(tenant, req.params.id);
    const body = patchBody(req.body);
    checkFieldsFitType(integration.type, body);
    await checkAgent(tenant, body.agentId);
    if (integration.type === 'helpdesk') {
      // Only a change of where or who asks for a new answer; otherwise keep the stored one.
      const asks = body.apiUrl !== undefined || body.region !== undefined || (body.apiToken && !integration.apiUrl);
      const storedToken = () => (integration.apiTokenSealed ? box.open(integration.apiTokenSealed) : null);
      const where = asks ? await resolveApiUrl(body, body.apiToken !== undefined ? body.apiToken : storedToken(), integration.apiUrl) : undefined;
      if (where) {
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
    }
    if (body.name !== undefined) integration.name = body.name.trim();
    if (body.agentId !== undefined) integration.agentId = body.agentId;
    if (body.active !== undefined) integration.active = body.active;
    if (body.allowedOrigins !== undefined) integration.allowedOrigins = normaliseOrigins(body.allowedOrigins);
    integration.updatedAt = new Date();
    await tenant.em.flush();
    cache.announce(integration.id);
    res.json({ integration: view(integration) });
  });

  router.delete('/:id', async (req, res) => {
    const id = idParam(req.params.id, 'Integration');
    const n = await req.tenant!.em.nativeDelete(IntegrationSchema, { id });
    if (n === 0) throw notFound('Integration');
    cache.announce(id);
    res.status(204).end();
  });

  router.post('/:id/rotate-secret', async (req, res) => {
    const tenant = req.tenant!;
    const integration = await load(tenant, req.params.id, true);
    const secret = newWebhookSecret();
    integration.previousSecretSealed = integration.webhookSecretSealed;
    integration.previousSecretExpiresAt = new Date(now() + config.secretGraceSeconds * 1000);
    integration.webhookSecretSealed = box.seal(secret);
    integration.updatedAt = new Date();
    await tenant.em.flush();
    cache.announce(integration.id);
    res.json({ integration: { ...view(integration), webhookSecret: secret } });
  });

  router.post('/:id/register-webhook', async (req, res) => {
    const tenant = req.tenant!;
    const integration = await load(tenant, req.params.id);
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
      remoteId = await registerHelpdeskWebhook(new HelpdeskClient(integration.apiUrl, token), {
        url: webhookUrl(integration),
        name: `mas-integration-${integration.id}`,
        knownRemoteId: integration.webhookRemoteId,
      });
    } catch (err) {
      throw new AppError('UPSTREAM_ERROR', `The helpdesk did not register the webhook: ${upstreamText(err, token)}`);
    }
    const at = new Date();
    integration.webhookStatus = 'ok';
    integration.webhookRegisteredAt = at;
    integration.webhookRemoteId = remoteId;
    integration.updatedAt = at;
    await tenant.em.flush();
    cache.announce(integration.id);
    res.json({ ok: true, webhookRegisteredAt: at.toISOString() });
  });

  return router;
}
