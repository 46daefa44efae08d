import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { jetstream } from '@nats-io/jetstream';
import type { Config } from '../lib/config.js';
import { openSqlPool, type Orm } from '../lib/db.js';
import type { Logger } from '../lib/logger.js';
import type { NatsConnection } from '../lib/nats.js';
import { ensureStreams, streamNames } from '../lib/streams.js';
import { SecretBox } from '../lib/secrets.js';
import { createAgentRunner, type AgentRunnerOptions } from './agents/runner.js';
import type { AgentRunner } from './agents/types.js';
import { ensurePartitionConsumer, PartitionConsumer, type ConsumerOptions } from './consumers.js';
import { OutboxDispatcher, type DispatcherOptions } from './dispatcher.js';
import { ConversationHost, type HostOptions } from './host.js';
import { PartitionLeases, type LeaseOptions } from './partitions.js';

export interface WorkerOptions {
  lease?: LeaseOptions;
  consumer?: ConsumerOptions;
  dispatcher?: DispatcherOptions;
  host?: HostOptions;
  /** Timeouts, retries, caching and prompt budget of the default agent runner. */
  agentRunner?: AgentRunnerOptions;
}

export interface WorkerDeps {
  config: Config;
  orm: Orm;
  nc: NatsConnection;
  logger: Logger;
  /** The agent answering customer messages; default: the per-agent runner (builtin or OpenAI-compatible model). */
  agent?: AgentRunner;
  /** Unique per process; default derived from host name, pid and randomness. */
  workerId?: string;
  options?: WorkerOptions;
}

export interface RunningWorker {
  workerId: string;
  /** Partitions this worker consumes now. */
  ownedPartitions: () => number[];
  /** Conversations with work in memory (idle ones are evicted). */
  activeConversations: () => number;
  /** Stops fetching, finishes (bounded) in-flight work, releases its leases. */
  close: () => Promise<void>;
}

/**
 * The worker role: claims partitions (actors/partitions.ts), consumes their durable
 * consumers (actors/consumers.ts), applies envelopes to conversation machines
 * (actors/host.ts) and sends the outbox (actors/dispatcher.ts).
 */
export async function startWorker(deps: WorkerDeps): Promise<RunningWorker> {
  const { config, orm, nc } = deps;
  const workerId = (deps.workerId ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`).replace(/[^A-Za-z0-9_-]/g, '_');
  const logger = deps.logger.child({ worker: workerId });
  const names = streamNames(config.natsPrefix);
  const jsm = await ensureStreams(nc, names);
  const js = jetstream(nc);
  const options = deps.options ?? {};
  // The hot path's own connections (group commits, outbox), besides the ORM's pool.
  const sql = openSqlPool({ url: config.databaseUrl });
  const agent = deps.agent ?? createAgentRunner({ orm, sql, secrets: new SecretBox(config.secretsKeys), logger }, options.agentRunner);

  const consumers = new Map<number, PartitionConsumer>();
  let leases: PartitionLeases;
  const dispatcher = new OutboxDispatcher({ sql, nc, names, config, logger, owned: () => leases.owned() }, options.dispatcher);
  const host = new ConversationHost({ sql, nc, names, partitions: config.partitions, logger, agent, outbox: dispatcher }, options.host);
  leases = new PartitionLeases(
    nc,
    names,
    config.partitions,
    workerId,
    logger,
    {
      acquire: async (p) => {
        await ensurePartitionConsumer(jsm, names, p, options.consumer);
        const consumer = new PartitionConsumer({ js, names, host, logger }, p, options.consumer);
        consumers.set(p, consumer);
        consumer.start();
        dispatcher.kick();
      },
      release: async (p) => {
        const consumer = consumers.get(p);
        consumers.delete(p);
        await consumer?.stop();
      },
    },
    options.lease,
  );
  try {
    await leases.start();
  } catch (err) {
    await sql.end();
    throw err;
  }
  dispatcher.start();
  logger.info({ partitions: leases.owned() }, 'worker started');

  let closing: Promise<void> | null = null;
  return {
    workerId,
    ownedPartitions: () => leases.owned(),
    activeConversations: () => host.lanes,
    close: () =>
      (closing ??= (async () => {
        await leases.close();
        await dispatcher.close();
        host.close();
        await sql.end();
        logger.info('worker stopped');
      })()),
  };
}
