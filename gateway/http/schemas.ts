/**
 * JSON Schemas of values many answers share, and two helpers to write answer schemas
 * briefly. A `title` names a schema: the OpenAPI document lists it once under
 * components.schemas and refers to it (gateway/http/openapi.ts).
 */
export type JsonSchema = Readonly<Record<string, unknown>>;

/** A row id (integration, agent, knowledge base, conversation…): what idParam accepts in a path. */
export const ID = { type: 'integer', minimum: 1, maximum: 2_147_483_647 } as const;
export const UUID = { type: 'string', format: 'uuid' } as const;
/** ISO 8601 UTC with milliseconds (`Date#toISOString`). */
export const TIMESTAMP = { type: 'string', format: 'date-time' } as const;
/** Money as lib/money.ts formatUsd writes it: a decimal string with 2 to 6 decimals. */
export const USD = { type: 'string', pattern: '^-?\\d+\\.\\d{2,6}$' } as const;
/** A row id of a big table (messages, ledger entries, chunks): beyond 32 bits in time. */
export const BIG_ID = { type: 'integer', minimum: 1 } as const;
export const COUNT = { type: 'integer', minimum: 0 } as const;
export { FLOAT_MAX, FLOAT_MIN } from '../../lib/json-validation.js';
/** A share from 0 to 1 stored as `real`: `format: float` refuses what would round to 0 there (1e-46; gateway/http/validate.ts). */
export const FRACTION = { type: 'number', format: 'float', minimum: 0, maximum: 1 } as const;
export const STRING = { type: 'string' } as const;
/** A period bound in a query: a date (`2026-03-01`) or an ISO 8601 date-time with its zone (`2026-03-01T10:00:00.000000+01:00`). */
export const DATE_OR_TIME = { type: 'string', minLength: 10, maxLength: 35 } as const;
export const BOOLEAN = { type: 'boolean' } as const;

/** `schema` or null. A named schema stays a reference (anyOf); a plain one gets `null` in its type. */
export function nullable(schema: JsonSchema): JsonSchema {
  const { type } = schema;
  if (typeof type === 'string' && schema.title === undefined && schema.enum === undefined) return { ...schema, type: [type, 'null'] };
  return { anyOf: [schema, { type: 'null' }] };
}

/**
 * An answer object: exactly these properties, all present unless listed in `optional`. Strict
 * on purpose: a field added to or dropped from a view fails the tests that check real answers.
 */
export function object(properties: Record<string, JsonSchema>, options: { title?: string; optional?: readonly string[]; description?: string } = {}): JsonSchema {
  const optional = new Set(options.optional ?? []);
  return {
    ...(options.title ? { title: options.title } : {}),
    ...(options.description ? { description: options.description } : {}),
    type: 'object',
    additionalProperties: false,
    required: Object.keys(properties).filter((k) => !optional.has(k)),
    properties,
  };
}

/** An array of `items`. */
export const arrayOf = (items: JsonSchema): JsonSchema => ({ type: 'array', items });

/** The moment the documents' examples happen at. */
export const EXAMPLE_TIME = '2026-03-01T10:00:00.000Z';

/** A knowledge passage an agent's answer drew on (`ReplySource`): on agent replies and evaluation cases. */
export const SOURCE = object({ documentId: ID, chunkId: BIG_ID, title: STRING }, { title: 'Source' });

/** An XState state value: a state name, or an object of nested ones (`{"active":"idle"}`). */
export const STATE_VALUE = { type: ['string', 'object'], description: 'An XState state value: "closed", or {"active":"idle"}.' };
/** The last message of the customer or of whoever answered them (not a note, a system record or the bot's handoff notice): its role, its first 200 characters, when. */
const LAST_MESSAGE = object(
  { role: { type: 'string', enum: ['customer', 'agent', 'operator'] }, text: { type: 'string', maxLength: 200 }, at: TIMESTAMP },
  { title: 'LastMessage' },
);
/** A conversation (session) as lib/conversations.ts conversationView shows it. */
export const CONVERSATION = object(
  {
    id: ID,
    integrationId: ID,
    channel: { type: 'string', enum: ['helpdesk', 'webchat', 'whatsapp', 'telegram'] },
    transport: { ...nullable(STRING), description: 'The messenger behind a helpdesk conversation (`telegram`, `whatsapp`, … as Chat2Desk names it); null for webchat or when unknown.' },
    clientId: { type: 'string', description: 'The helpdesk client_id, or the webchat visitor id.' },
    status: { type: 'string', enum: ['active', 'paused', 'closed'] },
    state: STATE_VALUE,
    context: { type: ['object', 'null'], description: "The machine's context: request and dialog ids seen, transfers, why it is paused." },
    createdAt: TIMESTAMP,
    updatedAt: TIMESTAMP,
    lastMessageAt: { ...nullable(TIMESTAMP), description: 'When the last message of the customer or of whoever answered them was written.' },
    closedAt: nullable(TIMESTAMP),
    lastMessage: { ...nullable(LAST_MESSAGE), description: "The last message of the customer or of whoever answered them (not notes, system records, the bot's handoff notices, nor what the bot answers while the conversation waits for a person it handed it to); null before any." },
    assigneeId: { ...nullable(UUID), description: 'The teammate who has it (PATCH /api/conversations/{id}); null when unassigned.' },
    labels: { ...arrayOf(STRING), description: 'The team\'s labels (PUT /api/conversations/{id}/labels).' },
    customerMessages: { ...COUNT, description: 'Customer messages in the session (a user\'s unread count is this less what they had seen).' },
  },
  { title: 'Conversation' },
);
export const EXAMPLE_CONVERSATION = {
  id: 1,
  integrationId: 1,
  channel: 'helpdesk',
  transport: 'telegram',
  clientId: 'c-1',
  status: 'active',
  state: { active: 'idle' },
  context: { requestIds: [77], dialogIds: [88], transfers: [], lastCustomerMessageId: '555', handoffReason: null, closedAt: null },
  createdAt: EXAMPLE_TIME,
  updatedAt: EXAMPLE_TIME,
  lastMessageAt: EXAMPLE_TIME,
  closedAt: null,
  lastMessage: { role: 'agent', text: 'We open at nine.', at: EXAMPLE_TIME },
  assigneeId: null,
  labels: ['delivery'],
  customerMessages: 1,
};
