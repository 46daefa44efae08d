import { pino, type Logger } from 'pino';
import { activeTraceFields } from './tracing.js';

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
    { level, redact: { paths: REDACT, censor: '[redacted]' }, base: { pid: process.pid }, mixin: activeTraceFields },
    destination,
  );
}
