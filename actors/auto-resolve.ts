import { query, type SqlPool } from '../lib/db.js';
import type { InboundPublisher } from '../lib/inbound.js';
import type { Logger } from '../lib/logger.js';
import { RepeatingTask } from '../lib/repeating-task.js';
import type { InboundEnvelope } from '../schema/envelope.js';

/**
 * Auto-resolve (contract.md § The first hour; lib/agents/auto-resolve.ts): every `everyMs` the
 * owner of partitions looks, in ONE statement, for the active sessions of those partitions
 * whose last message is the agent's answer and older than their agent's autoResolveMinutes
 * (partial index of migration 0032). Each is closed THROUGH ITS MACHINE: an `auto_resolve`
 * command is published to the conversation's partition, so the worker that owns it then
 * applies it in turn with the customer's messages (actors/steps.ts). A customer message
 * that reached the stream first wins: the answer is then no longer the last message and the
 * command is ignored. A session that is paused (handed over, transferred, an operator's) is
 * not `active`, and one the agent is answering or collecting for is not `active.idle`: the
 * machine does not close either.
 *
 * Fencing: nothing is written here. A sweep of a partition this worker is losing publishes
 * commands its next owner applies (or ignores) like any other; two sweeps of one session
 * publish the same message id (the answer's time names it), which JetStream and the
 * receipts take once.
 */
export interface AutoResolveOptions {
  /** How often the owned partitions are looked at. */
  everyMs?: number;
  /** Sessions closed per look, at most (the oldest answers first; the rest at the next look). */
  batch?: number;
}

export const DEFAULT_AUTO_RESOLVE_EVERY_MS = 60_000;
const DEFAULT_BATCH = 500;

export interface AutoResolveDeps {
  sql: SqlPool;
  publisher: InboundPublisher;
  leases: { owned(): number[] };
  logger: Logger;
}

interface Due {
  id: number;
  company_id: number;
  integration_id: number;
  channel: InboundEnvelope['channel'];
  client_id: string;
  answered_at: Date;
  idle_minutes: number;
}

/**
 * $1 the owned partitions, $2 how many. `last_message_at < now() - 1 minute` is the shortest
 * setting's bound, so the index's range scan stops at the recent answers whatever the agents say.
 */
const DUE_SQL = `
  select c.id, c.company_id, c.integration_id, c.channel, c.client_id, c.last_message_at as answered_at, a.auto_resolve_minutes as idle_minutes
  from conversations c
  join integrations i on i.id = c.integration_id
  join agents a on a.id = i.agent_id
  where c.partition = any($1::int[]) and c.status = 'active' and c.last_message_role = 'agent'
    and c.last_message_at < now() - interval '1 minute'
    and a.auto_resolve_minutes > 0 and c.last_message_at < now() - make_interval(mins => a.auto_resolve_minutes)
  order by c.last_message_at
  limit $2`;

export class AutoResolveSweeper {
  readonly #deps: AutoResolveDeps;
  readonly #o: Required<AutoResolveOptions>;
  readonly #task: RepeatingTask;

  constructor(deps: AutoResolveDeps, options: AutoResolveOptions = {}) {
    this.#deps = deps;
    this.#o = { everyMs: options.everyMs ?? DEFAULT_AUTO_RESOLVE_EVERY_MS, batch: options.batch ?? DEFAULT_BATCH };
    this.#task = new RepeatingTask(this.#o.everyMs, () => this.sweep(), (err) => deps.logger.warn({ err }, 'auto-resolve sweep failed'));
  }

  start(): void {
    this.#task.start();
  }

  close(): Promise<void> {
    return this.#task.close();
  }

  /** One look at the owned partitions; resolves with how many close commands were published. */
  async sweep(): Promise<number> {
    const owned = this.#deps.leases.owned();
    if (owned.length === 0) return 0;
    const due = await query<Due>(this.#deps.sql, 'auto_resolve_due', DUE_SQL, [owned, this.#o.batch]);
    let published = 0;
    for (const row of due) {
      if (this.#task.closed) break;
      try {
        await this.#deps.publisher.publish(commandOf(row));
        published++;
      } catch (err) {
        // Looked at again at the next sweep (it is still due then).
        this.#deps.logger.warn({ err, conversationId: row.id }, 'could not publish an auto-resolve command');
      }
    }
    if (published > 0) this.#deps.logger.info({ published }, 'auto-resolve: closing sessions whose customer stayed silent after the agent answered');
    return published;
  }
}

function commandOf(row: Due): InboundEnvelope {
  const answeredAt = new Date(row.answered_at).toISOString();
  return {
    v: 1,
    kind: 'operator',
    // One per answer: a second sweep before it is applied is a duplicate, a later answer a new command.
    idempotencyKey: `auto-resolve:${row.id}:${answeredAt}`,
    companyId: row.company_id,
    integrationId: row.integration_id,
    channel: row.channel,
    receivedAt: new Date().toISOString(),
    conversationId: row.id,
    clientId: row.client_id,
    command: { action: 'auto_resolve', by: null, answeredAt, idleMinutes: row.idle_minutes },
  };
}
