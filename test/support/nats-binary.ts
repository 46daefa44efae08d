import { existsSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * The nats-server that tests and benches start (clusters, private servers): NATS_SERVER_BIN
 * when set, else the newest one scripts/nats-server.sh unpacked into `.cache/nats-server-<version>/`
 * (the machine's 2.9.10 loses acknowledged messages when a cluster node fails), else the
 * `nats-server` on PATH.
 */
export function natsServerBinary(): string {
  if (process.env.NATS_SERVER_BIN) return process.env.NATS_SERVER_BIN;
  const cache = resolve(import.meta.dirname, '../../.cache');
  let dirs: string[] = [];
  try {
    dirs = readdirSync(cache).filter((d) => /^nats-server-\d+\.\d+\.\d+$/.test(d));
  } catch {
    /* no cache yet */
  }
  const newest = dirs.sort((a, b) => compareVersions(b.slice('nats-server-'.length), a.slice('nats-server-'.length)))[0];
  const bin = newest ? join(cache, newest, 'nats-server') : null;
  return bin && existsSync(bin) ? bin : 'nats-server';
}

/** Compares dotted versions numerically: negative when a < b. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}
