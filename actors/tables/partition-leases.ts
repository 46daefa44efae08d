import { query, type SqlClient } from '../../lib/db.js';

/**
 * `partition_leases` and `worker_presence` (migration 0026): who owns which partition, and
 * which workers are alive, by PostgreSQL's clock. An epoch comes from the sequence
 * `partition_lease_epochs` at each claim, so a later owner always has a larger one whatever
 * happens to NATS (the outbox fences its sends by it).
 */
const ms = (param: string) => `(${param}::int * interval '1 millisecond')`;

const RENEW_SQL = `
update partition_leases l set expires_at = now() + ${ms('$2')}
from unnest($3::int[], $4::bigint[]) as h(partition, epoch)
where l.partition = h.partition and l.epoch = h.epoch and l.owner = $1
returning l.partition`;

/** The partitions still ours (owner and epoch unchanged), their expiry moved to ttl from now. */
export async function renewLeases(c: SqlClient, workerId: string, ttlMs: number, held: { partition: number; epoch: number }[]): Promise<Set<number>> {
  const rows = await query<{ partition: number }>(c, 'lease_renew', RENEW_SQL, [workerId, ttlMs, held.map((h) => h.partition), held.map((h) => h.epoch)]);
  return new Set(rows.map((r) => r.partition));
}

// Presence rows of workers gone for a while are removed on the way (the table stays small).
const PRESENCE_SQL = `
with up as (
  insert into worker_presence (worker_id, expires_at) values ($1, now() + ${ms('$2')})
  on conflict (worker_id) do update set expires_at = excluded.expires_at
  returning 1
), gone as (
  delete from worker_presence where expires_at < now() - interval '10 minutes' and worker_id <> $1
)
select (select count(*) from worker_presence where expires_at > now() and worker_id <> $1)::int + (select count(*) from up)::int as live,
       array(select partition from partition_leases where expires_at > now()) as taken,
       array(select partition from partition_leases) as known`;

export interface LeaseView {
  /** Workers alive, this one included. */
  live: number;
  /** Partitions nobody may claim now (owned, or held back after their lease record went missing). */
  taken: Set<number>;
  /** Partitions that have a lease record at all. */
  known: Set<number>;
}

/** Renews this worker's presence and reads the leases. */
export async function renewPresence(c: SqlClient, workerId: string, ttlMs: number): Promise<LeaseView> {
  const [row] = await query<{ live: number; taken: number[]; known: number[] }>(c, 'lease_presence', PRESENCE_SQL, [workerId, ttlMs]);
  return { live: Math.max(1, row!.live), taken: new Set(row!.taken), known: new Set(row!.known) };
}

// A record that exists is claimed once its lease ran out (or was given up). A missing one is
// claimed at once when `$4` (nobody else has been seen), else written unowned and held back
// for a lease's length: its last owner may still believe it holds it until its next renewal.
const CLAIM_SQL = `
insert into partition_leases (partition, owner, epoch, expires_at)
select p, case when $4::boolean then $1 end, nextval('partition_lease_epochs'), now() + ${ms('$2')} from unnest($3::int[]) as p
on conflict (partition) do update set owner = $1, epoch = excluded.epoch, expires_at = excluded.expires_at
  where partition_leases.expires_at <= now()
returning partition, epoch::text as epoch, owner is not null as ours`;

/**
 * Claims those of `partitions` whose lease ran out, each under a new epoch. Those without a
 * record are claimed too when `alone`; otherwise their record is written unowned, claimable a
 * lease's length later.
 */
export async function claimLeases(c: SqlClient, workerId: string, ttlMs: number, partitions: number[], alone: boolean): Promise<{ partition: number; epoch: number }[]> {
  const rows = await query<{ partition: number; epoch: string; ours: boolean }>(c, 'lease_claim', CLAIM_SQL, [workerId, ttlMs, partitions, alone]);
  return rows.filter((r) => r.ours).map((r) => ({ partition: r.partition, epoch: Number(r.epoch) }));
}

const RELEASE_SQL = `update partition_leases set owner = null, expires_at = now() where partition = $2 and owner = $1 and epoch = $3`;

/** Gives a partition up at once (claimable by anyone), if it is still ours under `epoch`. */
export async function releaseLease(c: SqlClient, workerId: string, partition: number, epoch: number): Promise<void> {
  await query(c, 'lease_release', RELEASE_SQL, [workerId, partition, epoch]);
}

/** This worker is gone: the others' fair share grows at their next tick. */
export async function removePresence(c: SqlClient, workerId: string): Promise<void> {
  await query(c, 'lease_presence_remove', 'delete from worker_presence where worker_id = $1', [workerId]);
}
