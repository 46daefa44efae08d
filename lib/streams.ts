import { jetstreamManager, JetStreamApiCodes, JetStreamApiError, RetentionPolicy, StorageType, DiscardPolicy, type JetStreamManager, type StreamConfig } from '@nats-io/jetstream';
import { withinDeadline } from './deadline.js';
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
  /**
   * Core-NATS subject on which a change to a company's agents, knowledge, actions or MCP
   * servers is announced (`{"companyId":N}`), so every worker drops its cached configs.
   */
  agentChanges: string;
  /** Core-NATS subject for replies to a webchat visitor, whichever gateway holds the socket. */
  webchatOutbound: (integrationId: number, visitorId: string) => string;
  /** Core-NATS subject of live conversation transitions (the inspect stream). */
  conversationEvents: (companyId: number, conversationId: number) => string;
  /** Wildcard of every conversationEvents subject of a company (the inbox's event stream). */
  companyConversationEvents: (companyId: number) => string;
}

export function streamNames(prefix: string): StreamNames {
  return {
    inboundStream: `${prefix}_INBOUND`,
    inboundWildcard: `${prefix}.in.>`,
    inboundSubject: (partition, companyId) => `${prefix}.in.${partition}.${companyId}`,
    partitionFilter: (partition) => `${prefix}.in.${partition}.*`,
    partitionConsumer: (partition) => `${prefix}_p${partition}`,
    integrationChanges: `${prefix}.ctl.integrations`,
    agentChanges: `${prefix}.ctl.agents`,
    webchatOutbound: (integrationId, visitorId) => `${prefix}.webchat.out.${integrationId}.${visitorId}`,
    conversationEvents: (companyId, conversationId) => `${prefix}.conv.${companyId}.${conversationId}`,
    companyConversationEvents: (companyId) => `${prefix}.conv.${companyId}.*`,
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

/** Deadline of stream and bucket creation / updates at start (a replica change can take a while on a busy cluster). */
const STREAM_ADMIN_TIMEOUT_MS = 30_000;

/** JetStream says the stream does not exist (by its API code, not its message text). */
export const isStreamNotFound = (err: unknown): boolean => err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound;

export interface StreamOptions {
  /** Replicas of the stream (NATS_REPLICAS; 3 on a cluster). */
  replicas?: number;
}

/**
 * Creates the inbound stream, or brings an existing one to this configuration (a change of
 * NATS_REPLICAS included: JetStream adds or removes replicas in place). Idempotent; every
 * role calls it at start.
 */
export async function ensureStreams(nc: NatsConnection, names: StreamNames, options: StreamOptions = {}): Promise<JetStreamManager> {
  // A change of replicas is answered once the new ones are placed: longer than the API's usual 5 s.
  const jsm = await jetstreamManager(nc, { timeout: STREAM_ADMIN_TIMEOUT_MS });
  const config = {
    name: names.inboundStream,
    subjects: [names.inboundWildcard],
    // Acked messages are done (their effects live in PostgreSQL); partition filters never overlap.
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    duplicate_window: DUPLICATE_WINDOW_NS,
    max_age: 7 * 24 * 3600 * 1_000_000_000,
    num_replicas: options.replicas ?? 1,
  };
  let current;
  try {
    current = (await jsm.streams.info(config.name)).config;
  } catch (err) {
    if (!isStreamNotFound(err)) throw err;
    await jsm.streams.add(config);
    return jsm;
  }
  // Only a stream that differs is updated: every process starting at once would otherwise
  // queue the same (slow, for a replica change) update behind one another.
  if (differsFrom(current, config)) await applyStreamConfig(jsm, config.name, current, config);
  return jsm;
}

const differsFrom = (current: StreamConfig, wanted: Partial<StreamConfig>): boolean =>
  (Object.keys(wanted) as (keyof StreamConfig)[]).some((k) => JSON.stringify(current[k]) !== JSON.stringify(wanted[k]));

/** How often a pending stream update is checked against what the stream says. */
const UPDATE_CHECK_MS = 1_000;

/**
 * Updates a stream to `wanted`, done as soon as the stream reads so: processes starting
 * together send the same update, and on a busy cluster the answer to the second one can be
 * held back until the first one's replica change completes (or never come), although the
 * stream already has the configuration.
 */
async function applyStreamConfig(jsm: JetStreamManager, name: string, current: StreamConfig, wanted: Partial<StreamConfig>): Promise<void> {
  let failure: unknown = null;
  const update = jsm.streams.update(name, { ...current, ...wanted }).then(
    () => true,
    (err: unknown) => {
      failure = err;
      return false;
    },
  );
  const deadline = Date.now() + STREAM_ADMIN_TIMEOUT_MS;
  for (;;) {
    let tick: NodeJS.Timeout | undefined;
    const answered = await Promise.race([update, new Promise<false>((resolve) => (tick = setTimeout(() => resolve(false), UPDATE_CHECK_MS)))]).finally(() => clearTimeout(tick));
    if (answered) return;
    // Not answered yet, or refused: the stream may have the configuration already.
    const seen = await withinDeadline(jsm.streams.info(name), UPDATE_CHECK_MS).catch(() => null);
    if (seen && !differsFrom(seen.config, wanted)) return;
    // The server said no (not a lost answer): nothing to wait for.
    if (failure instanceof JetStreamApiError) throw failure;
    if (Date.now() >= deadline) throw failure ?? new Error(`stream ${name}: the update was not applied within ${STREAM_ADMIN_TIMEOUT_MS} ms`);
    if (failure !== null) await new Promise((resolve) => setTimeout(resolve, UPDATE_CHECK_MS));
  }
}

export interface ReplicaReport {
  /** Replicas configured for it. */
  replicas: number;
  /** Replicas that are current (the leader and caught-up followers). */
  current: number;
  leader: string | null;
}

/**
 * How the service's streams are replicated right now, for /readyz: per stream, configured
 * replicas and how many are current. `expected` is NATS_REPLICAS; `ok` says whether every
 * stream has that many and all of them current.
 */
export async function replicaReport(nc: NatsConnection, names: StreamNames, expected: number): Promise<{ ok: boolean; expected: number; streams: Record<string, ReplicaReport> }> {
  const jsm = await jetstreamManager(nc);
  const streams: Record<string, ReplicaReport> = {};
  for (const name of [names.inboundStream]) {
    try {
      const info = await jsm.streams.info(name);
      const leader = info.cluster?.leader ?? null;
      // A server outside any cluster serves its streams itself: it names no leader (2.9) or itself (2.10), and no replicas.
      const current = leader === null ? 1 : 1 + (info.cluster?.replicas ?? []).filter((r) => r.current && !r.offline).length;
      streams[name] = { replicas: info.config.num_replicas, current, leader };
    } catch (err) {
      if (!isStreamNotFound(err)) throw err;
    }
  }
  const ok = Object.values(streams).every((s) => s.replicas === expected && s.current === expected);
  return { ok, expected, streams };
}
