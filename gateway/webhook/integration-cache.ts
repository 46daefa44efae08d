import type { Orm } from '../../lib/db.js';
import type { Logger } from '../../lib/logger.js';
import type { NatsConnection } from '../../lib/nats.js';
import type { SecretBox } from '../../lib/secrets.js';
import { systemEm } from '../../lib/tenancy.js';
import { IntegrationSchema, type IntegrationType, type PrechatForm } from '../../schema/entities.js';
import type { WebhookSecrets } from './signature.js';

/**
 * What the webhook path needs to know about an integration, kept in memory so a webhook
 * costs no database query: loaded on first use (one system query), kept until the
 * integration changes. Every change made through the API is announced on the core NATS
 * subject `integrationChanges` (`{"integrationId":N}`); every gateway subscribes and drops
 * its entry. A time-to-live bounds how long an announcement lost to a NATS outage can be
 * missed, and the whole cache is dropped when the connection comes back.
 */
export interface CachedIntegration {
  id: number;
  companyId: number;
  type: IntegrationType;
  active: boolean;
  secrets: WebhookSecrets;
  /** Webchat: Origins (scheme://host[:port]) allowed to open the socket; empty = any. */
  allowedOrigins: readonly string[];
  /** Webchat: what the widget asks before the first message (sent in `welcome`). */
  prechatForm: PrechatForm;
  /** WhatsApp: the token Meta's GET probe of the webhook must echo (the channel's `probe`); null for other types. */
  verifyToken: string | null;
}

export interface IntegrationCacheOptions {
  orm: Orm;
  box: SecretBox;
  nc: NatsConnection;
  /** Core NATS subject of change announcements (streamNames(prefix).integrationChanges). */
  subject: string;
  logger?: Logger;
  now?: () => number;
  /** Safety net against a missed announcement. */
  ttlMs?: number;
  /** How long "no such integration" is remembered. */
  negativeTtlMs?: number;
  /** Bound on entries (unknown ids posted at random must not grow memory). */
  maxEntries?: number;
}

interface Entry {
  expiresAt: number;
  value: CachedIntegration | null | Promise<CachedIntegration | null>;
}

export const DEFAULT_CACHE_TTL_MS = 5 * 60_000;
export const DEFAULT_NEGATIVE_TTL_MS = 5_000;
export const DEFAULT_MAX_ENTRIES = 100_000;

export class IntegrationCache {
  readonly #o: Required<Omit<IntegrationCacheOptions, 'logger'>> & { logger?: Logger };
  readonly #entries = new Map<number, Entry>();
  #stop: (() => void) | null = null;

  constructor(options: IntegrationCacheOptions) {
    this.#o = {
      now: Date.now,
      ttlMs: DEFAULT_CACHE_TTL_MS,
      negativeTtlMs: DEFAULT_NEGATIVE_TTL_MS,
      maxEntries: DEFAULT_MAX_ENTRIES,
      ...options,
    };
  }

  /** The integration, or null when it does not exist. Rejects only when the database cannot answer. */
  get(id: number): CachedIntegration | null | Promise<CachedIntegration | null> {
    const entry = this.#entries.get(id);
    if (entry && entry.expiresAt > this.#o.now()) return entry.value;
    return this.#load(id);
  }

  invalidate(id: number): void {
    this.#entries.delete(id);
  }

  clear(): void {
    this.#entries.clear();
  }

  get size(): number {
    return this.#entries.size;
  }

  /** Drops the entry here and tells every other gateway to drop theirs. Never throws. */
  announce(id: number): void {
    this.invalidate(id);
    try {
      this.#o.nc.publish(this.#o.subject, JSON.stringify({ integrationId: id }));
    } catch (err) {
      this.#o.logger?.warn({ err, integrationId: id }, 'could not announce an integration change (other gateways keep their entry until its TTL)');
    }
  }

  /** Subscribes to change announcements (and drops everything after a reconnect). */
  start(): void {
    if (this.#stop) return;
    const sub = this.#o.nc.subscribe(this.#o.subject, {
      callback: (err, msg) => {
        if (err) return;
        try {
          const { integrationId } = msg.json<{ integrationId?: unknown }>();
          if (typeof integrationId === 'number') this.invalidate(integrationId);
          else this.clear();
        } catch {
          this.clear();
        }
      },
    });
    const status = this.#o.nc.status() as AsyncIterable<{ type: string }> & { stop?: () => void };
    void (async () => {
      for await (const s of status) if (s.type === 'reconnect') this.clear();
    })().catch(() => {});
    this.#stop = () => {
      if (!this.#o.nc.isClosed()) sub.unsubscribe();
      status.stop?.();
    };
  }

  stop(): void {
    this.#stop?.();
    this.#stop = null;
  }

  #load(id: number): Promise<CachedIntegration | null> {
    const entry: Entry = { expiresAt: Number.POSITIVE_INFINITY, value: null };
    const pending = this.#fetch(id).then(
      (value) => {
        // Only if no change was announced meanwhile (the entry would have been dropped).
        if (this.#entries.get(id) === entry) {
          entry.value = value;
          entry.expiresAt = this.#o.now() + (value ? this.#o.ttlMs : this.#o.negativeTtlMs);
        }
        return value;
      },
      (err: unknown) => {
        if (this.#entries.get(id) === entry) this.#entries.delete(id);
        throw err;
      },
    );
    entry.value = pending;
    if (this.#entries.size >= this.#o.maxEntries) {
      const oldest = this.#entries.keys().next();
      if (!oldest.done) this.#entries.delete(oldest.value);
    }
    this.#entries.set(id, entry);
    return pending;
  }

  async #fetch(id: number): Promise<CachedIntegration | null> {
    const row = await systemEm(this.#o.orm).findOne(
      IntegrationSchema,
      { id },
      { filters: false, populate: ['webhookSecretSealed', 'previousSecretSealed', 'verifyToken'] },
    );
    if (!row) return null;
    const box = this.#o.box;
    return {
      id: row.id,
      companyId: row.companyId,
      type: row.type,
      active: row.active,
      secrets: {
        current: Buffer.from(box.open(row.webhookSecretSealed), 'utf8'),
        previous: row.previousSecretSealed ? Buffer.from(box.open(row.previousSecretSealed), 'utf8') : null,
        previousValidUntil: row.previousSecretExpiresAt ? row.previousSecretExpiresAt.getTime() : 0,
      },
      allowedOrigins: Object.freeze(Array.isArray(row.allowedOrigins) ? row.allowedOrigins.filter((o): o is string => typeof o === 'string') : []),
      prechatForm: row.prechatForm ?? 'off',
      verifyToken: row.verifyToken ?? null,
    };
  }
}
