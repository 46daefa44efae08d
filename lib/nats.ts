import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { Logger } from './logger.js';
import { succeedsWithin } from './deadline.js';

export type { NatsConnection };

/**
 * Older servers lose acknowledged messages: 2.9.x resets a stream's cluster state after a
 * leader is killed, 2.10.20–2.10.22 could lose whole streams on a process crash (field notes).
 */
export const MIN_SAFE_NATS_SERVER = '2.10.23';

/** True when a server's version (`2.9.10`, `2.10.27-RC.1`) is older than MIN_SAFE_NATS_SERVER. */
export function isUnsafeNatsServer(version: string): boolean {
  const [a, b] = [version, MIN_SAFE_NATS_SERVER].map((v) => v.split(/[.-]/, 3).map((n) => Number.parseInt(n, 10) || 0));
  for (let i = 0; i < 3; i++) if (a![i] !== b![i]) return a![i]! < b![i]!;
  return false;
}

/**
 * Connects to NATS; the first attempt fails fast (so a process can say NATS is down), after
 * that it reconnects forever: an outage makes publishes fail fast (the gateway answers 503)
 * but never needs a process restart.
 */
export async function connectNats(url: string | readonly string[], name: string, logger?: Logger): Promise<NatsConnection> {
  const nc = await connect({
    // A cluster's servers (NATS_URL is a comma-separated list): the client moves between them.
    servers: typeof url === 'string' ? url.split(',').map((u) => u.trim()) : [...url],
    name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    timeout: 5000,
    // Without it the client builds a stack-capturing Error per request "just in case"
    // (about 14% of the gateway's CPU per webhook in the bench's profiles).
    noAsyncTraces: true,
  });
  if (logger) {
    const version = nc.info?.version;
    if (version && isUnsafeNatsServer(version)) {
      logger.warn({ natsServer: version, minimum: MIN_SAFE_NATS_SERVER }, `nats-server ${version} is older than ${MIN_SAFE_NATS_SERVER}: it can lose acknowledged messages when a node fails or restarts (the service republishes what it accepted, but upgrade the server)`);
    }
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === 'disconnect' || s.type === 'reconnect') logger.warn({ nats: s.type }, `NATS ${s.type}`);
      }
    })();
  }
  return nc;
}

/** True when the server answers a round trip within the deadline. */
export function pingNats(nc: NatsConnection, timeoutMs = 2000): Promise<boolean> {
  if (nc.isClosed()) return Promise.resolve(false);
  return succeedsWithin(() => nc.rtt(), timeoutMs);
}

/** How often one connection is moved at most. */
const MOVE_EVERY_MS = 5_000;
const movedAt = new WeakMap<NatsConnection, number>();

/**
 * True when `err` (or what caused it) is the server saying JetStream is not enabled here. (Not
 * nats.js's own "jetstream is not enabled", which it also throws for a publish nobody answered,
 * as during a stream-leader election: moving then would only add reconnects to the election.)
 */
export function isJetStreamDisabled(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof JetStreamApiError && e.code === JetStreamApiCodes.JetStreamNotEnabledForAccount) return true;
  }
  return false;
}

/**
 * A node that disabled its JetStream (nats-server 2.9 does after a "critical write error")
 * keeps its clients connected, and each of their JetStream calls fails there for as long as
 * they stay: when `err` says so, this connection moves to another server of its cluster
 * (at most every 5 s). Returns whether it did.
 */
export function leaveServerWithoutJetStream(nc: NatsConnection, err: unknown, logger?: Logger): boolean {
  if (!isJetStreamDisabled(err) || nc.isClosed() || nc.getServers().length < 2) return false;
  const now = Date.now();
  if (now - (movedAt.get(nc) ?? 0) < MOVE_EVERY_MS) return true;
  movedAt.set(nc, now);
  logger?.warn({ server: nc.getServer() }, 'this NATS server has no JetStream now; moving to another server of the cluster');
  void nc.reconnect().catch(() => {});
  return true;
}
