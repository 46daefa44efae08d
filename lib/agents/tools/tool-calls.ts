import { query, type SqlClient } from '../../db.js';
import type { AgentToolCall, ToolCallStatus } from '../../../schema/action-entities.js';

/**
 * The ledger of the agent's tool calls (`agent_tool_calls`, migration 0022), and what makes a
 * call that changes data happen at most once per answer, crashes included:
 * - a call of a tool that changes data is inserted `started` BEFORE its request goes out
 *   (`beginToolCall`) and completed after it (`finishToolCall`), so a worker that dies mid-call
 *   leaves a `started` row; a call that may be repeated is written once, after it
 *   (`recordToolCall`: one statement, not two, on the answer's path);
 * - an answer is identified by its customer message id, the same in every attempt at it
 *   (redeliveries, a resumed answer after a crash): the next attempt reads the rows of the
 *   earlier ones (`earlierToolCalls`) before calling a tool that is not idempotent, reuses a
 *   finished one and turns a `started` one `uncertain` (`markUncertain`) instead of calling
 *   again (lib/agents/tools/toolbox.ts applies the rules).
 * Calls that made no request (bad arguments, over the limit, a repeat, a test) are recorded
 * finished at once too. Arguments and results are stored redacted.
 */
/** A call as the ledger records it before it is made (the entity's own fields: schema/action-entities.ts). */
export type NewToolCall = Pick<AgentToolCall, 'companyId' | 'agentId' | 'conversationId' | 'messageId' | 'seq' | 'source' | 'actionId' | 'mcpServerId' | 'name' | 'args' | 'idempotent'>;

export interface FinishedToolCall {
  status: Exclude<ToolCallStatus, 'started'>;
  httpStatus: number | null;
  ms: number | null;
  error: string | null;
  /** What the model was given. */
  result: Record<string, unknown>;
}

/** A call an earlier attempt at the same answer made. */
export type EarlierToolCall = Pick<AgentToolCall, 'id' | 'name' | 'status' | 'httpStatus' | 'ms' | 'error'> & { result: Record<string, unknown> | null };

const COLUMNS = 'company_id, agent_id, conversation_id, message_id, seq, source, action_id, mcp_server_id, name, args, idempotent';
const valuesOf = (c: NewToolCall) => [c.companyId, c.agentId, c.conversationId, c.messageId, c.seq, c.source, c.actionId, c.mcpServerId, c.name, JSON.stringify(c.args), c.idempotent];

/** The row of a call about to be made (`started`); its id. */
export async function beginToolCall(sql: SqlClient, c: NewToolCall): Promise<string> {
  const [row] = await query<{ id: string }>(
    sql,
    'tool_call_begin',
    `insert into agent_tool_calls (${COLUMNS}, status) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, $11, 'started') returning id::text`,
    valuesOf(c),
  );
  return row!.id;
}

/** The outcome of a call begun with `beginToolCall`. */
export async function finishToolCall(sql: SqlClient, id: string, o: FinishedToolCall): Promise<void> {
  await query(
    sql,
    'tool_call_finish',
    'update agent_tool_calls set status = $2, http_status = $3, ms = $4, error = $5, result = $6::jsonb, finished_at = now() where id = $1',
    [id, o.status, o.httpStatus, o.ms, o.error, JSON.stringify(o.result)],
  );
}

/** A call that made no request, recorded finished. */
export async function recordToolCall(sql: SqlClient, c: NewToolCall, o: FinishedToolCall): Promise<void> {
  await query(
    sql,
    'tool_call_record',
    // Written after the call: it was made `ms` before now.
    `insert into agent_tool_calls (${COLUMNS}, status, http_status, ms, error, result, called_at, finished_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, $11, $12, $13, $14, $15, $16::jsonb, now() - make_interval(secs => coalesce($14::int, 0) / 1000.0), now())`,
    [...valuesOf(c), o.status, o.httpStatus, o.ms, o.error, JSON.stringify(o.result)],
  );
}

/** The calls of earlier attempts at the answer to this customer message, oldest first. */
export async function earlierToolCalls(sql: SqlClient, messageId: string): Promise<EarlierToolCall[]> {
  return query<EarlierToolCall>(
    sql,
    'tool_calls_earlier',
    `select id::text, name, status, http_status as "httpStatus", ms, error, result
     from agent_tool_calls where message_id = $1::bigint order by id`,
    [messageId],
  );
}

/** A call cut off by a crash: its outcome is not known, and it is not made again. */
export async function markUncertain(sql: SqlClient, id: string, result: Record<string, unknown>, error: string): Promise<void> {
  await query(
    sql,
    'tool_call_uncertain',
    `update agent_tool_calls set status = 'uncertain', error = $2, result = $3::jsonb, finished_at = now() where id = $1 and status = 'started'`,
    [id, error, JSON.stringify(result)],
  );
}
