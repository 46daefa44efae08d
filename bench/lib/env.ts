import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { jetstreamManager } from '@nats-io/jetstream';
import { connectNats, type NatsConnection } from '../../lib/nats.js';
import { streamNames } from '../../lib/streams.js';

/**
 * What the bench creates and removes: one PostgreSQL database and one NATS prefix per
 * scenario (so no scenario sees another's rows or messages), all dropped at the end or on
 * Ctrl-C. The children get the same SECRETS_KEY so the worker can open what the gateway sealed.
 */
export const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

/** Server part of the PostgreSQL URL (DATABASE_URL without its database name, or the default). */
export const PG_BASE = (() => {
  const url = process.env.BENCH_DATABASE_BASE_URL ?? process.env.DATABASE_URL ?? 'postgresql://root@127.0.0.1:5432/mas';
  const u = new URL(url);
  u.pathname = '';
  return u.toString().replace(/\/$/, '');
})();

export const RUN_ID = randomBytes(3).toString('hex');

/** Environment shared by every child of the run (production mode, fixed secrets, HTTP allowed on loopback). */
export const CHILD_BASE_ENV: Record<string, string> = {
  NODE_ENV: 'production',
  JWT_SECRET: createHash('sha256').update(`bench-jwt-${RUN_ID}`).digest('hex'),
  SECRETS_KEY: createHash('sha256').update(`bench-secrets-${RUN_ID}`).digest('hex'),
  ENFORCE_HTTPS: 'false',
  // The helpdesk and model stand-ins listen on loopback.
  ALLOW_PRIVATE_URLS: 'true',
  PUBLIC_BASE_URL: 'http://127.0.0.1',
  NATS_URL,
  LOG_LEVEL: 'info',
};

type Step = () => Promise<void> | void;
const cleanups: { label: string; step: Step }[] = [];
let keep = false;

export function keepResources(v: boolean): void {
  keep = v;
}

/** Registers a clean-up step (run last-in first-out by runCleanups). */
export function onCleanup(label: string, step: Step): () => Promise<void> {
  const entry = { label, step };
  cleanups.push(entry);
  // Running it early (end of a scenario) removes it from the list.
  return async () => {
    const i = cleanups.indexOf(entry);
    if (i < 0) return;
    cleanups.splice(i, 1);
    await step();
  };
}

export async function runCleanups(): Promise<void> {
  while (cleanups.length) {
    const { label, step } = cleanups.pop()!;
    try {
      await step();
    } catch (err) {
      process.stderr.write(`bench: clean-up "${label}" failed: ${(err as Error).message}\n`);
    }
  }
}

export interface Scenario {
  /** Short name used in database names, prefixes and log files. */
  tag: string;
  databaseName: string;
  databaseUrl: string;
  natsPrefix: string;
  /** Drops the database and the prefix's streams and buckets now (idempotent). */
  dispose: () => Promise<void>;
}

/** A fresh database name and NATS prefix, removed at the end. The database itself is created by the first child (startRuntime). */
export function newScenario(tag: string): Scenario {
  const clean = tag.replace(/[^a-z0-9]/gi, '').toLowerCase().slice(0, 12);
  const suffix = randomBytes(3).toString('hex');
  const databaseName = `mas_bench_${clean}_${suffix}`;
  const natsPrefix = `bench${clean}${suffix}`.slice(0, 32);
  const dispose = onCleanup(`scenario ${tag}`, async () => {
    if (keep) return;
    await dropDatabase(databaseName);
    await deletePrefix(natsPrefix);
  });
  return { tag: clean, databaseName, databaseUrl: `${PG_BASE}/${databaseName}`, natsPrefix, dispose };
}

export async function dropDatabase(name: string): Promise<void> {
  const admin = new pg.Client({ connectionString: `${PG_BASE}/postgres` });
  await admin.connect();
  try {
    await admin.query(`drop database if exists "${name.replace(/"/g, '""')}" with (force)`);
  } finally {
    await admin.end();
  }
}

/** Deletes the inbound stream of a prefix (with its consumers). */
export async function deletePrefix(prefix: string): Promise<void> {
  const nc = await connectNats(NATS_URL, `bench-cleanup-${RUN_ID}`);
  try {
    const jsm = await jetstreamManager(nc);
    const names = streamNames(prefix);
    await jsm.streams.delete(names.inboundStream).catch(() => false);
  } finally {
    await nc.close();
  }
}

let shared: NatsConnection | null = null;

/** The bench's own NATS connection (publishing queued work, reading stream state). */
export async function benchNats(): Promise<NatsConnection> {
  if (!shared || shared.isClosed()) {
    shared = await connectNats(NATS_URL, `bench-${RUN_ID}`);
    onCleanup('bench NATS connection', async () => {
      if (shared && !shared.isClosed()) await shared.close();
      shared = null;
    });
  }
  return shared;
}

/** A pg client on a scenario's database (closed at clean-up unless closed before). */
export async function pgClient(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  let ended = false;
  client.on('end', () => {
    ended = true;
  });
  onCleanup('pg client', async () => {
    if (!ended) await client.end().catch(() => {});
  });
  return client;
}
