import { pino, type Logger } from 'pino';
import { activeTraceFields, tracing } from './tracing.js';

export type { Logger };

/**
 * Paths that may carry a credential; pino replaces them with "[redacted]" so no secret
 * reaches a log line even when a whole object is logged by mistake.
 */
const REDACT = [
  'password', '*.password', 'token', '*.token', 'apiToken', '*.apiToken', 'apiKey', '*.apiKey', '*.*.apiKey',
  'webhookSecret', '*.webhookSecret', 'secret', '*.secret', 'refresh_token', '*.refresh_token',
  'access_token', '*.access_token', 'req.headers.authorization', 'req.headers.cookie',
  'headers.authorization', 'headers["x-webhook-signature"]', 'headers["x-hub-signature-256"]',
];

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    // mixin: a line logged inside a traced span carries its traceId and spanId.
    { level, redact: { paths: REDACT, censor: '[redacted]' }, base: { pid: process.pid }, mixin: () => (tracing.enabled ? activeTraceFields() : {}) },
    destination,
  );
}

/** What waits for a slow reader of standard output before lines are dropped. */
const STDOUT_BUFFER_BYTES = 16 * 1024 * 1024;

/**
 * Standard output written asynchronously, for a process's own logger: with a line per HTTP
 * request (the access log), a synchronous write would stall the webhook path whenever the
 * reader of stdout (a container runtime's pipe, journald) falls behind. Lines wait in memory
 * only while a write is under way; pino writes what is left synchronously when the process
 * exits, however it exits (lib/runtime.ts also flushes before its orderly exit). A reader that
 * stops reading altogether costs lines past STDOUT_BUFFER_BYTES, never the process's memory.
 */
export function asyncStdout(): pino.DestinationStream {
  return pino.destination({ dest: 1, sync: false, maxLength: STDOUT_BUFFER_BYTES });
}

