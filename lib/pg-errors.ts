import pg from 'pg';
import { DriverException } from '@mikro-orm/postgresql';
import { causesOf } from './errors.js';

/**
 * What a failed database call means to its caller, read from the error's SQLSTATE or node's
 * network error code, never from its message (the driver's message quotes the statement and
 * its values). Raw `pg` errors and MikroORM's (which carry the same code) alike, also when
 * wrapped in another error's `cause`.
 * - `data`: PostgreSQL refuses the values themselves (class 22 data exception, class 23
 *   integrity constraint violation): the same values fail again;
 * - `unique`: a value that must be unique exists already (23505; 42P04, a database another
 *   process created at the same moment): the same values fail again too;
 * - `timeout`: the statement was cancelled (57014: its statement_timeout, or a cancel request);
 * - `unavailable`: the server cannot be reached or is going away (a refused or cut connection,
 *   57P01..03 shutdown / crash / not accepting connections yet, class 08 connection exception,
 *   class 53 insufficient resources): a later try may succeed. (`pg` reports a connection
 *   that simply closes as a plain Error without a code: not classified.)
 * null: anything else (a mistake of ours, or not a database error).
 */
export type PgErrorKind = 'data' | 'unique' | 'timeout' | 'unavailable';

/** Node's codes of a connection that could not be made or was cut. */
const CONNECTION_LOST = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

const SQLSTATE = /^[0-9A-Z]{5}$/;

/** PostgreSQL's own answer: pg's DatabaseError, or MikroORM's DriverException made from one (it copies its fields, `severity` among them). */
const isServerAnswer = (e: Error): boolean => e instanceof pg.DatabaseError || (e instanceof DriverException && typeof (e as { severity?: unknown }).severity === 'string');

/** The SQLSTATE PostgreSQL answered with (`23505` ...), or null when the failure is not PostgreSQL's answer. */
export function sqlState(err: unknown): string | null {
  for (const e of causesOf(err)) {
    if (isServerAnswer(e) && typeof e.code === 'string' && SQLSTATE.test(e.code)) return e.code;
  }
  return null;
}

function kindOfState(state: string): PgErrorKind | null {
  if (state === '23505' || state === '42P04') return 'unique';
  if (state.startsWith('22') || state.startsWith('23')) return 'data';
  if (state === '57014') return 'timeout';
  if (state === '57P01' || state === '57P02' || state === '57P03' || state.startsWith('08') || state.startsWith('53')) return 'unavailable';
  return null;
}

/** What a failed database call means (see PgErrorKind), or null. */
export function pgErrorKind(err: unknown): PgErrorKind | null {
  const state = sqlState(err);
  if (state !== null) return kindOfState(state);
  for (const e of causesOf(err)) {
    if (typeof e.code === 'string' && CONNECTION_LOST.has(e.code)) return 'unavailable';
  }
  return null;
}

/** PostgreSQL refuses the values themselves (`data` or `unique`): trying them again cannot help. */
export function isDataError(err: unknown): boolean {
  const kind = pgErrorKind(err);
  return kind === 'data' || kind === 'unique';
}
