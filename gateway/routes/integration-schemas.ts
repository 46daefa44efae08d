import { PRECHAT_FORMS, type Integration, type IntegrationType, type PrechatForm } from '../../schema/entities.js';
import { arrayOf, BOOLEAN, COUNT, EXAMPLE_TIME, ID, nullable, object, STRING, TIMESTAMP, type JsonSchema } from '../http/schemas.js';
import type { FieldError } from '../../lib/errors.js';
import { bodyValidator, idPathParam, invalidFields } from '../http/validate.js';
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
  /** WhatsApp: the business phone number's id in the Graph API. */
  phoneNumberId?: string;
  /** WhatsApp: the Graph API access token (write-only). */
  accessToken?: string;
  /** WhatsApp: the Meta app secret, the HMAC key of X-Hub-Signature-256 (write-only). */
  appSecret?: string;
  /** Telegram: the bot's token from @BotFather (write-only). */
  botToken?: string;
}

/** The fields only some types use: any other type refuses them (400 naming each). */
export const TYPE_FIELDS: Record<IntegrationType, readonly (keyof IntegrationInput)[]> = {
  helpdesk: ['apiUrl', 'apiToken', 'region', 'webhookSecret', 'handoffGroupId'],
  webchat: ['allowedOrigins', 'prechatForm'],
  whatsapp: ['phoneNumberId', 'accessToken', 'appSecret'],
  telegram: ['botToken'],
};
/** What a create of each type must send besides type, name and agentId. */
export const REQUIRED_ON_CREATE: Record<IntegrationType, readonly (keyof IntegrationInput)[]> = {
  helpdesk: [],
  webchat: [],
  whatsapp: ['phoneNumberId', 'accessToken', 'appSecret'],
  telegram: ['botToken'],
};
/** A Telegram bot token as @BotFather issues it: `<bot id>:<secret>`. */
export const BOT_TOKEN_PATTERN = '^\\d{1,20}:[A-Za-z0-9_-]{20,100}$';

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
  phoneNumberId: { type: 'string', pattern: '^[0-9]{1,32}$', description: 'WhatsApp: the phone number id of the Graph API (digits).' },
  // Sent in an Authorization header: printable ASCII, no spaces.
  accessToken: { type: 'string', minLength: 1, maxLength: 4096, pattern: '^[\\x21-\\x7e]+$', description: 'WhatsApp: the Graph API access token (write-only).' },
  appSecret: { type: 'string', minLength: 16, maxLength: 512, pattern: '^\\S+$', description: 'WhatsApp: the Meta app secret that signs X-Hub-Signature-256 (write-only).' },
  botToken: { type: 'string', maxLength: 121, pattern: BOT_TOKEN_PATTERN, description: 'Telegram: the bot token from @BotFather (write-only).' },
};
const TYPES = ['helpdesk', 'webchat', 'whatsapp', 'telegram'];
export const createBody = bodyValidator<IntegrationInput & { type: IntegrationType; name: string; agentId: number }>({
  title: 'IntegrationCreate',
  type: 'object',
  additionalProperties: false,
  required: ['type', 'name', 'agentId'],
  properties: { type: { type: 'string', enum: TYPES }, ...properties },
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
  phoneNumberId: i.phoneNumberId,
  verifyToken: i.type === 'whatsapp' ? i.verifyToken : null,
  hasAppSecret: i.type === 'whatsapp',
  allowedOrigins: i.allowedOrigins,
  handoffGroupId: i.handoffGroupId,
  prechatForm: i.prechatForm,
  webhookUrl,
  webhookStatus: i.type !== 'webchat' ? webhookStatusOf(i.webhookStatus === 'ok', activity, now) : i.webhookStatus,
  webhookRegisteredAt: i.webhookRegisteredAt ? i.webhookRegisteredAt.toISOString() : null,
  lastWebhookAt: activity.lastWebhookAt,
  signatureFailuresLastHour: activity.signatureFailuresLastHour,
  lastSignatureFailure: activity.lastSignatureFailure,
  createdAt: i.createdAt.toISOString(),
  updatedAt: i.updatedAt.toISOString(),
});

const INTEGRATION_PROPERTIES = {
  id: ID,
  type: { type: 'string', enum: TYPES },
  name: STRING,
  agentId: nullable(ID),
  active: BOOLEAN,
  apiUrl: { ...nullable(STRING), description: 'The helpdesk instance (helpdesk only).' },
  region: nullable({ type: 'string', enum: ['global', 'europe'] }),
  hasApiToken: { ...BOOLEAN, description: 'Whether a token is stored (write-only): the helpdesk apiToken, the WhatsApp accessToken or the Telegram botToken.' },
  phoneNumberId: { ...nullable(STRING), description: 'WhatsApp: the phone number id of the Graph API.' },
  verifyToken: { ...nullable(STRING), description: "WhatsApp: the token Meta's webhook check must echo (generated); paste it with webhookUrl into the Meta App Dashboard (WhatsApp › Configuration › Webhook)." },
  hasAppSecret: { ...BOOLEAN, description: 'WhatsApp: whether the app secret is stored (it is write-only).' },
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
const SECRET = { type: 'string', description: 'The webhook secret (HMAC key): shown by create and rotate-secret only.' };
const WITH_SECRET = object({ ...INTEGRATION_PROPERTIES, webhookSecret: SECRET }, { title: 'IntegrationWithSecret' });
/** A new integration: with its webhook secret, except a WhatsApp one (its secret is the Meta app secret, write-only). */
export const CREATED_INTEGRATION = object(
  { ...INTEGRATION_PROPERTIES, webhookSecret: { ...SECRET, description: 'The webhook secret: shown by create and rotate-secret only; absent for WhatsApp (the app secret it was given is write-only).' } },
  { title: 'IntegrationCreated', optional: ['webhookSecret'] },
);
export const EXAMPLE_INTEGRATION = {
  id: 1,
  type: 'helpdesk',
  name: 'Chat2Desk',
  agentId: 1,
  active: true,
  apiUrl: 'https://api.chat2desk.com',
  region: 'global',
  hasApiToken: true,
  phoneNumberId: null,
  verifyToken: null,
  hasAppSecret: false,
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
/** Why a new integration's webhook is not registered: as the register route's error would say it. */
export interface WebhookError {
  code: 'UPSTREAM_ERROR';
  message: string;
}

/**
 * The create answer: the integration with its secret (the record GET shows, and the secret),
 * and beside it `webhookError`: null when the webhook was registered or there was nothing to
 * register, else why not.
 */
const WEBHOOK_ERROR: JsonSchema = {
  ...nullable(object({ code: { type: 'string', enum: ['UPSTREAM_ERROR'] }, message: STRING })),
  description: 'Why the webhook was not registered (the helpdesk or Telegram refused, was down or slow); null when it was, or when there was nothing to register (no apiToken, a webchat or WhatsApp integration).',
};
export const CREATED = {
  schema: object({ integration: CREATED_INTEGRATION, webhookError: WEBHOOK_ERROR }),
  example: { integration: { ...ONE_WITH_SECRET.example.integration, webhookStatus: 'ok', webhookRegisteredAt: EXAMPLE_TIME }, webhookError: null },
};

/** Why register-webhook does not apply (a helpdesk without apiUrl: the catalog's message). */
export const NOT_REGISTERED_HERE: Record<IntegrationType, string | undefined> = {
  helpdesk: undefined,
  webchat: 'Webchat integrations receive messages over a WebSocket; there is no webhook to register.',
  whatsapp: "A WhatsApp webhook is set in the Meta App Dashboard (WhatsApp › Configuration › Webhook): paste this integration's webhookUrl as the Callback URL and its verifyToken as the Verify token, then subscribe to the messages field.",
  telegram: undefined,
};

/**
 * The PATCH answer: the integration as it is now; beside it `webhookError` when a new Telegram
 * botToken was sent (null: the webhook was registered with it).
 */
export const PATCHED = {
  schema: object({ integration: INTEGRATION, webhookError: WEBHOOK_ERROR }, { optional: ['webhookError'] }),
  example: ONE_INTEGRATION.example,
};

/** Every field one type uses and another does not: 400 naming each one sent to the wrong type (or missing from a create). */
export function checkFieldsFitType(type: IntegrationType, body: IntegrationInput, creating = false): void {
  const own = new Set<string>(TYPE_FIELDS[type]);
  const others = [...new Set(Object.values(TYPE_FIELDS).flat())].filter((f) => !own.has(f));
  const details: FieldError[] = others
    .filter((f) => body[f] !== undefined && body[f] !== null)
    .map((field) => ({ field, message: `is not used by ${type} integrations` }));
  if (creating) for (const field of REQUIRED_ON_CREATE[type]) if (body[field] === undefined) details.push({ field, message: `is required for ${type} integrations` });
  if (details.length) throw invalidFields(details);
}

export const INTEGRATION_ID = idPathParam('integration');
export const BAD_INTEGRATION = "a bad field, a field the type does not use, a field the type needs missing, an unknown agentId, an apiUrl at a private address, an apiUrl without apiToken, a token neither helpdesk instance accepts, or a new apiUrl or region without the apiToken";
export const PROBE_FAILED = 'the helpdesk instances could not be asked whether they know the token';
export const NO_INTEGRATION = 'no such integration';
