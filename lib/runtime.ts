import pg from 'pg';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { loadConfig, type Config } from './config.js';
import { localModel } from './knowledge/local-model.js';
import { ensureDatabase, migrate, openDatabase, redactUrl, DatabaseUnavailableError, type Orm } from './db.js';
import { ConfigError } from './errors.js';
import { asyncStdout, createLogger, type Logger } from './logger.js';
import { prettyDestination } from './pretty-log.js';
import { connectNats, type NatsConnection } from './nats.js';
import { installTracing, type InstalledTracing } from './tracing.js';

/**
 * What every entry point (all-in-one, gateway, worker) does before its role starts:
 * configuration, logger, database (created and migrated), NATS; and an orderly stop on
 * SIGTERM / SIGINT. Problems a newcomer can fix end the process with one line saying how.
 */
export interface Runtime {
  config: Config;
  logger: Logger;
  /**
   * The process's ORM, without a statement timeout: migrations, and the message path (the
   * worker's, the gateway's webhooks and webchat). The API opens connections of its own
   * (lib/db.ts, ApiDatabase).
   */
  orm: Orm;
  nc: NatsConnection;
  /** The process's metrics (process figures collected); the roles add theirs. */
  registry: Registry;
  /** Registers a step of the shutdown; steps run in reverse order of registration. */
  onShutdown: (step: () => Promise<void> | void) => void;
}

const HOW_TO_START_POSTGRES = 'start it with `pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start` or `docker compose up -d postgres`, or set DATABASE_URL';
const HOW_TO_START_NATS = 'start it with `nats-server -js` (JetStream on) or `docker compose up -d nats`, or set NATS_URL';
/** Any fixed number works; every process of this service migrates under the same one. */
const MIGRATION_LOCK_ID = 7_364_210;

function die(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

/** Migrations under a PostgreSQL advisory lock, so several processes starting together apply them once. */
async function migrateExclusively(orm: Orm, url: string): Promise<string[]> {
  const lock = new pg.Client({ connectionString: url });
  await lock.connect();
  try {
    await lock.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_ID]);
    return await migrate(orm);
  } finally {
    await lock.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]).catch(() => {});
    await lock.end();
  }
}

export async function startRuntime(role: string): Promise<Runtime> {
  let config: Config;
  const warnings: string[] = [];
  try {
    config = loadConfig(process.env, { warn: (w) => warnings.push(w) });
  } catch (err) {
    if (err instanceof ConfigError) die(`configuration error: ${err.message}`);
    throw err;
  }
  const logger = createLogger(config.logLevel, config.logFormat === 'pretty' ? prettyDestination() : asyncStdout()).child({ role });
  for (const w of warnings) logger.warn(w);
  // Loaded now, off the main thread: the first questions need not wait for it.
  localModel.configure({ enabled: config.embeddings === 'local', logger });
  void localModel.load();
  let tracing: InstalledTracing | undefined;
  if (config.tracing) {
    const { url, headers, serviceName } = config.tracing;
    tracing = installTracing({ serviceName: `${serviceName}-${role}`, url, headers, attributes: { 'service.namespace': config.natsPrefix } });
    logger.info({ endpoint: redactUrl(url) }, 'exporting traces (OTLP/HTTP)');
  }

  let orm: Orm;
  try {
    if (await ensureDatabase(config.databaseUrl)) logger.info({ database: redactUrl(config.databaseUrl) }, 'created the database');
    orm = await openDatabase({ url: config.databaseUrl });
    const applied = await migrateExclusively(orm, config.databaseUrl);
    if (applied.length) logger.info({ applied }, 'applied migrations');
  } catch (err) {
    if (err instanceof DatabaseUnavailableError) die(`${err.message}: ${HOW_TO_START_POSTGRES}`);
    throw err;
  }

  let nc: NatsConnection;
  try {
    nc = await connectNats(config.natsUrl, `mas-${role}-${process.pid}`, logger);
  } catch (err) {
    await orm.close();
    die(`NATS is not reachable at ${config.natsUrl} (${(err as Error).message}): ${HOW_TO_START_NATS}`);
  }

  const steps: (() => Promise<void> | void)[] = [
    // Last of all: the spans of the stop itself are exported too.
    async () => {
      await tracing?.shutdown();
    },
    async () => {
      await orm.close();
    },
    async () => {
      await nc.drain().catch(() => nc.close());
    },
  ];
  let stopping = false;
  /**
   * The orderly stop: steps in reverse order of registration, within SHUTDOWN_TIMEOUT_MS
   * whatever NATS and PostgreSQL do (exit 1 when the deadline cuts it short). Work that did
   * not finish is not half done: each commit is one transaction, and an unacknowledged
   * message is delivered again.
   */
  const stop = async (reason: string, exitCode: number) => {
    if (stopping) {
      if (reason === 'SIGTERM' || reason === 'SIGINT') {
        logger.warn({ signal: reason }, 'second signal: exiting now');
        process.exit(1);
      }
      return;
    }
    stopping = true;
    logger.info({ reason }, 'shutting down');
    setTimeout(() => {
      logger.error({ timeoutMs: config.shutdownTimeoutMs }, 'shutdown did not finish in time: exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs);
    for (const step of [...steps].reverse()) {
      try {
        await step();
      } catch (err) {
        logger.error({ err }, 'shutdown step failed');
      }
    }
    logger.info('stopped');
    await new Promise<void>((resolve) => logger.flush(() => resolve()));
    process.exit(exitCode);
  };
  process.on('SIGTERM', () => void stop('SIGTERM', 0));
  process.on('SIGINT', () => void stop('SIGINT', 0));
  // A failure nothing else caught: log it and stop in order (exit 1) rather than go on in an
  // unknown state or die without releasing leases and connections.
  const fatal = (kind: string) => (err: unknown) => {
    logger.fatal({ err }, `${kind}: stopping`);
    void stop(kind, 1);
  };
  process.on('uncaughtException', fatal('uncaught exception'));
  process.on('unhandledRejection', fatal('unhandled promise rejection'));

  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return { config, logger, orm, nc, registry, onShutdown: (step) => steps.push(step) };
}
