import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { parse } from 'yaml';

/**
 * The container image (Dockerfile) and the default compose stack, read with parsers: there is
 * no Docker engine on this machine. What users of Node services expect: a multi-stage build
 * with production dependencies only, a non-root user, a health check on /healthz, no
 * dependency install when a container starts, and `docker compose up` running a gateway, a
 * worker, PostgreSQL and NATS.
 */
const file = (path: string) => readFileSync(fileURLToPath(new URL(`../../${path}`, import.meta.url)), 'utf8');

/** Dockerfile instructions, continuation lines joined, comments dropped. */
function instructions(text: string): { op: string; args: string }[] {
  const joined = text.split('\n').filter((l) => !/^\s*#/.test(l)).join('\n').replace(/\\\n\s*/g, ' ');
  return joined.split('\n').map((l) => l.trim()).filter(Boolean).map((l) => {
    const [op, ...rest] = l.split(/\s+/);
    return { op: op!.toUpperCase(), args: rest.join(' ') };
  });
}

const dockerfile = instructions(file('Dockerfile'));
const of = (op: string) => dockerfile.filter((i) => i.op === op);

t.test('Dockerfile: multi-stage, production dependencies, non-root, health check', async (t) => {
  const stages = of('FROM');
  t.ok(stages.length >= 2, `${stages.length} stages`);
  t.ok(stages.every((s) => /^node:24-bookworm-slim\b/.test(s.args)), 'on Node 24 LTS (node:24-bookworm-slim)');
  t.ok(of('RUN').some((r) => /npm ci\b.*--omit=dev/.test(r.args)), 'npm ci --omit=dev');
  const lastStage = dockerfile.slice(dockerfile.lastIndexOf(stages.at(-1)!));
  t.notOk(lastStage.some((i) => i.op === 'RUN' && /npm (ci|install)/.test(i.args)), 'the runtime stage installs nothing');
  const user = lastStage.filter((i) => i.op === 'USER').at(-1)?.args;
  t.ok(user && !/^(root|0)(:|$)/.test(user), `runs as ${user}`);
  t.match(of('HEALTHCHECK').at(-1)?.args ?? '', /\/healthz/, 'HEALTHCHECK on /healthz');
  const copied = lastStage.filter((i) => i.op === 'COPY').map((i) => i.args).join(' ');
  t.notMatch(copied, /\btest\b|\bbench\b|\.git\b/, 'no tests, benches or history in the image');
  for (const dir of ['lib', 'schema', 'machines', 'gateway', 'actors', 'web']) t.match(copied, new RegExp(`\\b${dir}\\b`), `${dir}/ is in the image`);
  const ignore = file('.dockerignore').split('\n');
  for (const entry of ['node_modules', '.git', 'test', 'bench', '.env']) t.ok(ignore.includes(entry), `.dockerignore leaves out ${entry}`);
});

t.test('docker compose up: a gateway and a worker from the image, PostgreSQL and NATS', async (t) => {
  const compose = parse(file('docker-compose.yml'), { merge: true }) as { services: Record<string, { build?: unknown; image?: string; command?: string[]; profiles?: string[] }> };
  const always = Object.entries(compose.services).filter(([, s]) => !s.profiles);
  const ours = always.filter(([, s]) => s.build !== undefined || s.image === 'mas:latest');
  t.same(ours.map(([n]) => n).sort(), ['gateway', 'worker'], 'a gateway and a worker');
  t.match(compose.services.gateway!.command!.join(' '), /gateway\/main\.ts/);
  t.match(compose.services.worker!.command!.join(' '), /actors\/main\.ts/);
  for (const [name, s] of Object.entries(compose.services)) t.notMatch((s.command ?? []).join(' '), /npm (ci|install)/, `${name}: nothing installed at start`);
  t.ok(always.some(([n]) => n === 'postgres') && always.some(([n]) => n === 'nats'), 'PostgreSQL and NATS');
  const workers = Object.entries(compose.services).filter(([, s]) => (s.command ?? []).join(' ').includes('actors/main.ts'));
  for (const [name, s] of workers) {
    const env = (s as { environment?: Record<string, string> }).environment ?? {};
    t.match(env.METRICS_PORT, /^\d+$/, `${name}: serves its figures on METRICS_PORT`);
    t.equal(env.METRICS_TOKEN, compose.services.gateway && (compose.services.gateway as { environment?: Record<string, string> }).environment?.METRICS_TOKEN, `${name}: the same METRICS_TOKEN as the gateway`);
  }
});
