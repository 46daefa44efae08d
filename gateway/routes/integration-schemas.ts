import { PRECHAT_FORMS, type Integration, type IntegrationType, type PrechatForm } from '../../schema/entities.js';
import { arrayOf, BOOLEAN, COUNT, EXAMPLE_TIME, ID, nullable, object, STRING, TIMESTAMP } from '../http/schemas.js';
import { bodyValidator, idPathParam } from '../http/validate.js';
import type { HelpdeskRegion } from '../integrations/helpdesk-account.js';
import { webhookStatusOf, type WebhookActivityView } from '../webhook/activity.js';
import { SIGNATURE_FAILURES } from '../webhook/signature.js';

/**
 * What the integration routes (gateway/routes/integrations.ts) accept and answer: the bodies
 * they check, the view of an integration with the schemas the OpenAPI document shows for it,
 * and their examples.
 */

export interface IntegrationInput {
  name?: string;
  agentId?: number;
  active?: boolean;
  apiUrl?: string | null;
  apiToken?: string | null;
  region?: HelpdeskRegion;
  allowedOrigins?: string[];
  webhookSecret?: string;
  /** Helpdesk: the operator group a handed-off dialog is transferred to; null: no transfer. */
  handoffGroupId?: number | null;
  /** Webchat: what the widget asks before the first message. */
  prechatForm?: PrechatForm;
}

const properties = {
  name: { type: 'string', minLength: 1, maxLength: 200, pattern: '\\S' },
  agentId: { type: 'integer', minimum: 1, maximum: 2_147_483_647 },
  active: { type: 'boolean' },
  apiUrl: { type: ['string', 'null'], format: 'uri', pattern: '^https?://', maxLength: 2000 },
  apiToken: { type: ['string', 'null'], minLength: 1, maxLength: 4096 },
  region: { type: 'string', enum: ['global', 'europe'] },
  allowedOrigins: { type: 'array', maxItems: 100, items: { type: 'string', pattern: '^https?://[^/\\s]+/?$', maxLength: 500 } },
  handoffGroupId: { type: ['integer', 'null'], minimum: 1, maximum: 2_147_483_647 },
  prechatForm: { type: 'string', enum: PRECHAT_FORMS },
};
export const createBody = bodyValidator<IntegrationInput & { type: IntegrationType; name: string; agentId: number }>({
  title: 'IntegrationCreate',
  type: 'object',
  additionalProperties: false,
  required: ['type', 'name', 'agentId'],
  properties: { type: { type: 'string', enum: ['helpdesk', 'webchat'] }, ...properties },
});
export const patchBody = bodyValidator<IntegrationInput>({
  title: 'IntegrationPatch',
  type: 'object',
  additionalProperties: false,
  // A secret the helpdesk issued, used as it was copied (the HMAC key is its UTF-8 bytes).
  properties: { ...properties, webhookSecret: { type: 'string', minLength: 16, maxLength: 512, pattern: '^\\S+$' } },
});

/** An integration as the API shows it (never its secrets or tokens), with how its webhooks fare (`webhookStatus` of a helpdesk one: as of `now`). */
export const integrationView = (i: Integration, activity: WebhookActivityView, webhookUrl: string, now: number) => ({
  id: i.id,
  type: i.type,
  name: i.name,
  agentId: i.agentId,
  active: i.active,
  apiUrl: i.apiUrl,
  region: i.region,
  hasApiToken: i.apiTokenSealed !== null,
  allowedOrigins: i.allowedOrigins,
  handoffGroupId: i.handoffGroupId,
  prechatForm: i.prechatForm,
  webhookUrl,
  webhookStatus: i.type === 'helpdesk' ? webhookStatusOf(i.webhookStatus === 'ok', activity, now) : i.webhookStatus,
  webhookRegisteredAt: i.webhookRegisteredAt ? i.webhookRegisteredAt.toISOString() : null,
  lastWebhookAt: activity.lastWebhookAt,
  signatureFailuresLastHour: activity.signatureFailuresLastHour,
  lastSignatureFailure: activity.lastSignatureFailure,
  createdAt: i.createdAt.toISOString(),
  updatedAt: i.updatedAt.toISOString(),
});

const INTEGRATION_PROPERTIES = {
  id: ID,
  type: { type: 'string', enum: ['helpdesk', 'webchat'] },
  name: STRING,
  agentId: nullable(ID),
  active: BOOLEAN,
  apiUrl: { ...nullable(STRING), description: 'The helpdesk instance (helpdesk only).' },
  region: nullable({ type: 'string', enum: ['global', 'europe'] }),
  hasApiToken: { ...BOOLEAN, description: 'Whether a helpdesk token is stored (it is write-only).' },
  allowedOrigins: { ...arrayOf(STRING), description: 'Webchat: the pages that may open the chat; empty: any.' },
  handoffGroupId: { ...nullable(ID), description: 'Helpdesk: the Chat2Desk operator group a handed-off dialog is transferred to (null: no transfer call).' },
  prechatForm: { type: 'string', enum: PRECHAT_FORMS, description: 'Webchat: what the widget asks before the first message of a visitor the host page did not identify (`off`, the `name`, the `name_email`); the answers fill the lead, unverified.' },
  webhookUrl: { type: 'string', description: 'PUBLIC_BASE_URL/api/webhook/{type}/{id}' },
  webhookStatus: { type: 'string', enum: ['pending', 'ok', 'failing'] },
  webhookRegisteredAt: nullable(TIMESTAMP),
  lastWebhookAt: { ...nullable(TIMESTAMP), description: 'When the last webhook with a valid signature arrived.' },
  signatureFailuresLastHour: COUNT,
  lastSignatureFailure: nullable(object({ at: TIMESTAMP, reason: { type: 'string', enum: Object.keys(SIGNATURE_FAILURES) }, message: STRING })),
  createdAt: TIMESTAMP,
  updatedAt: TIMESTAMP,
};
export const INTEGRATION = object(INTEGRATION_PROPERTIES, { title: 'Integration' });
const WITH_SECRET = object({ ...INTEGRATION_PROPERTIES, webhookSecret: { type: 'string', description: 'The webhook secret (HMAC key): shown by create and rotate-secret only.' } }, { title: 'IntegrationWithSecret' });
export const EXAMPLE_INTEGRATION = {
  id: 1,
  type: 'helpdesk',
  name: 'Chat2Desk',
  agentId: 1,
  active: true,
  apiUrl: 'https://api.chat2desk.com',
  region: 'global',
  hasApiToken: true,
  allowedOrigins: [],
  handoffGroupId: 7,
  prechatForm: 'off',
  webhookUrl: 'https://bot.example.com/api/webhook/helpdesk/1',
  webhookStatus: 'pending',
  webhookRegisteredAt: null,
  lastWebhookAt: null,
  signatureFailuresLastHour: 0,
  lastSignatureFailure: null,
  createdAt: EXAMPLE_TIME,
  updatedAt: EXAMPLE_TIME,
};
const EXAMPLE_SECRET = '4f3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a39281706f5e';
export const ONE_INTEGRATION = { schema: object({ integration: INTEGRATION }), example: { integration: EXAMPLE_INTEGRATION } };
export const ONE_WITH_SECRET = { schema: object({ integration: WITH_SECRET }), example: { integration: { ...EXAMPLE_INTEGRATION, webhookSecret: EXAMPLE_SECRET } } };
export const INTEGRATION_ID = idPathParam('integration');
export const BAD_INTEGRATION = "a bad field, a field the type does not use, an unknown agentId, an apiUrl at a private address, an apiUrl without apiToken, a token neither helpdesk instance accepts, or a new apiUrl or region without the apiToken";
export const PROBE_FAILED = 'the helpdesk instances could not be asked whether they know the token';
export const NO_INTEGRATION = 'no such integration';
