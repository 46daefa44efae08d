import { query, type SqlPool } from '../../lib/db.js';
import { expiringLookups, type ExpiringLookups } from '../../lib/expiring-lookups.js';
import type { Logger } from '../../lib/logger.js';

/** What the widget shows on first open when the integration's agent has no greeting of its own (web/widget/widget.js has the same text). */
export const DEFAULT_WIDGET_GREETING = 'Hi! How can we help you today?';

const GREETING_SQL = 'select a.greeting from integrations i left join agents a on a.id = i.agent_id where i.id = $1';

export interface GreetingsOptions {
  /** How long a greeting is kept when no change notice comes (the webchat server drops them all on one). Default 10 s. */
  ttlMs?: number;
  /** Bound on entries (only integrations that answered an upgrade get here). Default 10,000. */
  maxEntries?: number;
  now?: () => number;
}

/**
 * The `greeting` of a webchat integration's `welcome`: its agent's `greeting`, else the
 * default. Looked up at most once per integration per ttlMs, the hellos that come meanwhile
 * sharing the lookup in flight (lib/expiring-lookups.ts): a crowd of visitors costs one
 * statement, and a message none. A failed lookup answers the default and is not kept (a
 * greeting is not worth failing a hello for; the next hello asks again).
 */
export class Greetings {
  readonly #sql: SqlPool;
  readonly #logger: Logger;
  readonly #lookup: ExpiringLookups<number, string>;

  constructor(sql: SqlPool, logger: Logger, options: GreetingsOptions = {}) {
    this.#sql = sql;
    this.#logger = logger;
    this.#lookup = expiringLookups(options.ttlMs ?? 10_000, options.maxEntries ?? 10_000, options.now ?? Date.now);
  }

  /** An agent changed (its greeting, perhaps): the next hello of every integration reads it again. */
  forgetAll(): void {
    this.#lookup.forget();
  }

  /** Never rejects. */
  get(integrationId: number): Promise<string> {
    return this.#lookup(integrationId, async () => {
      const rows = await query<{ greeting: string | null }>(this.#sql, 'webchat_greeting', GREETING_SQL, [integrationId]);
      return rows[0]?.greeting?.trim() || DEFAULT_WIDGET_GREETING;
    }).catch((err: unknown) => {
      this.#logger.warn({ err, integrationId }, 'webchat: could not read the greeting; the default goes out');
      return DEFAULT_WIDGET_GREETING;
    });
  }
}
