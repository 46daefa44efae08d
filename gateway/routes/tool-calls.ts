import type { FieldError } from '../../lib/errors.js';
import { AgentToolCallSchema, type AgentToolCall } from '../../schema/action-entities.js';
import { examplePage, PAGE_PARAMS, pageOf, pageParams, type Page } from '../http/pagination.js';
import { defineRoute, type QueryParams, type Route } from '../http/route.js';
import { BIG_ID, BOOLEAN, DATE_OR_TIME, EXAMPLE_TIME, ID, nullable, object, STRING, TIMESTAMP } from '../http/schemas.js';
import { invalidFields } from '../http/validate.js';
import { AGENT_ID } from './agent-schemas.js';
import { loadPathAgent } from './agents.js';
import { parseBound } from './analytics.js';

/**
 * `GET /api/agents/:id/tool-calls?from=&to=`: every call the agent made of the company's
 * tools (actions and MCP tools), newest first, as the worker recorded it
 * (lib/agents/tools/tool-calls.ts): arguments with secrets redacted, how it ended, what the
 * model was given.
 */

const STATUSES = ['started', 'ok', 'error', 'timeout', 'blocked', 'invalid_arguments', 'uncertain', 'not_called'];

const view = (c: AgentToolCall) => ({
  id: Number(c.id),
  conversationId: c.conversationId,
  messageId: c.messageId === null ? null : Number(c.messageId),
  seq: c.seq,
  source: c.source,
  actionId: c.actionId,
  mcpServerId: c.mcpServerId,
  name: c.name,
  args: c.args,
  idempotent: c.idempotent,
  status: c.status,
  httpStatus: c.httpStatus,
  ms: c.ms,
  error: c.error,
  result: c.result ?? null,
  calledAt: c.calledAt.toISOString(),
  finishedAt: c.finishedAt ? c.finishedAt.toISOString() : null,
});

const TOOL_CALL = object(
  {
    id: BIG_ID,
    conversationId: { ...nullable(ID), description: 'null: a test of the agent (an evaluation).' },
    messageId: { ...nullable(BIG_ID), description: 'The customer message the answer was for; null: a test.' },
    seq: { type: 'integer', minimum: 1, description: "The call's place in its answer." },
    source: { type: 'string', enum: ['action', 'mcp'] },
    actionId: { ...nullable(ID), description: 'The action called (null once it is deleted, or for an MCP tool).' },
    mcpServerId: { ...nullable(ID), description: 'The MCP server called (null once it is deleted, or for an action).' },
    name: { ...STRING, description: 'The name the model called.' },
    args: { type: 'object', description: 'The arguments, secrets redacted.' },
    idempotent: BOOLEAN,
    status: {
      type: 'string', enum: STATUSES,
      description: 'started (in flight, or cut off), ok, error, timeout, blocked (an address the rules refuse), invalid_arguments (no request made), uncertain (an earlier attempt was cut off: not repeated), not_called (over the limit, a second call of a tool that changes data, or one in a test).',
    },
    httpStatus: nullable({ type: 'integer', minimum: 100, maximum: 599 }),
    ms: nullable({ type: 'integer', minimum: 0 }),
    error: { ...nullable(STRING), description: 'What went wrong, in our words.' },
    result: { description: 'What the model was given (at most 8 KiB serialised); null while in flight.' },
    calledAt: TIMESTAMP,
    finishedAt: nullable(TIMESTAMP),
  },
  { title: 'ToolCall' },
);
const EXAMPLE_CALL = {
  id: 1,
  conversationId: 12,
  messageId: 345,
  seq: 1,
  source: 'action',
  actionId: 1,
  mcpServerId: null,
  name: 'order_status',
  args: { orderId: 'A-1001' },
  idempotent: true,
  status: 'ok',
  httpStatus: 200,
  ms: 182,
  error: null,
  result: { status: 200, body: { orderId: 'A-1001', status: 'shipped' } },
  calledAt: EXAMPLE_TIME,
  finishedAt: EXAMPLE_TIME,
};

interface Period {
  from?: Date;
  to?: Date;
}

const LIST_QUERY: QueryParams<Period & Page> = {
  params: [
    { name: 'from', in: 'query', description: 'Called at or after: a UTC date (2026-03-01) or an ISO 8601 date-time with its zone.', schema: DATE_OR_TIME, example: '2026-03-01' },
    { name: 'to', in: 'query', description: 'Called before: a UTC date (its whole day included) or an ISO 8601 date-time with its zone (excluded).', schema: DATE_OR_TIME, example: '2026-03-31' },
    ...PAGE_PARAMS,
  ],
  parse: (q) => {
    const details: FieldError[] = [];
    const from = parseBound(q.from, 'from', details);
    const to = parseBound(q.to, 'to', details);
    if (from && to && from >= to) details.push({ field: 'from', message: 'must be before to' });
    let page: Page | undefined;
    try {
      page = pageParams(q);
    } catch (err) {
      const more = (err as { details?: FieldError[] }).details;
      if (!more) throw err;
      details.push(...more);
    }
    if (details.length) throw invalidFields(details);
    return { from, to, ...page! };
  },
};

export function toolCallRoutes(): readonly Route[] {
  return [
    defineRoute({
      method: 'GET', path: '/:id/tool-calls', operationId: 'listToolCalls', tag: 'Agents', access: 'any',
      summary: "The calls the agent made of the company's tools, newest first, paged",
      params: [AGENT_ID],
      query: LIST_QUERY,
      responses: { 200: { description: 'A page of tool calls.', schema: pageOf('toolCalls', TOOL_CALL), example: examplePage('toolCalls', EXAMPLE_CALL) } },
      errors: { NOT_FOUND: 'no such agent', VALIDATION_ERROR: 'a from or to that is not a date or a date-time with its zone, from not before to, a bad limit or offset' },
      load: loadPathAgent,
      handler: async ({ req, res, loaded: agent, query: { from, to, limit, offset } }) => {
        const calledAt = { ...(from ? { $gte: from } : {}), ...(to ? { $lt: to } : {}) };
        const where = { agentId: agent.id, ...(from || to ? { calledAt } : {}) };
        const [rows, total] = await req.tenant!.em.findAndCount(AgentToolCallSchema, where, { orderBy: { calledAt: 'desc', id: 'desc' }, limit, offset });
        res.json({ toolCalls: rows.map(view), total, limit, offset });
      },
    }),
  ];
}
