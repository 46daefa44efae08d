import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { parse } from 'yaml';

/**
 * The shipped docker-compose.yml must not start a service anyone can take over: every
 * service that runs our code runs NODE_ENV=production, and every secret (JWT_SECRET,
 * SECRETS_KEY, the PostgreSQL password, …) comes from a variable compose *requires*
 * (`${VAR:?message}`: `docker compose up` stops with that message when it is unset), never
 * from a value written in the file. There is no Docker engine here: the file is parsed.
 */
const COMPOSE_FILE = fileURLToPath(new URL('../../docker-compose.yml', import.meta.url));
const compose = parse(readFileSync(COMPOSE_FILE, 'utf8'), { merge: true }) as { services: Record<string, Service> };

interface Service {
  image?: string;
  build?: unknown;
  command?: string | string[];
  entrypoint?: string | string[];
  environment?: Record<string, unknown> | string[];
}

/** `${VAR:?message}` with a non-empty message: compose refuses to start without VAR. */
const REQUIRED = /^\$\{([A-Z_][A-Z0-9_]*):\?([^}]+)\}$/;
/** `${VAR}` / `${VAR:-}` / `${VAR-}`: passed through from the host, no value of its own. */
const PASSED_THROUGH = /^\$\{[A-Z_][A-Z0-9_]*(:?-)?\}$/;
/** Variable names whose values are credentials. */
const SECRET_NAME = /SECRET|PASSWORD|TOKEN|(^|_)KEY$/;
/** Our service's required settings in production (lib/config.ts). */
const OUR_REQUIRED = ['JWT_SECRET', 'SECRETS_KEY', 'PUBLIC_BASE_URL'];

function environmentOf(service: Service): Record<string, string> {
  const env = service.environment ?? {};
  if (Array.isArray(env)) {
    return Object.fromEntries(env.map((line) => {
      const i = line.indexOf('=');
      return i < 0 ? [line, ''] : [line.slice(0, i), line.slice(i + 1)];
    }));
  }
  return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v === null || v === undefined ? '' : String(v)]));
}

/** A service runs our code when it is built from this repository or starts npm / node / tsx. */
function runsOurCode(service: Service): boolean {
  const commands = [service.command, service.entrypoint].flat().filter((c): c is string => typeof c === 'string').join(' ');
  return service.build !== undefined || /\b(npm|node|tsx)\b/.test(commands);
}

const services = Object.entries(compose.services);
const ours = services.filter(([, s]) => runsOurCode(s));

t.test('the compose file has services that run our code', async (t) => {
  t.ok(ours.length >= 1, `services running our code: ${ours.map(([n]) => n).join(', ')}`);
});

t.test('every service running our code is production and requires its secrets', async (t) => {
  for (const [name, service] of ours) {
    const env = environmentOf(service);
    t.equal(env.NODE_ENV, 'production', `${name}: NODE_ENV=production`);
    for (const variable of OUR_REQUIRED) {
      t.match(env[variable] ?? '(unset)', REQUIRED, `${name}: ${variable} comes from a required \${…:?message} variable`);
    }
    // The database URL carries a password: it must be interpolated, not written down.
    const password = /^postgres(?:ql)?:\/\/[^:@/]+:(.*)@[^@]+$/.exec(env.DATABASE_URL ?? '')?.[1] ?? '(no password)';
    t.match(password, REQUIRED, `${name}: the password in DATABASE_URL is a required variable (got ${JSON.stringify(password)})`);
  }
});

t.test('no service has a literal secret value', async (t) => {
  for (const [name, service] of services) {
    for (const [variable, value] of Object.entries(environmentOf(service))) {
      if (!SECRET_NAME.test(variable)) continue;
      if (variable === 'POSTGRES_PASSWORD') t.match(value, REQUIRED, `${name}: the database password is required`);
      else t.ok(REQUIRED.test(value) || PASSED_THROUGH.test(value), `${name}: ${variable} is a required or passed-through variable, not a literal (got ${JSON.stringify(value)})`);
    }
  }
});

t.test('the required variables fail with a message saying what to set', async (t) => {
  let required = 0;
  for (const [name, service] of services) {
    for (const [variable, value] of Object.entries(environmentOf(service))) {
      for (const m of value.matchAll(/\$\{([A-Z_][A-Z0-9_]*):\?([^}]*)\}/g)) {
        required++;
        t.ok(m[2]!.trim().length >= 10, `${name}: ${variable}: the message for ${m[1]} says what to do (${JSON.stringify(m[2])})`);
      }
    }
  }
  t.ok(required >= OUR_REQUIRED.length + 1, `${required} required variables (our secrets and the database password)`);
});
