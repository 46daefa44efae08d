import type { AppError, FieldError } from '../../lib/errors.js';
import type { ConversationTransition } from '../../schema/conversation-entities.js';
import type { ConversationFilters } from '../conversations/inbox.js';
import { PAGE_PARAMS, pageParams, type Page } from '../http/pagination.js';
import type { ParamDoc } from '../http/route-docs.js';
import type { QueryParams } from '../http/route.js';
import { arrayOf, BIG_ID, CONVERSATION, COUNT, DATE_OR_TIME, EXAMPLE_CONVERSATION, EXAMPLE_TIME, ID, nullable, object, SOURCE, STATE_VALUE, STRING, TIMESTAMP, UUID, type JsonSchema } from '../http/schemas.js';
import { bodyValidator, idFilter, idPathParam, invalidFields, isUuid } from '../http/validate.js';
import { EXAMPLE_USER_ID } from './auth.js';

/**
 * What the conversation routes (gateway/routes/conversations.ts) accept and answer: the
 * list's filters and their parser, the bodies of replies, notes, assignments and labels, the
 * views of conversations as listed, messages and transitions with the schemas the OpenAPI
 * document shows for them, and their examples.
 */

const DAY_MS = 86_400_000;
/** The longest `q` of the list. */
const MAX_Q_CHARS = 200;
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
/** A note: the same text as a reply, never sent. */
export const noteBody = replyBody;

export const assignBody = bodyValidator<{ assigneeId: string | null }>({
  type: 'object',
  additionalProperties: false,
  required: ['assigneeId'],
  properties: { assigneeId: { type: ['string', 'null'], format: 'uuid', description: 'A user of the company, or null to unassign.' } },
});

export const MAX_LABELS = 20;
const LABEL_CHARS = 40;
/** What a label is, in words (the body's and the filter's). */
const LABEL_RULE = `1 to ${LABEL_CHARS} characters after trimming, no commas`;
/** A label as given: its trimmed text, or why it is not one. */
function labelOf(value: unknown): { label: string } | { error: string } {
  if (typeof value !== 'string') return { error: 'must be a string' };
  const label = value.trim();
  if (label.length === 0 || [...label].length > LABEL_CHARS || label.includes(',')) return { error: `must be ${LABEL_RULE}` };
  return { label };
}

const labelsSchema = bodyValidator<{ labels: string[] }>({
  type: 'object',
  additionalProperties: false,
  required: ['labels'],
  properties: { labels: { type: 'array', maxItems: MAX_LABELS, items: { type: 'string', maxLength: 200, description: LABEL_RULE } } },
});
/** PUT …/labels: at most 20 labels, each trimmed, 1–40 characters, no commas; duplicates dropped, order kept. */
export const labelsBody = Object.assign(
  (body: unknown): { labels: string[] } => {
    const { labels } = labelsSchema(body);
    const details: FieldError[] = [];
    const kept: string[] = [];
    labels.forEach((raw, i) => {
      const got = labelOf(raw);
      if ('error' in got) details.push({ field: `labels.${i}`, message: got.error });
      else if (!kept.includes(got.label)) kept.push(got.label);
    });
    if (details.length) throw invalidFields(details);
    return { labels: kept };
  },
  { schema: labelsSchema.schema },
);

export const transitionView = (t: ConversationTransition) => ({
  seq: t.seq,
  at: t.at.toISOString(),
  event: t.event,
  payload: t.payload,
  from: t.fromState,
  to: t.toState,
  actions: t.actions,
});

/** A user as a conversation shows them. */
const TEAMMATE = object({ id: UUID, displayName: nullable(STRING) }, { title: 'Teammate' });
const EXAMPLE_TEAMMATE = { id: EXAMPLE_USER_ID, displayName: 'Ann' };

/** A conversation as the inbox lists it (GET /api/conversations, GET /api/conversations/{id}). */
export const CONVERSATION_ITEM = object(
  {
    ...(CONVERSATION.properties as Record<string, JsonSchema>),
    assignee: { ...nullable(TEAMMATE), description: 'Who has it, null when unassigned.' },
    unread: { ...COUNT, description: "The caller's unread customer messages (since their last POST /api/conversations/{id}/read); 0 for a company API token." },
    customer: { ...object({ name: nullable(STRING), email: nullable(STRING), phone: nullable(STRING) }), description: "The customer, from their lead: the team's values (PATCH /api/leads/{id}), else the widget's verified identity or pre-chat form, else the helpdesk's client card." },
  },
  { title: 'ConversationItem' },
);
export const EXAMPLE_CONVERSATION_ITEM = { ...EXAMPLE_CONVERSATION, assigneeId: EXAMPLE_USER_ID, assignee: EXAMPLE_TEAMMATE, unread: 1, customer: { name: 'Maria', email: null, phone: '+34 600 000 000' } };

/** One numbered option of a `clarify` reply: an article the question may be about. */
export const CLARIFY_OPTION = object({ documentId: ID, chunkId: BIG_ID, title: STRING }, { title: 'ClarifyOption' });

export const MESSAGE = object(
  {
    id: BIG_ID,
    seq: { type: 'integer', minimum: 1 },
    role: { type: 'string', enum: ['customer', 'agent', 'operator', 'system'] },
    kind: { type: 'string', enum: ['message', 'reply', 'handoff_notice', 'transfer', 'note'], description: '`note`: an operator\'s private note, never sent to the customer.' },
    text: STRING,
    externalId: { ...nullable(STRING), description: "The platform's id of the message." },
    replyToId: nullable(BIG_ID),
    delivery: { ...nullable({ type: 'string', enum: ['pending', 'sent', 'failed', 'cancelled'] }), description: 'Outbound messages only.' },
    deliveryStatus: { ...nullable({ type: 'string', enum: ['sent', 'delivered', 'read', 'failed'] }), description: 'How far a sent message got, as its channel reports it (WhatsApp statuses never move back: a late `delivered` after `read` is ignored); null for messages not sent.' },
    deliveryError: { ...nullable(object({ code: STRING, message: STRING })), description: "Why a message was not delivered: the channel's error code (`131047`, `403`, ...) or ours (`window_closed`, `delivery_uncertain`, `not_sent`, `send_failed`) and a sentence for the operator." },
    sources: { ...nullable(arrayOf(SOURCE)), description: "An agent reply's knowledge sources; null for other messages." },
    confidence: { ...nullable({ type: 'number', minimum: 0, maximum: 1 }), description: 'An agent reply grounded in the knowledge: how sure the agent was that its sources answer the question (0–1); null for other messages.' },
    options: { ...nullable(arrayOf(CLARIFY_OPTION)), description: "A `clarify` reply's numbered options (\"Do you mean: 1. Returns 2. Exchanges?\"), in the order offered: the customer's next message may pick one; null for other messages." },
    authorId: { ...nullable(UUID), description: 'The teammate who wrote an operator reply or note; null otherwise (and for API tokens).' },
    author: { ...nullable(TEAMMATE), description: 'That teammate, null when there is none (or they were removed).' },
    agentVersion: { ...nullable({ type: 'integer', minimum: 1 }), description: "An agent reply or handoff notice: the agent's version that gave it (GET /api/agents/{id}/versions); null for other messages and for answers from before versions." },
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
export const EXAMPLE_MESSAGE = { id: 2, seq: 2, role: 'agent', kind: 'reply', text: 'We open at nine.', externalId: '556', replyToId: 1, delivery: 'sent', deliveryStatus: 'read', deliveryError: null, sources: [{ documentId: 7, chunkId: 31, title: 'Opening hours' }], confidence: 0.82, options: null, authorId: null, author: null, agentVersion: 3, createdAt: EXAMPLE_TIME };
export const EXAMPLE_NOTE = { id: 3, seq: 3, role: 'operator', kind: 'note', text: 'Called her back: the parcel is at the depot.', externalId: null, replyToId: null, delivery: null, deliveryStatus: null, deliveryError: null, sources: null, confidence: null, options: null, authorId: EXAMPLE_USER_ID, author: EXAMPLE_TEAMMATE, agentVersion: null, createdAt: EXAMPLE_TIME };
export const EXAMPLE_TRANSITION = { seq: 1, at: EXAMPLE_TIME, event: 'customer.message', payload: { text: 'When are you open?' }, from: null, to: { active: 'answering' }, actions: [] };
export const ONE_CONVERSATION = { schema: object({ conversation: CONVERSATION }), example: { conversation: EXAMPLE_CONVERSATION } };
export const ONE_CONVERSATION_ITEM = { schema: object({ conversation: CONVERSATION_ITEM }), example: { conversation: EXAMPLE_CONVERSATION_ITEM } };
export const CONVERSATION_ID = idPathParam('conversation');
const LIST_FILTERS: readonly ParamDoc[] = [
  { name: 'status', in: 'query', description: 'Only conversations in this status; `open`: active or paused (not closed).', schema: { type: 'string', enum: ['active', 'paused', 'closed', 'open'] } },
  { name: 'integrationId', in: 'query', description: 'Only conversations of this integration.', schema: ID },
  { name: 'clientId', in: 'query', description: 'Only conversations of this customer (helpdesk client_id or webchat visitor id).', schema: { type: 'string', minLength: 1, maxLength: 200 } },
  { name: 'from', in: 'query', description: 'Started at or after: a date (2026-03-01, UTC) or an ISO 8601 date-time with its zone.', schema: DATE_OR_TIME, example: '2026-03-01' },
  { name: 'to', in: 'query', description: 'Started at or before: a date (its whole UTC day) or an ISO 8601 date-time with its zone.', schema: DATE_OR_TIME, example: '2026-03-31' },
  { name: 'assignee', in: 'query', description: "`me` (the caller's; not with an API token), `none` (unassigned) or a user id.", schema: { type: 'string', maxLength: 36 }, example: 'me' },
  { name: 'needsHuman', in: 'query', description: '`true`: only those waiting for a person (paused, and the customer wrote last).', schema: { type: 'string', enum: ['true'] } },
  { name: 'label', in: 'query', description: `Only those with this label (${LABEL_RULE}).`, schema: { type: 'string', minLength: 1, maxLength: 200 }, example: 'delivery' },
  { name: 'q', in: 'query', description: `Only those with a message (notes included) holding all these words (PostgreSQL full text, \`simple\` configuration: whole words, any case); at most ${MAX_Q_CHARS} characters.`, schema: { type: 'string', minLength: 1, maxLength: MAX_Q_CHARS }, example: 'refund' },
];
export const QUEUE = 'no worker applied the command within 10 s, or NATS could not take it';

/** The filters of the list as asked: `assignee=me` is resolved by the route (it needs the caller). */
export type ListFilters = Omit<ConversationFilters, 'assignee'> & { assignee?: 'me' | 'none' | { userId: string } };

/** The filters and the page of GET /api/conversations, every bad one named at once. */
export const LIST_QUERY: QueryParams<{ where: ListFilters; page: Page }> = {
  params: [...LIST_FILTERS, ...PAGE_PARAMS],
  parse: (q) => {
    const where: ListFilters = {};
    const { status, clientId, from, to, assignee, needsHuman, label, q: words } = q;
    const details: FieldError[] = [];
    let page;
    try {
      page = pageParams(q);
    } catch (err) {
      details.push(...((err as AppError).details ?? []));
    }
    if (status !== undefined) {
      if (status !== 'active' && status !== 'paused' && status !== 'closed' && status !== 'open') details.push({ field: 'status', message: 'must be one of active, paused, closed, open' });
      else where.status = status;
    }
    if (assignee !== undefined) {
      if (assignee === 'me' || assignee === 'none') where.assignee = assignee;
      else if (isUuid(assignee)) where.assignee = { userId: assignee.toLowerCase() };
      else details.push({ field: 'assignee', message: 'must be me, none or a user id' });
    }
    if (needsHuman !== undefined) {
      if (needsHuman === 'true') where.needsHuman = true;
      else details.push({ field: 'needsHuman', message: 'must be true (leave it out for every conversation)' });
    }
    if (label !== undefined) {
      const got = labelOf(label);
      if ('error' in got) details.push({ field: 'label', message: got.error });
      else where.label = got.label;
    }
    if (words !== undefined) {
      if (typeof words !== 'string' || words.trim() === '' || [...words].length > MAX_Q_CHARS) details.push({ field: 'q', message: `must be words, at most ${MAX_Q_CHARS} characters` });
      else where.q = words;
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
    if (since) where.since = since.at;
    if (until) where.until = until;
    return { where, page };
  },
};

