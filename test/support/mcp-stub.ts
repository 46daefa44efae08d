import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Test } from 'tap';
import * as z from 'zod';
import { listenLocal } from './local-server.js';

/**
 * A company's Model Context Protocol server for tests: the SDK's McpServer behind its
 * Streamable HTTP transport with stateful sessions, on node:http at `/mcp`. Tools:
 * - `order_status {orderId}` (read-only) → text "Order <id> is shipped";
 * - `create_ticket {subject}` (no hints: changes data) → structuredContent `{ticketId: "T-<n>"}` and a text;
 * - `crm_down {}` (read-only) → an error result, text "the CRM is down".
 * Each tool answers after `delayMs` (default 100 ms). With `requiredHeaders`, a request
 * lacking one of them (name and value) gets 401 before the MCP layer sees it. With
 * `largeAnswerBytes`, a fourth tool `large_answer {}` (read-only) answers a text that long.
 * With `hostileSchemas`, two more read-only tools whose input schemas a hostile server would
 * list: `find_code {code}` with `pattern: "^(a+)+$"` (seconds of backtracking on 28 a's and a
 * "!" in JavaScript's engine) and `find_prefix {code}` with a lookahead (`^(?=x)`) that RE2
 * cannot run.
 * `dropSessions()` forgets every session, as a restarted server would (their next request: 404).
 */
export interface McpStubCall {
  tool: string;
  args: Record<string, unknown>;
  headers: IncomingHttpHeaders;
  at: number;
}

export interface McpStub {
  /** http://127.0.0.1:<port>/mcp */
  url: string;
  calls: McpStubCall[];
  dropSessions(): Promise<void>;
  close(): Promise<void>;
}

const DEFAULT_DELAY_MS = 100;

export async function startMcpStub(
  t: Test | null,
  o: { delayMs?: number; requiredHeaders?: Record<string, string>; largeAnswerBytes?: number; hostileSchemas?: boolean } = {},
): Promise<McpStub> {
  const delayMs = o.delayMs ?? DEFAULT_DELAY_MS;
  const calls: McpStubCall[] = [];
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  let tickets = 0;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  /** One McpServer per session (an McpServer serves one transport). */
  function serverForSession(): McpServer {
    const mcp = new McpServer({ name: 'mcp-stub', version: '1.0.0' });
    const record = (tool: string, args: Record<string, unknown>, headers: unknown) => calls.push({ tool, args, headers: (headers ?? {}) as IncomingHttpHeaders, at: Date.now() });
    mcp.registerTool(
      'order_status',
      { description: 'The shipping status of an order', inputSchema: { orderId: z.string() }, annotations: { readOnlyHint: true } },
      async (args, extra) => {
        record('order_status', args, extra.requestInfo?.headers);
        await sleep(delayMs);
        return { content: [{ type: 'text', text: `Order ${args.orderId} is shipped` }] };
      },
    );
    mcp.registerTool('create_ticket', { description: 'Opens a support ticket', inputSchema: { subject: z.string() } }, async (args, extra) => {
      record('create_ticket', args, extra.requestInfo?.headers);
      await sleep(delayMs);
      const ticketId = `T-${++tickets}`;
      return { content: [{ type: 'text', text: `Ticket ${ticketId} opened` }], structuredContent: { ticketId } };
    });
    mcp.registerTool('crm_down', { description: 'Looks the customer up in the CRM', inputSchema: {}, annotations: { readOnlyHint: true } }, async (args, extra) => {
      record('crm_down', args, extra.requestInfo?.headers);
      await sleep(delayMs);
      return { content: [{ type: 'text', text: 'the CRM is down' }], isError: true };
    });
    if (o.largeAnswerBytes !== undefined) {
      const bytes = o.largeAnswerBytes;
      mcp.registerTool('large_answer', { description: 'A long report', inputSchema: {}, annotations: { readOnlyHint: true } }, async (args, extra) => {
        record('large_answer', args, extra.requestInfo?.headers);
        await sleep(delayMs);
        return { content: [{ type: 'text', text: 'x'.repeat(bytes) }] };
      });
    }
    if (o.hostileSchemas) {
      for (const [tool, pattern] of [['find_code', /^(a+)+$/], ['find_prefix', /^(?=x)x+$/]] as const) {
        mcp.registerTool(tool, { description: `Finds a record by its ${tool === 'find_code' ? 'code' : 'prefix'}`, inputSchema: { code: z.string().regex(pattern) }, annotations: { readOnlyHint: true } }, async (args, extra) => {
          record(tool, args, extra.requestInfo?.headers);
          await sleep(delayMs);
          return { content: [{ type: 'text', text: `Record ${args.code} found` }] };
        });
      }
    }
    return mcp;
  }

  const server = createServer(async (req, res) => {
    const path = new URL(req.url ?? '/', 'http://stub').pathname;
    if (path !== '/mcp') {
      res.writeHead(404).end();
      return;
    }
    for (const [name, value] of Object.entries(o.requiredHeaders ?? {})) {
      if (req.headers[name.toLowerCase()] !== value) {
        res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'unauthorized' }));
        return;
      }
    }
    const sessionId = req.headers['mcp-session-id'];
    let transport = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
    if (!transport) {
      if (sessionId !== undefined || req.method !== 'POST') {
        // An unknown session (this stand-in was restarted, or the session was closed): the client must initialise again.
        res.writeHead(sessionId !== undefined ? 404 : 400, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'no such session' }, id: null }));
        return;
      }
      const fresh = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          sessions.set(id, fresh);
        },
      });
      fresh.onclose = () => {
        if (fresh.sessionId) sessions.delete(fresh.sessionId);
      };
      await serverForSession().connect(fresh);
      transport = fresh;
    }
    await transport.handleRequest(req, res);
  });
  const listening = await listenLocal(server, null);
  const dropSessions = async () => {
    const open = [...sessions.values()];
    sessions.clear();
    await Promise.allSettled(open.map((s) => s.close()));
  };
  const close = async () => {
    await dropSessions();
    await listening.close();
  };
  t?.teardown(close);
  return { url: `${listening.url}/mcp`, calls, dropSessions, close };
}
