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
import { isWebhookChannel, WEBHOOK_CHANNELS } from '../../lib/channels/registry.js';
import type { InboundItem, WebhookChannel } from '../../lib/channels/types.js';
import type { InboundEnvelope } from '../../schema/envelope.js';
import { API_CACHE_CONTROL } from '../http/api-policy.js';
import { writeError } from '../../lib/error-response.js';
import { observeOnClose, requestIdOf, requestTraceId, UNMATCHED_ROUTE, type RequestObserver } from '../http/request-observer.js';
import { defineRoute, type Route } from '../http/route.js';
import { object } from '../http/schemas.js';
import { idParam } from '../http/validate.js';
import { MAX_JSON_DEPTH, MAX_WEBHOOK_BODY_BYTES, PROBE_PARAMS, WEBHOOK_HARD_CAP_BYTES, WEBHOOK_PARAMS, webhookPostRouteDoc } from './ingress-docs.js';
import { WebhookActivity, type WebhookActivityOptions } from './activity.js';
import { IntegrationCache, type CachedIntegration } from './integration-cache.js';
import { signatureRefused, SignatureVerifier, type BodyProof } from './signature.js';

/**
 * Webhook ingress: `POST /api/webhook/:connectorType/:integrationId`, where the connector type
 * is a webhook channel (lib/channels/registry.ts: helpdesk, whatsapp, telegram), checked in the
 * contract's order: connector type (404) → integration of that connector (404) → HTTPS when
 * enforced (403) → the channel's proof (401: a body signature or a secret header,
 * gateway/webhook/signature.ts) → active (403) → size ≤ 1 MiB (413) → JSON (400) → depth (400)
 * → the channel's normalise (400, or no items) → every item published durably to JetStream as
 * its own envelope (lib/inbound.ts: retried through a stream-leader election for up to
 * PUBLISH_TIMEOUT_MS; held to the end of the event loop's turn, so that the webhooks of one
 * turn reach NATS in one socket write), concurrently, each with, at the same time, a
 * group-committed record of the acceptance in PostgreSQL (lib/inbound-journal.ts: what
 * JetStream loses is published again from it) → 200 `{"ok":true}`, sent only after every
 * item's JetStream ack (503 QUEUE_UNAVAILABLE when NATS cannot take one, so the sender retries
 * the whole body: the items already taken are dropped as duplicates by their idempotency keys).
 * No database read on this path (IntegrationCache), one JSON parse.
 *
 * Mounted before the `/api` JSON parser: it reads the raw bytes itself, hashing them as
 * they arrive, so the signature can be checked before a too-large body is refused.
 */
export { MAX_JSON_DEPTH, MAX_WEBHOOK_BODY_BYTES, WEBHOOK_HARD_CAP_BYTES, webhookPostRouteDoc };

/** A connector type that exists: a webhook channel, or webchat (which takes no webhooks: its widget speaks WebSocket). */
const isConnector = (type: string): boolean => isWebhookChannel(type) || type === 'webchat';
/** The channel of an integration's type; undefined for webchat. */
const channelOf = (type: string): WebhookChannel | undefined => (isWebhookChannel(type) ? WEBHOOK_CHANNELS[type] : undefined);

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

/** Reads the request, feeding every chunk to the proof (a body signature hashes it), keeping at most `limit` bytes. */
function readSigned(req: IncomingMessage, signature: BodyProof, limit: number, hardCap: number): Promise<ReadBody> {
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
const PROBE_HEADERS = { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' };

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
  const publisher = inboundPublisher(deps.nc, { names, partitions: config.partitions, timeoutMs: config.publishTimeoutMs, coalesce: true });
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
    if (!isConnector(type)) throw notFoundConnector();
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

  /** One item as its own envelope, in JetStream (its idempotency key is the Nats-Msg-Id) and in the acceptance journal. */
  async function publish(integration: CachedIntegration, item: InboundItem, receivedAt: string): Promise<void> {
    const base = {
      v: 1 as const,
      idempotencyKey: item.idempotencyKey,
      companyId: integration.companyId,
      integrationId: integration.id,
      channel: integration.type,
      receivedAt,
    };
    const envelope: InboundEnvelope =
      item.kind === 'message'
        ? { ...base, kind: 'message', message: item.message }
        : item.kind === 'status'
          ? { ...base, kind: 'status', status: item.status }
          : { ...base, kind: 'delivery', delivery: item.delivery };
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

  /**
   * Every item of a body, concurrently; resolves once all are acked, rejects when one fails
   * (the sender retries the whole body; the items taken meanwhile dedupe on their keys).
   */
  function publishAll(integration: CachedIntegration, items: readonly InboundItem[], receivedAt: string): Promise<unknown> | undefined {
    // One item (every helpdesk webhook): no array of promises.
    if (items.length === 1) return publish(integration, items[0]!, receivedAt);
    if (items.length === 0) return undefined;
    return Promise.all(items.map((item) => publish(integration, item, receivedAt)));
  }

  const routes = [
    defineRoute({
      method: 'GET', path: '/:connectorType/:integrationId', operationId: 'verifyWebhook', tag: 'Webhooks', access: 'public',
      summary: "Endpoint verification: WhatsApp's subscription probe (hub.challenge), or a plain check that the webhook URL exists (no signature)",
      description: [
        'With `hub.mode` on a WhatsApp integration (Meta\'s probe when the webhook is set up: `hub.mode=subscribe&hub.verify_token=<the integration\'s verifyToken>&hub.challenge=<text>`),',
        'the answer is plain text (`text/plain; charset=utf-8`): `200` with the `hub.challenge` as it was sent when the mode is `subscribe` and the token is the integration\'s verifyToken (compared in constant time),',
        'else `403` with the text `verification failed` (a wrong or missing token, another mode, no or an over-long challenge).',
        'Without `hub.mode`, and for the other connectors, the answer is `{"ok":true,"verified":true}` when the integration exists for that connector.',
      ].join(' '),
      params: [...WEBHOOK_PARAMS, ...PROBE_PARAMS],
      responses: {
        200: {
          description: 'The integration exists for that connector (JSON); for WhatsApp\'s probe with the right hub.verify_token, the hub.challenge as text/plain instead.',
          schema: object({ ok: { const: true }, verified: { const: true } }),
          example: { ok: true, verified: true },
          alsoAnswers: { 'text/plain': { schema: { type: 'string', maxLength: 256 }, example: '1158201444' } },
        },
        403: {
          description: "WhatsApp's probe refused (text/plain): a wrong or missing hub.verify_token, another hub.mode, no or an over-long hub.challenge",
          type: 'text/plain',
          schema: { type: 'string', const: 'verification failed' },
          example: 'verification failed',
        },
      },
      errors: { NOT_FOUND: 'unknown connector type, or no integration of that connector' },
      handler: async ({ req, res }) => {
        const integration = await lookup(req.params.connectorType as string, req.params.integrationId as string);
        const probe = channelOf(integration.type)?.probe;
        if (probe) {
          const q = req.originalUrl.indexOf('?');
          const answer = probe(new URLSearchParams(q < 0 ? '' : req.originalUrl.slice(q + 1)), { verifyToken: integration.verifyToken });
          if (answer) {
            res.status(answer.status).set(PROBE_HEADERS).send(answer.text);
            return;
          }
        }
        sendJson(res, VERIFIED_BODY);
      },
    }),
  ];

  async function receive(req: IncomingMessage, res: ServerResponse, type: string, rawId: string): Promise<void> {
    const integration = await lookup(type, rawId);
    const channel = channelOf(integration.type);
    if (!channel) throw webchatSpeaksWebSocket(integration.id);
    if (config.enforceHttps && !deps.isSecure(req)) throw new AppError('HTTPS_REQUIRED');

    const declared = Number(req.headers['content-length']);
    if (declared > WEBHOOK_HARD_CAP_BYTES) {
      res.setHeader('Connection', 'close');
      throw new AppError('PAYLOAD_TOO_LARGE');
    }
    const signature = verifier.begin(integration.secrets, channel.proof);
    const { body, overHardCap } = await readSigned(req, signature, MAX_WEBHOOK_BODY_BYTES, WEBHOOK_HARD_CAP_BYTES);
    if (overHardCap) {
      res.setHeader('Connection', 'close');
      throw new AppError('PAYLOAD_TOO_LARGE');
    }
    const verdict = signature.verify(req.headers);
    // Counted in memory only (gateway/webhook/activity.ts writes them in batches).
    if (!verdict.ok) {
      activity.refused(integration.id, verdict.error, now());
      throw signatureRefused(verdict.error, channel.proof);
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
    // Webhook payloads are shallow (WhatsApp's nest about 6 levels); a deeply nested one (e.g. in `attachments`) would overflow the stack when re-serialised.
    if (nestedDeeperThan(payload, MAX_JSON_DEPTH)) {
      throw new AppError('VALIDATION_ERROR', `The body is nested deeper than ${MAX_JSON_DEPTH} levels.`, { details: [{ field: '(body)', message: `must not nest deeper than ${MAX_JSON_DEPTH} levels` }] });
    }
    if (mayNeedStorable(body)) payload = storable(payload);
    const receivedAt = new Date(now()).toISOString();
    const published = publishAll(integration, channel.normalise(payload, body, receivedAt).items, receivedAt);
    if (published) await published;
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
    const route = isConnector(m[1]!) ? `/api/webhook/${m[1]}/:id` : null;
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
