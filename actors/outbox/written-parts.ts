import pg from 'pg';
import type { Logger } from '../../lib/logger.js';

/**
 * `outbox.written_parts`: how many parts of a reply had their request handed to the network,
 * for channels that keep no history to reconcile an uncertain send against (WhatsApp,
 * Telegram). A part whose request left may have been delivered; a send found uncertain after
 * a crash goes on after it, never sending it twice.
 *
 * The mark must reach PostgreSQL even when the worker is killed the next instant, so it is
 * written in the same turn of the event loop as the request (lib/outbound-http.ts onWritten),
 * on a connection that is idle at that moment: node-postgres writes a query to an idle
 * connection synchronously (a prepared one's Bind, Execute and Sync in one write), and
 * PostgreSQL carries out and commits a statement it received whole, Sync included, from a
 * client that has since gone. A send
 * therefore reserves an idle connection (`reserve`) before its request starts, and waits for
 * one when all are busy: a mark never waits behind another statement (one that did, under a
 * burst of sends, was lost with the worker while its request had left: the reply went out
 * twice). A mark is fenced by the row's lease epoch like every other outbox write. Its commit
 * does not wait for the disk: it guards against the worker dying, not PostgreSQL.
 */
export const DEFAULT_MARK_CONNECTIONS = 8;

/** An idle connection held for one mark. */
export interface MarkSlot {
  /** Writes the mark now (synchronously on the wire), then frees the slot; resolves once committed. */
  mark(outboxId: string, leaseRev: string, parts: number): Promise<void>;
  /** Frees the slot unused (the request never left). */
  release(): void;
}

const MARK_SQL = `update outbox set written_parts = $1 where id = $2 and status = 'sending' and lease_rev = $3`;

export class WrittenParts {
  readonly #url: string;
  readonly #logger: Logger;
  readonly #size: number;
  readonly #idle: pg.Client[] = [];
  #open = 0;
  #opening = 0;
  readonly #waiting: { resolve: (client: pg.Client) => void; reject: (err: Error) => void }[] = [];
  #closed = false;

  constructor(databaseUrl: string, logger: Logger, size = DEFAULT_MARK_CONNECTIONS) {
    this.#url = databaseUrl;
    this.#logger = logger;
    this.#size = size;
  }

  /** An idle connection for one mark: at once when one is free, else the first one freed. */
  async reserve(): Promise<MarkSlot> {
    const client = this.#idle.pop() ?? (await this.#next());
    let used = false;
    return {
      mark: (outboxId, leaseRev, parts) => {
        if (used) return Promise.reject(new Error('a mark slot marks once'));
        used = true;
        return this.#mark(client, outboxId, leaseRev, parts);
      },
      release: () => {
        if (used) return;
        used = true;
        this.#free(client);
      },
    };
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const w of this.#waiting.splice(0)) w.reject(new Error('closed'));
    const idle = this.#idle.splice(0);
    await Promise.all(idle.map((c) => c.end().catch(() => {})));
  }

  #mark(client: pg.Client, outboxId: string, leaseRev: string, parts: number): Promise<void> {
    // A prepared statement (parsed once per connection): its Bind, Execute and Sync go out in one write, committed on its own.
    const sent = client.query({ name: 'outbox_written_parts', text: MARK_SQL, values: [parts, outboxId, leaseRev] });
    return sent.then(
      () => this.#free(client),
      (err: unknown) => {
        this.#drop(client);
        this.#logger.warn({ err, outboxId }, 'outbox: could not record which parts of a reply had left');
        throw err;
      },
    );
  }

  #free(client: pg.Client): void {
    if (this.#closed) return void client.end().catch(() => {});
    const waiter = this.#waiting.shift();
    if (waiter) waiter.resolve(client);
    else this.#idle.push(client);
  }

  #drop(client: pg.Client): void {
    this.#open--;
    void client.end().catch(() => {});
    // Someone waiting gets a new connection in its place.
    if (this.#waiting.length > 0) this.#connect();
  }

  /** Waits for a freed connection, opening another while the pool is not full. */
  #next(): Promise<pg.Client> {
    if (this.#closed) return Promise.reject(new Error('closed'));
    const got = new Promise<pg.Client>((resolve, reject) => this.#waiting.push({ resolve, reject }));
    if (this.#open + this.#opening < this.#size) this.#connect();
    return got;
  }

  #connect(): void {
    this.#opening++;
    const client = new pg.Client({ connectionString: this.#url, options: '-c synchronous_commit=off' });
    client.on('error', (err) => this.#logger.warn({ err }, 'outbox: a written-parts connection failed'));
    client.connect().then(
      () => {
        this.#opening--;
        this.#open++;
        this.#free(client);
      },
      (err: unknown) => {
        this.#opening--;
        this.#logger.warn({ err }, 'outbox: could not open a written-parts connection');
        void client.end().catch(() => {});
        // Tried again by the next send that needs one; the ones waiting now try once more shortly.
        if (this.#waiting.length > 0 && !this.#closed) setTimeout(() => this.#connect(), 500).unref();
      },
    );
  }
}
