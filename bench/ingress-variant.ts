import { connect } from '@nats-io/transport-node';
import { startGateway } from '../gateway/server.js';
import { loadConfig } from '../lib/config.js';
import { openDatabase } from '../lib/db.js';
import { createLogger } from '../lib/logger.js';

/**
 * Experiment for the ingress report (`--experiments`): the gateway exactly as
 * gateway/main.ts starts it (gateway/server.ts startGateway, same config from the
 * environment), except that its NATS connection is opened with the client's
 * `noAsyncTraces: true`. With the default, @nats-io/nats-core creates a RequestError and a
 * TimeoutError (an Error with a captured stack each) for every JetStream publish, only to
 * have a caller's stack should that publish time out. The proposed change is one option in
 * lib/nats.ts connectNats. Compared with bench/floor-server.ts run with NO_ASYNC_TRACES=1
 * (the same client setting on both sides). Not a product server.
 *
 * Env: as the gateway child (DATABASE_URL, NATS_URL, NATS_PREFIX, SECRETS_KEY, PORT, ...).
 */
const config = loadConfig(process.env);
const logger = createLogger(config.logLevel).child({ role: 'gateway-variant' });
const orm = await openDatabase({ url: config.databaseUrl });
const nc = await connect({ servers: config.natsUrl, name: `bench-variant-${process.pid}`, maxReconnectAttempts: -1, reconnectTimeWait: 500, timeout: 5000, noAsyncTraces: true });
const gateway = await startGateway({ config, orm, nc, logger }, { port: config.port, host: config.host });
process.stdout.write(`${JSON.stringify({ msg: 'variant listening', url: gateway.url })}\n`);

const stop = () => {
  void gateway
    .close()
    .then(() => nc.drain())
    .then(() => orm.close())
    .finally(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
