import type { IncomingMessage, RequestListener } from 'node:http';
import express, { type Express } from 'express';
import helmet from 'helmet';
import type { Registry } from 'prom-client';
import type { Config } from '../lib/config.js';
import { openApiDatabase, openSqlPool, type Orm } from '../lib/db.js';
import { VectorIndex } from '../lib/knowledge/vectors.js';
import type { Logger } from '../lib/logger.js';
import type { NatsConnection } from '../lib/nats.js';
import { SecretBox } from '../lib/secrets.js';
import { streamNames } from '../lib/streams.js';
import { AccessTokens } from './auth/access-tokens.js';
import { createAuthenticator } from './auth/authenticate.js';
import { CredentialWatch } from './auth/credential-watch.js';
import { Sessions } from './auth/sessions.js';
import { errorHandler, notFoundHandler } from './http/errors.js';
import { TeamColumns } from './conversations/team-columns.js';
import { EventStreams } from './http/event-streams.js';
import { apiPolicy } from './http/api-policy.js';
import { jsonBody, jsonBodyOnly } from './http/json-body.js';
import { buildOpenApiDocument } from './http/openapi.js';
import type { RouteDoc } from './http/route-docs.js';
import { AppRoutes } from './http/route.js';
import { accessLog, createMetrics, observeRequests, type RequestObserver } from './http/request-observer.js';
import { RouteTable } from './http/route-table.js';
import { secureRequestRule } from './http/secure-request.js';
import { storableQuery } from './http/validate.js';
import { actionRoutes } from './routes/actions.js';
import { agentRoutes } from './routes/agents.js';
import { agentVersionRoutes } from './routes/agent-versions.js';
import { analyticsRoutes } from './routes/analytics.js';
import { apiDocsRoutes } from './routes/api-docs.js';
import { apiTokenRoutes } from './routes/api-tokens.js';
import { authRoutes } from './routes/auth.js';
import { billingRoutes } from './routes/billing.js';
import { cannedReplyRoutes } from './routes/canned-replies.js';
import { conversationRoutes } from './routes/conversations.js';
import { dashboard } from './routes/dashboard.js';
import { healthRoutes, metricsGuard } from './routes/health.js';
import { integrationRoutes } from './routes/integrations.js';
import { leadRoutes } from './routes/leads.js';
import { mcpServerRoutes } from './routes/mcp-servers.js';
import { toolCallRoutes } from './routes/tool-calls.js';
import { userRoutes } from './routes/users.js';
import type { WebhookActivityOptions } from './webhook/activity.js';
import { webhookIngress, webhookPostRouteDoc } from './webhook/ingress.js';
import { WebchatServer, webchatRouteDoc, type WebchatOptions } from './webchat/server.js';
import { widgetRoute } from './webchat/widget-route.js';
import { KnowledgeIngestor, type IngestorOptions } from './knowledge/ingestor.js';
import { agentChanges } from './lib/agent-changes.js';
import { evaluationRoutes } from './routes/evaluations.js';
import { replayRoutes } from './routes/replays.js';
import { knowledgeBodyParser, knowledgeRoutes } from './routes/knowledge.js';
import { knowledgeGapRoutes } from './routes/knowledge-gaps.js';

export interface GatewayDeps {
  config: Config;
  /** The runtime's ORM (lib/runtime.ts): the message path's; the API opens connections of its own. */
  orm: Orm;
  nc: NatsConnection;
  logger: Logger;
  /** Injectable clock (ms since epoch) for token expiry and rate limits. */
  now?: () => number;
  /** Webchat socket limits and timings (tests shorten them). */
  webchat?: WebchatOptions;
  /** Background document processing (tests shorten the lease and sweep). */
  knowledge?: IngestorOptions;
  /** How often the webhook activity counted in memory is written (tests shorten it). */
  webhookActivity?: WebhookActivityOptions;
  /** The process's metrics registry (an all-in-one process shares it with its worker); default: the app's own. */
  registry?: Registry;
}

/**
 * The message path's plain SQL in a gateway: the webchat sockets' reads (coalesced, at most
 * two statements of each kind at once) and webhook activity, written every few seconds.
 */
const MESSAGE_PATH_SQL_POOL_MAX = 4;

/** JSON bodies of the API (webhooks read their raw bytes on their own route). */
const JSON_BODY_LIMIT = '1mb';

/** Routes the HTTP server answers before express (gateway/server.ts): webhook POSTs and the webchat upgrade. */
export const SERVER_ROUTE_DOCS: readonly RouteDoc[] = [webhookPostRouteDoc, webchatRouteDoc];

/** The express app with what it holds beyond its routes. */
export interface GatewayApp {
  /** The HTTP server's request listener: webhook POSTs on their fast path, everything else to express. */
  handler: RequestListener;
  app: Express;
  /** The webchat socket server; the HTTP server routes its upgrades here. */
  webchat: WebchatServer;
  /** Background document processing. */
  ingestor: KnowledgeIngestor;
  /** Releases the app's subscriptions and sockets (after the HTTP server stopped accepting). */
  close: () => Promise<void>;
}

export function createGatewayApp(deps: GatewayDeps): GatewayApp {
  const { config, logger } = deps;
  const now = deps.now ?? Date.now;
  // Separate connections for the API and the message path (lib/db.ts, ApiDatabase): API load
  // cannot take the connections replies need. The API's statements end within DB_STATEMENT_TIMEOUT_MS.
  const api = openApiDatabase({ url: config.databaseUrl, statementTimeoutMs: config.dbStatementTimeoutMs });
  const { orm, sql } = api;
  // The message path (webhook ingress, the webchat socket) and /readyz: the runtime's ORM, and
  // plain SQL of their own (webchat reads, webhook activity), without a statement timeout.
  const messages = { orm: deps.orm, sql: openSqlPool({ url: config.databaseUrl, poolMax: MESSAGE_PATH_SQL_POOL_MAX }) };
  const secrets = new SecretBox(config.secretsKeys);
  const tokens = new AccessTokens(config, now);
  const sessions = new Sessions(orm, config, tokens, now);
  const auth = createAuthenticator(orm, tokens, sessions, now);
  // Server-Sent Event streams end with their credential and are counted per company.
  const credentials = new CredentialWatch({ orm, sessions, logger, now });
  const streams = new EventStreams({ credentials, maxPerCompany: config.sseMaxPerCompany });
  // What a team writes of its conversations (assignee, labels, reads), told to live views as it changes.
  const team = new TeamColumns({ sql, nc: deps.nc, names: streamNames(config.natsPrefix), logger });
  const vectors = new VectorIndex();
  // Every change the workers' agents depend on is announced before its answer (gateway/lib/agent-changes.ts).
  const changes = agentChanges(deps.nc, streamNames(config.natsPrefix).agentChanges, logger);
  const ingestor = new KnowledgeIngestor({ orm, sql, secrets, config, logger, changes }, deps.knowledge);
  ingestor.start();

  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', config.trustProxy);
  const isSecure = secureRequestRule(app);
  const routeTable = RouteTable.of(app);
  // Every route is mounted with its doc under the same prefix: the OpenAPI document is built from them.
  const routes = new AppRoutes(app, { ...auth, metrics: metricsGuard(config.metricsToken) });
  const metrics = createMetrics(deps.registry);
  const logRequest = accessLog(logger);
  // Every request, express's or the webhook fast path's, is timed and logged under one route name.
  const observeRequest: RequestObserver = (request) => {
    metrics.record(request);
    logRequest(request);
  };
  app.use(observeRequests((method, path) => routeTable.match(method, path), observeRequest));
  app.use(helmet({ contentSecurityPolicy: false }));
  routes.mount('/', healthRoutes({ orm: messages.orm, nc: deps.nc, registry: metrics.registry, metricsToken: config.metricsToken, names: streamNames(config.natsPrefix), natsReplicas: config.natsReplicas }));
  app.use('/api', apiPolicy({ enforceHttps: config.enforceHttps, isSecure }));
  // A query string holding U+0000 or an unpaired surrogate: 400 naming the parameter, on every
  // express route under /api (bodies: their validators; webhook POSTs never reach express).
  app.use('/api', storableQuery);

  // Express's own rule (req.ip) for the webchat upgrade, which never enters express either:
  // the socket's address, or the forwarded one when the proxy in front is trusted.
  const clientIp = (req: IncomingMessage): string | undefined =>
    (Object.create(app.request, { headers: { value: req.headers }, socket: { value: req.socket } }) as express.Request).ip;
  // Before any body parser: webhooks hash their raw bytes as they arrive.
  const webhooks = webhookIngress({ config, orm: messages.orm, sql: messages.sql, activity: deps.webhookActivity, nc: deps.nc, logger, box: secrets, now, isSecure, observe: observeRequest });
  // The webchat socket checks integrations through the same cache (and its NATS invalidation).
  // Upgrades are logged, not timed: a socket's handshake is not a request of the latency histogram.
  const webchat = new WebchatServer({ config, sql: messages.sql, nc: deps.nc, logger, cache: webhooks.cache, isSecure, clientIp, now, observe: logRequest, options: deps.webchat });
  routes.mount('/api/webhook', webhooks.routes);
  routes.servedAhead(SERVER_ROUTE_DOCS);
  routes.mount('/', [widgetRoute()]);

  app.use('/api/knowledge-bases', knowledgeBodyParser(config)); // documents up to ~1 MB, and a base's synonyms, need more than 1mb of JSON
  app.use('/api', jsonBody(JSON_BODY_LIMIT));
  app.use('/api', jsonBodyOnly);
  routes.mount('/api/auth', authRoutes({ orm, config, logger, sessions, now }));
  // A company's own prefixes: any path under them needs the credential before it is matched.
  // The company's setup needs an admin (operators get 403 FORBIDDEN); conversations and leads any user.
  routes.mount('/api/api-tokens', apiTokenRoutes(config.quotas), { access: 'session', role: 'admin' });
  routes.mount(
    '/api/agents',
    [...agentRoutes(secrets, config, changes), ...agentVersionRoutes(config, changes), ...evaluationRoutes({ config, sql, secrets, vectors, logger }), ...replayRoutes({ config, sql, secrets, changes }), ...actionRoutes(secrets, config, changes), ...mcpServerRoutes(secrets, config, changes), ...toolCallRoutes()],
    { access: 'any', role: 'admin' },
  );
  routes.mount('/api/integrations', integrationRoutes({ config, box: secrets, cache: webhooks.cache, changes, sql, now }), { access: 'any', role: 'admin' });
  routes.mount('/api/knowledge-bases', [...knowledgeRoutes({ config, sql, secrets, vectors, ingestor, logger, changes }), ...knowledgeGapRoutes({ sql, now })], { access: 'any', role: 'admin' });
  routes.mount('/api/users', userRoutes({ config, team, now }), { access: 'any' });
  routes.mount('/api/canned-replies', cannedReplyRoutes(config.quotas), { access: 'any' });
  routes.mount('/api', [...billingRoutes(), ...conversationRoutes({ config, nc: deps.nc, logger, sql, team, streams }), ...leadRoutes({ sql }), ...analyticsRoutes({ sql, now })]);
  // The dashboard: exactly GET / and /app/<version>/…, so it shadows no other route.
  const pages = dashboard();
  routes.mount('/', pages.routes);
  app.use('/app/:version', pages.assets);
  // The docs routes serve the document of every route, themselves included: built once all are mounted.
  routes.mount('/api', apiDocsRoutes(() => openApiDocument));
  const openApiDocument = buildOpenApiDocument(routes.docs(), { serverUrl: config.publicBaseUrl });
  app.use(notFoundHandler);
  app.use(errorHandler(logger));
  return {
    handler: (req, res) => {
      if (!webhooks.handlePost(req, res)) app(req, res);
    },
    app,
    webchat,
    ingestor,
    close: async () => {
      credentials.close();
      await webchat.close();
      await webhooks.close();
      await ingestor.close();
      await messages.sql.end();
      await api.close();
    },
  };
}
