import { randomUUID } from 'node:crypto';
import type { IncomingMessage, RequestListener } from 'node:http';
import type { TLSSocket } from 'node:tls';
import express, { type Express } from 'express';
import helmet from 'helmet';
import type { Config } from '../lib/config.js';
import type { Orm } from '../lib/db.js';
import type { Logger } from '../lib/logger.js';
import type { NatsConnection } from '../lib/nats.js';
import { SecretBox } from '../lib/secrets.js';
import { AccessTokens } from './auth/access-tokens.js';
import { createAuthenticator } from './auth/authenticate.js';
import { Sessions } from './auth/sessions.js';
import { errorHandler, notFoundHandler } from './http/errors.js';
import { createMetrics } from './http/metrics.js';
import { agentRoutes } from './routes/agents.js';
import { apiTokenRoutes } from './routes/api-tokens.js';
import { authRoutes } from './routes/auth.js';
import { billingRoutes } from './routes/billing.js';
import { conversationRoutes } from './routes/conversations.js';
import { dashboardRoutes } from './routes/dashboard.js';
import { healthRoutes } from './routes/health.js';
import { integrationRoutes } from './routes/integrations.js';
import { webhookIngress } from './webhook/ingress.js';
import { WebchatServer, type WebchatOptions } from './webchat/server.js';
import { widgetRoutes } from './webchat/widget-route.js';
import { knowledgeBodyParser, knowledgeRoutes } from './routes/knowledge.js';

export interface GatewayDeps {
  config: Config;
  orm: Orm;
  nc: NatsConnection;
  logger: Logger;
  /** Injectable clock (ms since epoch) for token expiry and rate limits. */
  now?: () => number;
  /** Webchat socket limits and timings (tests shorten them). */
  webchat?: WebchatOptions;
}

/** JSON bodies of the API (webhooks read their raw bytes on their own route). */
const JSON_BODY_LIMIT = '1mb';

/** The express app with what it holds beyond its routes. */
export interface GatewayApp {
  /** The HTTP server's request listener: webhook POSTs on their fast path, everything else to express. */
  handler: RequestListener;
  app: Express;
  /** The webchat socket server; the HTTP server routes its upgrades here. */
  webchat: WebchatServer;
  /** Releases the app's subscriptions and sockets (after the HTTP server stopped accepting). */
  close: () => Promise<void>;
}

export function createGatewayApp(deps: GatewayDeps): GatewayApp {
  const { config, orm, logger } = deps;
  const now = deps.now ?? Date.now;
  const secrets = new SecretBox(config.secretsKeys);
  const tokens = new AccessTokens(config, now);
  const sessions = new Sessions(orm, config, tokens, now);
  const auth = createAuthenticator(orm, tokens, sessions, now);
  const metrics = createMetrics();

  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', config.trustProxy);
  app.use((req, res, next) => {
    req.requestId = randomUUID();
    res.setHeader('X-Request-Id', req.requestId);
    next();
  });
  app.use(metrics.observe);
  app.use(helmet({ contentSecurityPolicy: false }));
  app.use(healthRoutes({ orm, nc: deps.nc, registry: metrics.registry }));

  // Express's own rule (req.secure) for the webhook fast path, which never enters express.
  const isSecure = (req: IncomingMessage): boolean => {
    if ((req.socket as TLSSocket).encrypted) return true;
    const trust = app.get('trust proxy fn') as (address: string | undefined, hop: number) => boolean;
    if (!trust(req.socket.remoteAddress, 0)) return false;
    return String(req.headers['x-forwarded-proto'] ?? '').split(',', 1)[0]!.trim() === 'https';
  };
  // Before any body parser: webhooks hash their raw bytes as they arrive.
  const webhooks = webhookIngress({ config, orm, nc: deps.nc, logger, box: secrets, now, isSecure, observe: metrics.record });
  // The webchat socket checks integrations through the same cache (and its NATS invalidation).
  const webchat = new WebchatServer({ config, orm, nc: deps.nc, logger, cache: webhooks.cache, now, options: deps.webchat });
  app.use('/api/webhook', webhooks.router);
  app.use(widgetRoutes());

  app.use('/api/knowledge-bases', knowledgeBodyParser); // documents up to ~1 MB need a little more than 1mb of JSON
  app.use('/api', express.json({ limit: JSON_BODY_LIMIT, type: ['application/json', 'application/*+json'] }));
  app.use('/api/auth', authRoutes({ orm, config, logger, sessions, auth, now }));
  app.use('/api/api-tokens', apiTokenRoutes(auth));
  app.use('/api/agents', agentRoutes(auth, secrets));
  app.use('/api/integrations', integrationRoutes({ auth, config, box: secrets, cache: webhooks.cache, now }));
  app.use('/api/knowledge-bases', knowledgeRoutes(auth));
  app.use('/api', billingRoutes(auth));
  app.use('/api', conversationRoutes({ auth, config, nc: deps.nc, logger }));

  // The dashboard: exactly GET / and /app/<version>/… (after every API route, shadowing none).
  app.use(dashboardRoutes());
  app.use(notFoundHandler);
  app.use(errorHandler(logger));
  return {
    handler: (req, res) => {
      if (!webhooks.handlePost(req, res)) app(req, res);
    },
    app,
    webchat,
    close: async () => {
      await webchat.close();
      webhooks.close();
    },
  };
}
