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
export const DEFAULT_NATS_REPLICAS = 1;
export const DEFAULT_PUBLISH_TIMEOUT_MS = 4_000;
export const DEFAULT_PARTITIONS = 16;
export const DEFAULT_HELPDESK_GLOBAL_URL = 'https://api.chat2desk.com';
export const DEFAULT_HELPDESK_EUROPE_URL = 'https://api.chat24.io';
export const DEFAULT_WHATSAPP_GRAPH_URL = 'https://graph.facebook.com';
export const DEFAULT_WHATSAPP_GRAPH_VERSION = 'v21.0';
export const DEFAULT_TELEGRAM_API_URL = 'https://api.telegram.org';
export const DEFAULT_WHATSAPP_STATUS_WAIT_MS = 10_000;
export const DEFAULT_ACCESS_TOKEN_TTL_SECONDS = 15 * 60;
export const DEFAULT_REFRESH_TOKEN_TTL_SECONDS = 30 * 24 * 3600;
export const DEFAULT_SECRET_GRACE_SECONDS = 24 * 3600;
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 10_000;
export const DEFAULT_WEBCHAT_MAX_SOCKETS = 20_000;
export const DEFAULT_WEBCHAT_MAX_SOCKETS_PER_IP = 20;
export const DEFAULT_WEBCHAT_MESSAGES_PER_MINUTE_PER_IP = 120;
export const DEFAULT_WEBCHAT_MESSAGES_PER_MINUTE_PER_VISITOR = 20;
export const DEFAULT_OTEL_SERVICE_NAME = 'messaging-automation';
/** Model calls one worker keeps in flight (contract.md § Model calls at real model latency). */
export const DEFAULT_MODEL_MAX_CONCURRENCY = 1024;
/** Replayed messages (lib/agents/replays) one worker answers at once, shared fairly between companies. */
export const DEFAULT_REPLAY_MAX_CONCURRENCY = 32;
/** How long a model server that answers 429 / 503 (slow down) is retried before the conversation goes to a human. */
export const DEFAULT_MODEL_RETRY_BUDGET_MS = 120_000;
export const DEFAULT_INGEST_TIMEOUT_MS = 60_000;
export const DEFAULT_INGEST_MEMORY_MB = 256;
export const DEFAULT_INGEST_THREADS = 1;
export const DEFAULT_INGEST_MAX_PER_COMPANY = 1;
export const DEFAULT_DB_STATEMENT_TIMEOUT_MS = 5_000;
export const DEFAULT_SEARCH_MAX_PER_COMPANY = 4;
export const DEFAULT_SSE_MAX_PER_COMPANY = 50;
/** Per company (contract.md § No tenant slows another down); QUOTA_<NAME> overrides each. */
export const DEFAULT_QUOTAS: Quotas = Object.freeze({
  agents: 100,
  knowledgeBases: 100,
  integrations: 100,
  documentsPerBase: 10_000,
  synonymGroupsPerBase: 2_000,
  apiTokens: 50,
  users: 200,
  cannedReplies: 1_000,
  actionsPerAgent: 50,
  mcpServersPerAgent: 10,
});
const QUOTA_VARIABLES: Record<keyof Quotas, string> = {
  agents: 'QUOTA_AGENTS',
  knowledgeBases: 'QUOTA_KNOWLEDGE_BASES',
  integrations: 'QUOTA_INTEGRATIONS',
  documentsPerBase: 'QUOTA_DOCUMENTS_PER_BASE',
  synonymGroupsPerBase: 'QUOTA_SYNONYM_GROUPS_PER_BASE',
  apiTokens: 'QUOTA_API_TOKENS',
  users: 'QUOTA_USERS',
  cannedReplies: 'QUOTA_CANNED_REPLIES',
  actionsPerAgent: 'QUOTA_ACTIONS_PER_AGENT',
  mcpServersPerAgent: 'QUOTA_MCP_SERVERS_PER_AGENT',
};

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
  /** As given: one URL, or a comma-separated list of a cluster's servers. */
  readonly natsUrl: string;
  /** The servers of NATS_URL, one per entry. */
  readonly natsServers: readonly string[];
  /** Replicas of every stream and KV bucket the service creates (3 on a cluster). */
  readonly natsReplicas: number;
  /** How long an inbound publish may retry (a stream-leader election) before 503 QUEUE_UNAVAILABLE. */
  readonly publishTimeoutMs: number;
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
  /** The Meta Graph API's base address (WhatsApp Cloud API sends); a sandbox in tests and the demo. */
  readonly whatsappGraphUrl: string;
  readonly whatsappGraphVersion: string;
  /** How long after a send a crash left uncertain the worker waits for Meta's status of it before sending it again. */
  readonly whatsappStatusWaitMs: number;
  /** The Telegram Bot API's base address. */
  readonly telegramApiUrl: string;
  /** 32-byte keys; the first encrypts, all decrypt (rotation). */
  readonly secretsKeys: readonly Buffer[];
  readonly secretGraceSeconds: number;
  readonly enforceHttps: boolean;
  /** Passed to express' `trust proxy`. */
  readonly trustProxy: boolean | number | string;
  readonly logLevel: string;
  /** `json`: one JSON object per line (for a log collector); `pretty`: one readable line per entry (a terminal). */
  readonly logFormat: 'json' | 'pretty';
  /**
   * Tenant-supplied URLs (helpdesk apiUrl, model and embedding baseUrl, document URLs) may
   * reach loopback / private / link-local addresses. Off by default; on for development
   * against local stand-ins and for the tests.
   */
  readonly allowPrivateUrls: boolean;
  /**
   * `EMBEDDINGS`: `local` (default) gives every knowledge base without an embedding server the
   * meaning of its texts from the shipped sentence model (lib/knowledge/local-model.ts); `off`
   * keeps such bases lexical.
   */
  readonly embeddings: 'local' | 'off';
  /** An orderly stop (SIGTERM / SIGINT, or a fatal error) exits within this long. */
  readonly shutdownTimeoutMs: number;
  /** When set, GET /metrics needs `Authorization: Bearer <metricsToken>`; unset, it is open. */
  readonly metricsToken?: string;
  /**
   * A worker has no HTTP server of its own: with METRICS_PORT set, it answers GET /metrics
   * there (same METRICS_TOKEN rule). Unset: no listener. The gateway and the all-in-one
   * process answer /metrics on PORT (the all-in-one's holds the worker's figures too).
   */
  readonly metricsPort?: number;
  readonly rateLimits: {
    readonly loginPerEmail: RateLimitRule;
    readonly loginPerIp: RateLimitRule;
    readonly registerPerIp: RateLimitRule;
    readonly refreshPerIp: RateLimitRule;
  };
  /** Webchat sockets and messages, per gateway process (contract.md § Webchat limits). */
  readonly webchat: WebchatLimits;
  /** OpenTelemetry trace export (OTLP over HTTP); absent: no tracing at all. */
  readonly tracing?: TracingConfig;
  /** Model calls of one worker process (contract.md § Model calls at real model latency). */
  readonly model: ModelLimits;
  /** Documents' ingestion (contract.md § No tenant slows another down). */
  readonly ingest: IngestLimits;
  /** Every statement made for an API request ends within this long (503 TIMEOUT past it). */
  readonly dbStatementTimeoutMs: number;
  /** Knowledge searches of one company running at once, per process. */
  readonly searchMaxPerCompany: number;
  /** Server-Sent Event streams open at once per company, per process (429 past it). */
  readonly sseMaxPerCompany: number;
  /** What one company may hold (403 QUOTA_EXCEEDED past it). */
  readonly quotas: Quotas;
}

export interface IngestLimits {
  /** A document's parsing, chunking and embedding end within this long, or it fails. */
  readonly timeoutMs: number;
  /** Memory one document may take while parsed, decompressed data (PDF streams) included. */
  readonly memoryMb: number;
  /** Worker threads parsing documents, in all. */
  readonly threads: number;
  /** Documents of one company processed at once. */
  readonly maxPerCompany: number;
}

export interface Quotas {
  readonly agents: number;
  readonly knowledgeBases: number;
  readonly integrations: number;
  readonly documentsPerBase: number;
  readonly synonymGroupsPerBase: number;
  readonly apiTokens: number;
  readonly users: number;
  readonly cannedReplies: number;
  readonly actionsPerAgent: number;
  readonly mcpServersPerAgent: number;
}

export interface TracingConfig {
  /** Where spans are posted: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or OTEL_EXPORTER_OTLP_ENDPOINT + `/v1/traces`. */
  readonly url: string;
  /** OTEL_EXPORTER_OTLP_HEADERS (`key=value,…`, e.g. a collector's API key). */
  readonly headers: Readonly<Record<string, string>>;
  /** OTEL_SERVICE_NAME; each role adds its name (`messaging-automation-gateway`). */
  readonly serviceName: string;
}

export interface ModelLimits {
  /** Model calls in flight at once, shared fairly between companies. */
  readonly maxConcurrency: number;
  /** A model server asking us to slow down (429, 503 with Retry-After) is retried this long before the conversation goes to a human. */
  readonly retryBudgetMs: number;
  /**
   * Replayed messages answered at once (REPLAY_MAX_CONCURRENCY), shared fairly between
   * companies; their model calls take only places no customer's call waits for.
   */
  readonly replayMaxConcurrency: number;
}

export interface WebchatLimits {
  /** Open sockets of every integration together. */
  readonly maxSockets: number;
  /** Open sockets from one client address (IPv6: one /64). */
  readonly maxSocketsPerIp: number;
  readonly messagesPerMinutePerIp: number;
  readonly messagesPerMinutePerVisitor: number;
}

export const DEFAULT_RATE_LIMITS: Config['rateLimits'] = Object.freeze({
  loginPerEmail: { limit: 10, windowSeconds: 15 * 60 },
  loginPerIp: { limit: 300, windowSeconds: 15 * 60 },
  registerPerIp: { limit: 100, windowSeconds: 60 * 60 },
  refreshPerIp: { limit: 600, windowSeconds: 15 * 60 },
});

const BOOLEAN_WORDS = ['true', 'false', '1', '0', 'on', 'off', 'yes', 'no'];
const isOn = (word: string | undefined): boolean => word !== undefined && ['true', '1', 'on', 'yes'].includes(word);

const envSchema = {
  type: 'object',
  properties: {
    NODE_ENV: { type: 'string', enum: ['production', 'development', 'test'] },
    PORT: { type: 'integer', minimum: 0, maximum: 65535 },
    HOST: { type: 'string', minLength: 1 },
    DATABASE_URL: { type: 'string', pattern: '^postgres(ql)?://' },
    NATS_URL: { type: 'string', pattern: '^(nats|tls|ws|wss)://[^,\\s]+(\\s*,\\s*(nats|tls|ws|wss)://[^,\\s]+)*$' },
    NATS_REPLICAS: { type: 'integer', minimum: 1, maximum: 5 },
    PUBLISH_TIMEOUT_MS: { type: 'integer', minimum: 100, maximum: 60_000 },
    NATS_PREFIX: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,32}$' },
    PUBLIC_BASE_URL: { type: 'string', pattern: '^https?://[^\\s]+$' },
    JWT_SECRET: { type: 'string', minLength: 32 },
    ACCESS_TOKEN_TTL_SECONDS: { type: 'integer', minimum: 10, maximum: 86400 },
    REFRESH_TOKEN_TTL_SECONDS: { type: 'integer', minimum: 60 },
    PARTITIONS: { type: 'integer', minimum: 1, maximum: 1024 },
    HELPDESK_GLOBAL_URL: { type: 'string', pattern: '^https?://' },
    HELPDESK_EUROPE_URL: { type: 'string', pattern: '^https?://' },
    WHATSAPP_GRAPH_URL: { type: 'string', pattern: '^https?://' },
    WHATSAPP_GRAPH_VERSION: { type: 'string', pattern: '^v\\d{1,3}\\.\\d{1,3}$' },
    TELEGRAM_API_URL: { type: 'string', pattern: '^https?://' },
    WHATSAPP_STATUS_WAIT_MS: { type: 'integer', minimum: 1_000, maximum: 3_600_000 },
    SECRETS_KEY: { type: 'string', minLength: 1 },
    SECRET_GRACE_SECONDS: { type: 'integer', minimum: 0 },
    ENFORCE_HTTPS: { type: 'string', enum: BOOLEAN_WORDS },
    TRUST_PROXY: { type: 'string' },
    LOG_LEVEL: { type: 'string', enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] },
    LOG_FORMAT: { type: 'string', enum: ['json', 'pretty'] },
    ALLOW_PRIVATE_URLS: { type: 'string', enum: BOOLEAN_WORDS },
    EMBEDDINGS: { type: 'string', enum: ['local', 'off'] },
    SHUTDOWN_TIMEOUT_MS: { type: 'integer', minimum: 100, maximum: 600_000 },
    // A bearer token: long enough not to be guessed, no whitespace (it travels in a header).
    METRICS_TOKEN: { type: 'string', minLength: 16, maxLength: 512, pattern: '^[\\x21-\\x7e]+$' },
    METRICS_PORT: { type: 'integer', minimum: 0, maximum: 65535 },
    WEBCHAT_MAX_SOCKETS: { type: 'integer', minimum: 1, maximum: 1_000_000 },
    WEBCHAT_MAX_SOCKETS_PER_IP: { type: 'integer', minimum: 1, maximum: 1_000_000 },
    WEBCHAT_MESSAGES_PER_MINUTE_PER_IP: { type: 'integer', minimum: 1, maximum: 1_000_000 },
    WEBCHAT_MESSAGES_PER_MINUTE_PER_VISITOR: { type: 'integer', minimum: 1, maximum: 1_000_000 },
    OTEL_EXPORTER_OTLP_ENDPOINT: { type: 'string', pattern: '^https?://[^\\s]+$' },
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: { type: 'string', pattern: '^https?://[^\\s]+$' },
    OTEL_EXPORTER_OTLP_HEADERS: { type: 'string', pattern: '^\\s*[^=,\\s]+\\s*=[^,]*(,\\s*[^=,\\s]+\\s*=[^,]*)*$' },
    OTEL_SERVICE_NAME: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,64}$' },
    MODEL_MAX_CONCURRENCY: { type: 'integer', minimum: 1, maximum: 100_000 },
    MODEL_RETRY_BUDGET_MS: { type: 'integer', minimum: 0, maximum: 3_600_000 },
    REPLAY_MAX_CONCURRENCY: { type: 'integer', minimum: 1, maximum: 100_000 },
    INGEST_TIMEOUT_MS: { type: 'integer', minimum: 1000, maximum: 3_600_000 },
    INGEST_MEMORY_MB: { type: 'integer', minimum: 16, maximum: 16_384 },
    INGEST_THREADS: { type: 'integer', minimum: 1, maximum: 64 },
    INGEST_MAX_PER_COMPANY: { type: 'integer', minimum: 1, maximum: 64 },
    DB_STATEMENT_TIMEOUT_MS: { type: 'integer', minimum: 100, maximum: 600_000 },
    SEARCH_MAX_PER_COMPANY: { type: 'integer', minimum: 1, maximum: 1000 },
    SSE_MAX_PER_COMPANY: { type: 'integer', minimum: 1, maximum: 100_000 },
    ...Object.fromEntries(Object.values(QUOTA_VARIABLES).map((name) => [name, { type: 'integer', minimum: 0, maximum: 10_000_000 }])),
  },
} as const;

/** Variables whose values are credentials. */
const SECRET_VARIABLES = new Set(['JWT_SECRET', 'SECRETS_KEY', 'METRICS_TOKEN', 'OTEL_EXPORTER_OTLP_HEADERS']);

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

function parseTrustProxy(raw: string | undefined, production: boolean): boolean | number | string {
  if (raw === undefined || raw === '' || raw === 'false') return false;
  // `true` believes every client's X-Forwarded-For and X-Forwarded-Proto: anyone could pick their IP (rate limits) and claim https.
  if (raw === 'true' && production) {
    throw new ConfigError('TRUST_PROXY: "true" trusts every client\'s X-Forwarded-* headers in production; set the number of proxy hops (e.g. 1) or the proxies\' addresses');
  }
  if (raw === 'true') return true;
  if (/^\d+$/.test(raw)) return Number(raw);
  return raw;
}

/** `a=1, b=x%20y` → {a: '1', b: 'x y'} (the OTLP exporters' header syntax: values URL-encoded). */
function parseOtlpHeaders(raw: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of raw ? raw.split(',') : []) {
    const at = pair.indexOf('=');
    const key = pair.slice(0, at).trim();
    let value = pair.slice(at + 1).trim();
    try {
      value = decodeURIComponent(value);
    } catch {
      throw new ConfigError(`OTEL_EXPORTER_OTLP_HEADERS: the value of ${key} is not URL-encoded correctly`);
    }
    out[key] = value;
  }
  return Object.freeze(out);
}

function tracingConfig(v: Record<string, string | number | undefined>): TracingConfig | undefined {
  const traces = v.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as string | undefined;
  const base = v.OTEL_EXPORTER_OTLP_ENDPOINT as string | undefined;
  if (!traces && !base) return undefined;
  return Object.freeze({
    url: traces ?? `${base!.replace(/\/+$/, '')}/v1/traces`,
    headers: parseOtlpHeaders(v.OTEL_EXPORTER_OTLP_HEADERS as string | undefined),
    serviceName: (v.OTEL_SERVICE_NAME as string | undefined) ?? DEFAULT_OTEL_SERVICE_NAME,
  });
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
    // A secret's value is never repeated: the message goes to logs.
    const got = SECRET_VARIABLES.has(name) ? '' : ` (got ${JSON.stringify(input[name])})`;
    throw new ConfigError(`${name}: ${err.message}${got}`);
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
  const natsUrl = (v.NATS_URL as string | undefined) ?? DEFAULT_NATS_URL;
  const enforceRaw = v.ENFORCE_HTTPS as string | undefined;
  const enforceHttps = enforceRaw === undefined ? production : isOn(enforceRaw);

  const config: Config = {
    nodeEnv,
    port,
    host,
    databaseUrl: (v.DATABASE_URL as string | undefined) ?? DEFAULT_DATABASE_URL,
    natsUrl,
    natsServers: Object.freeze(natsUrl.split(',').map((u) => u.trim())),
    natsReplicas: (v.NATS_REPLICAS as number | undefined) ?? DEFAULT_NATS_REPLICAS,
    publishTimeoutMs: (v.PUBLISH_TIMEOUT_MS as number | undefined) ?? DEFAULT_PUBLISH_TIMEOUT_MS,
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
    whatsappGraphUrl: ((v.WHATSAPP_GRAPH_URL as string | undefined) ?? DEFAULT_WHATSAPP_GRAPH_URL).replace(/\/+$/, ''),
    whatsappGraphVersion: (v.WHATSAPP_GRAPH_VERSION as string | undefined) ?? DEFAULT_WHATSAPP_GRAPH_VERSION,
    whatsappStatusWaitMs: (v.WHATSAPP_STATUS_WAIT_MS as number | undefined) ?? DEFAULT_WHATSAPP_STATUS_WAIT_MS,
    telegramApiUrl: ((v.TELEGRAM_API_URL as string | undefined) ?? DEFAULT_TELEGRAM_API_URL).replace(/\/+$/, ''),
    secretsKeys: Object.freeze(secretsKeys),
    secretGraceSeconds: (v.SECRET_GRACE_SECONDS as number | undefined) ?? DEFAULT_SECRET_GRACE_SECONDS,
    enforceHttps,
    trustProxy: parseTrustProxy(env.TRUST_PROXY, production),
    logLevel: (v.LOG_LEVEL as string | undefined) ?? (nodeEnv === 'test' ? 'silent' : 'info'),
    logFormat: (v.LOG_FORMAT as 'json' | 'pretty' | undefined) ?? 'json',
    allowPrivateUrls: isOn(v.ALLOW_PRIVATE_URLS as string | undefined),
    embeddings: (v.EMBEDDINGS as 'local' | 'off' | undefined) ?? 'local',
    shutdownTimeoutMs: (v.SHUTDOWN_TIMEOUT_MS as number | undefined) ?? DEFAULT_SHUTDOWN_TIMEOUT_MS,
    metricsToken: v.METRICS_TOKEN as string | undefined,
    metricsPort: v.METRICS_PORT as number | undefined,
    rateLimits: Object.freeze({ ...DEFAULT_RATE_LIMITS, ...options.overrides?.rateLimits }),
    webchat: Object.freeze({
      maxSockets: (v.WEBCHAT_MAX_SOCKETS as number | undefined) ?? DEFAULT_WEBCHAT_MAX_SOCKETS,
      maxSocketsPerIp: (v.WEBCHAT_MAX_SOCKETS_PER_IP as number | undefined) ?? DEFAULT_WEBCHAT_MAX_SOCKETS_PER_IP,
      messagesPerMinutePerIp: (v.WEBCHAT_MESSAGES_PER_MINUTE_PER_IP as number | undefined) ?? DEFAULT_WEBCHAT_MESSAGES_PER_MINUTE_PER_IP,
      messagesPerMinutePerVisitor: (v.WEBCHAT_MESSAGES_PER_MINUTE_PER_VISITOR as number | undefined) ?? DEFAULT_WEBCHAT_MESSAGES_PER_MINUTE_PER_VISITOR,
    }),
    tracing: tracingConfig(v),
    model: Object.freeze({
      maxConcurrency: (v.MODEL_MAX_CONCURRENCY as number | undefined) ?? DEFAULT_MODEL_MAX_CONCURRENCY,
      retryBudgetMs: (v.MODEL_RETRY_BUDGET_MS as number | undefined) ?? DEFAULT_MODEL_RETRY_BUDGET_MS,
      replayMaxConcurrency: (v.REPLAY_MAX_CONCURRENCY as number | undefined) ?? DEFAULT_REPLAY_MAX_CONCURRENCY,
    }),
    ingest: Object.freeze({
      timeoutMs: (v.INGEST_TIMEOUT_MS as number | undefined) ?? DEFAULT_INGEST_TIMEOUT_MS,
      memoryMb: (v.INGEST_MEMORY_MB as number | undefined) ?? DEFAULT_INGEST_MEMORY_MB,
      threads: (v.INGEST_THREADS as number | undefined) ?? DEFAULT_INGEST_THREADS,
      maxPerCompany: (v.INGEST_MAX_PER_COMPANY as number | undefined) ?? DEFAULT_INGEST_MAX_PER_COMPANY,
    }),
    dbStatementTimeoutMs: (v.DB_STATEMENT_TIMEOUT_MS as number | undefined) ?? DEFAULT_DB_STATEMENT_TIMEOUT_MS,
    searchMaxPerCompany: (v.SEARCH_MAX_PER_COMPANY as number | undefined) ?? DEFAULT_SEARCH_MAX_PER_COMPANY,
    sseMaxPerCompany: (v.SSE_MAX_PER_COMPANY as number | undefined) ?? DEFAULT_SSE_MAX_PER_COMPANY,
    quotas: Object.freeze(Object.fromEntries(
      (Object.keys(DEFAULT_QUOTAS) as (keyof Quotas)[]).map((k) => [k, (v[QUOTA_VARIABLES[k]] as number | undefined) ?? DEFAULT_QUOTAS[k]]),
    ) as unknown as Quotas),
  };
  return Object.freeze(config);
}
