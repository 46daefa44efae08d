import { HELPDESK_PAYLOAD_VALIDATORS } from '../../lib/channels/helpdesk/webhook.js';
import { WEBHOOK_CHANNELS } from '../../lib/channels/registry.js';
import type { WebhookChannelType } from '../../lib/channels/types.js';
import type { ParamDoc, RouteDoc } from '../http/route-docs.js';
import { object } from '../http/schemas.js';
import { idPathParam } from '../http/validate.js';
import { SIGNATURE_RE } from './signature.js';

/** The webhook ingress's limits (gateway/webhook/ingress.ts) and its routes' OpenAPI documentation. */
export const MAX_WEBHOOK_BODY_BYTES = 1024 * 1024;
/** Beyond this the body is not even read (its signature cannot be checked either). */
export const WEBHOOK_HARD_CAP_BYTES = 8 * 1024 * 1024;
/** Deepest nesting of arrays / objects a webhook body may have. */
export const MAX_JSON_DEPTH = 32;

const WEBHOOK_CHANNEL_TYPES = Object.keys(WEBHOOK_CHANNELS) as WebhookChannelType[];

export const WEBHOOK_PARAMS: readonly ParamDoc[] = [
  {
    name: 'connectorType', in: 'path',
    description: 'The channel: `helpdesk` (Chat2Desk), `whatsapp` (WhatsApp Cloud API), `telegram` (Telegram Bot API). `webchat` takes no webhooks (its widget speaks WebSocket: 404 naming it).',
    schema: { type: 'string', enum: WEBHOOK_CHANNEL_TYPES }, example: 'helpdesk',
  },
  idPathParam('integration', 'integrationId'),
];

/** WhatsApp's subscription probe (GET): Meta's query parameters. */
export const PROBE_PARAMS: readonly ParamDoc[] = [
  { name: 'hub.mode', in: 'query', description: 'WhatsApp: `subscribe` (Meta\'s probe). Absent: not a probe (the JSON answer).', schema: { type: 'string' }, example: 'subscribe' },
  { name: 'hub.verify_token', in: 'query', description: "WhatsApp: the integration's `verifyToken` (as pasted into Meta's dashboard); another one answers 403.", schema: { type: 'string' }, example: 'a1b2c3d4e5f6' },
  { name: 'hub.challenge', in: 'query', description: 'WhatsApp: any text up to 256 characters, echoed as the text/plain answer.', schema: { type: 'string', maxLength: 256 }, example: '1158201444' },
];

const HEX_EXAMPLE = `sha256=${'0a1b2c3d'.repeat(8)}`;
/** The proof headers of the channels, in words (every channel's are named by its `proof`). */
const PROOF_HEADER_DOCS: Readonly<Record<string, Omit<ParamDoc, 'name' | 'in'>>> = {
  'x-webhook-signature': {
    description: 'helpdesk: `sha256=` + lowercase hex HMAC-SHA256 of the exact raw body, keyed with the webhook secret (this header or x-hub-signature-256).',
    schema: { type: 'string', pattern: SIGNATURE_RE.source }, example: HEX_EXAMPLE,
  },
  'x-hub-signature-256': {
    description: "helpdesk: as x-webhook-signature. whatsapp: the only header taken, `sha256=` + hex HMAC-SHA256 of the exact raw body keyed with the WhatsApp app secret (Meta's X-Hub-Signature-256).",
    schema: { type: 'string', pattern: SIGNATURE_RE.source }, example: HEX_EXAMPLE,
  },
  'x-telegram-bot-api-secret-token': {
    description: 'telegram: the integration\'s secret itself (the `secret_token` given to setWebhook: 1–256 characters of A-Z a-z 0-9 _ -), compared in constant time.',
    schema: { type: 'string', minLength: 1, maxLength: 256, pattern: '^[A-Za-z0-9_-]+$' }, example: 'Xq7_secret-token',
  },
};
const PROOF_HEADERS: readonly ParamDoc[] = [
  ...new Set(WEBHOOK_CHANNEL_TYPES.flatMap((type) => {
    const proof = WEBHOOK_CHANNELS[type].proof;
    return proof.kind === 'signature' ? proof.headers : [proof.header];
  })),
].map((name) => ({ name, in: 'header', ...(PROOF_HEADER_DOCS[name] ?? { description: 'The webhook proof of a channel.', schema: { type: 'string' } }) }));

/** What a WhatsApp Cloud API webhook carries that is read (documentation: the channel reads it by hand, lib/channels/whatsapp/webhook.ts). */
const WHATSAPP_BODY_DOC = {
  title: 'WhatsAppWebhookPayload',
  description: 'WhatsApp Cloud API (Meta Graph) webhook: every `entry[].changes[]` of field `messages` is read; each of `value.messages[]` (customer messages; `text` ones answered, other types handed to a person) and of `value.statuses[]` (`sent`, `delivered`, `read`, `failed` of our replies) is queued as its own item, keyed by its wamid. Anything else answers 200 and is dropped.',
  type: 'object',
  properties: {
    object: { const: 'whatsapp_business_account' },
    entry: { type: 'array', items: { type: 'object', properties: { id: { type: 'string' }, changes: { type: 'array', items: { type: 'object', properties: { field: { type: 'string' }, value: { type: 'object' } } } } } } },
  },
  required: ['entry'],
  examples: [{
    object: 'whatsapp_business_account',
    entry: [{
      id: '102290129340398',
      changes: [{
        field: 'messages',
        value: {
          messaging_product: 'whatsapp',
          metadata: { display_phone_number: '15550783881', phone_number_id: '106540352242922' },
          contacts: [{ profile: { name: 'Sheena Nelson' }, wa_id: '16505551234' }],
          messages: [{ from: '16505551234', id: 'wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=', timestamp: '1749416383', type: 'text', text: { body: 'When are you open?' } }],
          statuses: [{ id: 'wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBI3MTE5MjVBOTE3MDk5QUVFM0YA', status: 'delivered', timestamp: '1749416390', recipient_id: '16505551234' }],
        },
      }],
    }],
  }],
} as const;

/** What a Telegram Bot API webhook carries that is read (documentation: lib/channels/telegram/webhook.ts). */
const TELEGRAM_BODY_DOC = {
  title: 'TelegramUpdate',
  description: 'Telegram Bot API Update: a `message` with `text` from a private chat is a customer message keyed by `update_id`; other updates, groups and channels answer 200 and are dropped.',
  type: 'object',
  properties: {
    update_id: { type: 'integer', minimum: 0 },
    message: { type: 'object', properties: { message_id: { type: 'integer' }, date: { type: 'integer' }, text: { type: 'string' }, chat: { type: 'object' }, from: { type: 'object' } } },
  },
  required: ['update_id'],
  examples: [{
    update_id: 815_274_001,
    message: { message_id: 42, date: 1_749_416_383, text: 'When are you open?', chat: { id: 123_456_789, type: 'private', first_name: 'Ann' }, from: { id: 123_456_789, is_bot: false, first_name: 'Ann' } },
  }],
} as const;

/** `POST /api/webhook/:connectorType/:integrationId`, served ahead of express (handlePost). */
export const webhookPostRouteDoc: RouteDoc = {
  method: 'POST', path: '/api/webhook/:connectorType/:integrationId', operationId: 'receiveWebhook', tag: 'Webhooks', access: 'public',
  summary: 'Inbound channel webhook (helpdesk, WhatsApp, Telegram): customer messages, status events and delivery reports, proven by a signature or a secret header',
  description: [
    'The proof, by channel:',
    '`helpdesk`: `sha256=` + lowercase hex HMAC-SHA256 of the exact raw body keyed with the webhook secret, in `x-webhook-signature` or `x-hub-signature-256`;',
    "`whatsapp`: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body keyed with the WhatsApp app secret>` (no other header);",
    '`telegram`: `X-Telegram-Bot-Api-Secret-Token: <the secret token>` (compared in constant time).',
    'After a secret rotation the previous secret is also taken during its grace period.',
    `Checked in order: connector and integration (404), HTTPS when enforced (403), proof (401), active (403), size ≤ ${MAX_WEBHOOK_BODY_BYTES} bytes (413), JSON (400), the payload (400).`,
    'One body may carry several items (a WhatsApp delivery batches messages and statuses): each is queued as its own message with its own idempotency key (the helpdesk `message_id`, every WhatsApp wamid, the Telegram `update_id`), so a redelivered body, or one mixing new and old items, queues only what is new.',
    '200 comes only after every item is durably queued (JetStream ack); a body with nothing to act on (other helpdesk `hook_type`s such as outbox or new_client, Telegram group messages, …) answers 200 and is dropped. Unknown fields are ignored.',
  ].join(' '),
  params: [...WEBHOOK_PARAMS, ...PROOF_HEADERS],
  body: {
    validators: [...HELPDESK_PAYLOAD_VALIDATORS, { schema: WHATSAPP_BODY_DOC }, { schema: TELEGRAM_BODY_DOC }],
    description: "The platform's own JSON payload: a Chat2Desk API v1 webhook (helpdesk), a WhatsApp Cloud API webhook (whatsapp) or a Telegram Update (telegram); each schema carries an example.",
    example: { message_id: 555, type: 'from_client', text: 'When are you open?', client_id: 'c-1', channel_id: 'ch-9', transport: 'telegram', request_id: 77, dialog_id: 88 },
  },
  responses: { 200: { description: 'Queued (or nothing to act on).', schema: object({ ok: { const: true } }), example: { ok: true } } },
  errors: {
    NOT_FOUND: 'unknown connector type or integration (a webchat integration is told where its WebSocket is)',
    INVALID_SIGNATURE: "the channel's signature or secret-token header is missing, malformed or does not match (the message says which)",
    INTEGRATION_INACTIVE: 'the integration is switched off',
    PAYLOAD_TOO_LARGE: `the body is over ${MAX_WEBHOOK_BODY_BYTES} bytes, or an item is more than the queue takes`,
    VALIDATION_ERROR: `not JSON, nested deeper than ${MAX_JSON_DEPTH} levels, or a payload of a kind the channel acts on that is malformed`,
    QUEUE_UNAVAILABLE: 'the queue could not take an item: retry the whole body (Retry-After; the items already queued are not queued twice)',
  },
};
