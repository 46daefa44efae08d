import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { Logger } from './logger.js';

export type { NatsConnection };

/**
 * Connects to NATS; the first attempt fails fast (so a process can say NATS is down), after
 * that it reconnects forever: an outage makes publishes fail fast (the gateway answers 503)
 * but never needs a process restart.
 */
export async function connectNats(url: string, name: string, logger?: Logger): Promise<NatsConnection> {
  const nc = await connect({
    servers: url,
    name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    timeout: 5000,
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
export async function pingNats(nc: NatsConnection, timeoutMs = 2000): Promise<boolean> {
  if (nc.isClosed()) return false;
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      nc.rtt(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), timeoutMs);
      }),
    ]);
    return true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}
