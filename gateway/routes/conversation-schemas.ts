import type { AppError } from '../../lib/errors.js';
import type { ConversationTransition } from '../../schema/conversation-entities.js';
import { PAGE_PARAMS, pageParams, type Page } from '../http/pagination.js';
import type { ParamDoc } from '../http/route-docs.js';
import type { QueryParams } from '../http/route.js';
import { arrayOf, BIG_ID, CONVERSATION, DATE_OR_TIME, EXAMPLE_CONVERSATION, EXAMPLE_TIME, ID, nullable, object, SOURCE, STATE_VALUE, STRING, TIMESTAMP } from '../http/schemas.js';
import { bodyValidator, idFilter, idPathParam, invalidFields } from '../http/validate.js';

/**
 * What the conversation routes (gateway/routes/conversations.ts) accept and answer: the
 * list's filters and their parser, the operator reply's body, the views of messages and
 * transitions with the schemas the OpenAPI document shows for them, and their examples.
 */

const DAY_MS = 86_400_000;
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
/** A date-time with its zone: 2026-03-01T10:00:00Z, 2026-03-01T10:00:00.000+01:00. */
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * `from` / `to` of the conversation list: a date (UTC day; `to` includes that whole day) or
 * an ISO 8601 date-time with its zone. Conversations are filtered by when they started.
 */
function dateBound(value: unknown, field: 'from' | 'to', details: { field: string; message: string }[]): { at: Date; inclusive: boolean } | undefined {
  if (value === undefined) return undefined;
  const text = typeof value === 'string' ? value : '';
  const ms = DATE_ONLY.test(text) ? Date.parse(`${text}T00:00:00Z`) : DATE_TIME.test(text) ? Date.parse(text) : NaN;
  if (Number.isNaN(ms)) {
    details.push({ field, message: 'must be a date (2026-03-01) or an ISO 8601 date-time with its zone (2026-03-01T10:00:00Z)' });
    return undefined;
  }
  // `to=2026-03-01` means up to the end of that day.
  if (field === 'to' && DATE_ONLY.test(text)) return { at: new Date(ms + DAY_MS), inclusive: false };
  return { at: new Date(ms), inclusive: true };
}

export const replyBody = bodyValidator<{ text: string }>({
  type: 'object',
  additionalProperties: false,
  required: ['text'],
  properties: { text: { type: 'string', minLength: 1, maxLength: 4096, pattern: '\\S' } },
});

export const transitionView = (t: ConversationTransition) => ({
  seq: t.seq,
  at: t.at.toISOString(),
  event: t.event,
  payload: t.payload,
  from: t.fromState,
  to: t.toState,
  actions: t.actions,
});

export const MESSAGE = object(
  {
    id: BIG_ID,
    seq: { type: 'integer', minimum: 1 },
    role: { type: 'string', enum: ['customer', 'agent', 'operator', 'system'] },
    kind: { type: 'string', enum: ['message', 'reply', 'handoff_notice', 'transfer'] },
    text: STRING,
    externalId: { ...nullable(STRING), description: "The platform's id of the message." },
    replyToId: nullable(BIG_ID),
    delivery: { ...nullable({ type: 'string', enum: ['pending', 'sent', 'failed', 'cancelled'] }), description: 'Outbound messages only.' },
    deliveryError: { ...nullable(STRING), description: 'Why a reply was not delivered.' },
    sources: { ...nullable(arrayOf(SOURCE)), description: "An agent reply's knowledge sources; null for other messages." },
    confidence: { ...nullable({ type: 'number', minimum: 0, maximum: 1 }), description: 'An agent reply grounded in the knowledge: how sure the agent was that its sources answer the question (0–1); null for other messages.' },
    createdAt: TIMESTAMP,
  },
  { title: 'Message' },
);
export const TRANSITION = object(
  {
    seq: { type: 'integer', minimum: 1 },
    at: TIMESTAMP,
    event: STRING,
    payload: { type: 'object' },
    from: { type: ['string', 'object', 'null'] },
    to: STATE_VALUE,
    actions: arrayOf({ type: 'object', required: ['type'], properties: { type: STRING, params: {}, effect: STRING } }),
  },
  { title: 'Transition' },
);
export const EXAMPLE_MESSAGE = { id: 2, seq: 2, role: 'agent', kind: 'reply', text: 'We open at nine.', externalId: '556', replyToId: 1, delivery: 'sent', deliveryError: null, sources: [{ documentId: 7, chunkId: 31, title: 'Opening hours' }], confidence: 0.82, createdAt: EXAMPLE_TIME };
export const EXAMPLE_TRANSITION = { seq: 1, at: EXAMPLE_TIME, event: 'customer.message', payload: { text: 'When are you open?' }, from: null, to: { active: 'answering' }, actions: [] };
export const ONE_CONVERSATION = { schema: object({ conversation: CONVERSATION }), example: { conversation: EXAMPLE_CONVERSATION } };
export const CONVERSATION_ID = idPathParam('conversation');
const LIST_FILTERS: readonly ParamDoc[] = [
  { name: 'status', in: 'query', description: 'Only conversations in this status.', schema: { type: 'string', enum: ['active', 'paused', 'closed'] } },
  { name: 'integrationId', in: 'query', description: 'Only conversations of this integration.', schema: ID },
  { name: 'clientId', in: 'query', description: 'Only conversations of this customer (helpdesk client_id or webchat visitor id).', schema: { type: 'string', minLength: 1, maxLength: 200 } },
  { name: 'from', in: 'query', description: 'Started at or after: a date (2026-03-01, UTC) or an ISO 8601 date-time with its zone.', schema: DATE_OR_TIME, example: '2026-03-01' },
  { name: 'to', in: 'query', description: 'Started at or before: a date (its whole UTC day) or an ISO 8601 date-time with its zone.', schema: DATE_OR_TIME, example: '2026-03-31' },
];
export const QUEUE = 'no worker applied the command within 10 s, or NATS could not take it';

/** The filters and the page of GET /api/conversations, every bad one named at once. */
export const LIST_QUERY: QueryParams<{ where: Record<string, unknown>; page: Page }> = {
  params: [...LIST_FILTERS, ...PAGE_PARAMS],
  parse: (q) => {
    const where: Record<string, unknown> = {};
    const { status, clientId, from, to } = q;
    const details: { field: string; message: string }[] = [];
    let page;
    try {
      page = pageParams(q);
    } catch (err) {
      details.push(...((err as AppError).details ?? []));
    }
    if (status !== undefined) {
      if (typeof status !== 'string' || !['active', 'paused', 'closed'].includes(status)) details.push({ field: 'status', message: 'must be one of active, paused, closed' });
      else where.status = status;
    }
    const integration = idFilter(q, 'integrationId', details);
    if (integration !== undefined) where.integrationId = integration;
    if (clientId !== undefined) {
      if (typeof clientId !== 'string' || clientId.length === 0 || clientId.length > 200) details.push({ field: 'clientId', message: 'must be a customer id of 1 to 200 characters' });
      else where.clientId = clientId;
    }
    const since = dateBound(from, 'from', details);
    const until = dateBound(to, 'to', details);
    if (since && until && (until.inclusive ? since.at > until.at : since.at >= until.at)) details.push({ field: 'from', message: 'must not be later than to' });
    if (details.length || !page) throw invalidFields(details);
    if (since || until) {
      where.createdAt = {
        ...(since ? { $gte: since.at } : {}),
        ...(until ? { [until.inclusive ? '$lte' : '$lt']: until.at } : {}),
      };
    }
    return { where, page };
  },
};

