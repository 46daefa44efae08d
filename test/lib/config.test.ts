import t from 'tap';
import { loadConfig, DEFAULT_MODEL_MAX_CONCURRENCY, DEFAULT_MODEL_RETRY_BUDGET_MS, DEFAULT_PARTITIONS, DEFAULT_REPLAY_MAX_CONCURRENCY } from '../../lib/config.js';
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

t.test('TRUST_PROXY=true is refused in production; hop counts and addresses are fine', async (t) => {
  try {
    loadConfig({ ...production, TRUST_PROXY: 'true' });
    t.fail('TRUST_PROXY=true accepted in production');
  } catch (err) {
    t.type(err, ConfigError);
    t.match((err as Error).message, /^TRUST_PROXY: .*hop/, 'names the variable and what to set instead');
    t.notMatch((err as Error).message, /\n/, 'one line');
  }
  t.equal(loadConfig({ ...production, TRUST_PROXY: '2' }).trustProxy, 2);
  t.equal(loadConfig({ ...production, TRUST_PROXY: 'loopback, 10.0.0.0/8' }).trustProxy, 'loopback, 10.0.0.0/8');
  t.equal(loadConfig({ ...production, TRUST_PROXY: 'false' }).trustProxy, false);
  t.equal(loadConfig({ TRUST_PROXY: 'true' }).trustProxy, true, 'still allowed in development');
});

t.test('METRICS_TOKEN: optional, validated when set', async (t) => {
  t.equal(loadConfig(production).metricsToken, undefined, 'unset: /metrics stays open');
  t.equal(loadConfig({ ...production, METRICS_TOKEN: 'm'.repeat(32) }).metricsToken, 'm'.repeat(32));
  for (const bad of ['short', 'has a space in it somewhere', 'x'.repeat(600)]) {
    try {
      loadConfig({ ...production, METRICS_TOKEN: bad });
      t.fail(`accepted METRICS_TOKEN=${JSON.stringify(bad.slice(0, 40))}`);
    } catch (err) {
      t.type(err, ConfigError);
      t.match((err as Error).message, /^METRICS_TOKEN: /);
      t.notOk((err as Error).message.includes(bad), 'the value itself is not repeated (the message goes to logs)');
    }
  }
});

t.test('METRICS_PORT: unset means no worker listener; a port when set', async (t) => {
  t.equal(loadConfig(production).metricsPort, undefined);
  t.equal(loadConfig({ ...production, METRICS_PORT: '9464' }).metricsPort, 9464);
  for (const bad of ['http', '70000', '-1']) t.throws(() => loadConfig({ ...production, METRICS_PORT: bad }), /^METRICS_PORT: /, `METRICS_PORT=${bad} refused`);
});

t.test('ALLOW_PRIVATE_URLS off unless said; SHUTDOWN_TIMEOUT_MS with a default', async (t) => {
  t.equal(loadConfig(production).allowPrivateUrls, false);
  t.equal(loadConfig({}).allowPrivateUrls, false, 'off in development too');
  t.equal(loadConfig({ ALLOW_PRIVATE_URLS: 'true' }).allowPrivateUrls, true);
  t.throws(() => loadConfig({ ALLOW_PRIVATE_URLS: 'maybe' }), { name: 'ConfigError', message: /^ALLOW_PRIVATE_URLS: / });
  t.equal(loadConfig(production).shutdownTimeoutMs, 10_000);
  t.equal(loadConfig({ SHUTDOWN_TIMEOUT_MS: '2500' }).shutdownTimeoutMs, 2500);
  t.throws(() => loadConfig({ SHUTDOWN_TIMEOUT_MS: '0' }), { name: 'ConfigError', message: /^SHUTDOWN_TIMEOUT_MS: / });
});

t.test('webchat limits: defaults, values, bad values', async (t) => {
  t.same(loadConfig(production).webchat, { maxSockets: 20_000, maxSocketsPerIp: 20, messagesPerMinutePerIp: 120, messagesPerMinutePerVisitor: 20 });
  const c = loadConfig({ ...production, WEBCHAT_MAX_SOCKETS: '5000', WEBCHAT_MAX_SOCKETS_PER_IP: '4', WEBCHAT_MESSAGES_PER_MINUTE_PER_IP: '60', WEBCHAT_MESSAGES_PER_MINUTE_PER_VISITOR: '10' });
  t.same(c.webchat, { maxSockets: 5000, maxSocketsPerIp: 4, messagesPerMinutePerIp: 60, messagesPerMinutePerVisitor: 10 });
  t.ok(Object.isFrozen(c.webchat));
  for (const name of ['WEBCHAT_MAX_SOCKETS', 'WEBCHAT_MAX_SOCKETS_PER_IP', 'WEBCHAT_MESSAGES_PER_MINUTE_PER_IP', 'WEBCHAT_MESSAGES_PER_MINUTE_PER_VISITOR']) {
    for (const bad of ['0', '-1', 'many', '1.5']) {
      t.throws(() => loadConfig({ ...production, [name]: bad }), { name: 'ConfigError', message: new RegExp(`^${name}: `) }, `${name}=${bad}`);
    }
  }
});

t.test('model calls: MODEL_MAX_CONCURRENCY, MODEL_RETRY_BUDGET_MS and REPLAY_MAX_CONCURRENCY, defaults, values, bad values', async (t) => {
  t.same(loadConfig(production).model, { maxConcurrency: DEFAULT_MODEL_MAX_CONCURRENCY, retryBudgetMs: DEFAULT_MODEL_RETRY_BUDGET_MS, replayMaxConcurrency: DEFAULT_REPLAY_MAX_CONCURRENCY });
  t.same([DEFAULT_MODEL_MAX_CONCURRENCY, DEFAULT_MODEL_RETRY_BUDGET_MS, DEFAULT_REPLAY_MAX_CONCURRENCY], [1024, 120_000, 32]);
  const c = loadConfig({ ...production, MODEL_MAX_CONCURRENCY: '4096', MODEL_RETRY_BUDGET_MS: '0', REPLAY_MAX_CONCURRENCY: '8' });
  t.same(c.model, { maxConcurrency: 4096, retryBudgetMs: 0, replayMaxConcurrency: 8 }, 'a budget of 0: a server asking to slow down hands over at once');
  t.ok(Object.isFrozen(c.model));
  for (const [name, bads] of [
    ['MODEL_MAX_CONCURRENCY', ['0', '-5', 'lots', '2.5', '100001']],
    ['MODEL_RETRY_BUDGET_MS', ['-1', 'soon', '1.5', '3600001']],
    ['REPLAY_MAX_CONCURRENCY', ['0', '-1', 'many', '1.5', '100001']],
  ] as const) {
    for (const bad of bads) t.throws(() => loadConfig({ ...production, [name]: bad }), { name: 'ConfigError', message: new RegExp(`^${name}: `) }, `${name}=${bad}`);
  }
});
