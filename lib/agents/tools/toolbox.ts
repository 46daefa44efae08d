import type { AddressGuard } from '../../address-guard.js';
import { query, type SqlClient } from '../../db.js';
import type { Logger } from '../../logger.js';
import type { SecretBox } from '../../secrets.js';
import type { ActionMethod, McpToolInfo, ToolCallStatus } from '../../../schema/action-entities.js';
import type { ToolCallRecord } from '../../../schema/conversation.js';
import { BUILT_IN_TOOLS, ModelCallCancelled, type ModelToolCall, type ToolDefinition } from '../openai-model.js';
import { NO_SLOT, type CallSlot } from '../slots.js';
import { callAction, redactArgs, secretArguments, secretsOf, type ActionCall, type ToolOutcome } from './action-request.js';
import { CALLER_PLACEHOLDERS, NO_CALLER, usesPlaceholder, type CallerValues } from './placeholders.js';
import { checkArguments, parseToolArguments, type CheckedArguments } from './arguments-check.js';
import { offeredSchema, type McpConnections } from './mcp-client.js';
import { toolSchemaProblem } from './tool-schema.js';
import { beginToolCall, earlierToolCalls, finishToolCall, markUncertain, recordToolCall, type EarlierToolCall, type FinishedToolCall, type NewToolCall } from './tool-calls.js';
import { offeredToolName } from './tool-names.js';

/**
 * The company's own tools of a model agent (contract.md § Agent actions): which it is offered
 * (`loadAgentTools`, cached with the agent's config), and how one answer calls them (`Toolbox`):
 * - at most MAX_TOOL_CALLS_PER_ANSWER calls per answer: later ones are not made
 *   (`not_called`) and the model is offered no company tool any more, so it answers;
 * - arguments are checked against the tool's JSON Schema first (`invalid_arguments`: no request);
 * - a tool that is not idempotent is called at most once per answer, crashes included: a
 *   second request in the same answer gets the first one's result; a call an earlier attempt
 *   at the same answer finished is not made again (its result is given again, `reused`), and
 *   one it left `started` (the worker died mid-call) is not made either: it is uncertain, and
 *   the model is told so (lib/agents/tools/tool-calls.ts keeps the ledger); in a test
 *   (evaluations, no customer message) it is never called; nor in a replay (a past customer
 *   message answered again, `recordedFor`): the model is given what the original answer's call
 *   of the same tool got, as a repeat (`reused`), or told it was not called when there was none;
 * - every call goes through the address guard with its deadline and caps
 *   (lib/agents/tools/action-request.ts, mcp-client.ts), gives the answer's model slot back
 *   while it runs, and is aborted with the answer (a human took over);
 * - header values are opened only to make the call; arguments and results are redacted
 *   (schema `writeOnly` / `format: password`, secret-looking names, header values) before the
 *   ledger, the transition log or the logs see them.
 */
export const MAX_TOOL_CALLS_PER_ANSWER = 5;
const CUSTOMER_PLACEHOLDERS = CALLER_PLACEHOLDERS.filter((name) => name.startsWith('customer.'));

/** What the model is told when a call is over the limit, and when a test would change data. */
export const LIMIT_REACHED = 'tool call limit reached';
export const UNCERTAIN_CALL =
  'An earlier attempt of this call was interrupted: it may or may not have taken effect. It was not repeated; tell the customer a colleague will check.';
const notInATest = (name: string) => `not called: this is a test and ${name} changes data`;
const notInAReplay = (name: string) => `not called in a replay: ${name} changes data`;

interface ToolBase {
  /** The name the model is offered it under. */
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  idempotent: boolean;
  /** Header name → sealed value. */
  headersSealed: Record<string, string>;
  timeoutMs: number;
}

export interface OfferedAction extends ToolBase {
  source: 'action';
  actionId: number;
  method: ActionMethod;
  url: string;
  body: 'json' | 'none';
  bodyTemplate: Record<string, unknown> | null;
}

export interface OfferedMcpTool extends ToolBase {
  source: 'mcp';
  serverId: number;
  url: string;
  /** The tool's name on its server. */
  tool: string;
  /** The server's `updatedAt`: a changed server is connected to afresh. */
  version: string;
}

export type OfferedTool = OfferedAction | OfferedMcpTool;

/** An agent's offered tools: the definitions for the model, and how to call each. */
export class AgentTools {
  readonly definitions: readonly ToolDefinition[];
  readonly #byName: ReadonlyMap<string, OfferedTool>;

  constructor(tools: readonly OfferedTool[]) {
    const byName = new Map<string, OfferedTool>();
    // A name taken by an earlier tool (or a built-in one) is not offered again.
    for (const tool of tools) if (!BUILT_IN_TOOLS.has(tool.name) && !byName.has(tool.name)) byName.set(tool.name, tool);
    this.#byName = byName;
    this.definitions = [...byName.values()].map((t) => ({ type: 'function' as const, function: { name: t.name, description: t.description, parameters: t.parameters } }));
  }

  get size(): number {
    return this.#byName.size;
  }

  get(name: string): OfferedTool | undefined {
    return this.#byName.get(name);
  }
}

export const NO_TOOLS = new AgentTools([]);

interface ActionRow {
  id: number;
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  method: ActionMethod;
  url: string;
  headersSealed: Record<string, string> | null;
  body: 'json' | 'none';
  bodyTemplate: Record<string, unknown> | null;
  idempotent: boolean;
  timeoutMs: number;
}

interface ServerRow {
  id: number;
  name: string;
  url: string;
  headersSealed: Record<string, string> | null;
  timeoutMs: number;
  tools: McpToolInfo[] | null;
  updatedAt: string;
}

/**
 * An agent's actions and the tools of its connected MCP servers, in one statement: actions
 * first, then each server's tools as it listed them (a name that comes out the same as an
 * earlier one is not offered, nor a tool whose schema the policy refuses: lib/agents/tools/tool-schema.ts).
 */
export async function loadAgentTools(sql: SqlClient, companyId: number, agentId: number): Promise<AgentTools> {
  const [row] = await query<{ actions: ActionRow[]; servers: ServerRow[] }>(
    sql,
    'agent_tools_load',
    `select
       (select coalesce(json_agg(json_build_object('id', id, 'name', name, 'description', description, 'parameters', parameters, 'method', method, 'url', url,
                'headersSealed', headers_sealed, 'body', body, 'bodyTemplate', body_template, 'idempotent', idempotent, 'timeoutMs', timeout_ms) order by id), '[]')
        from agent_actions where company_id = $1 and agent_id = $2) as actions,
       (select coalesce(json_agg(json_build_object('id', id, 'name', name, 'url', url, 'headersSealed', headers_sealed, 'timeoutMs', timeout_ms,
                'tools', tools, 'updatedAt', updated_at) order by id), '[]')
        from agent_mcp_servers where company_id = $1 and agent_id = $2 and status = 'connected') as servers`,
    [companyId, agentId],
  );
  const tools: OfferedTool[] = [];
  for (const a of row?.actions ?? []) {
    tools.push({
      source: 'action', name: a.name, description: a.description, parameters: a.parameters, idempotent: a.idempotent, headersSealed: a.headersSealed ?? {},
      timeoutMs: a.timeoutMs, actionId: a.id, method: a.method, url: a.url, body: a.body, bodyTemplate: a.bodyTemplate,
    });
  }
  for (const s of row?.servers ?? []) {
    for (const t of s.tools ?? []) {
      if (t.refused) continue;
      tools.push({
        source: 'mcp', name: offeredToolName(s.name, t.name), description: t.description, parameters: offeredSchema(t.inputSchema),
        idempotent: t.idempotent, headersSealed: s.headersSealed ?? {}, timeoutMs: s.timeoutMs, serverId: s.id, url: s.url, tool: t.name, version: String(s.updatedAt),
      });
    }
  }
  // A schema the policy refuses (one stored before it was held to it) is not offered: its arguments could not be checked.
  return new AgentTools(tools.filter((t) => toolSchemaProblem(t.parameters) === null));
}

/** What calling needs from the process. */
export interface ToolboxDeps {
  sql: SqlClient;
  secrets: SecretBox;
  /** The address rules of a tool's URL (lib/address-guard.ts guardForUrl with the process's config). */
  guardFor: (url: string) => AddressGuard | null;
  /** The process's MCP clients (the worker's, or one per evaluation); null: MCP tools cannot be called. */
  mcp: McpConnections | null;
  logger?: Logger;
}

/** The answer the calls are made for. */
export interface ToolAnswer {
  companyId: number;
  agentId: number;
  conversationId: number | null;
  /** The customer message answered (stable across attempts); null: an evaluation or a replay. */
  messageId: string | null;
  /** A replay (messageId null): the customer message answered again, whose answer's recorded calls stand in for the tools that change data. */
  recordedFor?: string;
  /** The conversation whose customer the calls are made for (a replay: the one answered again); none: nobody asks (an evaluation). */
  caller?: { conversationId: number } | null;
  signal?: AbortSignal;
  slot?: CallSlot;
}

/** A successful call, which grounds what the reply says it did (lib/agents/promises.ts). */
export interface DoneTool {
  name: string;
  description: string;
  result: Record<string, unknown>;
}

/** Outcomes after which a request may have reached the tool: a tool that changes data is not called again after one. */
const MAY_HAVE_CALLED = new Set<ToolCallStatus>(['started', 'ok', 'error', 'timeout', 'uncertain']);

const failure = (status: FinishedToolCall['status'], error: string, ms = 0): FinishedToolCall => ({ status, httpStatus: null, ms, error, result: { error } });

/** The tools as one answer uses them (see the module comment). */
export class Toolbox {
  readonly #tools: AgentTools;
  readonly #deps: ToolboxDeps;
  readonly #answer: ToolAnswer;
  /** Every call of the model's, known tool or not: what the limit counts. */
  #asked = 0;
  readonly #records: ToolCallRecord[] = [];
  readonly #done: DoneTool[] = [];
  /** The first outcome of each tool that changes data, in this answer. */
  readonly #once = new Map<string, FinishedToolCall>();
  #earlier: Promise<EarlierToolCall[]> | null = null;
  #customer: Promise<CallerValues> | null = null;

  constructor(tools: AgentTools, deps: ToolboxDeps, answer: ToolAnswer) {
    this.#tools = tools;
    this.#deps = deps;
    this.#answer = answer;
  }

  /** The company tools to offer the next model turn: none once the limit is reached. */
  get offered(): readonly ToolDefinition[] {
    return this.#asked >= MAX_TOOL_CALLS_PER_ANSWER ? [] : this.#tools.definitions;
  }

  /** The calls made so far, as the transition log records them. */
  get records(): ToolCallRecord[] {
    return this.#records;
  }

  /** The calls that succeeded, with what they gave. */
  get done(): readonly DoneTool[] {
    return this.#done;
  }

  /** Makes (or not) one call the model asked for; the content of the `tool` message that answers it. */
  async run(call: ModelToolCall): Promise<string> {
    this.#asked += 1;
    const tool = this.#tools.get(call.name);
    if (!tool) return JSON.stringify({ error: `there is no tool named ${JSON.stringify(call.name.slice(0, 64))}` });
    const seq = this.#asked;
    let headers: Record<string, string>;
    try {
      headers = Object.fromEntries(Object.entries(tool.headersSealed).map(([name, sealed]) => [name, this.#deps.secrets.open(sealed)]));
    } catch (err) {
      this.#deps.logger?.error({ err: (err as Error).name, agentId: this.#answer.agentId, tool: tool.name }, 'agent: a tool\'s header values cannot be opened (SECRETS_KEY rotated away?); not called');
      return this.#record(tool, seq, {}, failure('error', 'the tool\'s credentials cannot be read'), 'record');
    }
    const secrets = secretsOf(headers);
    const parsed = parseToolArguments(call.arguments);
    const args = redactArgs(parsed.ok ? parsed.value : {}, tool.parameters, secrets);
    if (this.#asked > MAX_TOOL_CALLS_PER_ANSWER) return this.#record(tool, seq, args, failure('not_called', LIMIT_REACHED), 'record');
    const checked = parsed.ok ? checkArguments(tool.parameters, parsed.value) : parsed;
    if (!checked.ok) return this.#record(tool, seq, args, failure('invalid_arguments', `invalid arguments: ${checked.error}`), 'record');
    if (!tool.idempotent) {
      const first = this.#once.get(tool.name);
      if (first) return this.#record(tool, seq, args, { status: 'not_called', httpStatus: null, ms: 0, error: `${tool.name} was called already in this answer`, result: first.result }, 'record');
      const replay = this.#answer.messageId === null ? (this.#answer.recordedFor ?? null) : null;
      if (this.#answer.messageId === null && replay === null) return this.#record(tool, seq, args, failure('not_called', notInATest(tool.name)), 'record');
      // A replay takes a finished call of the original answer only (one left `started` is the live answer's to settle).
      const earlier = (await this.#earlierCalls()).find((c) => c.name === tool.name && MAY_HAVE_CALLED.has(c.status) && (replay === null || c.status !== 'started'));
      if (earlier) return this.#again(tool, args, earlier);
      if (replay !== null) return this.#record(tool, seq, args, failure('not_called', notInAReplay(tool.name)), 'record');
    }
    // A call that changes data is in the ledger before it goes out (a crash leaves it
    // `started`: uncertain); one that may be repeated is written once, after it.
    const id = tool.idempotent ? 'record' : await beginToolCall(this.#deps.sql, this.#row(tool, seq, args));
    const outcome = await this.#call(tool, checked.args, headers, secretsOf(headers, secretArguments(checked.args, tool.parameters)));
    if (this.#answer.signal?.aborted) {
      const cancelled = failure('error', 'cancelled: a human took the conversation over', outcome.ms);
      if (id === 'record') await recordToolCall(this.#deps.sql, this.#row(tool, seq, args), cancelled);
      else await finishToolCall(this.#deps.sql, id, cancelled);
      // Logged with the answer's other calls (the cancelled answer carries them to the transition log).
      this.#logged(tool, args, cancelled, false);
      throw new ModelCallCancelled();
    }
    return this.#record(tool, seq, args, outcome, id);
  }

  /** An earlier attempt at this answer called the tool: its outcome again, or uncertain when it never finished. */
  async #again(tool: OfferedTool, args: Record<string, unknown>, earlier: EarlierToolCall): Promise<string> {
    if (earlier.status === 'started') {
      const uncertain = failure('uncertain', UNCERTAIN_CALL);
      await markUncertain(this.#deps.sql, earlier.id, uncertain.result, UNCERTAIN_CALL);
      this.#once.set(tool.name, uncertain);
      return this.#logged(tool, args, uncertain, false);
    }
    const recorded: FinishedToolCall = {
      status: earlier.status as FinishedToolCall['status'], httpStatus: earlier.httpStatus, ms: earlier.ms ?? 0, error: earlier.error,
      result: earlier.result ?? { error: UNCERTAIN_CALL },
    };
    this.#once.set(tool.name, recorded);
    return this.#logged(tool, args, recorded, true);
  }

  /**
   * Who asks, as the action's caller placeholders read it: the conversation's id, and its
   * customer (channel id, channel, their lead's email), read once per answer and only for an
   * action that asks for them.
   */
  #callerFor(action: Pick<ActionCall, 'url' | 'headers' | 'bodyTemplate'>): Promise<CallerValues> {
    const caller = this.#answer.caller;
    if (!caller) return Promise.resolve(NO_CALLER);
    const conversation = { ...NO_CALLER, 'conversation.id': String(caller.conversationId) };
    const parts = [action.url, action.bodyTemplate, ...Object.values(action.headers)];
    if (!CUSTOMER_PLACEHOLDERS.some((name) => usesPlaceholder(name, parts))) return Promise.resolve(conversation);
    this.#customer ??= query<{ client_id: string; channel: string; email: string | null }>(
      this.#deps.sql,
      'tool_caller_load',
      // Only an email the team wrote or the host page verified: one the customer typed (the pre-chat form) could be anyone's.
      `select c.client_id, coalesce(c.transport, c.channel) as channel, case when l.email_source in ('operator', 'verified') then l.email end as email
       from conversations c left join leads l on l.company_id = c.company_id and l.integration_id = c.integration_id and l.client_id = c.client_id
       where c.id = $1 and c.company_id = $2`,
      [caller.conversationId, this.#answer.companyId],
    ).then(([row]) => ({ ...conversation, 'customer.id': row?.client_id ?? null, 'customer.channel': row?.channel ?? null, 'customer.email': row?.email ?? null }));
    return this.#customer;
  }

  /** The calls of earlier attempts at this answer (a replay: of the original answer), read once (before this attempt wrote any). */
  #earlierCalls(): Promise<EarlierToolCall[]> {
    this.#earlier ??= earlierToolCalls(this.#deps.sql, (this.#answer.messageId ?? this.#answer.recordedFor)!);
    return this.#earlier;
  }

  /** The request itself, the answer's model slot given back meanwhile; `secrets` (headers', secret arguments') are masked in its answer. */
  async #call(tool: OfferedTool, args: CheckedArguments, headers: Record<string, string>, secrets: readonly string[]): Promise<ToolOutcome> {
    const signal = this.#answer.signal;
    const slot = this.#answer.slot ?? NO_SLOT;
    const started = Date.now();
    try {
      if (tool.source === 'action') {
        const action = { name: tool.name, method: tool.method, url: tool.url, headers, body: tool.body, bodyTemplate: tool.bodyTemplate, timeoutMs: tool.timeoutMs };
        return await slot.away(async () => callAction(action, args, { guard: this.#deps.guardFor(tool.url), caller: await this.#callerFor(action), signal, masked: secrets }));
      }
      const mcp = this.#deps.mcp;
      if (!mcp) return { ...failure('error', 'MCP tools cannot be called here'), ms: 0 } as ToolOutcome;
      const server = { id: tool.serverId, url: tool.url, headers, timeoutMs: tool.timeoutMs, version: tool.version };
      return await slot.away(() => mcp.call(server, tool.tool, args, { signal, secrets }));
    } catch (err) {
      if (signal?.aborted) throw new ModelCallCancelled();
      // Neither module throws for a failed call: this is a fault of ours; its message may quote the server, so only its name is logged.
      this.#deps.logger?.warn({ errName: (err as Error).name, agentId: this.#answer.agentId, tool: tool.name }, 'agent: a tool call failed unexpectedly');
      return { ...failure('error', 'the call failed'), ms: Date.now() - started } as ToolOutcome;
    }
  }

  #row(tool: OfferedTool, seq: number, args: Record<string, unknown>): NewToolCall {
    const a = this.#answer;
    return {
      companyId: a.companyId, agentId: a.agentId, conversationId: a.conversationId, messageId: a.messageId, seq, source: tool.source,
      actionId: tool.source === 'action' ? tool.actionId : null, mcpServerId: tool.source === 'mcp' ? tool.serverId : null, name: tool.name, args, idempotent: tool.idempotent,
    };
  }

  /**
   * The ledger row of a call (`id`: the one begun before its request; `record`: it made none,
   * a finished row is inserted), then what the model is told.
   */
  async #record(tool: OfferedTool, seq: number, args: Record<string, unknown>, outcome: FinishedToolCall, id: string | 'record'): Promise<string> {
    if (id === 'record') await recordToolCall(this.#deps.sql, this.#row(tool, seq, args), outcome);
    else await finishToolCall(this.#deps.sql, id, outcome);
    if (!tool.idempotent && id !== 'record' && MAY_HAVE_CALLED.has(outcome.status)) this.#once.set(tool.name, outcome);
    return this.#logged(tool, args, outcome, false);
  }

  /** The call as the transition log records it; what the model is told. */
  #logged(tool: OfferedTool, args: Record<string, unknown>, o: FinishedToolCall, reused: boolean): string {
    const a = this.#answer;
    this.#deps.logger?.debug(
      { agentId: a.agentId, conversationId: a.conversationId, messageId: a.messageId, tool: tool.name, source: tool.source, args, status: o.status, httpStatus: o.httpStatus, ms: o.ms, reused },
      'agent: tool called',
    );
    this.#records.push({
      name: tool.name, source: tool.source, args, status: o.status, ...(o.httpStatus !== null ? { httpStatus: o.httpStatus } : {}), ms: o.ms ?? 0,
      ...(o.error ? { error: o.error } : {}), ...(reused ? { reused: true } : {}),
    });
    if (o.status === 'ok') this.#done.push({ name: tool.name, description: tool.description, result: o.result });
    return JSON.stringify(o.result);
  }
}
