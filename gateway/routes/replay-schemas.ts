import { DEFAULT_REPLAY_CONVERSATIONS, ITEM_FILTERS, MAX_MESSAGES_PER_CONVERSATION, MAX_REPLAY_CONVERSATIONS, type ItemFilter, type ReplaySelection } from '../../lib/agents/replays/store.js';
import type { FieldError } from '../../lib/errors.js';
import type { ParamDoc } from '../http/route-docs.js';
import type { QueryParams } from '../http/route.js';
import { arrayOf, COUNT, EXAMPLE_TIME, ID, BIG_ID, nullable, object, SOURCE, STRING, TIMESTAMP, USD } from '../http/schemas.js';
import { bodyValidator, idPathParam, invalidFields } from '../http/validate.js';
import { patchBody, type AgentInput } from './agent-schemas.js';

/**
 * What the replay routes (gateway/routes/replays.ts) accept and answer: the body that starts
 * a replay, the view of a replay with the schema the OpenAPI document shows for it, and
 * their examples.
 */

export interface ReplayBody {
  changes: AgentInput;
  conversations?: ReplaySelection;
}

const MAX = MAX_REPLAY_CONVERSATIONS;

/** The body's schema: `changes` is the agent's PATCH body, so its errors name `changes.<field>`. */
const body = bodyValidator<ReplayBody>({
  title: 'ReplayCreate',
  type: 'object',
  additionalProperties: false,
  required: ['changes'],
  properties: {
    changes: {
      ...patchBody.schema,
      title: 'AgentChanges',
      description: "The agent's fields to try, as PATCH /api/agents/{id} takes them; at least one besides `name` must change what the agent does.",
    },
    conversations: {
      type: 'object',
      additionalProperties: false,
      description:
        `Which past conversations: \`ids\`, or else the agent's conversations created in [\`from\`, \`to\`) (any time when not given), the most recently active first; ` +
        `\`limit\` of them (default: as many as \`ids\`, else ${DEFAULT_REPLAY_CONVERSATIONS}; at most ${MAX}). Only conversations with a customer message the agent answered count; ` +
        `of each, the first ${MAX_MESSAGES_PER_CONVERSATION} such messages are answered again.`,
      properties: {
        ids: { type: 'array', minItems: 1, maxItems: MAX, items: ID },
        from: TIMESTAMP,
        to: TIMESTAMP,
        limit: { type: 'integer', minimum: 1, maximum: MAX },
      },
    },
  },
});

/** The body, with what its schema cannot say of `conversations`: a window that ends after it starts, and ids or a window, not both. */
export const replayBody = Object.assign(
  (raw: unknown): ReplayBody => {
    const b = body(raw);
    const s = b.conversations ?? {};
    const details: FieldError[] = [];
    if (s.ids && s.from !== undefined) details.push({ field: 'conversations.from', message: 'cannot be combined with conversations.ids' });
    if (s.ids && s.to !== undefined) details.push({ field: 'conversations.to', message: 'cannot be combined with conversations.ids' });
    if (!s.ids && s.from !== undefined && s.to !== undefined && !(Date.parse(s.from) < Date.parse(s.to))) details.push({ field: 'conversations.to', message: 'must be after conversations.from' });
    if (Object.keys(b.changes).length === 0) details.push({ field: 'changes', message: 'must set at least one field' });
    if (details.length) throw invalidFields(details);
    return b;
  },
  { schema: body.schema },
);

/** `?items=`: which items a replay is shown with. */
export const ITEMS_QUERY: QueryParams<{ items: ItemFilter }> = {
  params: [
    {
      name: 'items', in: 'query',
      description: 'Which items to show: all (default), changed (a different answer), newHandoffs (answered before, handed over now), resolvedHandoffs (handed over before, answered now), or none.',
      schema: { type: 'string', enum: [...ITEM_FILTERS], default: 'all' },
    },
  ] satisfies ParamDoc[],
  parse: (q) => {
    const items = q.items ?? 'all';
    if (typeof items !== 'string' || !(ITEM_FILTERS as readonly string[]).includes(items)) throw invalidFields([{ field: 'items', message: `must be one of ${ITEM_FILTERS.join(', ')}` }]);
    return { items: items as ItemFilter };
  },
};

export const REPLAY_ID = idPathParam('replay', 'rid');

const REPLAY_ANSWER = object(
  {
    kind: { type: 'string', enum: ['reply', 'handoff'] },
    text: { type: 'string', description: 'What the customer read, or would read: the reply, or the notice of a handoff.' },
    sources: arrayOf(SOURCE),
    reason: { type: 'string', description: 'Why the agent hands over (a replayed handoff only).' },
    toolCalls: {
      type: 'array',
      description: "The company tools a replayed answer called, when it called any (one that changes data is not called: it gets what the original answer's call got).",
      items: { type: 'object', required: ['name', 'source', 'status'], properties: { name: STRING, source: { type: 'string', enum: ['action', 'mcp'] }, status: STRING } },
    },
  },
  { title: 'ReplayAnswer', optional: ['reason', 'toolCalls'] },
);

const SUMMARY = object(
  {
    same: { ...COUNT, description: 'Items answered again with an answer that means the same (case and spacing aside).' },
    changed: { ...COUNT, description: 'Items answered again differently.' },
    newHandoffs: { ...COUNT, description: 'Answered before, handed over now.' },
    resolvedHandoffs: { ...COUNT, description: 'Handed over before, answered now.' },
    costUsd: { ...USD, description: 'What the replay\'s model calls cost (debited as `replay_usage`).' },
  },
  { title: 'ReplaySummary' },
);

const ITEM = object(
  {
    seq: { ...ID, description: 'The order of the items: conversations oldest first, each one\'s messages in order.' },
    conversationId: ID,
    messageId: { ...BIG_ID, description: 'The customer message answered again.' },
    question: STRING,
    before: REPLAY_ANSWER,
    after: { ...nullable(REPLAY_ANSWER), description: 'null until answered.' },
    changed: { type: ['boolean', 'null'], description: 'Whether the customer would get a different answer; null until answered.' },
    costUsd: USD,
  },
  { title: 'ReplayItem' },
);

export const REPLAY = object(
  {
    id: ID,
    agentId: ID,
    status: { type: 'string', enum: ['running', 'done', 'failed'] },
    total: { ...COUNT, description: 'Customer messages to answer again.' },
    done: { ...COUNT, description: 'Those answered so far.' },
    changes: { type: 'object', description: 'The changes as sent (a model key shown as "********").' },
    changeFields: { ...arrayOf(STRING), description: 'The agent fields the changes change (systemPrompt, model.name, …).' },
    baseVersion: { ...ID, description: "The agent's version the changes were applied to." },
    publishedVersion: { ...nullable(ID), description: 'The version the replay was published as; null: not published.' },
    error: { ...nullable(STRING), description: 'Why a failed replay stopped.' },
    createdAt: TIMESTAMP,
    finishedAt: nullable(TIMESTAMP),
    summary: SUMMARY,
    items: { ...arrayOf(ITEM), description: 'By seq, as `items` asks (absent in lists and with items=none).' },
  },
  { title: 'Replay', optional: ['items'] },
);

const EXAMPLE_BEFORE = { kind: 'reply', text: 'We open at nine.', sources: [{ documentId: 7, chunkId: 31, title: 'Opening hours' }] };
const EXAMPLE_AFTER = { kind: 'reply', text: 'We open at 9 am, Monday to Saturday.', sources: [{ documentId: 7, chunkId: 31, title: 'Opening hours' }] };
export const EXAMPLE_REPLAY_LISTED = {
  id: 1,
  agentId: 1,
  status: 'done',
  total: 1,
  done: 1,
  changes: { systemPrompt: 'Answer in full sentences.' },
  changeFields: ['systemPrompt'],
  baseVersion: 3,
  publishedVersion: null,
  error: null,
  createdAt: EXAMPLE_TIME,
  finishedAt: EXAMPLE_TIME,
  summary: { same: 0, changed: 1, newHandoffs: 0, resolvedHandoffs: 0, costUsd: '0.00042' },
};
export const EXAMPLE_REPLAY = {
  ...EXAMPLE_REPLAY_LISTED,
  items: [{ seq: 1, conversationId: 12, messageId: 345, question: 'When do you open?', before: EXAMPLE_BEFORE, after: EXAMPLE_AFTER, changed: true, costUsd: '0.00042' }],
};
export const STARTED = object({ replay: object({ id: ID, status: { type: 'string', enum: ['running'] }, total: { ...ID, description: 'Customer messages to answer again.' }, done: { type: 'integer', enum: [0] } }, { title: 'ReplayStarted' }) });
export const EXAMPLE_STARTED = { replay: { id: 1, status: 'running', total: 24, done: 0 } };
