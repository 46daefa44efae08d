import { randomUUID } from 'node:crypto';
import type { Request, Response } from 'express';
import type { Config } from '../../lib/config.js';
import { conversationView, messageView, type ConversationNotice } from '../../lib/conversations.js';
import { AppError, notFound } from '../../lib/errors.js';
import type { Logger } from '../../lib/logger.js';
import type { NatsConnection } from '../../lib/nats.js';
import { inboundPublisher } from '../../lib/inbound.js';
import { streamNames } from '../../lib/streams.js';
import type { TenantScope } from '../../lib/tenancy.js';
import { conversationMachineDefinition } from '../../machines/conversation.js';
import {
  ConversationMessageSchema,
  ConversationSchema,
  ConversationTransitionSchema,
  type Conversation,
  type ConversationTransition,
} from '../../schema/conversation-entities.js';
import type { InboundEnvelope, OperatorCommand } from '../../schema/envelope.js';
import type { EventStream, EventStreams } from '../http/event-streams.js';
import { DEFAULT_LIST_LIMIT, PAGE_PARAMS, PAGE_QUERY, pageOf, pageParams, type Page } from '../http/pagination.js';
import type { ParamDoc } from '../http/route-docs.js';
import { defineRoute, type QueryParams, type Route } from '../http/route.js';
import { arrayOf, BIG_ID, CONVERSATION, DATE_OR_TIME, EXAMPLE_CONVERSATION, EXAMPLE_TIME, ID, nullable, object, SOURCE, STATE_VALUE, STRING, TIMESTAMP } from '../http/schemas.js';
import { bodyValidator, idFilter, idParam, idPathParam } from '../http/validate.js';

/**
 * The operator API over conversations. The gateway never touches a machine: operator
 * commands are published as 'operator' envelopes to the conversation's partition and the
 * answer waits for the worker's notice on names.conversationEvents (the state after the
 * command was applied). Pause and close record a hold in the database first, so a bot
 * reply produced meanwhile is never sent (checked by the worker and its dispatcher).
 */
export interface ConversationRouteDeps {
  config: Config;
  nc: NatsConnection;
  logger: Logger;
  /** The process's event streams (per-company limit, ended with their credential). */
  streams: EventStreams;
  /** How long an operator command waits for the worker (then 503 QUEUE_UNAVAILABLE). */
  applyTimeoutMs?: number;
}

const DEFAULT_APPLY_TIMEOUT_MS = 10_000;
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

/** Operator commands without a body: `POST /api/conversations/:id/<command>`. */
const COMMANDS = ['pause', 'resume', 'close'] as const;

const replyBody = bodyValidator<{ text: string }>({
  type: 'object',
  additionalProperties: false,
  required: ['text'],
  properties: { text: { type: 'string', minLength: 1, maxLength: 4096, pattern: '\\S' } },
});

const toView = (c: Conversation) => conversationView(c);

const transitionView = (t: ConversationTransition) => ({
  seq: t.seq,
  at: t.at.toISOString(),
  event: t.event,
  payload: t.payload,
  from: t.fromState,
  to: t.toState,
  actions: t.actions,
});

async function load(tenant: TenantScope, rawId: unknown): Promise<Conversation> {
  const conv = await tenant.em.findOne(ConversationSchema, { id: idParam(rawId, 'Conversation') }, { populate: ['snapshot'] });
  if (!conv) throw notFound('Conversation');
  return conv;
}

const MESSAGE = object(
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
const TRANSITION = object(
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
const EXAMPLE_MESSAGE = { id: 2, seq: 2, role: 'agent', kind: 'reply', text: 'We open at nine.', externalId: '556', replyToId: 1, delivery: 'sent', deliveryError: null, sources: [{ documentId: 7, chunkId: 31, title: 'Opening hours' }], confidence: 0.82, createdAt: EXAMPLE_TIME };
const EXAMPLE_TRANSITION = { seq: 1, at: EXAMPLE_TIME, event: 'customer.message', payload: { text: 'When are you open?' }, from: null, to: { active: 'answering' }, actions: [] };
const ONE_CONVERSATION = { schema: object({ conversation: CONVERSATION }), example: { conversation: EXAMPLE_CONVERSATION } };
const CONVERSATION_ID = idPathParam('conversation');
const EXAMPLE_PAGE = { total: 1, limit: DEFAULT_LIST_LIMIT, offset: 0 };
const LIST_FILTERS: readonly ParamDoc[] = [
  { name: 'status', in: 'query', description: 'Only conversations in this status.', schema: { type: 'string', enum: ['active', 'paused', 'closed'] } },
  { name: 'integrationId', in: 'query', description: 'Only conversations of this integration.', schema: ID },
  { name: 'clientId', in: 'query', description: 'Only conversations of this customer (helpdesk client_id or webchat visitor id).', schema: { type: 'string', minLength: 1, maxLength: 200 } },
  { name: 'from', in: 'query', description: 'Started at or after: a date (2026-03-01, UTC) or an ISO 8601 date-time with its zone.', schema: DATE_OR_TIME, example: '2026-03-01' },
  { name: 'to', in: 'query', description: 'Started at or before: a date (its whole UTC day) or an ISO 8601 date-time with its zone.', schema: DATE_OR_TIME, example: '2026-03-31' },
];
const QUEUE = 'no worker applied the command within 10 s, or NATS could not take it';

/** The filters and the page of GET /api/conversations, every bad one named at once. */
const LIST_QUERY: QueryParams<{ where: Record<string, unknown>; page: Page }> = {
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
    if (details.length || !page) throw new AppError('VALIDATION_ERROR', `Invalid ${details.map((d) => d.field).join(', ')}.`, { details });
    if (since || until) {
      where.createdAt = {
        ...(since ? { $gte: since.at } : {}),
        ...(until ? { [until.inclusive ? '$lte' : '$lt']: until.at } : {}),
      };
    }
    return { where, page };
  },
};

export function conversationRoutes(deps: ConversationRouteDeps): readonly Route[] {
  const { config, nc, logger, streams } = deps;
  const names = streamNames(config.natsPrefix);
  const publisher = inboundPublisher(nc, { names, partitions: config.partitions, timeoutMs: config.publishTimeoutMs });
  const applyTimeoutMs = deps.applyTimeoutMs ?? DEFAULT_APPLY_TIMEOUT_MS;
  const loadConversation = (req: Request) => load(req.tenant!, req.params.id);
  const by = (req: Request) => (req.principal?.kind === 'session' ? req.principal.userId : null);

  /** Publishes an operator command and answers with the conversation once the worker applied it. */
  async function command(req: Request, res: Response, cmd: OperatorCommand): Promise<void> {
    const tenant = req.tenant!;
    const conv = await load(tenant, req.params.id);
    if (cmd.action === 'reply' && conv.status === 'closed') throw new AppError('CONFLICT', 'The conversation is closed.');
    const holds = cmd.action === 'pause' || cmd.action === 'close';
    if (holds && conv.status !== 'closed') {
      // Recorded before anything is queued: from now on no bot reply goes out.
      await tenant.em.nativeUpdate(ConversationSchema, { id: conv.id }, { holdRequestedAt: new Date() });
    }
    const idempotencyKey = `op:${randomUUID()}`;
    const env: InboundEnvelope = {
      v: 1,
      kind: 'operator',
      idempotencyKey,
      companyId: tenant.companyId,
      integrationId: conv.integrationId,
      channel: conv.channel,
      receivedAt: new Date().toISOString(),
      conversationId: conv.id,
      clientId: conv.clientId,
      command: cmd,
    };
    const sub = nc.subscribe(names.conversationEvents(tenant.companyId, conv.id));
    let timer: NodeJS.Timeout | undefined;
    const applied = new Promise<Extract<ConversationNotice, { type: 'applied' }> | null>((resolve) => {
      timer = setTimeout(() => resolve(null), applyTimeoutMs);
      void (async () => {
        for await (const m of sub) {
          try {
            const notice = m.json<ConversationNotice>();
            if (notice.type === 'applied' && notice.idempotencyKey === idempotencyKey) return resolve(notice);
          } catch {
            /* not ours */
          }
        }
        resolve(null);
      })();
    });
    try {
      try {
        await publisher.publish(env);
      } catch (err) {
        logger.warn({ err, conversationId: conv.id }, 'operator command could not be queued');
        if (holds) await tenant.em.nativeUpdate(ConversationSchema, { id: conv.id, holdRequestedAt: { $ne: null } }, { holdRequestedAt: null }).catch(() => {});
        throw new AppError('QUEUE_UNAVAILABLE');
      }
      const notice = await applied;
      if (!notice) throw new AppError('QUEUE_UNAVAILABLE', 'The command was queued but not applied in time; retry later.');
      if (notice.outcome === 'not_found' || !notice.conversation) throw notFound('Conversation');
      res.json({ conversation: notice.conversation });
    } finally {
      clearTimeout(timer);
      sub.unsubscribe();
    }
  }

  return [
    defineRoute({
      method: 'GET', path: '/machines/conversation', operationId: 'getConversationMachine', tag: 'Conversations', access: 'any',
      summary: "The conversation state machine's definition (XState v5, as JSON)",
      responses: {
        200: {
          description: 'Its states, events, host actions and full definition.',
          schema: object({ machine: object({ id: STRING, states: arrayOf(STRING), events: arrayOf(STRING), hostActions: arrayOf(STRING), definition: { type: 'object' } }) }),
          example: { machine: { id: 'conversation', states: ['active', 'active.idle', 'paused', 'closed'], events: ['customer.message', 'operator.pause'], hostActions: ['agent_reply', 'session_transfer_external', 'session_close', 'lead_stage'], definition: { id: 'conversation' } } },
        },
      },
      handler: ({ res }) => {
        res.json({ machine: conversationMachineDefinition() });
      },
    }),
    defineRoute({
      method: 'GET', path: '/conversations', operationId: 'listConversations', tag: 'Conversations', access: 'any',
      summary: 'Conversations, most recently updated first, filtered and paged',
      query: LIST_QUERY,
      responses: { 200: { description: 'A page of conversations.', schema: pageOf('conversations', CONVERSATION), example: { conversations: [EXAMPLE_CONVERSATION], ...EXAMPLE_PAGE } } },
      errors: { VALIDATION_ERROR: 'a bad filter, limit or offset, or from later than to' },
      handler: async ({ req, res, query: { where, page } }) => {
        const [rows, total] = await req.tenant!.em.findAndCount(ConversationSchema, where, {
          orderBy: { updatedAt: 'desc', id: 'desc' },
          limit: page.limit,
          offset: page.offset,
          populate: ['snapshot'],
        });
        res.json({ conversations: rows.map(toView), total, ...page });
      },
    }),
    defineRoute({
      method: 'GET', path: '/conversations/:id', operationId: 'getConversation', tag: 'Conversations', access: 'any',
      summary: 'One conversation, with its full state value and context',
      params: [CONVERSATION_ID],
      responses: { 200: { description: 'The conversation.', ...ONE_CONVERSATION } },
      errors: { NOT_FOUND: 'no such conversation' },
      load: loadConversation,
      handler: ({ res, loaded: conv }) => {
        res.json({ conversation: toView(conv) });
      },
    }),
    defineRoute({
      method: 'GET', path: '/conversations/:id/messages', operationId: 'listConversationMessages', tag: 'Conversations', access: 'any',
      summary: 'Its messages, oldest first (by seq), paged',
      params: [CONVERSATION_ID],
      query: PAGE_QUERY,
      responses: { 200: { description: 'A page of messages.', schema: pageOf('messages', MESSAGE), example: { messages: [EXAMPLE_MESSAGE], ...EXAMPLE_PAGE } } },
      errors: { NOT_FOUND: 'no such conversation', VALIDATION_ERROR: 'a bad limit or offset' },
      load: loadConversation,
      // The newest page is `offset = total - limit`.
      handler: async ({ req, res, loaded: conv, query: page }) => {
        const [rows, total] = await req.tenant!.em.findAndCount(ConversationMessageSchema, { conversationId: conv.id }, { orderBy: { seq: 'asc' }, ...page });
        res.json({ messages: rows.map((m) => messageView(m)), total, ...page });
      },
    }),
    defineRoute({
      method: 'GET', path: '/conversations/:id/transitions', operationId: 'listConversationTransitions', tag: 'Conversations', access: 'any',
      summary: 'Its state-machine transitions, oldest first, paged',
      params: [CONVERSATION_ID],
      query: PAGE_QUERY,
      responses: { 200: { description: 'A page of transitions.', schema: pageOf('transitions', TRANSITION), example: { transitions: [EXAMPLE_TRANSITION], ...EXAMPLE_PAGE } } },
      errors: { NOT_FOUND: 'no such conversation', VALIDATION_ERROR: 'a bad limit or offset' },
      load: loadConversation,
      handler: async ({ req, res, loaded: conv, query: page }) => {
        const [rows, total] = await req.tenant!.em.findAndCount(ConversationTransitionSchema, { conversationId: conv.id }, { orderBy: { seq: 'asc' }, ...page });
        res.json({ transitions: rows.map(transitionView), total, ...page });
      },
    }),
    ...COMMANDS.map((action) =>
      defineRoute({
        method: 'POST', path: `/conversations/:id/${action}`, operationId: `${action}Conversation`, tag: 'Conversations', access: 'any',
        summary: `Operator command: ${action} the conversation (answers once a worker has applied it)`,
        params: [CONVERSATION_ID],
        responses: { 200: { description: 'The conversation after the command.', ...ONE_CONVERSATION } },
        errors: { NOT_FOUND: 'no such conversation', QUEUE_UNAVAILABLE: QUEUE },
        handler: ({ req, res }) => command(req, res, { action, by: by(req) }),
      }),
    ),
    defineRoute({
      method: 'POST', path: '/conversations/:id/messages', operationId: 'replyToConversation', tag: 'Conversations', access: 'any',
      summary: "An operator reply, sent to the customer through the conversation's channel",
      params: [CONVERSATION_ID],
      body: { validators: [replyBody], example: { text: 'A colleague will call you back today.' } },
      responses: { 200: { description: 'The conversation once the reply is recorded.', ...ONE_CONVERSATION } },
      errors: { NOT_FOUND: 'no such conversation', VALIDATION_ERROR: 'no text, or over 4096 characters', CONFLICT: 'the conversation is closed', QUEUE_UNAVAILABLE: QUEUE },
      handler: ({ req, res, body }) => command(req, res, { action: 'reply', text: body.text, by: by(req) }),
    }),
    /**
     * Server-Sent Events: every committed transition / message of the conversation, live, for
     * as long as the credential that opened it is good (gateway/http/event-streams.ts).
     */
    defineRoute({
      method: 'GET', path: '/conversations/:id/inspect', operationId: 'inspectConversation', tag: 'Conversations', access: 'any',
      summary: 'Server-Sent Events: the conversation, then every committed transition and message, live',
      description: [
        'Events: `conversation` `{"conversation":{…}}` first, then `transition` `{"type","conversationId","transition","conversation"}` and `message` `{"type","conversationId","message"}`; a `: heartbeat` comment every 15 s.',
        'The stream lasts as long as its credential: within 5 s of the API token being revoked, the session logged out, its user removed, or the access token expiring, a last event `end` `{"reason":"credential_revoked"|"credential_expired"}` comes and the stream closes (come back with a good token).',
        'At most SSE_MAX_PER_COMPANY (50) streams per company are open per gateway process.',
      ].join(' '),
      params: [CONVERSATION_ID],
      responses: {
        200: {
          description: 'An event stream, open while its credential is good.',
          type: 'text/event-stream',
          schema: STRING,
          example: 'retry: 3000\n\nevent: conversation\ndata: {"conversation":{"id":1,"status":"active"}}\n\n',
        },
      },
      errors: { NOT_FOUND: 'no such conversation', RATE_LIMITED: 'the company already has SSE_MAX_PER_COMPANY (50) streams open on this gateway; with Retry-After' },
      load: loadConversation,
      handler: async ({ req, res, loaded: conv }) => {
        const tenant = req.tenant!;
        // Subscribed before the first event is written: nothing committed in between is missed.
        const sub = nc.subscribe(names.conversationEvents(tenant.companyId, conv.id));
        let stream: EventStream;
        try {
          stream = streams.open(req, res);
        } catch (err) {
          sub.unsubscribe();
          throw err;
        }
        stream.signal.addEventListener('abort', () => sub.unsubscribe(), { once: true });
        stream.send('conversation', { conversation: toView(conv) });
        for await (const m of sub) {
          try {
            const notice = m.json<ConversationNotice>();
            if (notice.type === 'applied') continue;
            stream.send(notice.type, notice);
          } catch {
            /* skip malformed */
          }
        }
        stream.end();
      },
    }),
  ];
}
