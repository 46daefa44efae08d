import { EntitySchema } from '@mikro-orm/core';

/**
 * An agent's own tools (migration 0022, contract.md § Agent actions): HTTP actions, Model
 * Context Protocol servers, and the record of every call the agent made with them.
 * Company-owned like the others: each carries `companyId` and the default-on `tenant` filter.
 * Actions and servers are written by the API (gateway/routes/actions.ts, mcp-servers.ts); the
 * worker only reads them. Tool calls are written by the worker (lib/agents/tools/tool-calls.ts)
 * and listed by the API.
 */
const tenantFilter = {
  tenant: {
    name: 'tenant',
    cond: (args: { companyId: number }) => ({ companyId: args.companyId }),
    default: true,
  },
};

export type ActionMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface AgentAction {
  id: number;
  companyId: number;
  agentId: number;
  /** The function name the model sees (unique per agent). */
  name: string;
  description: string;
  /** JSON Schema of the arguments (`type: "object"`). */
  parameters: Record<string, unknown>;
  method: ActionMethod;
  /** With `{param}` and caller placeholders (lib/agents/tools/placeholders.ts), filled URL-encoded. */
  url: string;
  /** Header name → value sealed with lib/secrets.ts; write-only through the API. */
  headersSealed: Record<string, string>;
  body: 'json' | 'none';
  /** A JSON body the company wrote, with placeholders (migration 0025); null: `body` says what is sent. */
  bodyTemplate: Record<string, unknown> | null;
  /** May be called again after an uncertain outcome (default: GET only). */
  idempotent: boolean;
  timeoutMs: number;
  createdAt: Date;
  updatedAt: Date;
}

export const AgentActionSchema = new EntitySchema<AgentAction>({
  name: 'AgentAction',
  tableName: 'agent_actions',
  filters: tenantFilter,
  properties: {
    id: { type: 'integer', primary: true, autoincrement: true },
    companyId: { type: 'integer' },
    agentId: { type: 'integer' },
    name: { type: 'text' },
    description: { type: 'text' },
    parameters: { type: 'json' },
    method: { type: 'text' },
    url: { type: 'text' },
    headersSealed: { type: 'json', lazy: true },
    body: { type: 'text' },
    bodyTemplate: { type: 'json', nullable: true },
    idempotent: { type: 'boolean' },
    timeoutMs: { type: 'integer' },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
    updatedAt: { type: 'datetime', defaultRaw: 'now()' },
  },
});

export type McpServerStatus = 'pending' | 'connected' | 'failed';

/**
 * A tool an MCP server listed. `idempotent`: its annotations say it only reads or may be
 * repeated. `refused`: why its input schema does not pass the schema policy (the tool is not
 * offered; its schema is not kept); absent when it passes.
 */
export interface McpToolInfo {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  idempotent: boolean;
  refused?: string;
}

export interface AgentMcpServer {
  id: number;
  companyId: number;
  agentId: number;
  /** Prefixes its tools' names as the model sees them (`<name>__<tool>`). */
  name: string;
  url: string;
  /** Header name → sealed value; write-only through the API. */
  headersSealed: Record<string, string>;
  timeoutMs: number;
  status: McpServerStatus;
  tools: McpToolInfo[];
  lastError: string | null;
  checkedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export const AgentMcpServerSchema = new EntitySchema<AgentMcpServer>({
  name: 'AgentMcpServer',
  tableName: 'agent_mcp_servers',
  filters: tenantFilter,
  properties: {
    id: { type: 'integer', primary: true, autoincrement: true },
    companyId: { type: 'integer' },
    agentId: { type: 'integer' },
    name: { type: 'text' },
    url: { type: 'text' },
    headersSealed: { type: 'json', lazy: true },
    timeoutMs: { type: 'integer', default: 10000 },
    status: { type: 'text', default: 'pending' },
    tools: { type: 'json', default: '[]' },
    lastError: { type: 'text', nullable: true },
    checkedAt: { type: 'datetime', nullable: true },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
    updatedAt: { type: 'datetime', defaultRaw: 'now()' },
  },
});

/**
 * How a tool call ended: `started` (in flight, or cut off by a crash), `ok` (a 2xx answer; an
 * MCP result), `error` (another HTTP status; an MCP error result; a failed connection),
 * `timeout`, `blocked` (an address the rules refuse), `invalid_arguments` (no request made),
 * `uncertain` (an earlier attempt was cut off: not repeated), `not_called` (over the limit
 * of calls per answer, a second call of a tool that changes data, or one in a test).
 */
export type ToolCallStatus = 'started' | 'ok' | 'error' | 'timeout' | 'blocked' | 'invalid_arguments' | 'uncertain' | 'not_called';

export interface AgentToolCall {
  id: string;
  companyId: number;
  agentId: number;
  conversationId: number | null;
  /** The customer message the answer is for; null: an evaluation. */
  messageId: string | null;
  /** The call's place in its answer (1, 2, …). */
  seq: number;
  source: 'action' | 'mcp';
  actionId: number | null;
  mcpServerId: number | null;
  /** The name the model called. */
  name: string;
  /** The arguments, secrets redacted. */
  args: Record<string, unknown>;
  idempotent: boolean;
  status: ToolCallStatus;
  httpStatus: number | null;
  ms: number | null;
  error: string | null;
  /** What the model was given (≤ 8 KiB serialised). */
  result: unknown;
  calledAt: Date;
  finishedAt: Date | null;
}

export const AgentToolCallSchema = new EntitySchema<AgentToolCall>({
  name: 'AgentToolCall',
  tableName: 'agent_tool_calls',
  filters: tenantFilter,
  properties: {
    id: { type: 'bigint', primary: true, autoincrement: true },
    companyId: { type: 'integer' },
    agentId: { type: 'integer' },
    conversationId: { type: 'integer', nullable: true },
    messageId: { type: 'bigint', nullable: true },
    seq: { type: 'integer' },
    source: { type: 'text' },
    actionId: { type: 'integer', nullable: true },
    mcpServerId: { type: 'integer', nullable: true },
    name: { type: 'text' },
    args: { type: 'json' },
    idempotent: { type: 'boolean' },
    status: { type: 'text' },
    httpStatus: { type: 'integer', nullable: true },
    ms: { type: 'integer', nullable: true },
    error: { type: 'text', nullable: true },
    result: { type: 'json', nullable: true },
    calledAt: { type: 'datetime', defaultRaw: 'now()' },
    finishedAt: { type: 'datetime', nullable: true },
  },
});

export const actionEntities = [AgentActionSchema, AgentMcpServerSchema, AgentToolCallSchema];
