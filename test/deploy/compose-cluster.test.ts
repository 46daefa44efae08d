import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { parse } from 'yaml';

/**
 * `docker compose --profile cluster up` (contract.md § Running on a NATS cluster): three NATS
 * nodes that route to each other, two gateways and two workers that list all three nodes and
 * replicate every stream three times, on a database of their own (never the single-node
 * stack's: two deployments sharing one database would both send its outbox). There is no
 * Docker engine here: the file is parsed.
 */
interface Service {
  image?: string;
  profiles?: string[];
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
}
const compose = parse(readFileSync(fileURLToPath(new URL('../../docker-compose.yml', import.meta.url)), 'utf8'), { merge: true }) as { services: Record<string, Service> };
const inCluster = Object.entries(compose.services).filter(([, s]) => s.profiles?.includes('cluster'));
const byRole = (pattern: RegExp) => inCluster.filter(([, s]) => pattern.test((s.command ?? []).join(' ')));

t.test('three NATS nodes, two gateways, two workers in the cluster profile', async (t) => {
  const nats = inCluster.filter(([name]) => /^nats-\d$/.test(name));
  t.equal(nats.length, 3, 'three NATS nodes');
  t.equal(byRole(/gateway\/main\.ts/).length, 2, 'two gateways');
  t.equal(byRole(/actors\/main\.ts/).length, 2, 'two workers');
  const conf = readFileSync(fileURLToPath(new URL('../../scripts/nats-cluster.conf', import.meta.url)), 'utf8');
  for (const [name] of nats) t.match(conf, new RegExp(`nats://${name}:6222`), `${name} is in every node's routes`);
  t.match(conf, /jetstream\s*\{[^}]*sync_interval:\s*always/, 'each node fsyncs every write');
  t.same(new Set(nats.map(([, s]) => s.volumes?.[0]?.split(':')[0])).size, 3, 'each node has its own store');
});

t.test('every NATS server is pinned to one release that keeps what it acknowledged (2.10.23 or later)', async (t) => {
  const servers = Object.entries(compose.services).filter(([name]) => /^nats(-\d)?$/.test(name));
  t.equal(servers.length, 4, 'the single node and the three of the cluster');
  for (const [name, s] of servers) {
    const version = /^nats:(\d+)\.(\d+)\.(\d+)(-[a-z0-9.]+)?$/.exec(s.image ?? '');
    t.ok(version, `${name}: a patch release, not a moving tag (${s.image})`);
    if (!version) continue;
    const [major, minor, patch] = version.slice(1, 4).map(Number) as [number, number, number];
    t.ok(major > 2 || (major === 2 && (minor > 10 || (minor === 10 && patch >= 23))), `${name}: ${s.image} is 2.10.23 or later`);
  }
  const single = readFileSync(fileURLToPath(new URL('../../scripts/nats.conf', import.meta.url)), 'utf8');
  t.match(single, /jetstream\s*\{[^}]*sync_interval:\s*always/, 'the single node fsyncs every write too');
});

t.test('every gateway and worker of the cluster: all three nodes, R3, its own database', async (t) => {
  const single = compose.services.gateway?.environment ?? {};
  for (const [name, s] of [...byRole(/gateway\/main\.ts/), ...byRole(/actors\/main\.ts/)]) {
    const env = s.environment ?? {};
    t.same(env.NATS_URL?.split(','), ['nats://nats-1:4222', 'nats://nats-2:4222', 'nats://nats-3:4222'], `${name}: NATS_URL lists the nodes`);
    t.equal(env.NATS_REPLICAS, '3', `${name}: NATS_REPLICAS=3`);
    t.match(env.DATABASE_URL, /\/mas_cluster$/, `${name}: the cluster's database`);
    t.not(env.DATABASE_URL, single.DATABASE_URL, `${name}: not the single-node stack's database`);
  }
});
