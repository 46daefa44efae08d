import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Response } from 'express';
import type { Config } from '../../lib/config.js';
import { openSqlPool, type Orm, type SqlPool } from '../../lib/db.js';
import { AppError } from '../../lib/errors.js';
import type { Logger } from '../../lib/logger.js';
import type { NatsConnection } from '../../lib/nats.js';
import type { SecretBox } from '../../lib/secrets.js';
import { mayNeedStorable, storable } from '../../lib/text.js';
import { EnvelopeTooLargeError, inboundPublisher, partitionOfEnvelope } from '../../lib/inbound.js';
import { AcceptedJournal } from '../../lib/inbound-journal.js';
import { streamNames, type StreamNames } from '../../lib/streams.js';
import { failSpan, SpanKind, startSpan, tracing, withSpan } from '../../lib/tracing.js';
import type { InboundEnvelope } from '../../schema/envelope.js';
import type { IntegrationType } from '../../schema/entities.js';
import { API_CACHE_CONTROL } from '../http/api-policy.js';
import { writeError } from '../../lib/error-response.js';
import { observeOnClose, requestIdOf, requestTraceId, UNMATCHED_ROUTE, type RequestObserver } from '../http/request-observer.js';
import type { ParamDoc, RouteDoc } from '../http/route-docs.js';
import { defineRoute, type Route } from '../http/route.js';
import { object } from '../http/schemas.js';
import { idParam, idPathParam } from '../http/validate.js';
import { WebhookActivity, type WebhookActivityOptions } from './activity.js';
import { HELPDESK_PAYLOAD_VALIDATORS, normaliseHelpdesk, type HelpdeskInbound } from './helpdesk-normaliser.js';
import { IntegrationCache, type CachedIntegration } from './integration-cache.js';
import { SIGNATURE_HEADERS, SIGNATURE_RE, signatureRefused, SignatureVerifier, type BodySignature } from './signature.js';

/**
 * Webhook ingress: `POST /api/webhook/:connectorType/:integrationId`, checked in the
 * contract's order: connector type (404) → integration of that connector (404) → HTTPS when
 * enforced (403) → signature (401) → active (403) → size ≤ 1 MiB (413) → JSON (400) →
 * normalise (400 / ignored) → durable publish to JetStream (lib/inbound.ts: retried through a
 * stream-leader election for up to PUBLISH_TIMEOUT_MS) and, at the same time, a group-committed
 * record of the acceptance in PostgreSQL (lib/inbound-journal.ts: what JetStream loses is
 * published again from it) → 200 `{"ok":true}`, sent only after the JetStream ack (503
 * QUEUE_UNAVAILABLE when NATS cannot take it, so the sender retries). No database read on this
 * path (IntegrationCache), one JSON parse.
 *
 * Mounted before the `/api` JSON parser: it reads the raw bytes itself, hashing them as
 * they arrive, so the signature can be checked before a too-large body is refused.
 */
export const MAX_WEBHOOK_BODY_BYTES = 1024 * 1024;
/** Beyond this the body is not even read (its signature cannot be checked either). */
export const WEBHOOK_HARD_CAP_BYTES = 8 * 1024 * 1024;

/** Connector types that exist; only those with a normaliser take HTTP webhooks (webchat uses a WebSocket). */
const CONNECTORS: Record<IntegrationType, ((payload: unknown, raw: Uint8Array, receivedAt: string) => HelpdeskInbound) | null> = {
  helpdesk: normaliseHelpdesk,
  webchat: null,
};

export interface WebhookIngressDeps {
  config: Config;
  orm: Orm;
  /** Where the webhook activity (last webhook, signature refusals) is written, in batches off the webhook path. */
  sql: SqlPool;
  activity?: WebhookActivityOptions;
  nc: NatsConnection;
  logger: Logger;
  box: SecretBox;
  now?: () => number;
  /** Whether the request arrived over TLS (directly or via a trusted proxy), by express's `trust proxy` rules. */
  isSecure: (req: IncomingMessage) => boolean;
  /** Told of every webhook POST when its response closes (metrics, the access log). */
  observe: RequestObserver;
}

export interface WebhookIngress {
  /** `GET /api/webhook/:connectorType/:integrationId` (endpoint verification), mounted in express at /api/webhook. */
  routes: readonly Route[];
  /**
   * `POST /api/webhook/<connectorType>/<integrationId>`, served on the bare HTTP server ahead of
   * express (gateway/app.ts): the hot path needs none of the app-wide middleware. Returns false
   * for any other request.
   */
  handlePost: (req: IncomingMessage, res: ServerResponse) => boolean;
  /** Shared with the integration routes, which announce every change through it. */
  cache: IntegrationCache;
  /** Stops the cache's subscription and writes the last webhook activity. */
  close: () => Promise<void>;
}

interface ReadBody {
  /** The body, or null when it is larger than MAX_WEBHOOK_BODY_BYTES. */
  body: Buffer | null;
  /** True when reading stopped at the hard cap. */
  overHardCap: boolean;
}

/** Reads the request, feeding every chunk to the signature, keeping at most `limit` bytes. */
function readSigned(req: IncomingMessage, signature: BodySignature, limit: number, hardCap: number): Promise<ReadBody> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let keep = true;
    const done = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > hardCap) {
        done();
        req.pause();
        resolve({ body: null, overHardCap: true });
        return;
      }
      signature.update(chunk);
      if (!keep) return;
      if (size > limit) {
        keep = false;
        chunks.length = 0;
      } else chunks.push(chunk);
    };
    const onEnd = () => {
      done();
      resolve({ body: keep ? (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)) : null, overHardCap: false });
    };
    const onError = (err: Error) => {
      done();
      reject(err);
    };
    const onClose = () => {
      done();
      // Nobody is left to read the answer; an AppError keeps it out of the error log.
      reject(new AppError('VALIDATION_ERROR', 'The client closed the request before its body was complete.'));
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

const notFoundConnector = () => new AppError('NOT_FOUND', 'Unknown connector type.');
const notFoundIntegration = () => new AppError('NOT_FOUND', 'Integration not found.');
/** interface.md: the webchat connector takes no HTTP delivery; say where it does speak. */
const webchatSpeaksWebSocket = (id: number) =>
  new AppError('NOT_FOUND', `Webchat integrations do not take webhooks: the widget speaks WebSocket at /api/webchat/${id}/ws (embed /widget.js).`);
const OK_BODY = '{"ok":true}';
const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8', 'x-content-type-options': 'nosniff' };
/** `/api/webhook/<connectorType>/<integrationId>`; anything else is express's to answer. */
const WEBHOOK_PATH = /^\/api\/webhook\/([^/]+)\/([^/]+)\/?$/;
/** What idParam takes: anything else names no integration (and is not worth an attribute). */
const ROW_ID = /^[1-9]\d{0,9}$/;
const VERIFIED_BODY = '{"ok":true,"verified":true}';
/** Deepest nesting of arrays / objects a webhook body may have. */
export const MAX_JSON_DEPTH = 32;

/** True when `value` nests arrays / objects deeper than `max` (iterative: no recursion on hostile input). */
export function nestedDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth >= max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
  }
  return false;
}

const sendJson = (res: Response, body: string) => {
  res.status(200).type('application/json').send(body);
};

export function webhookIngress(deps: WebhookIngressDeps): WebhookIngress {
  const { config, logger } = deps;
  const now = deps.now ?? Date.now;
  const names: StreamNames = streamNames(config.natsPrefix);
  const cache = new IntegrationCache({ orm: deps.orm, box: deps.box, nc: deps.nc, subject: names.integrationChanges, logger, now });
  cache.start();
  const verifier = new SignatureVerifier(now);
  const publisher = inboundPublisher(deps.nc, { names, partitions: config.partitions, timeoutMs: config.publishTimeoutMs });
  // The acceptance records' own connections. Their commits do not wait for the disk: a record
  // is lost only if PostgreSQL itself crashes within a fraction of a second of it AND JetStream
  // loses the message too; waiting for the flush would double the webhook's latency.
  const journalSql = openSqlPool({ url: config.databaseUrl, poolMax: 2, synchronousCommit: false });
  const journal = new AcceptedJournal(journalSql, logger);
  const activity = new WebhookActivity({ sql: deps.sql, logger, now }, deps.activity);
  activity.start();
  let lastQueueWarning = 0;

  /** Resolves the path to an integration of that connector, or throws 404. */
  async function lookup(type: string, rawId: string): Promise<CachedIntegration> {
    if (!Object.hasOwn(CONNECTORS, type)) throw notFoundConnector();
    let id: number;
    try {
      id = idParam(rawId, 'Integration');
    } catch {
      throw notFoundIntegration();
    }
    const integration = await cache.get(id);
    if (!integration || integration.type !== type) throw notFoundIntegration();
    return integration;
  }

  async function publish(integration: CachedIntegration, inbound: Exclude<HelpdeskInbound, { kind: 'ignored' }>, receivedAt: string): Promise<void> {
    const base = {
      v: 1 as const,
      idempotencyKey: inbound.idempotencyKey,
      companyId: integration.companyId,
      integrationId: integration.id,
      channel: integration.type,
      receivedAt,
    };
    const envelope: InboundEnvelope =
      inbound.kind === 'message' ? { ...base, kind: 'message', message: inbound.message } : { ...base, kind: 'status', status: inbound.status };
    try {
      // Recorded while JetStream takes it; a failed record is logged inside (intake goes on).
      const json = JSON.stringify(envelope);
      await Promise.all([publisher.publish(envelope, { json }), journal.record(envelope, json, partitionOfEnvelope(envelope, config.partitions))]);
    } catch (err) {
      // A retry could never fit either: refuse it for good rather than 503 forever.
      if (err instanceof EnvelopeTooLargeError) throw new AppError('PAYLOAD_TOO_LARGE', `The message is larger than the queue takes (${err.maxBytes} bytes).`);
      const t = now();
      if (t - lastQueueWarning > 10_000) {
        lastQueueWarning = t;
        logger.warn({ err, integrationId: integration.id }, 'JetStream did not take a webhook; answering 503 (the sender retries)');
      }
      throw new AppError('QUEUE_UNAVAILABLE', undefined, { cause: err, headers: { 'Retry-After': '5' } });
    }
  }

  const routes = [
    defineRoute({
      method: 'GET', path: '/:connectorType/:integrationId', operationId: 'verifyWebhook', tag: 'Webhooks', access: 'public',
      summary: 'Endpoint verification for platforms that probe the webhook URL (no signature)',
      params: WEBHOOK_PARAMS,
      responses: { 200: { description: 'The integration exists for that connector.', schema: object({ ok: { const: true }, verified: { const: true } }), example: { ok: true, verified: true } } },
      errors: { NOT_FOUND: 'unknown connector type, or no integration of that connector' },
      handler: async ({ req, res }) => {
        await lookup(req.params.connectorType as string, req.params.integrationId as string);
        sendJson(res, VERIFIED_BODY);
      },
    }),
  ];

  async function receive(req: IncomingMessage, res: ServerResponse, type: string, rawId: string): Promise<void> {
    const integration = await lookup(type, rawId);
    const normalise = CONNECTORS[integration.type];
    if (!normalise) throw webchatSpeaksWebSocket(integration.id);
    if (config.enforceHttps && !deps.isSecure(req)) throw new AppError('HTTPS_REQUIRED');

    const declared = Number(req.headers['content-length']);
    if (declared > WEBHOOK_HARD_CAP_BYTES) {
      res.setHeader('Connection', 'close');
      throw new AppError('PAYLOAD_TOO_LARGE');
    }
    const signature = verifier.begin(integration.secrets);
    const { body, overHardCap } = await readSigned(req, signature, MAX_WEBHOOK_BODY_BYTES, WEBHOOK_HARD_CAP_BYTES);
    if (overHardCap) {
      res.setHeader('Connection', 'close');
      throw new AppError('PAYLOAD_TOO_LARGE');
    }
    const verdict = signature.verify(req.headers);
    // Counted in memory only (gateway/webhook/activity.ts writes them in batches).
    if (!verdict.ok) {
      activity.refused(integration.id, verdict.error, now());
      throw signatureRefused(verdict.error);
    }
    activity.accepted(integration.id, now());
    if (!integration.active) throw new AppError('INTEGRATION_INACTIVE');
    if (body === null) throw new AppError('PAYLOAD_TOO_LARGE', `The body is larger than ${MAX_WEBHOOK_BODY_BYTES} bytes.`);

    let payload: unknown;
    try {
      payload = JSON.parse(body.toString('utf8'));
    } catch {
      throw new AppError('VALIDATION_ERROR', 'The body is not valid JSON.', { details: [{ field: '(body)', message: 'must be valid JSON' }] });
    }
    // Helpdesk payloads are shallow; a deeply nested one (e.g. in `attachments`) would overflow the stack when re-serialised.
    if (nestedDeeperThan(payload, MAX_JSON_DEPTH)) {
      throw new AppError('VALIDATION_ERROR', `The body is nested deeper than ${MAX_JSON_DEPTH} levels.`, { details: [{ field: '(body)', message: `must not nest deeper than ${MAX_JSON_DEPTH} levels` }] });
    }
    if (mayNeedStorable(body)) payload = storable(payload);
    const receivedAt = new Date(now()).toISOString();
    const inbound = normalise(payload, body, receivedAt);
    if (inbound.kind !== 'ignored') await publish(integration, inbound, receivedAt);
    res.writeHead(200, JSON_HEADERS).end(OK_BODY);
  }

  function handlePost(req: IncomingMessage, res: ServerResponse): boolean {
    if (req.method !== 'POST') return false;
    const path = (req.url ?? '').split('?', 1)[0]!;
    const m = WEBHOOK_PATH.exec(path);
    if (!m) return false;
    const started = process.hrtime.bigint();
    // The `/api` policy of express (gateway/http/api-policy.ts) never runs here: errors too are no-store.
    res.setHeader('Cache-Control', API_CACHE_CONTROL);
    // Named by a connector that exists, never by the segment sent: span names and metric
    // labels stay a bounded set whatever paths clients invent.
    const route = Object.hasOwn(CONNECTORS, m[1]!) ? `/api/webhook/${m[1]}/:id` : null;
    // A new trace per webhook: a traceparent sent by the outside world is not trusted as our parent.
    const span = !tracing.enabled ? undefined : startSpan(`POST ${route ?? UNMATCHED_ROUTE}`, {
      kind: SpanKind.SERVER,
      attributes: { 'http.request.method': 'POST', 'url.path': path, ...(route ? { 'http.route': route } : {}), ...(ROW_ID.test(m[2]!) ? { 'mas.integration_id': m[2]! } : {}) },
    });
    const traceId = requestTraceId(span);
    // 'close' comes also when the sender hangs up before the answer.
    if (span) {
      res.once('close', () => {
        span.setAttribute('http.response.status_code', res.statusCode);
        span.end();
      });
    }
    // A 404 (unknown connector or integration) names no route: the path is whatever was sent.
    observeOnClose(res, { method: 'POST', started, traceId }, () => (res.statusCode === 404 ? null : route), deps.observe);
    (span ? withSpan(span, () => receive(req, res, m[1]!, m[2]!)) : receive(req, res, m[1]!, m[2]!)).catch((err: unknown) => {
      if (span && !(err instanceof AppError)) failSpan(span, err);
      if (res.headersSent) return void res.destroy();
      if (err instanceof AppError) return writeError(res, err);
      const requestId = requestIdOf(traceId);
      logger.error({ err, requestId, traceId, path }, 'unhandled webhook error');
      writeError(res, new AppError('INTERNAL_ERROR', `Internal server error (request ${requestId}).`), requestId);
    });
    return true;
  }

  return {
    routes,
    handlePost,
    cache,
    close: async () => {
      cache.stop();
      await activity.close();
      await journalSql.end();
    },
  };
}

const WEBHOOK_PARAMS: readonly ParamDoc[] = [
  { name: 'connectorType', in: 'path', description: 'The connector: `helpdesk` (Chat2Desk). `webchat` takes no webhooks (its widget speaks WebSocket).', schema: { type: 'string', enum: Object.keys(CONNECTORS) }, example: 'helpdesk' },
  idPathParam('integration', 'integrationId'),
];

/** `POST /api/webhook/:connectorType/:integrationId`, served ahead of express (handlePost). */
export const webhookPostRouteDoc: RouteDoc = {
  method: 'POST', path: '/api/webhook/:connectorType/:integrationId', operationId: 'receiveWebhook', tag: 'Webhooks', access: 'public',
  summary: 'Inbound helpdesk webhook: a customer message or a status event (close_dialog, close_request, dialog_transferred), signed with HMAC-SHA256',
  description: [
    'Sign the exact raw body: `sha256=` + lowercase hex HMAC-SHA256 keyed with the webhook secret, in `x-webhook-signature` or `x-hub-signature-256`.',
    `Checked in order: connector and integration (404), HTTPS when enforced (403), signature (401), active (403), size ≤ ${MAX_WEBHOOK_BODY_BYTES} bytes (413), JSON (400), the payload's schema (400).`,
    "200 comes only after the message is durably queued (JetStream ack); other `hook_type`s (outbox, new_client, …) answer 200 and are dropped. Unknown fields are ignored.",
  ].join(' '),
  params: [
    ...WEBHOOK_PARAMS,
    ...SIGNATURE_HEADERS.map((name): ParamDoc => ({ name, in: 'header', description: 'The body signature (send one of the two headers).', schema: { type: 'string', pattern: SIGNATURE_RE.source }, example: `sha256=${'0a1b2c3d'.repeat(8)}` })),
  ],
  body: {
    validators: HELPDESK_PAYLOAD_VALIDATORS,
    description: "The helpdesk's own JSON payload (Chat2Desk API v1 webhook).",
    example: { message_id: 555, type: 'from_client', text: 'When are you open?', client_id: 'c-1', channel_id: 'ch-9', transport: 'telegram', request_id: 77, dialog_id: 88 },
  },
  responses: { 200: { description: 'Queued (or ignored).', schema: object({ ok: { const: true } }), example: { ok: true } } },
  errors: {
    NOT_FOUND: 'unknown connector type or integration (a webchat integration is told where its WebSocket is)',
    INVALID_SIGNATURE: 'the signature header is missing, malformed or does not match (the message says which)',
    INTEGRATION_INACTIVE: 'the integration is switched off',
    PAYLOAD_TOO_LARGE: `the body is over ${MAX_WEBHOOK_BODY_BYTES} bytes, or more than the queue takes`,
    VALIDATION_ERROR: `not JSON, nested deeper than ${MAX_JSON_DEPTH} levels, or a message / status event that fails its schema`,
    QUEUE_UNAVAILABLE: 'the queue could not take it: retry (Retry-After)',
  },
};
