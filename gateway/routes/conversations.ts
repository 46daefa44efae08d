import type { Request, Response } from 'express';
import type { Config } from '../../lib/config.js';
import { conversationView, messageView, noticesOf } from '../../lib/conversations.js';
import { notFound } from '../../lib/errors.js';
import type { Logger } from '../../lib/logger.js';
import type { NatsConnection } from '../../lib/nats.js';
import { streamNames } from '../../lib/streams.js';
import type { TenantScope } from '../../lib/tenancy.js';
import { conversationMachineDefinition } from '../../machines/conversation.js';
import { ConversationMessageSchema, ConversationSchema, ConversationTransitionSchema, type Conversation } from '../../schema/conversation-entities.js';
import type { OperatorCommand } from '../../schema/envelope.js';
import { OperatorCommands } from '../conversations/operator-commands.js';
import type { EventStream, EventStreams } from '../http/event-streams.js';
import { BAD_PAGE, examplePage, PAGE_QUERY, pageOf } from '../http/pagination.js';
import { defineRoute, type Route } from '../http/route.js';
import { arrayOf, CONVERSATION, EXAMPLE_CONVERSATION, object, STRING } from '../http/schemas.js';
import { idParam } from '../http/validate.js';
import {
  CONVERSATION_ID,
  EXAMPLE_MESSAGE,
  EXAMPLE_TRANSITION,
  LIST_QUERY,
  MESSAGE,
  ONE_CONVERSATION,
  QUEUE,
  replyBody,
  TRANSITION,
  transitionView,
} from './conversation-schemas.js';

/**
 * The operator API over conversations: lists, one conversation with its messages and
 * transitions, operator commands (gateway/conversations/operator-commands.ts) and a live
 * stream of what the worker commits.
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

/** Operator commands without a body: `POST /api/conversations/:id/<command>`. */
const COMMANDS = ['pause', 'resume', 'close'] as const;

const toView = (c: Conversation) => conversationView(c);

async function load(tenant: TenantScope, rawId: unknown): Promise<Conversation> {
  const conv = await tenant.em.findOne(ConversationSchema, { id: idParam(rawId, 'Conversation') }, { populate: ['snapshot'] });
  if (!conv) throw notFound('Conversation');
  return conv;
}

export function conversationRoutes(deps: ConversationRouteDeps): readonly Route[] {
  const { config, nc, streams } = deps;
  const names = streamNames(config.natsPrefix);
  const commands = new OperatorCommands(deps);
  const loadConversation = (req: Request) => load(req.tenant!, req.params.id);
  const by = (req: Request) => (req.principal?.kind === 'session' ? req.principal.userId : null);

  /** Publishes an operator command and answers with the conversation once the worker applied it. */
  const command = async (req: Request, res: Response, cmd: OperatorCommand): Promise<void> => {
    const tenant = req.tenant!;
    res.json({ conversation: await commands.apply(tenant, await load(tenant, req.params.id), cmd) });
  };

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
      responses: { 200: { description: 'A page of conversations.', schema: pageOf('conversations', CONVERSATION), example: examplePage('conversations', EXAMPLE_CONVERSATION) } },
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
      responses: { 200: { description: 'A page of messages.', schema: pageOf('messages', MESSAGE), example: examplePage('messages', EXAMPLE_MESSAGE) } },
      errors: { NOT_FOUND: 'no such conversation', VALIDATION_ERROR: BAD_PAGE },
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
      responses: { 200: { description: 'A page of transitions.', schema: pageOf('transitions', TRANSITION), example: examplePage('transitions', EXAMPLE_TRANSITION) } },
      errors: { NOT_FOUND: 'no such conversation', VALIDATION_ERROR: BAD_PAGE },
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
          for (const notice of noticesOf(m.data)) if (notice.type !== 'applied') stream.send(notice.type, notice);
        }
        stream.end();
      },
    }),
  ];
}
