import { jetstreamManager } from '@nats-io/jetstream';
import { connectNats } from '../lib/nats.js';

/**
 * Deletes everything the service made in NATS under one prefix: its streams (with their
 * consumers) and its KV buckets (the workers' leases). For the tests' private prefixes and the
 * demo's, which starts afresh each time. A NATS that does not answer is left alone.
 */
export async function removeNatsPrefix(natsUrl: string, prefix: string): Promise<void> {
  const nc = await connectNats(natsUrl, 'remove-prefix').catch(() => null);
  if (!nc) return;
  try {
    const jsm = await jetstreamManager(nc);
    const mine: string[] = [];
    for await (const s of jsm.streams.list()) {
      if (s.config.name.startsWith(`${prefix}_`) || s.config.name.startsWith(`KV_${prefix}_`)) mine.push(s.config.name);
    }
    for (const name of mine) await jsm.streams.delete(name).catch(() => {});
  } finally {
    await nc.close();
  }
}
