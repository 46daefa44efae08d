import { createHash } from 'node:crypto';
import { Ajv } from 'ajv';
import { ConfigError } from './errors.js';

/**
 * Configuration: read once from the environment, validated by a schema, frozen.
 * In production a missing or bad required value throws a ConfigError naming it;
 * elsewhere missing secrets get development defaults and a warning.
 */
export const DEFAULT_PORT = 3000;
export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_DATABASE_URL = 'postgresql://root@127.0.0.1:5432/mas';
export const DEFAULT_NATS_URL = 'nats://127.0.0.1:4222';
export const DEFAULT_NATS_PREFIX = 'mas';
export const DEFAULT_PARTITIONS = 16;
export const DEFAULT_HELPDESK_GLOBAL_URL = 'https://api.chat2desk.com';
export const DEFAULT_HELPDESK_EUROPE_URL = 'https://api.chat24.io';
export const DEFAULT_ACCESS_TOKEN_TTL_SECONDS = 15 * 60;
export const DEFAULT_REFRESH_TOKEN_TTL_SECONDS = 30 * 24 * 3600;
export const DEFAULT_SECRET_GRACE_SECONDS = 24 * 3600;

const DEV_JWT_SECRET = 'development-only-jwt-secret-change-me-0123456789';
const DEV_SECRETS_KEY = createHash('sha256').update('development-only-secrets-key').digest('hex');

export interface RateLimitRule {
  /** Requests allowed per window. */
  limit: number;
  windowSeconds: number;
}

export interface Config {
  readonly nodeEnv: 'production' | 'development' | 'test';
  readonly port: number;
  readonly host: string;
  readonly databaseUrl: string;
  readonly natsUrl: string;
  readonly natsPrefix: string;
  readonly publicBaseUrl: string;
  readonly jwtSecret: string;
  readonly jwtIssuer: string;
  readonly jwtAudience: string;
  readonly accessTokenTtlSeconds: number;
  readonly refreshTokenTtlSeconds: number;
  readonly partitions: number;
  readonly helpdeskGlobalUrl: string;
  readonly helpdeskEuropeUrl: string;
  /** 32-byte keys; the first encrypts, all decrypt (rotation). */
  readonly secretsKeys: readonly Buffer[];
  readonly secretGraceSeconds: number;
  readonly enforceHttps: boolean;
  /** Passed to express' `trust proxy`. */
  readonly trustProxy: boolean | number | string;
  readonly logLevel: string;
  readonly rateLimits: {
    readonly loginPerEmail: RateLimitRule;
    readonly loginPerIp: RateLimitRule;
    readonly registerPerIp: RateLimitRule;
    readonly refreshPerIp: RateLimitRule;
  };
}

export const DEFAULT_RATE_LIMITS: Config['rateLimits'] = Object.freeze({
  loginPerEmail: { limit: 10, windowSeconds: 15 * 60 },
  loginPerIp: { limit: 300, windowSeconds: 15 * 60 },
  registerPerIp: { limit: 100, windowSeconds: 60 * 60 },
  refreshPerIp: { limit: 600, windowSeconds: 15 * 60 },
});

const envSchema = {
  type: 'object',
  properties: {
    NODE_ENV: { type: 'string', enum: ['production', 'development', 'test'] },
    PORT: { type: 'integer', minimum: 0, maximum: 65535 },
    HOST: { type: 'string', minLength: 1 },
    DATABASE_URL: { type: 'string', pattern: '^postgres(ql)?://' },
    NATS_URL: { type: 'string', pattern: '^(nats|tls|ws|wss)://' },
    NATS_PREFIX: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,32}$' },
    PUBLIC_BASE_URL: { type: 'string', pattern: '^https?://[^\\s]+$' },
    JWT_SECRET: { type: 'string', minLength: 32 },
    ACCESS_TOKEN_TTL_SECONDS: { type: 'integer', minimum: 10, maximum: 86400 },
    REFRESH_TOKEN_TTL_SECONDS: { type: 'integer', minimum: 60 },
    PARTITIONS: { type: 'integer', minimum: 1, maximum: 1024 },
    HELPDESK_GLOBAL_URL: { type: 'string', pattern: '^https?://' },
    HELPDESK_EUROPE_URL: { type: 'string', pattern: '^https?://' },
    SECRETS_KEY: { type: 'string', minLength: 1 },
    SECRET_GRACE_SECONDS: { type: 'integer', minimum: 0 },
    ENFORCE_HTTPS: { type: 'string', enum: ['true', 'false', '1', '0', 'on', 'off', 'yes', 'no'] },
    TRUST_PROXY: { type: 'string' },
    LOG_LEVEL: { type: 'string', enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] },
  },
} as const;

const ajv = new Ajv({ coerceTypes: true, allErrors: false });
const validateEnv = ajv.compile(envSchema);

type Env = Record<string, string | undefined>;

function parseSecretsKeys(raw: string): Buffer[] {
  return raw.split(',').map((part, i) => {
    const s = part.trim();
    const key = /^[0-9a-fA-F]{64}$/.test(s) ? Buffer.from(s, 'hex') : Buffer.from(s, 'base64');
    if (key.length !== 32) throw new ConfigError(`SECRETS_KEY: key #${i + 1} must be 32 bytes (64 hex characters or base64)`);
    return key;
  });
}

function parseTrustProxy(raw: string | undefined): boolean | number | string {
  if (raw === undefined || raw === '' || raw === 'false') return false;
  if (raw === 'true') return true;
  if (/^\d+$/.test(raw)) return Number(raw);
  return raw;
}

export interface LoadConfigOptions {
  /** Called once per development default taken, with a one-line warning. */
  warn?: (message: string) => void;
  /** Values that are not read from the environment (tests tighten rate limits, for example). */
  overrides?: Partial<Pick<Config, 'rateLimits'>>;
}

/** Reads and validates the environment. Throws ConfigError with one line naming the bad variable. */
export function loadConfig(env: Env = process.env, options: LoadConfigOptions = {}): Config {
  const warn = options.warn ?? (() => {});
  // Empty strings mean "unset", as in most shells' `FOO= cmd`.
  const input: Record<string, unknown> = {};
  for (const key of Object.keys(envSchema.properties)) {
    const value = env[key];
    if (value !== undefined && value !== '') input[key] = value;
  }
  if (!validateEnv(input)) {
    const err = validateEnv.errors![0]!;
    const name = err.instancePath.replace(/^\//, '') || String(err.params && (err.params as { missingProperty?: string }).missingProperty);
    throw new ConfigError(`${name}: ${err.message} (got ${JSON.stringify(input[name])})`);
  }
  const v = input as Record<string, string | number | undefined>;
  const nodeEnv = (v.NODE_ENV as Config['nodeEnv'] | undefined) ?? 'development';
  const production = nodeEnv === 'production';
  const port = (v.PORT as number | undefined) ?? DEFAULT_PORT;
  const host = (v.HOST as string | undefined) ?? DEFAULT_HOST;

  const required = (name: string, devDefault: string): string => {
    const value = v[name] as string | undefined;
    if (value !== undefined) return value;
    if (production) throw new ConfigError(`${name} is required when NODE_ENV=production`);
    warn(`${name} is not set; using a development default (never use it in production)`);
    return devDefault;
  };

  const jwtSecret = required('JWT_SECRET', DEV_JWT_SECRET);
  const secretsKeys = parseSecretsKeys(required('SECRETS_KEY', DEV_SECRETS_KEY));
  const publicBaseUrl = required('PUBLIC_BASE_URL', `http://${host}:${port}`).replace(/\/+$/, '');
  const enforceRaw = v.ENFORCE_HTTPS as string | undefined;
  const enforceHttps = enforceRaw === undefined ? production : ['true', '1', 'on', 'yes'].includes(enforceRaw);

  const config: Config = {
    nodeEnv,
    port,
    host,
    databaseUrl: (v.DATABASE_URL as string | undefined) ?? DEFAULT_DATABASE_URL,
    natsUrl: (v.NATS_URL as string | undefined) ?? DEFAULT_NATS_URL,
    natsPrefix: (v.NATS_PREFIX as string | undefined) ?? DEFAULT_NATS_PREFIX,
    publicBaseUrl,
    jwtSecret,
    jwtIssuer: 'mas',
    jwtAudience: 'mas-api',
    accessTokenTtlSeconds: (v.ACCESS_TOKEN_TTL_SECONDS as number | undefined) ?? DEFAULT_ACCESS_TOKEN_TTL_SECONDS,
    refreshTokenTtlSeconds: (v.REFRESH_TOKEN_TTL_SECONDS as number | undefined) ?? DEFAULT_REFRESH_TOKEN_TTL_SECONDS,
    partitions: (v.PARTITIONS as number | undefined) ?? DEFAULT_PARTITIONS,
    helpdeskGlobalUrl: ((v.HELPDESK_GLOBAL_URL as string | undefined) ?? DEFAULT_HELPDESK_GLOBAL_URL).replace(/\/+$/, ''),
    helpdeskEuropeUrl: ((v.HELPDESK_EUROPE_URL as string | undefined) ?? DEFAULT_HELPDESK_EUROPE_URL).replace(/\/+$/, ''),
    secretsKeys: Object.freeze(secretsKeys),
    secretGraceSeconds: (v.SECRET_GRACE_SECONDS as number | undefined) ?? DEFAULT_SECRET_GRACE_SECONDS,
    enforceHttps,
    trustProxy: parseTrustProxy(env.TRUST_PROXY),
    logLevel: (v.LOG_LEVEL as string | undefined) ?? (nodeEnv === 'test' ? 'silent' : 'info'),
    rateLimits: Object.freeze({ ...DEFAULT_RATE_LIMITS, ...options.overrides?.rateLimits }),
  };
  return Object.freeze(config);
}
