import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { jetstream } from '@nats-io/jetstream';
import { Registry } from 'prom-client';
import { guardForUrl } from '../lib/address-guard.js';
import type { Config } from '../lib/config.js';
import { McpConnections } from '../lib/agents/tools/mcp-client.js';
import { openSqlPool, type Orm } from '../lib/db.js';
import type { Logger } from '../lib/logger.js';
import type { NatsConnection } from '../lib/nats.js';
import { inboundPublisher } from '../lib/inbound.js';
import { ensureStreams, streamNames } from '../lib/streams.js';
import { SecretBox } from '../lib/secrets.js';
import { sweepExpiredReservations } from '../lib/credit.js';
import { VectorIndex } from '../lib/knowledge/vectors.js';
import { AcceptedSweeper, type AcceptedSweeperOptions } from './accepted-sweeper.js';
import { AutoResolveSweeper, type AutoResolveOptions } from './auto-resolve.js';
import { listenForChanges } from './agents/change-notices.js';
import { createAgentRunner, type AgentRunnerOptions } from './agents/runner.js';
import type { AgentRunner } from './agents/types.js';
import { CreditGate } from './credit-gate.js';
import { ensurePartitionConsumer, Intake, INTAKE_PER_MODEL_CALL, PartitionConsumer, type ConsumerOptions } from './consumers.js';
import { OutboxSender, type SenderOptions } from './outbox/sender.js';
import { ConversationHost, type HostOptions } from './host.js';
import { registerWorkerMetrics, type WorkerMetrics } from './metrics.js';
import { PartitionLeases, type LeaseOptions } from './partitions.js';
import { ReplayRunner, type ReplayRunnerOptions } from './replays/runner.js';

export interface WorkerOptions {
  lease?: LeaseOptions;
  consumer?: ConsumerOptions;
  outbox?: SenderOptions;
  host?: HostOptions;
  /** Timeouts, retries, caching and prompt budget of the default agent runner. */
  agentRunner?: AgentRunnerOptions;
  /** What answers customer messages, made from the default agent runner (tests stand in for some of its answers); default: that runner. */
  agentRunnerFrom?: (runner: AgentRunner) => AgentRunner;
  /** How often expired credit reservations (of calls whose process died) are released. */
  reservationSweepMs?: number;
  /** How often replays are looked for, their leases, how many one worker answers at once (actors/replays/runner.ts). */
  replay?: ReplayRunnerOptions;
  /** How the webhooks accepted for the owned partitions are checked for having been taken (actors/accepted-sweeper.ts). */
  accepted?: AcceptedSweeperOptions;
  /** How often the owned partitions' sessions whose customer stayed silent after the agent's answer are closed (actors/auto-resolve.ts). */
  autoResolve?: AutoResolveOptions;
}

export const DEFAULT_RESERVATION_SWEEP_MS = 30_000;
const LEASE_STATEMENT_TIMEOUT_MS = 3_000;

export interface WorkerDeps {
  config: Config;
  orm: Orm;
  nc: NatsConnection;
  logger: Logger;
  /** Unique per process; default derived from host name, pid and randomness. */
  workerId?: string;
  /** Where the worker's figures go (the process's registry, lib/runtime.ts); default: its own. */
  registry?: Registry;
  options?: WorkerOptions;
  /** The clock of debounce deadlines and business hours (default Date.now; tests inject one). */
  now?: () => number;
}

export interface RunningWorker {
  workerId: string;
  /** Partitions this worker consumes now. */
  ownedPartitions: () => number[];
  /** Conversations with work in memory (idle ones are evicted). */
  activeConversations: () => number;
  /** Model calls in flight and waiting for a place, and the most in flight at once so far. */
  modelCalls: () => { running: number; waiting: number; peak: number };
  /** The worker's figures (actors/metrics.ts). */
  registry: Registry;
  /** Stops fetching, finishes (bounded) in-flight work, releases its leases. */
  close: () => Promise<void>;
}

/**
 * The worker role: claims partitions (actors/partitions.ts), consumes their durable
 * consumers (actors/consumers.ts), applies envelopes to conversation machines
 * (actors/host.ts) and sends the outbox (actors/outbox/sender.ts).
 */
export async function startWorker(deps: WorkerDeps): Promise<RunningWorker> {
  const { config, orm, nc } = deps;
  const workerId = (deps.workerId ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`).replace(/[^A-Za-z0-9_-]/g, '_');
  const logger = deps.logger.child({ worker: workerId });
  const names = streamNames(config.natsPrefix);
  const jsm = await ensureStreams(nc, names, { replicas: config.natsReplicas });
  const js = jetstream(nc);
  const options = deps.options ?? {};
  // The hot path's own connections (group commits, outbox), besides the ORM's pool. All of the
  // worker's connections are the message path's: no API request ever uses them, and they carry
  // no statement timeout (lib/db.ts, ApiDatabase).
  const sql = openSqlPool({ url: config.databaseUrl });
  // Model calls' attempt counts and credit reservations (group-committed): their commits need
  // not wait for the disk, which a company's row (each reservation batch updates it) would
  // otherwise be locked for. Lost in a crash of PostgreSQL itself (never of a worker), they
  // cost at most one more model call per message, or a reservation whose call then settles
  // nothing.
  const quick = openSqlPool({ url: config.databaseUrl, poolMax: 5, synchronousCommit: false });
  const credit = new CreditGate(quick);
  // The replays' own few connections: their statements never wait for a connection of the message path's, nor it for theirs.
  const replaySql = openSqlPool({ url: config.databaseUrl, poolMax: 4 });
  // The leases' own connection: a renewal never waits for one of the message path's (a
  // saturated pool would cost partitions); a statement stuck longer than a lease is pointless.
  const leaseSql = openSqlPool({ url: config.databaseUrl, poolMax: 2, statementTimeoutMs: LEASE_STATEMENT_TIMEOUT_MS });
  // Bound once the host exists (the figures read it); a call cannot settle before.
  let metrics: WorkerMetrics | undefined;
  const observeModelCall: WorkerMetrics['observeModelCall'] = (seconds, outcome) => metrics?.observeModelCall(seconds, outcome);
  // The companies' MCP servers: one client per server, reused by this worker's answers, closed with it.
  const mcp = new McpConnections({ guardFor: (url) => guardForUrl(config, url) });
  const secrets = new SecretBox(config.secretsKeys);
  // Chunk vectors in memory: one copy for the customers' answers and the replays'.
  const vectors = new VectorIndex();
  const runner = createAgentRunner({ orm, sql, secrets, config, logger, credit, observeModelCall, mcp, ledgerSql: quick, vectors }, options.agentRunner);
  const agent = options.agentRunnerFrom ? options.agentRunnerFrom(runner) : runner;
  // A change saved through the API is used from the next customer message on: its notice drops the cached config.
  const stopListening = listenForChanges(nc, names, runner, logger);
  // Everything the worker takes in, all partitions together (actors/consumers.ts).
  const intake = new Intake(options.consumer?.intake ?? INTAKE_PER_MODEL_CALL * (options.host?.maxModelCalls ?? config.model.maxConcurrency));
  const consumerOptions: ConsumerOptions = { ...options.consumer, maxAckPending: options.consumer?.maxAckPending ?? intake.max };

  const consumers = new Map<number, PartitionConsumer>();
  // Leases are renewed only while NATS answers: a worker cut off from it lets its partitions go.
  let natsAway = false;
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect') natsAway = true;
      else if (s.type === 'reconnect') natsAway = false;
    }
  })().catch(() => {});
  // The handlers run from `leases.start()` on, when the host and the outbox sender exist.
  let host: ConversationHost;
  let outbox: OutboxSender;
  const leases = new PartitionLeases(
    leaseSql,
    config.partitions,
    workerId,
    logger,
    {
      acquire: async (p) => {
        await ensurePartitionConsumer(jsm, names, p, consumerOptions);
        const recover = async () => {
          // Only its owner makes it again (a worker losing the partition is about to stop consuming it).
          if (leases.epochOf(p) === null) return;
          await ensureStreams(nc, names, { replicas: config.natsReplicas });
          await ensurePartitionConsumer(jsm, names, p, consumerOptions);
        };
        const consumer = new PartitionConsumer({ js, names, host, logger, intake, recover, nc }, p, consumerOptions);
        consumers.set(p, consumer);
        consumer.start();
        // The previous owner's uncertain sends are reconciled at once, not after a claim expires.
        outbox.kick();
        // Its conversations' debounce deadlines (the previous owner's timers died with it).
        void host.acquirePartition(p);
      },
      // Intake stops, in-flight envelopes finish (bounded), then the partition's sends under
      // way: only then is the lease given up, so its next owner never reconciles a send that
      // is still on its way.
      release: async (p) => {
        const consumer = consumers.get(p);
        consumers.delete(p);
        await consumer?.stop();
        host.releasePartition(p);
        await outbox.drainPartition(p);
      },
    },
    { canWork: () => !natsAway && !nc.isClosed(), ...options.lease },
  );
  const publisher = inboundPublisher(nc, { names, partitions: config.partitions, timeoutMs: config.publishTimeoutMs, js });
  outbox = new OutboxSender({ sql, nc, names, config, logger, leases, publisher }, options.outbox);
  host = new ConversationHost(
    { sql, quickSql: quick, nc, names, partitions: config.partitions, logger, agent, credit, outbox, publisher, leases, now: deps.now },
    { maxModelCalls: config.model.maxConcurrency, ...options.host },
  );
  // Past customer messages answered again (contract.md § Replay before publishing), in the model call places customers leave free.
  const replays = new ReplayRunner(
    {
      workerId, orm, sql: replaySql, secrets, config, logger, modelSlots: host.slots, vectors, mcp, model: options.agentRunner?.model,
      onItem: (outcome) => metrics?.countReplayItem(outcome),
    },
    options.replay,
  );
  // What the gateways accepted for our partitions and no worker took (JetStream lost it) is published again.
  const accepted = new AcceptedSweeper(
    {
      sql, jsm, names, publisher, leases, logger,
      inFlight: (p, integrationId, key) => consumers.get(p)?.has(integrationId, key) ?? false,
      // Its consumer's fetch then fails, and it reads the new consumer (actors/consumers.ts).
      reoffer: async (p) => {
        if (leases.epochOf(p) !== null) await ensurePartitionConsumer(jsm, names, p, consumerOptions);
      },
      apply: (p, env) => (leases.epochOf(p) === null ? Promise.resolve('nak') : host.submit(p, env)),
    },
    options.accepted,
  );
  // Sessions the agent answered last and whose customer stayed silent close, resolved, through their machines.
  const autoResolve = new AutoResolveSweeper({ sql, publisher, leases, logger }, options.autoResolve);
  const registry = deps.registry ?? new Registry();
  metrics = registerWorkerMetrics(registry, {
    jsm, names, sql, logger,
    ownedPartitions: () => leases.owned(),
    modelCalls: () => host.modelCalls,
    conversationsInMemory: () => host.lanes,
  });
  try {
    await leases.start();
  } catch (err) {
    stopListening();
    await mcp.close();
    await sql.end();
    await quick.end();
    await replaySql.end();
    await leaseSql.end();
    throw err;
  }
  outbox.start();
  replays.start();
  accepted.start();
  autoResolve.start();
  // Reservations of model calls whose process died hold credit until they expire; then any worker releases them.
  const sweep = async () => {
    try {
      const n = await sweepExpiredReservations(sql);
      if (n > 0) logger.info({ released: n }, 'worker: released expired credit reservations');
    } catch (err) {
      logger.warn({ err }, 'worker: could not sweep expired credit reservations');
    }
  };
  void sweep();
  const sweeper = setInterval(() => void sweep(), options.reservationSweepMs ?? DEFAULT_RESERVATION_SWEEP_MS);
  sweeper.unref();
  logger.info({ partitions: leases.owned(), modelMaxConcurrency: config.model.maxConcurrency, intake: intake.max }, 'worker started');

  let closing: Promise<void> | null = null;
  return {
    workerId,
    ownedPartitions: () => leases.owned(),
    activeConversations: () => host.lanes,
    modelCalls: () => host.modelCalls,
    registry,
    close: () =>
      (closing ??= (async () => {
        clearInterval(sweeper);
        stopListening();
        await accepted.close();
        await autoResolve.close();
        // Replays under way stop (their model calls aborted); another worker resumes them when their leases run out.
        await replays.close();
        // Partition by partition: intake stops, work in flight and its sends finish, the lease goes.
        await leases.close();
        await outbox.close();
        host.close();
        await mcp.close();
        await sql.end();
        await quick.end();
        await replaySql.end();
        await leaseSql.end();
        logger.info('worker stopped');
      })()),
  };
}
