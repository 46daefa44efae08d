import type { Request, Response } from 'express';
import type { Config } from '../../lib/config.js';
import { conversationView, messageView, noticesOf, type ConversationView, type MessageView } from '../../lib/conversations.js';
import type { SqlPool } from '../../lib/db.js';
import { AppError, notFound } from '../../lib/errors.js';
import type { Logger } from '../../lib/logger.js';
import type { NatsConnection } from '../../lib/nats.js';
import { streamNames } from '../../lib/streams.js';
import type { TenantScope } from '../../lib/tenancy.js';
import { conversationMachineDefinition } from '../../machines/conversation.js';
import { ConversationMessageSchema, ConversationSchema, ConversationTransitionSchema, type Conversation } from '../../schema/conversation-entities.js';
import type { OperatorCommand } from '../../schema/envelope.js';
import { UserSchema } from '../../schema/entities.js';
import { ConversationFeed } from '../conversations/conversation-feed.js';
import { ConversationHub } from '../conversations/conversation-hub.js';
import { Inbox } from '../conversations/inbox.js';
import { OperatorCommands } from '../conversations/operator-commands.js';
import type { TeamColumns } from '../conversations/team-columns.js';
import type { EventStream, EventStreams } from '../http/event-streams.js';
import { BAD_PAGE, examplePage, PAGE_QUERY, pageOf } from '../http/pagination.js';
import { defineRoute, type Route } from '../http/route.js';
import { arrayOf, object, STRING } from '../http/schemas.js';
import { idParam, invalidField } from '../http/validate.js';
import {
  assignBody,
  CONVERSATION_ID,
  CONVERSATION_ITEM,
  EXAMPLE_CONVERSATION_ITEM,
  EXAMPLE_MESSAGE,
  EXAMPLE_NOTE,
  EXAMPLE_TRANSITION,
  labelsBody,
  LIST_QUERY,
  MAX_LABELS,
  MESSAGE,
  noteBody,
  ONE_CONVERSATION,
  ONE_CONVERSATION_ITEM,
  QUEUE,
  replyBody,
  TRANSITION,
  transitionView,
} from './conversation-schemas.js';

/**
 * The operator API over conversations: the inbox (lists with the team's filters, one
 * conversation, its messages and transitions), operator commands
 * (gateway/conversations/operator-commands.ts), what the team writes itself (assignee, labels,
 * reads: gateway/conversations/team-columns.ts), and live streams of what changes.
 */
export interface ConversationRouteDeps {
  config: Config;
  nc: NatsConnection;
  logger: Logger;
  /** The API's plain SQL (the inbox). */
  sql: SqlPool;
  /** The columns a team writes (assignee, labels, reads), shared with the users' routes. */
  team: TeamColumns;
  /** The process's event streams (per-company limit, ended with their credential). */
  streams: EventStreams;
  /** How long an operator command waits for the worker (then 503 QUEUE_UNAVAILABLE). */
  applyTimeoutMs?: number;
}

/** Operator commands without a body: `POST /api/conversations/:id/<command>`. */
const COMMANDS = ['pause', 'resume', 'close'] as const;

const toView = (c: Conversation) => conversationView(c);

/** The conversation the path names, or 404; its stored machine (large) only when the route shows its context. */
async function load(tenant: TenantScope, rawId: unknown, withSnapshot = false): Promise<Conversation> {
  const conv = await tenant.em.findOne(ConversationSchema, { id: idParam(rawId, 'Conversation') }, withSnapshot ? { populate: ['snapshot'] } : {});
  if (!conv) throw notFound('Conversation');
  return conv;
}

/** Messages as the API shows them: each with its author's display name (one look-up for the page). */
async function withAuthors(tenant: TenantScope, messages: MessageView[]): Promise<(MessageView & { author: { id: string; displayName: string | null } | null })[]> {
  const ids = [...new Set(messages.flatMap((m) => (m.authorId ? [m.authorId] : [])))];
  const users = ids.length ? await tenant.em.find(UserSchema, { id: { $in: ids }, companyId: tenant.companyId }, { fields: ['id', 'displayName'] }) : [];
  const names = new Map(users.map((u) => [u.id, u.displayName]));
  return messages.map((m) => ({ ...m, author: m.authorId && names.has(m.authorId) ? { id: m.authorId, displayName: names.get(m.authorId) ?? null } : null }));
}

/** Answers `{"conversation": …}`; null is a conversation the company does not have (404). */
function sendConversation(res: Response, conversation: ConversationView | null): void {
  if (!conversation) throw notFound('Conversation');
  res.json({ conversation });
}

export function conversationRoutes(deps: ConversationRouteDeps): readonly Route[] {
  const { config, nc, streams, sql, logger, team } = deps;
  const names = streamNames(config.natsPrefix);
  const commands = new OperatorCommands(deps);
  const inbox = new Inbox(sql);
  const hub = new ConversationHub({ nc, names, sql, team, logger });
  const loadConversation = (req: Request) => load(req.tenant!, req.params.id);
  const by = (req: Request) => (req.principal?.kind === 'session' ? req.principal.userId : null);

  /** Publishes an operator command and answers with the conversation once the worker applied it. */
  const command = async (req: Request, res: Response, cmd: OperatorCommand): Promise<void> => {
    const tenant = req.tenant!;
    sendConversation(res, await commands.apply(tenant, await load(tenant, req.params.id), cmd));
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
      summary: 'The inbox: conversations, most recently updated first, filtered and paged',
      description: 'Each with who has it (`assignee`), the caller\'s `unread` customer messages and the `customer`\'s name. Filters combine (all must hold).',
      query: LIST_QUERY,
      responses: { 200: { description: 'A page of conversations.', schema: pageOf('conversations', CONVERSATION_ITEM), example: examplePage('conversations', EXAMPLE_CONVERSATION_ITEM) } },
      errors: { VALIDATION_ERROR: 'a bad filter, limit or offset, from later than to, or assignee=me with an API token' },
      handler: async ({ req, res, query: { where, page } }) => {
        const viewer = by(req);
        const { assignee, ...filters } = where;
        if (assignee === 'me' && !viewer) throw invalidField('assignee', 'me needs a user\'s session (an API token is nobody); give a user id');
        const { items, total } = await inbox.list(req.tenant!.companyId, viewer, { ...filters, assignee: assignee === 'me' ? { userId: viewer! } : assignee }, page);
        res.json({ conversations: items, total, ...page });
      },
    }),
    /**
     * Server-Sent Events of the whole inbox (before `/conversations/:id`, which would take
     * `events` for an id): every change of the company's conversations, for as long as the
     * credential that opened it is good (gateway/http/event-streams.ts).
     */
    defineRoute({
      method: 'GET', path: '/conversations/events', operationId: 'streamConversationEvents', tag: 'Conversations', access: 'any',
      summary: "Server-Sent Events: every change of the company's conversations, live (the inbox)",
      description: [
        'Event `conversation.updated` `{"id","status","lastMessage","assigneeId","unread","labels","needsHuman","channel","transport","clientId","integrationId","updatedAt"}` within a second of every change of one of the company\'s conversations: a message (the customer\'s, a reply, a note), a new status, an assignment, labels, and a read by the stream\'s own user. `unread` is that user\'s (0 for a company API token); `needsHuman`: paused and the customer wrote last. A `: heartbeat` comment every 15 s.',
        'The stream lasts as long as its credential: within 5 s of the API token being revoked, the session logged out, its user removed, or the access token expiring, a last event `end` `{"reason":"credential_revoked"|"credential_expired"}` comes and the stream closes (come back with a good token).',
        'At most SSE_MAX_PER_COMPANY (50) streams per company are open per gateway process (this one and /inspect together).',
      ].join(' '),
      responses: {
        200: {
          description: 'An event stream, open while its credential is good.',
          type: 'text/event-stream',
          schema: STRING,
          example: 'retry: 3000\n\nevent: conversation.updated\ndata: {"id":1,"status":"paused","lastMessage":{"role":"customer","text":"Where is my parcel?","at":"2026-03-01T10:00:00.000Z"},"assigneeId":null,"unread":1,"labels":[],"needsHuman":true,"channel":"helpdesk","transport":"telegram","clientId":"c-1","integrationId":1,"updatedAt":"2026-03-01T10:00:00.000Z"}\n\n',
        },
      },
      errors: { RATE_LIMITED: 'the company already has SSE_MAX_PER_COMPANY (50) streams open on this gateway; with Retry-After' },
      handler: async ({ req, res }) => {
        const { companyId } = req.tenant!;
        const stream = streams.open(req, res);
        const feed = new ConversationFeed({ lookups: hub, logger, companyId, viewer: by(req), send: (update) => stream.send('conversation.updated', update) });
        // Followed in the tick the answer starts: nothing published after it began is missed.
        const unfollow = hub.follow(companyId, (notices) => feed.take(notices), () => stream.end());
        const stop = () => {
          unfollow();
          feed.close();
        };
        if (stream.signal.aborted) stop();
        else stream.signal.addEventListener('abort', stop, { once: true });
      },
    }),
    defineRoute({
      method: 'GET', path: '/conversations/:id', operationId: 'getConversation', tag: 'Conversations', access: 'any',
      summary: 'One conversation as the inbox lists it, with its full state value and context',
      params: [CONVERSATION_ID],
      responses: { 200: { description: 'The conversation.', ...ONE_CONVERSATION_ITEM } },
      errors: { NOT_FOUND: 'no such conversation' },
      handler: async ({ req, res }) => {
        sendConversation(res, await inbox.one(req.tenant!.companyId, by(req), idParam(req.params.id, 'Conversation')));
      },
    }),
    defineRoute({
      method: 'PATCH', path: '/conversations/:id', operationId: 'assignConversation', tag: 'Conversations', access: 'any',
      summary: 'Assign the conversation to a teammate (or to nobody: null)',
      params: [CONVERSATION_ID],
      body: { validators: [assignBody], example: { assigneeId: EXAMPLE_CONVERSATION_ITEM.assigneeId } },
      responses: { 200: { description: 'The conversation, assigned (the change is streamed as conversation.updated).', ...ONE_CONVERSATION } },
      errors: { NOT_FOUND: 'no such conversation', VALIDATION_ERROR: 'assigneeId is not null or a user of the company' },
      load: loadConversation,
      handler: async ({ req, res, loaded: conv, body }) => {
        const view = await team.assign(req.tenant!.companyId, conv.id, body.assigneeId);
        if (!view) throw invalidField('assigneeId', 'must be a user of the company, or null');
        res.json({ conversation: view });
      },
    }),
    defineRoute({
      method: 'GET', path: '/conversations/:id/messages', operationId: 'listConversationMessages', tag: 'Conversations', access: 'any',
      summary: 'Its messages (notes included), oldest first (by seq), paged',
      params: [CONVERSATION_ID],
      query: PAGE_QUERY,
      responses: { 200: { description: 'A page of messages.', schema: pageOf('messages', MESSAGE), example: { ...examplePage('messages', EXAMPLE_MESSAGE), messages: [EXAMPLE_MESSAGE, EXAMPLE_NOTE], total: 2 } } },
      errors: { NOT_FOUND: 'no such conversation', VALIDATION_ERROR: BAD_PAGE },
      load: loadConversation,
      // The newest page is `offset = total - limit`.
      handler: async ({ req, res, loaded: conv, query: page }) => {
        const tenant = req.tenant!;
        const [rows, total] = await tenant.em.findAndCount(ConversationMessageSchema, { conversationId: conv.id }, { orderBy: { seq: 'asc' }, ...page });
        res.json({ messages: await withAuthors(tenant, rows.map(messageView)), total, ...page });
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
      description: 'A reply to an `active` conversation, or to one the agent handed over that no person has answered yet (`paused.handedOver`: the agent still answers what it can meanwhile), takes it over: the bot is paused first (`paused.operator`, the user recorded) and stays silent until resumed. A user\'s reply to an unassigned conversation also assigns it to them.',
      params: [CONVERSATION_ID],
      body: { validators: [replyBody], example: { text: 'A colleague will call you back today.' } },
      responses: { 200: { description: 'The conversation once the reply is recorded.', ...ONE_CONVERSATION } },
      errors: { NOT_FOUND: 'no such conversation', VALIDATION_ERROR: 'no text, or over 4096 characters', CONFLICT: 'the conversation is closed', QUEUE_UNAVAILABLE: QUEUE },
      load: loadConversation,
      handler: async ({ req, res, loaded: conv, body }) => {
        const tenant = req.tenant!;
        const user = by(req);
        const done = await commands.run(tenant, conv, { action: 'reply', text: body.text, by: user });
        // Take-over: whoever answers an unassigned conversation has it from now on.
        const taken = user && done.outcome === 'applied' && done.conversation.assigneeId === null ? await team.takeOver(tenant.companyId, conv.id, user) : null;
        sendConversation(res, taken ?? done.conversation);
      },
    }),
    defineRoute({
      method: 'POST', path: '/conversations/:id/notes', operationId: 'addConversationNote', tag: 'Conversations', access: 'any',
      summary: 'A private note for the team: kept with the messages, never sent to the customer',
      params: [CONVERSATION_ID],
      body: { validators: [noteBody], example: { text: EXAMPLE_NOTE.text } },
      responses: { 201: { description: 'The note (answers once a worker has recorded it).', schema: object({ message: MESSAGE }), example: { message: EXAMPLE_NOTE } } },
      errors: { NOT_FOUND: 'no such conversation', VALIDATION_ERROR: 'no text, or over 4096 characters', CONFLICT: 'the conversation is closed', QUEUE_UNAVAILABLE: QUEUE },
      load: loadConversation,
      handler: async ({ req, res, loaded: conv, body }) => {
        const tenant = req.tenant!;
        const done = await commands.run(tenant, conv, { action: 'note', text: body.text, by: by(req) });
        if (done.outcome === 'ignored') throw new AppError('CONFLICT', 'The conversation is closed.');
        // The worker's notice carries the note as it was stored (the same commit).
        const note = done.messages.find((m) => m.kind === 'note');
        if (!note) throw new Error(`conversation ${conv.id}: the note was applied but its notice carries no note`);
        const [message] = await withAuthors(tenant, [note]);
        res.status(201).json({ message });
      },
    }),
    defineRoute({
      method: 'PUT', path: '/conversations/:id/labels', operationId: 'setConversationLabels', tag: 'Conversations', access: 'any',
      summary: "Replace the conversation's labels",
      description: `At most ${MAX_LABELS} labels, each trimmed and 1–40 characters long, without commas; duplicates are dropped, the order kept. \`[]\` removes them all.`,
      params: [CONVERSATION_ID],
      body: { validators: [labelsBody], example: { labels: ['delivery', 'vip'] } },
      responses: { 200: { description: 'The conversation with its labels (the change is streamed as conversation.updated).', ...ONE_CONVERSATION } },
      errors: { NOT_FOUND: 'no such conversation', VALIDATION_ERROR: 'not a list of at most 20 labels of 1–40 characters without commas' },
      load: loadConversation,
      handler: async ({ req, res, loaded: conv, body }) => {
        sendConversation(res, await team.setLabels(req.tenant!.companyId, conv.id, body.labels));
      },
    }),
    defineRoute({
      method: 'POST', path: '/conversations/:id/read', operationId: 'readConversation', tag: 'Conversations', access: 'session',
      summary: "Mark the conversation read: the caller's unread count becomes 0",
      params: [CONVERSATION_ID],
      responses: { 204: { description: 'Read (the caller\'s event streams get its update).' } },
      errors: { NOT_FOUND: 'no such conversation' },
      handler: async ({ req, res }) => {
        // A session (the route's access): a user, whose read it is.
        if (!(await team.markRead(req.tenant!.companyId, idParam(req.params.id, 'Conversation'), by(req)!))) throw notFound('Conversation');
        res.status(204).end();
      },
    }),
    /**
     * Server-Sent Events: every committed transition / message of the conversation, live, for
     * as long as the credential that opened it is good (gateway/http/event-streams.ts).
     */
    defineRoute({
      method: 'GET', path: '/conversations/:id/inspect', operationId: 'inspectConversation', tag: 'Conversations', access: 'any',
      summary: 'Server-Sent Events: the conversation, then every committed transition and message, live',
      description: [
        'Events: `conversation` `{"conversation":{…}}` first (and again when its assignee or labels change), then `transition` `{"type","conversationId","transition","conversation"}` and `message` `{"type","conversationId","message"}`; a `: heartbeat` comment every 15 s.',
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
      load: (req) => load(req.tenant!, req.params.id, true),
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
          for (const notice of noticesOf(m.data)) {
            // The team's changes show as the conversation again; a read changes nothing here.
            if (notice.type === 'updated') {
              if (!notice.reader) stream.send('conversation', { conversation: notice.conversation });
            } else if (notice.type === 'transition' || notice.type === 'message') stream.send(notice.type, notice);
          }
        }
        stream.end();
      },
    }),
  ];
}
