import t from 'tap';
import { loadConfig, DEFAULT_PARTITIONS } from '../../lib/config.js';
import { ConfigError } from '../../lib/errors.js';

const KEY = 'a'.repeat(64);
const production = { NODE_ENV: 'production', JWT_SECRET: 'x'.repeat(40), SECRETS_KEY: KEY, PUBLIC_BASE_URL: 'https://chat.example.com' };

t.test('development: missing secrets get defaults, each with a warning', async (t) => {
  const warnings: string[] = [];
  const c = loadConfig({}, { warn: (w) => warnings.push(w) });
  t.equal(c.nodeEnv, 'development');
  t.equal(c.port, 3000);
  t.equal(c.partitions, DEFAULT_PARTITIONS);
  t.equal(c.natsPrefix, 'mas');
  t.equal(c.publicBaseUrl, 'http://127.0.0.1:3000');
  t.equal(c.enforceHttps, false);
  t.same(warnings.map((w) => w.split(' ')[0]).sort(), ['JWT_SECRET', 'PUBLIC_BASE_URL', 'SECRETS_KEY']);
  t.ok(Object.isFrozen(c), 'config is frozen');
  t.throws(() => {
    (c as { port: number }).port = 1;
  });
});

t.test('production: every required value must be there', async (t) => {
  const c = loadConfig(production);
  t.equal(c.enforceHttps, true, 'HTTPS is enforced by default in production');
  t.equal(c.publicBaseUrl, 'https://chat.example.com');
  for (const name of ['JWT_SECRET', 'SECRETS_KEY', 'PUBLIC_BASE_URL']) {
    const env: Record<string, string> = { ...production };
    delete env[name];
    t.throws(() => loadConfig(env), new ConfigError(`${name} is required when NODE_ENV=production`), `missing ${name}`);
  }
});

t.test('a bad value fails with one line naming the variable', async (t) => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ PORT: 'eighty' }, /^PORT: /],
    [{ PORT: '70000' }, /^PORT: /],
    [{ PARTITIONS: '0' }, /^PARTITIONS: /],
    [{ DATABASE_URL: 'mysql://x' }, /^DATABASE_URL: /],
    [{ NATS_PREFIX: 'has.dots' }, /^NATS_PREFIX: /],
    [{ JWT_SECRET: 'short' }, /^JWT_SECRET: /],
    [{ SECRETS_KEY: 'abcd' }, /^SECRETS_KEY: key #1 must be 32 bytes/],
    [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL: /],
  ];
  for (const [env, pattern] of cases) {
    try {
      loadConfig({ ...production, ...env });
      t.fail(`accepted ${JSON.stringify(env)}`);
    } catch (err) {
      t.type(err, ConfigError);
      t.match((err as Error).message, pattern, JSON.stringify(env));
      t.notMatch((err as Error).message, /\n/, 'one line');
    }
  }
});

t.test('SECRETS_KEY takes a list for rotation; ENFORCE_HTTPS and TRUST_PROXY parse', async (t) => {
  const c = loadConfig({ ...production, SECRETS_KEY: `${KEY},${Buffer.alloc(32, 7).toString('base64')}`, ENFORCE_HTTPS: 'off', TRUST_PROXY: '1' });
  t.equal(c.secretsKeys.length, 2);
  t.equal(c.enforceHttps, false);
  t.equal(c.trustProxy, 1);
});
