import type { DestinationStream } from 'pino';

/**
 * A log line a person reads in a terminal (`LOG_FORMAT=pretty`, what `bash scripts/run.sh` sets
 * when its output is one): `19:46:33 INFO  gateway  gateway listening  url=http://127.0.0.1:3000`.
 * pino has already redacted the entry (lib/logger.ts), so nothing here can reveal a secret; a
 * line that is not pino's JSON is written as it came.
 */
const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO ', 40: 'WARN ', 50: 'ERROR', 60: 'FATAL' };
/** Fields every line has, shown in its own columns or not at all. */
const HIDDEN = new Set(['level', 'time', 'pid', 'hostname', 'role', 'msg', 'v']);
/** A value longer than this is cut (a whole request logged by mistake must not flood the terminal). */
const MAX_VALUE_LENGTH = 300;

function clock(time: unknown): string {
  const d = typeof time === 'number' ? new Date(time) : new Date();
  return d.toISOString().slice(11, 19);
}

function shown(value: unknown): string {
  const text = typeof value === 'string' ? (/[\s"=]/.test(value) ? JSON.stringify(value) : value) : JSON.stringify(value) ?? String(value);
  return text.length > MAX_VALUE_LENGTH ? `${text.slice(0, MAX_VALUE_LENGTH)}…` : text;
}

/** One pino JSON line as a readable line (an error's stack on the lines after it). */
export function prettyLine(line: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line.endsWith('\n') ? line : `${line}\n`;
  }
  if (entry === null || typeof entry !== 'object') return `${line.trimEnd()}\n`;
  const level = LEVELS[entry.level as number] ?? String(entry.level ?? '').padEnd(5);
  const fields: string[] = [];
  let stack = '';
  for (const [key, value] of Object.entries(entry)) {
    if (HIDDEN.has(key) || value === undefined) continue;
    if (key === 'err' && value && typeof value === 'object' && typeof (value as { stack?: unknown }).stack === 'string') {
      stack = `\n    ${((value as { stack: string }).stack).split('\n').join('\n    ')}`;
      fields.push(`err=${shown((value as { message?: unknown }).message ?? '')}`);
      continue;
    }
    fields.push(`${key}=${shown(value)}`);
  }
  const role = typeof entry.role === 'string' ? `${entry.role}  ` : '';
  return `${clock(entry.time)} ${level} ${role}${String(entry.msg ?? '')}${fields.length ? `  ${fields.join(' ')}` : ''}${stack}\n`;
}

/** A pino destination writing pretty lines to `out` (standard output by default). */
export function prettyDestination(out: { write(chunk: string): unknown } = process.stdout): DestinationStream {
  return { write: (chunk: string) => void out.write(chunk.split('\n').filter(Boolean).map(prettyLine).join('')) };
}
