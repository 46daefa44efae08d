import type { Orm } from '../../lib/db.js';
import type { Logger } from '../../lib/logger.js';
import { ApiTokenSchema } from '../../schema/entities.js';
import type { Principal } from './authenticate.js';
import type { Sessions } from './sessions.js';

/** Why a watched credential stopped being good. */
export type CredentialEnd = 'credential_revoked' | 'credential_expired';

/**
 * How often the watched credentials are checked against the database: with the check's own
 * time, a revocation is seen well within the 5 s the contract allows.
 */
export const DEFAULT_CREDENTIAL_CHECK_MS = 2_000;
/** A database that cannot be asked is logged at most this often. */
const WARN_EVERY_MS = 60_000;

export interface CredentialWatchOptions {
  orm: Orm;
  sessions: Sessions;
  logger: Logger;
  now?: () => number;
  intervalMs?: number;
}

interface Watcher {
  principal: Principal;
  /** When its access token expires (ms), null when it does not (API tokens). */
  expiresAtMs: number | null;
  onEnd: (why: CredentialEnd) => void;
}

/**
 * Tells long-lived answers (Server-Sent Event streams) when the credential that opened them
 * stops being good: expired (an access token's `exp`), or revoked: an API token deleted, a
 * session logged out or revoked for refresh-token reuse, or gone with its user or company.
 *
 * Revocations live in PostgreSQL, so a stream held by one gateway ends when another gateway
 * revoked its credential. Every `intervalMs` the process checks all the credentials it
 * watches at once, one query per kind whatever their number (50 streams of a company cost
 * what one does); expiry needs no query. A check that fails (the database away) keeps the
 * streams open and is tried again at the next tick: nothing can be revoked meanwhile either.
 */
export class CredentialWatch {
  readonly #orm: Orm;
  readonly #sessions: Sessions;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #intervalMs: number;
  readonly #watchers = new Set<Watcher>();
  #timer: NodeJS.Timeout | null = null;
  #checking = false;
  #lastWarning = 0;

  constructor(options: CredentialWatchOptions) {
    this.#orm = options.orm;
    this.#sessions = options.sessions;
    this.#logger = options.logger;
    this.#now = options.now ?? Date.now;
    this.#intervalMs = options.intervalMs ?? DEFAULT_CREDENTIAL_CHECK_MS;
  }

  /** Calls `onEnd` once when `principal`'s credential ends; returns the function that stops watching. */
  watch(principal: Principal, onEnd: (why: CredentialEnd) => void): () => void {
    const watcher: Watcher = { principal, expiresAtMs: principal.kind === 'session' ? principal.expiresAt * 1000 : null, onEnd };
    this.#watchers.add(watcher);
    if (!this.#timer) {
      this.#timer = setInterval(() => void this.#tick(), this.#intervalMs);
      this.#timer.unref();
    }
    return () => this.#unwatch(watcher);
  }

  /** Credentials watched now (for tests and gauges). */
  get size(): number {
    return this.#watchers.size;
  }

  /** Stops the timer; watchers are left as they are (their streams close with the server). */
  close(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  #unwatch(watcher: Watcher): void {
    this.#watchers.delete(watcher);
    if (this.#watchers.size === 0) this.close();
  }

  #end(watcher: Watcher, why: CredentialEnd): void {
    if (!this.#watchers.has(watcher)) return;
    this.#unwatch(watcher);
    watcher.onEnd(why);
  }

  async #tick(): Promise<void> {
    const now = this.#now();
    for (const w of this.#watchers) if (w.expiresAtMs !== null && now >= w.expiresAtMs) this.#end(w, 'credential_expired');
    // A slow check is not stacked on by the next tick.
    if (this.#checking || this.#watchers.size === 0) return;
    this.#checking = true;
    // Judged against what was asked: a stream opened during the check waits for the next one.
    const asked = [...this.#watchers];
    try {
      const tokenIds = new Set<number>();
      const sessionIds = new Set<string>();
      for (const { principal: p } of asked) {
        if (p.kind === 'api_token') tokenIds.add(p.apiTokenId);
        else sessionIds.add(p.sessionId);
      }
      const [liveTokens, liveSessions] = await Promise.all([this.#liveApiTokens([...tokenIds]), this.#sessions.liveOf([...sessionIds])]);
      for (const w of asked) {
        const p = w.principal;
        const live = p.kind === 'api_token' ? liveTokens.has(p.apiTokenId) : liveSessions.has(p.sessionId);
        if (!live) this.#end(w, 'credential_revoked');
      }
    } catch (err) {
      if (now - this.#lastWarning >= WARN_EVERY_MS) {
        this.#lastWarning = now;
        this.#logger.warn({ err }, 'could not check the credentials of open event streams; they stay open until a check succeeds');
      }
    } finally {
      this.#checking = false;
    }
  }

  /** Of these API tokens, the ones not revoked (a company removed takes its tokens with it). */
  async #liveApiTokens(ids: number[]): Promise<Set<number>> {
    if (ids.length === 0) return new Set();
    const rows = await this.#orm.em.fork().find(ApiTokenSchema, { id: { $in: ids }, revokedAt: null }, { fields: ['id'], filters: false });
    return new Set(rows.map((row) => row.id));
  }
}
