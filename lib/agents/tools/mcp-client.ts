import { AsyncLocalStorage } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { McpToolInfo } from '../../../schema/action-entities.js';
import type { AddressGuard } from '../../address-guard.js';
import { outboundFetch } from '../../outbound-http.js';
import { outboundErrorIn, type OutboundError } from '../../outbound-errors.js';
import { failureOf, hideSecrets, MAX_TOOL_ANSWER_BYTES, modelResult, secretsOf, type ToolOutcome } from './action-request.js';
import { toolSchemaProblem } from './tool-schema.js';

/**
 * A company's Model Context Protocol servers (contract.md § Agent actions), over Streamable
 * HTTP with the SDK's client: every request through the outbound guard (lib/outbound-http.ts)
 * with the 256 KiB answer cap, each call within the server's deadline, and a call is never
 * repeated here (a tool that changes data must not run twice; the toolbox decides).
 */

/** The most tools taken from one server (pages included); the rest are not offered. */
export const MAX_MCP_TOOLS = 128;
const MAX_TOOL_PAGES = 10;
/** A tool's description is cut to this (it goes into every prompt that offers the tool). */
export const MAX_MCP_TOOL_DESCRIPTION = 1024;
/** A connection unused this long is closed (its session and its notification stream with it). */
export const DEFAULT_MCP_IDLE_MS = 5 * 60_000;
/** How long closing waits for the server to end its session before leaving anyway. */
const TERMINATE_WAIT_MS = 1000;

export interface McpServerCall {
  id: number;
  url: string;
  /** Opened (not sealed) header values. */
  headers: Record<string, string>;
  timeoutMs: number;
  /** The server row's updatedAt (ISO): a changed server is connected to again. */
  version: string;
}

/** A server that could not be reached or listed, in our words (never its secrets). */
export class McpServerError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'McpServerError';
  }
}

/** The SDK's "request timed out", which is also how it reports a caller's abort (checked apart). */
const isRequestTimeout = (err: unknown): boolean => err instanceof McpError && err.code === ErrorCode.RequestTimeout;

const cut = (text: string, max: number): string => (text.length > max ? `${text.slice(0, max - 1)}…` : text);


/** What went wrong talking to a server, in our words, with its status word and HTTP status. */
function describeFailure(err: unknown, timeoutMs: number, secrets: readonly string[]): { status: ToolOutcome['status']; httpStatus: number | null; error: string } {
  const outbound = outboundErrorIn(err);
  if (outbound) return { ...failureOf(outbound, timeoutMs), httpStatus: null };
  if (isRequestTimeout(err)) return { status: 'timeout', httpStatus: null, error: `no answer within ${timeoutMs} ms` };
  if (err instanceof StreamableHTTPError) {
    const code = err.code ?? -1;
    if (code === 401 || code === 403) return { status: 'error', httpStatus: code, error: `the server refused the request (HTTP ${code}): check the headers it needs` };
    if (code === 404) return { status: 'error', httpStatus: code, error: 'no MCP endpoint or session at this URL (HTTP 404)' };
    if (code > 0) return { status: 'error', httpStatus: code, error: `the server answered HTTP ${code}` };
    return { status: 'error', httpStatus: null, error: 'the server does not answer as an MCP server (Streamable HTTP)' };
  }
  if (err instanceof McpError) return { status: 'error', httpStatus: null, error: `the server answered an MCP error: ${cut(hideSecrets(err.message, secrets), 200)}` };
  if ((err as Error)?.name === 'UnauthorizedError') return { status: 'error', httpStatus: 401, error: 'the server requires authorization: check the headers it needs' };
  if ((err as Error)?.name === 'ZodError' || err instanceof SyntaxError) return { status: 'error', httpStatus: null, error: 'the server does not answer as an MCP server (Streamable HTTP)' };
  return { status: 'error', httpStatus: null, error: 'the connection to the server failed' };
}

/** The call a fetch is made for: a failure of its answer's stream (too large, cut) ends that call at once. */
interface CallWatch {
  fail(err: OutboundError): void;
}
const watchedCall = new AsyncLocalStorage<CallWatch>();

/**
 * The SDK reads a tool's answer from a Server-Sent Events stream and only logs a stream that
 * fails (it would then wait for its deadline): this hands the failure (BODY_TOO_LARGE, a cut
 * connection) to the call whose request it answers, found by the async context it was sent in.
 */
function watchedFetch(inner: typeof fetch): typeof fetch {
  return async (input, init) => {
    const watch = watchedCall.getStore();
    const res = await inner(input, init);
    if (!watch || !res.body || (init?.method ?? 'GET').toUpperCase() !== 'POST') return res;
    const reader = res.body.getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const { done, value } = await reader.read();
          if (done) controller.close();
          else controller.enqueue(value);
        } catch (err) {
          const outbound = outboundErrorIn(err);
          if (outbound) watch.fail(outbound);
          controller.error(err);
        }
      },
      cancel: (reason) => reader.cancel(reason),
    });
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

function clientFor(url: URL, headers: Record<string, string>, guard: AddressGuard | null): { client: Client; transport: StreamableHTTPClientTransport } {
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers },
    fetch: watchedFetch(outboundFetch({ guard, maxBodyBytes: MAX_TOOL_ANSWER_BYTES })),
  });
  const client = new Client({ name: 'agent-tools', version: '1.0.0' });
  // Transport trouble outside a call (the notification stream) is not ours to report: the next call meets it.
  client.onerror = () => {};
  return { client, transport };
}

/** Ends the server's session (politely, briefly) and the client's streams. */
async function closeClient(client: Client, transport: StreamableHTTPClientTransport): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([transport.terminateSession().catch(() => {}), new Promise<void>((r) => (timer = setTimeout(r, TERMINATE_WAIT_MS)))]);
  clearTimeout(timer);
  await client.close().catch(() => {});
}

function parseUrl(raw: string): URL {
  try {
    const url = new URL(raw);
    if (url.protocol === 'http:' || url.protocol === 'https:') return url;
  } catch {
    // below
  }
  throw new McpServerError('the URL is not a valid http or https URL');
}

/** An MCP tool's input schema as offered and checked: without its `$schema` (a draft the model server may not know). */
export function offeredSchema(schema: unknown): Record<string, unknown> {
  if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return { type: 'object', properties: {} };
  const { $schema: _draft, ...rest } = schema as Record<string, unknown>;
  return rest;
}

/** Connects, lists the server's tools (every page, up to MAX_MCP_TOOLS) within its `timeoutMs`, and disconnects. */
export async function listMcpTools(server: Omit<McpServerCall, 'version'>, o: { guard: AddressGuard | null; signal?: AbortSignal }): Promise<McpToolInfo[]> {
  const url = parseUrl(server.url);
  const secrets = secretsOf(server.headers);
  const { client, transport } = clientFor(url, server.headers, o.guard);
  const deadline = performance.now() + server.timeoutMs;
  const remaining = () => Math.max(1, Math.round(deadline - performance.now()));
  try {
    await client.connect(transport, { timeout: remaining(), signal: o.signal });
    const tools: McpToolInfo[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_TOOL_PAGES && tools.length < MAX_MCP_TOOLS; page++) {
      const listed = await client.listTools(cursor ? { cursor } : undefined, { timeout: remaining(), signal: o.signal });
      for (const tool of listed.tools) {
        if (tools.length >= MAX_MCP_TOOLS) break;
        // Each schema is held to the policy (up to a few ms): other requests go between two.
        await new Promise(setImmediate);
        const inputSchema = offeredSchema(tool.inputSchema);
        const refused = toolSchemaProblem(inputSchema);
        tools.push({
          name: tool.name,
          description: cut(tool.description ?? tool.title ?? '', MAX_MCP_TOOL_DESCRIPTION),
          inputSchema: refused === null ? inputSchema : {},
          idempotent: tool.annotations?.readOnlyHint === true || tool.annotations?.idempotentHint === true,
          ...(refused === null ? {} : { refused: cut(refused, MAX_MCP_TOOL_DESCRIPTION) }),
        });
      }
      cursor = listed.nextCursor;
      if (!cursor) break;
    }
    return tools;
  } catch (err) {
    if (o.signal?.aborted) throw new McpServerError('cancelled', { cause: err });
    throw new McpServerError(describeFailure(err, server.timeoutMs, secrets).error, { cause: err });
  } finally {
    await closeClient(client, transport);
  }
}

interface Connection {
  version: string;
  ready: Promise<{ client: Client; transport: StreamableHTTPClientTransport }>;
  inflight: number;
  /** Replaced (a new version, a failure): closed once its last call ends. */
  retired: boolean;
  idleTimer: NodeJS.Timeout | null;
}

/** `promise`, or the signal's reason as soon as it aborts (a connection still being made is not waited for). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  let onAbort = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  return Promise.race([promise, aborted]).finally(() => signal.removeEventListener('abort', onAbort));
}

/** The text of a result's contents (other kinds named by their type). */
function contentText(result: CallToolResult): string {
  return (Array.isArray(result.content) ? result.content : [])
    .map((c) => {
      if (c.type === 'text') return c.text;
      if (c.type === 'resource' && 'text' in c.resource) return c.resource.text;
      if (c.type === 'resource_link') return c.uri;
      return `[${c.type}]`;
    })
    .join('\n');
}

/**
 * The worker's MCP clients: one per server id, reused by every call to it, connected again
 * when the server changed (`version`) or after a failed call, closed when idle. Calls to one
 * server run side by side on its session.
 */
export class McpConnections {
  private readonly connections = new Map<number, Connection>();
  private readonly guardFor: (url: string) => AddressGuard | null;
  private readonly idleMs: number;
  private closed = false;

  constructor(o: { guardFor: (url: string) => AddressGuard | null; idleMs?: number }) {
    this.guardFor = o.guardFor;
    this.idleMs = o.idleMs ?? DEFAULT_MCP_IDLE_MS;
  }

  /** Calls `tool` once within `server.timeoutMs` (connecting first when needed). Never throws. */
  async call(server: McpServerCall, tool: string, args: Record<string, unknown>, o: { signal?: AbortSignal; secrets: readonly string[] }): Promise<ToolOutcome> {
    const started = performance.now();
    const ms = () => Math.round(performance.now() - started);
    const secrets = [...new Set([...o.secrets, ...secretsOf(server.headers)])].sort((a, b) => b.length - a.length);
    const fail = (f: { status: ToolOutcome['status']; httpStatus: number | null; error: string }): ToolOutcome => ({ ...f, ms: ms(), result: { error: f.error } });
    if (this.closed) return fail({ status: 'error', httpStatus: null, error: 'not called: the worker is stopping' });
    let url: URL;
    try {
      url = parseUrl(server.url);
    } catch (err) {
      return fail({ status: 'error', httpStatus: null, error: (err as Error).message });
    }
    const connection = this.connectionFor(server, url);
    connection.inflight++;
    this.stopIdleTimer(connection);
    const remaining = () => Math.max(1, Math.round(started + server.timeoutMs - performance.now()));
    try {
      const { client } = await untilAborted(connection.ready, o.signal);
      let failStream: (err: OutboundError) => void = () => {};
      const streamFailed = new Promise<never>((_, reject) => (failStream = reject));
      streamFailed.catch(() => {});
      const result = (await watchedCall.run({ fail: (err) => failStream(err) }, () =>
        Promise.race([client.callTool({ name: tool, arguments: args }, undefined, { timeout: remaining(), signal: o.signal }), streamFailed]),
      )) as CallToolResult;
      const text = contentText(result);
      if (result.isError) return { status: 'error', httpStatus: null, ms: ms(), error: 'the tool answered with an error', result: modelResult({ error: text || 'the tool failed' }, secrets) };
      return { status: 'ok', httpStatus: null, ms: ms(), error: null, result: modelResult({ result: result.structuredContent ?? text }, secrets) };
    } catch (err) {
      if (o.signal?.aborted) return fail({ status: 'error', httpStatus: null, error: 'cancelled' });
      // A session the server lost, a dropped connection: the next call starts afresh (this one is not repeated).
      if (!isRequestTimeout(err)) this.retire(server.id, connection);
      return fail(describeFailure(err, server.timeoutMs, secrets));
    } finally {
      connection.inflight--;
      if (connection.retired) this.closeWhenDone(connection);
      else this.startIdleTimer(server.id, connection);
    }
  }

  /** Closes every connection (the worker is stopping); later calls are not made. */
  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.connections.values()];
    this.connections.clear();
    await Promise.all(all.map((c) => this.shut(c)));
  }

  private connectionFor(server: McpServerCall, url: URL): Connection {
    const current = this.connections.get(server.id);
    if (current && current.version === server.version) return current;
    if (current) this.retire(server.id, current);
    const { client, transport } = clientFor(url, server.headers, this.guardFor(server.url));
    // Connected outside any call's context: the session's own streams belong to no call.
    const ready = watchedCall.exit(() => client.connect(transport, { timeout: server.timeoutMs })).then(() => ({ client, transport }));
    const connection: Connection = { version: server.version, ready, inflight: 0, retired: false, idleTimer: null };
    ready.catch(() => this.retire(server.id, connection));
    this.connections.set(server.id, connection);
    return connection;
  }

  private retire(id: number, connection: Connection): void {
    if (this.connections.get(id) === connection) this.connections.delete(id);
    if (connection.retired) return;
    connection.retired = true;
    this.stopIdleTimer(connection);
    this.closeWhenDone(connection);
  }

  private closeWhenDone(connection: Connection): void {
    if (connection.inflight === 0) void this.shut(connection);
  }

  private async shut(connection: Connection): Promise<void> {
    this.stopIdleTimer(connection);
    const opened = await connection.ready.catch(() => null);
    if (opened) await closeClient(opened.client, opened.transport);
  }

  private startIdleTimer(id: number, connection: Connection): void {
    if (connection.inflight > 0) return;
    this.stopIdleTimer(connection);
    connection.idleTimer = setTimeout(() => this.retire(id, connection), this.idleMs);
    connection.idleTimer.unref();
  }

  private stopIdleTimer(connection: Connection): void {
    if (connection.idleTimer) clearTimeout(connection.idleTimer);
    connection.idleTimer = null;
  }
}
