import { jetstreamManager, RetentionPolicy, StorageType, DiscardPolicy, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from './nats.js';

/**
 * Names of everything this service creates in NATS. All begin with NATS_PREFIX so several
 * deployments (or test files) share one server without touching each other.
 *
 * Inbound subjects: `<prefix>.in.<partition>.<companyId>`: one subject per company within
 * a partition, and the partition first so one durable consumer per partition filters on
 * `<prefix>.in.<partition>.*` (nats-server 2.9 has no multi-filter consumers).
 */
export interface StreamNames {
  inboundStream: string;
  /** Wildcard of every inbound subject (the stream's subject list). */
  inboundWildcard: string;
  inboundSubject: (partition: number, companyId: number) => string;
  partitionFilter: (partition: number) => string;
  partitionConsumer: (partition: number) => string;
  /** Core-NATS subject on which integration changes are announced, so caches drop entries. */
  integrationChanges: string;
  /** Core-NATS subject for replies to a webchat visitor, whichever gateway holds the socket. */
  webchatOutbound: (integrationId: number, visitorId: string) => string;
  /** Core-NATS subject of live conversation transitions (the inspect stream). */
  conversationEvents: (companyId: number, conversationId: number) => string;
  /** KV bucket holding partition leases. */
  leaseBucket: string;
}

export function streamNames(prefix: string): StreamNames {
  return {
    inboundStream: `${prefix}_INBOUND`,
    inboundWildcard: `${prefix}.in.>`,
    inboundSubject: (partition, companyId) => `${prefix}.in.${partition}.${companyId}`,
    partitionFilter: (partition) => `${prefix}.in.${partition}.*`,
    partitionConsumer: (partition) => `${prefix}_p${partition}`,
    integrationChanges: `${prefix}.ctl.integrations`,
    webchatOutbound: (integrationId, visitorId) => `${prefix}.webchat.out.${integrationId}.${visitorId}`,
    conversationEvents: (companyId, conversationId) => `${prefix}.conv.${companyId}.${conversationId}`,
    leaseBucket: `${prefix}_leases`,
  };
}

/** FNV-1a 32-bit, the hash nats-server's own partition() mapping uses. */
export function fnv1a32(key: string): number {
  let h = 0x811c9dc5;
  const bytes = Buffer.from(key, 'utf8');
  for (let i = 0; i < bytes.length; i++) {
    h ^= bytes[i]!;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** The partition that owns a conversation. Key: `<integrationId>:<clientId>` (helpdesk client_id / webchat visitorId). */
export function partitionOf(integrationId: number, clientId: string, partitions: number): number {
  return fnv1a32(`${integrationId}:${clientId}`) % partitions;
}

/** JetStream's quick-retry dedup window; late helpdesk retries are caught by a durable record. */
export const DUPLICATE_WINDOW_NS = 2 * 60 * 1_000_000_000;

/** Creates (or updates) the inbound stream. Idempotent; every role calls it at start. */
export async function ensureStreams(nc: NatsConnection, names: StreamNames): Promise<JetStreamManager> {
  const jsm = await jetstreamManager(nc);
  const config = {
    name: names.inboundStream,
    subjects: [names.inboundWildcard],
    // Acked messages are done (their effects live in PostgreSQL); partition filters never overlap.
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    duplicate_window: DUPLICATE_WINDOW_NS,
    max_age: 7 * 24 * 3600 * 1_000_000_000,
  };
  try {
    await jsm.streams.info(config.name);
    await jsm.streams.update(config.name, config);
  } catch (err) {
    if (!/stream not found/i.test((err as Error).message)) throw err;
    await jsm.streams.add(config);
  }
  return jsm;
}
