import type { Request, Response } from 'express';
import { listMcpTools, McpServerError, offeredSchema } from '../../lib/agents/tools/mcp-client.js';
import { toolSchemaProblem } from '../../lib/agents/tools/tool-schema.js';
import { MCP_SERVER_NAME_PATTERN, offeredToolName } from '../../lib/agents/tools/tool-names.js';
import { DEFAULT_TOOL_TIMEOUT_MS } from '../../lib/agents/tools/action-request.js';
import { guardForUrl } from '../../lib/address-guard.js';
import type { Config } from '../../lib/config.js';
import { notFound } from '../../lib/errors.js';
import { withinQuota } from '../../lib/quotas.js';
import type { SecretBox } from '../../lib/secrets.js';
import { AgentMcpServerSchema, type AgentMcpServer } from '../../schema/action-entities.js';
import { deleteById } from '../http/delete-by-id.js';
import { BAD_PAGE, examplePage, PAGE_QUERY, pageOf } from '../http/pagination.js';
import { conflictOnUnique } from '../http/errors.js';
import type { AgentChanges } from '../lib/agent-changes.js';
import { defineRoute, type Route } from '../http/route.js';
import { arrayOf, BOOLEAN, EXAMPLE_TIME, ID, nullable, object, STRING, TIMESTAMP } from '../http/schemas.js';
import { assertTenantUrl, bodyValidator, idParam, idPathParam, invalidFields } from '../http/validate.js';
import { assertHeadersFollow, headerProblems, HEADERS, MASKED, MASKED_HEADERS, maskedHeaders, openHeaders, sealHeaders, TIMEOUT_MS, withPatternWords } from './action-schemas.js';
import { AGENT_ID } from './agent-schemas.js';
import { loadPathAgent } from './agents.js';

/**
 * `/api/agents/:id/mcp-servers`: Model Context Protocol servers (Streamable HTTP) whose tools
 * the agent is offered (contract.md § Agent actions). Each write is followed by one check
 * (connect, list the tools, within the server's timeout) whose finding is kept: `connected`
 * with the tools, or `failed` with why. A failed server is still stored: it can be mended and
 * checked again (`refresh`).
 */

const MAX_URL_CHARS = 2048;
const NAME_WORDS = 'must start with a letter, then at most 31 letters, digits, _ or -';
const TAKEN = 'the agent already has an MCP server with this name';

interface McpServerInput {
  name?: string;
  url?: string;
  headers?: Record<string, string>;
  timeoutMs?: number;
}

const properties = {
  name: { type: 'string', pattern: MCP_SERVER_NAME_PATTERN, description: 'Prefixes its tools\' names as the model sees them (`<name>__<tool>`); unique per agent.' },
  url: { type: 'string', format: 'uri', pattern: '^https?://', maxLength: MAX_URL_CHARS, description: 'The Streamable HTTP endpoint (at a public address).' },
  headers: HEADERS,
  timeoutMs: TIMEOUT_MS,
};
const PATTERN_WORDS = { name: NAME_WORDS, url: 'must start with http:// or https://' };
const createBody = withPatternWords(
  bodyValidator<McpServerInput & { name: string; url: string }>({ title: 'McpServerCreate', type: 'object', additionalProperties: false, required: ['name', 'url'], properties }),
  PATTERN_WORDS,
);
const patchBody = withPatternWords(bodyValidator<McpServerInput>({ title: 'McpServerPatch', type: 'object', additionalProperties: false, properties }), PATTERN_WORDS);

/** A server as answers show it; a tool listed before the schema policy is judged by it here, as the worker judges it. */
const view = (s: AgentMcpServer) => ({
  id: s.id,
  agentId: s.agentId,
  name: s.name,
  url: s.url,
  headers: maskedHeaders(s.headersSealed),
  timeoutMs: s.timeoutMs,
  status: s.status,
  tools: s.tools.map((t) => ({ name: t.name, description: t.description, offeredAs: offeredToolName(s.name, t.name), idempotent: t.idempotent, refused: t.refused ?? toolSchemaProblem(offeredSchema(t.inputSchema)) })),
  lastError: s.lastError,
  checkedAt: s.checkedAt ? s.checkedAt.toISOString() : null,
  createdAt: s.createdAt.toISOString(),
  updatedAt: s.updatedAt.toISOString(),
});

const MCP_TOOL = object(
  {
    name: STRING,
    description: STRING,
    offeredAs: { ...STRING, description: 'The name the model is offered it under (`<server>__<tool>`, other characters as `_`, at most 64); an earlier tool with the same name wins.' },
    idempotent: { ...BOOLEAN, description: 'Its annotations say it only reads or may be repeated (readOnlyHint, idempotentHint); one that is not is never called twice for one answer.' },
    refused: {
      ...nullable(STRING),
      description: 'Why the tool is not offered: its input schema does not pass the schema policy (the keyword named: a pattern RE2 cannot run, a $ref outside the schema, checks that would cost too much, over 16 KiB); null when it is offered.',
    },
  },
  { title: 'McpTool' },
);
const MCP_SERVER = object(
  {
    id: ID,
    agentId: ID,
    name: STRING,
    url: STRING,
    headers: MASKED_HEADERS,
    timeoutMs: { type: 'integer', minimum: TIMEOUT_MS.minimum, maximum: TIMEOUT_MS.maximum },
    status: { type: 'string', enum: ['pending', 'connected', 'failed'], description: 'What the last check found (pending: never checked yet).' },
    tools: { ...arrayOf(MCP_TOOL), description: 'The tools the last check listed (none when it failed).' },
    lastError: { ...nullable(STRING), description: 'Why the last check failed.' },
    checkedAt: nullable(TIMESTAMP),
    createdAt: TIMESTAMP,
    updatedAt: TIMESTAMP,
  },
  { title: 'McpServer' },
);
const EXAMPLE_SERVER = {
  id: 1,
  agentId: 1,
  name: 'shop',
  url: 'https://mcp.shop.example.com/mcp',
  headers: { Authorization: MASKED },
  timeoutMs: 10000,
  status: 'connected',
  tools: [{ name: 'order_status', description: 'The shipping status of an order', offeredAs: 'shop__order_status', idempotent: true, refused: null }],
  lastError: null,
  checkedAt: EXAMPLE_TIME,
  createdAt: EXAMPLE_TIME,
  updatedAt: EXAMPLE_TIME,
};
const ONE = { schema: object({ mcpServer: MCP_SERVER }), example: { mcpServer: EXAMPLE_SERVER } };
const SERVER_ID = idPathParam('MCP server', 'serverId');
const BAD_SERVER = 'a bad field: a name that is not 1–32 letters, digits, _ or - starting with a letter, a URL that is not http(s) or is at a private address, a bad header (name, line break, Host…, more than 20), "********" for a header with no stored value, timeoutMs outside 100–15000, an unknown field';

/** What the schema cannot say of a server URL: that it parses, with a host, and carries no credentials (they belong in a header, sealed). */
function urlProblem(raw: string): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'is not a valid URL';
  }
  if (!url.hostname) return 'is not a valid URL';
  if (url.username || url.password) return 'must not contain credentials (put them in a header)';
  return null;
}

/** 400 naming each field the schema let through that cannot be stored as it is. */
function assertStorable(url: string | undefined, headers: Readonly<Record<string, string>> | undefined): void {
  const badUrl = url === undefined ? null : urlProblem(url);
  const details = [...(badUrl === null ? [] : [{ field: 'url', message: badUrl }]), ...headerProblems(headers ?? {}, 'headers')];
  if (details.length) throw invalidFields(details);
}

type McpConfig = Pick<Config, 'allowPrivateUrls' | 'helpdeskGlobalUrl' | 'helpdeskEuropeUrl' | 'quotas'>;

const storing = <T>(write: () => Promise<T>): Promise<T> => conflictOnUnique('The agent has an MCP server with this name already.', write);

/** The server the path names (`:serverId` of the agent `:id`), with its sealed headers; 404 when the company has none such. */
async function loadPathServer(req: Request): Promise<AgentMcpServer> {
  const agentId = idParam(req.params.id, 'MCP server');
  const server = await req.tenant!.em.findOne(AgentMcpServerSchema, { id: idParam(req.params.serverId, 'MCP server'), agentId }, { populate: ['headersSealed'] });
  if (!server) throw notFound('MCP server');
  return server;
}

/** An agent's MCP servers; every change (and every check, which stores the tools offered) is announced to the workers before the answer. */
export function mcpServerRoutes(secrets: SecretBox, config: McpConfig, changes: AgentChanges): readonly Route[] {
  /**
   * One check of the server as it is now: connect, list its tools, within its timeout (and
   * while the caller waits). Its finding is stored; a server that cannot be reached is not an
   * error of the request.
   */
  async function check(req: Request, res: Response, server: AgentMcpServer): Promise<void> {
    const gone = new AbortController();
    res.on('close', () => gone.abort());
    try {
      const tools = await listMcpTools(
        { id: server.id, url: server.url, headers: openHeaders(secrets, server.headersSealed), timeoutMs: server.timeoutMs },
        { guard: guardForUrl(config, server.url), signal: gone.signal },
      );
      server.status = 'connected';
      server.tools = tools;
      server.lastError = null;
    } catch (err) {
      if (!(err instanceof McpServerError)) throw err;
      server.status = 'failed';
      server.tools = [];
      server.lastError = err.message;
    }
    server.checkedAt = new Date();
    await req.tenant!.em.flush();
    await changes.announce(req.tenant!.companyId);
  }

  return [
    defineRoute({
      method: 'GET', path: '/:id/mcp-servers', operationId: 'listMcpServers', tag: 'Agents', access: 'any',
      summary: "The agent's MCP servers, oldest first, paged",
      params: [AGENT_ID],
      query: PAGE_QUERY,
      responses: { 200: { description: 'A page of MCP servers (header values shown as "********").', schema: pageOf('mcpServers', MCP_SERVER), example: examplePage('mcpServers', EXAMPLE_SERVER) } },
      errors: { NOT_FOUND: 'no such agent', VALIDATION_ERROR: BAD_PAGE },
      load: loadPathAgent,
      handler: async ({ req, res, loaded: agent, query: page }) => {
        const [rows, total] = await req.tenant!.em.findAndCount(AgentMcpServerSchema, { agentId: agent.id }, { orderBy: { id: 'asc' }, populate: ['headersSealed'], ...page });
        res.json({ mcpServers: rows.map(view), total, ...page });
      },
    }),
    defineRoute({
      method: 'POST', path: '/:id/mcp-servers', operationId: 'createMcpServer', tag: 'Agents', access: 'any',
      summary: 'Give the agent the tools of a Model Context Protocol server (Streamable HTTP); checked at once',
      params: [AGENT_ID],
      body: { validators: [createBody], example: { name: 'shop', url: 'https://mcp.shop.example.com/mcp', headers: { Authorization: 'Bearer shop-mcp-key' } } },
      responses: { 201: { description: 'The server as the check found it: `connected` with its tools, or `failed` with `lastError` (stored all the same: mend it, then refresh).', ...ONE } },
      errors: { NOT_FOUND: 'no such agent', VALIDATION_ERROR: BAD_SERVER, CONFLICT: TAKEN, QUOTA_EXCEEDED: 'the agent has QUOTA_MCP_SERVERS_PER_AGENT MCP servers (10 by default)' },
      load: loadPathAgent,
      handler: async ({ req, res, loaded: agent, body }) => {
        const { em, companyId } = req.tenant!;
        assertStorable(body.url, body.headers);
        await assertTenantUrl(config, 'url', body.url);
        const now = new Date();
        const server = em.create(AgentMcpServerSchema, {
          companyId, agentId: agent.id, name: body.name, url: body.url, headersSealed: sealHeaders(secrets, body.headers ?? {}, {}, 'headers'),
          timeoutMs: body.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS, status: 'pending', tools: [], lastError: null, checkedAt: null, createdAt: now, updatedAt: now,
        } as never);
        const quota = { companyId, field: 'mcpServers', limit: config.quotas.mcpServersPerAgent, entity: AgentMcpServerSchema, where: { agentId: agent.id } };
        await storing(() => withinQuota(em, quota, () => em.flush()));
        await check(req, res, server);
        res.status(201).json({ mcpServer: view(server) });
      },
    }),
    defineRoute({
      method: 'GET', path: '/:id/mcp-servers/:serverId', operationId: 'getMcpServer', tag: 'Agents', access: 'any',
      summary: 'One MCP server, with what its last check found',
      params: [AGENT_ID, SERVER_ID],
      responses: { 200: { description: 'The MCP server.', ...ONE } },
      errors: { NOT_FOUND: 'no such agent or MCP server' },
      load: loadPathServer,
      handler: ({ res, loaded: server }) => {
        res.json({ mcpServer: view(server) });
      },
    }),
    defineRoute({
      method: 'PATCH', path: '/:id/mcp-servers/:serverId', operationId: 'updateMcpServer', tag: 'Agents', access: 'any',
      summary: 'Change an MCP server (only the fields sent; `headers` replaces the map, a value "********" keeps the stored one), then check it again',
      params: [AGENT_ID, SERVER_ID],
      body: { validators: [patchBody], example: { headers: { Authorization: 'Bearer new-shop-mcp-key' } } },
      responses: { 200: { description: 'The server as it is now, as the new check found it.', ...ONE } },
      errors: { NOT_FOUND: 'no such agent or MCP server', VALIDATION_ERROR: `${BAD_SERVER}, or a URL at a new origin without every header value sent again`, CONFLICT: TAKEN },
      load: loadPathServer,
      handler: async ({ req, res, loaded: server, body }) => {
        assertStorable(body.url, body.headers);
        if (body.url !== undefined && body.url !== server.url) {
          assertHeadersFollow(server.headersSealed, body.headers, server.url, body.url, 'headers');
          await assertTenantUrl(config, 'url', body.url);
        }
        if (body.headers !== undefined) server.headersSealed = sealHeaders(secrets, body.headers, server.headersSealed, 'headers');
        if (body.name !== undefined) server.name = body.name;
        if (body.url !== undefined) server.url = body.url;
        if (body.timeoutMs !== undefined) server.timeoutMs = body.timeoutMs;
        server.updatedAt = new Date();
        await storing(() => req.tenant!.em.flush());
        await check(req, res, server);
        res.json({ mcpServer: view(server) });
      },
    }),
    defineRoute({
      method: 'POST', path: '/:id/mcp-servers/:serverId/refresh', operationId: 'refreshMcpServer', tag: 'Agents', access: 'any',
      summary: 'Check an MCP server again (connect, list its tools)',
      params: [AGENT_ID, SERVER_ID],
      responses: { 200: { description: 'The server as the check found it.', ...ONE } },
      errors: { NOT_FOUND: 'no such agent or MCP server' },
      load: loadPathServer,
      handler: async ({ req, res, loaded: server }) => {
        await check(req, res, server);
        res.json({ mcpServer: view(server) });
      },
    }),
    defineRoute({
      method: 'DELETE', path: '/:id/mcp-servers/:serverId', operationId: 'deleteMcpServer', tag: 'Agents', access: 'any',
      summary: 'Remove an MCP server (the record of its calls stays)',
      params: [AGENT_ID, SERVER_ID],
      responses: { 204: { description: 'Deleted.' } },
      errors: { NOT_FOUND: 'no such agent or MCP server' },
      handler: async ({ req, res }) => {
        await deleteById(req.tenant!, AgentMcpServerSchema, req.params.serverId, 'MCP server', { agentId: idParam(req.params.id, 'MCP server') });
        await changes.announce(req.tenant!.companyId);
        res.status(204).end();
      },
    }),
  ];
}
