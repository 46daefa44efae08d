import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { Logger } from './logger.js';
import { succeedsWithin } from './deadline.js';

export type { NatsConnection };

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
