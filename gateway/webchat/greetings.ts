import { query, type SqlPool } from '../../lib/db.js';
import type { Logger } from '../../lib/logger.js';

/** What the widget shows on first open when the integration's agent has no greeting of its own (web/widget/widget.js has the same text). */
export const DEFAULT_WIDGET_GREETING = 'Hi! How can we help you today?';

const GREETING_SQL = 'select a.greeting from integrations i left join agents a on a.id = i.agent_id where i.id = $1';

export interface GreetingsOptions {
  /** How long a greeting is kept: an edit of the agent shows within it. Default 10 s. */
  ttlMs?: number;
  /** Bound on entries (only integrations that answered an upgrade get here). Default 10,000. */
  maxEntries?: number;
  now?: () => number;
}

/**
 * The `greeting` of a webchat integration's `welcome`: its agent's `greeting`, else the
 * default. Looked up at most once per integration per ttlMs, the hellos that come meanwhile
 * sharing the lookup in flight: a crowd of visitors costs one statement, and a message none.
 * A failed lookup answers the default and is not kept (a greeting is not worth failing a
 * hello for; the next hello asks again).
 */
export class Greetings {
  readonly #sql: SqlPool;
  readonly #logger: Logger;
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;
  readonly #entries = new Map<number, { expiresAt: number; value: string | Promise<string> }>();

  constructor(sql: SqlPool, logger: Logger, options: GreetingsOptions = {}) {
    this.#sql = sql;
    this.#logger = logger;
    this.#ttlMs = options.ttlMs ?? 10_000;
    this.#maxEntries = options.maxEntries ?? 10_000;
    this.#now = options.now ?? Date.now;
  }

  /** Never rejects. */
  get(integrationId: number): string | Promise<string> {
    const entry = this.#entries.get(integrationId);
    if (entry && entry.expiresAt > this.#now()) return entry.value;
    const loaded = { expiresAt: Number.POSITIVE_INFINITY, value: '' as string | Promise<string> };
    loaded.value = query<{ greeting: string | null }>(this.#sql, 'webchat_greeting', GREETING_SQL, [integrationId]).then(
      (rows) => {
        const greeting = rows[0]?.greeting?.trim() || DEFAULT_WIDGET_GREETING;
        if (this.#entries.get(integrationId) === loaded) Object.assign(loaded, { value: greeting, expiresAt: this.#now() + this.#ttlMs });
        return greeting;
      },
      (err: unknown) => {
        if (this.#entries.get(integrationId) === loaded) this.#entries.delete(integrationId);
        this.#logger.warn({ err, integrationId }, 'webchat: could not read the greeting; the default goes out');
        return DEFAULT_WIDGET_GREETING;
      },
    );
    this.#entries.delete(integrationId);
    if (this.#entries.size >= this.#maxEntries) this.#entries.delete(this.#entries.keys().next().value!);
    this.#entries.set(integrationId, loaded);
    return loaded.value;
  }
}
