import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Router, type Response } from 'express';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import type { Config } from '../../lib/config.js';
import type { Orm } from '../../lib/db.js';
import { AppError } from '../../lib/errors.js';
import type { Logger } from '../../lib/logger.js';
import type { NatsConnection } from '../../lib/nats.js';
import type { SecretBox } from '../../lib/secrets.js';
import { partitionOf, streamNames, type StreamNames } from '../../lib/streams.js';
import type { InboundEnvelope } from '../../schema/envelope.js';
import type { IntegrationType } from '../../schema/entities.js';
import { writeError } from '../http/errors.js';
import { idParam } from '../http/validate.js';
import { normaliseHelpdesk, type HelpdeskInbound } from './helpdesk-normaliser.js';
import { IntegrationCache, type CachedIntegration } from './integration-cache.js';
import { SignatureVerifier, type BodySignature } from './signature.js';

/**
 * Webhook ingress: `POST /api/webhook/:connectorType/:integrationId`, checked in the
 * contract's order: connector type (404) → integration of that connector (404) → HTTPS when
 * enforced (403) → signature (401) → active (403) → size ≤ 1 MiB (413) → JSON (400) →
 * normalise (400 / ignored) → durable publish to JetStream → 200 `{"ok":true}`, sent only
 * after the JetStream ack (503 QUEUE_UNAVAILABLE when NATS cannot take it, so the sender
 * retries). No database query on this path (IntegrationCache), one JSON parse.
 *
 * Mounted before the `/api` JSON parser: it reads the raw bytes itself, hashing them as
 * they arrive, so the signature can be checked before a too-large body is refused.
 */
export const MAX_WEBHOOK_BODY_BYTES = 1024 * 1024;
/** Beyond this the body is not even read (its signature cannot be checked either). */
export const WEBHOOK_HARD_CAP_BYTES = 8 * 1024 * 1024;
/** JetStream ack deadline: a webhook answers 503 within about this long when NATS is away. */
export const PUBLISH_TIMEOUT_MS = 2_500;

/** Connector types that exist; only those with a normaliser take HTTP webhooks (webchat uses a WebSocket). */
const CONNECTORS: Record<IntegrationType, ((payload: unknown, raw: Uint8Array, receivedAt: string) => HelpdeskInbound) | null> = {
  helpdesk: normaliseHelpdesk,
  webchat: null,
};

export interface WebhookIngressDeps {
  config: Config;
  orm: Orm;
  nc: NatsConnection;
  logger: Logger;
  box: SecretBox;
  now?: () => number;
  /** Whether the request arrived over TLS (directly or via a trusted proxy), by express's `trust proxy` rules. */
  isSecure: (req: IncomingMessage) => boolean;
  /** Records one request's duration for /metrics. */
  observe: (method: string, route: string, status: number, seconds: number) => void;
}

export interface WebhookIngress {
  /** `GET /api/webhook/:connectorType/:integrationId` (endpoint verification), mounted in express. */
  router: Router;
  /**
   * `POST /api/webhook/<connectorType>/<integrationId>`, served on the bare HTTP server ahead of
   * express (gateway/app.ts): the hot path needs none of the app-wide middleware. Returns false
   * for any other request.
   */
  handlePost: (req: IncomingMessage, res: ServerResponse) => boolean;
  /** Shared with the integration routes, which announce every change through it. */
  cache: IntegrationCache;
  close: () => void;
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
const OK_BODY = '{"ok":true}';
const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8', 'x-content-type-options': 'nosniff', 'cache-control': 'no-store' };
/** `/api/webhook/<connectorType>/<integrationId>`; anything else is express's to answer. */
const WEBHOOK_PATH = /^\/api\/webhook\/([^/]+)\/([^/]+)\/?$/;
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
  const js: JetStreamClient = jetstream(deps.nc);
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
    const data = Buffer.from(JSON.stringify(envelope));
    // A retry could never fit either: refuse it for good rather than 503 forever.
    const maxPayload = deps.nc.info?.max_payload;
    if (maxPayload && data.length > maxPayload) throw new AppError('PAYLOAD_TOO_LARGE', `The message is larger than the queue takes (${maxPayload} bytes).`);
    const subject = names.inboundSubject(partitionOf(integration.id, inbound.partitionKey, config.partitions), integration.companyId);
    try {
      await js.publish(subject, data, { msgID: `${integration.id}:${inbound.idempotencyKey}`, timeout: PUBLISH_TIMEOUT_MS });
    } catch (err) {
      const t = now();
      if (t - lastQueueWarning > 10_000) {
        lastQueueWarning = t;
        logger.warn({ err, integrationId: integration.id }, 'JetStream did not take a webhook; answering 503 (the sender retries)');
      }
      throw new AppError('QUEUE_UNAVAILABLE', undefined, { cause: err, headers: { 'Retry-After': '5' } });
    }
  }

  const router = Router();
  router.get('/:connectorType/:integrationId', async (req, res) => {
    await lookup(req.params.connectorType as string, req.params.integrationId as string);
    sendJson(res, VERIFIED_BODY);
  });

  async function receive(req: IncomingMessage, res: ServerResponse, type: string, rawId: string): Promise<void> {
    const integration = await lookup(type, rawId);
    const normalise = CONNECTORS[integration.type];
    if (!normalise) throw notFoundConnector();
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
    if (!verdict.ok) throw new AppError('INVALID_SIGNATURE');
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
    res.once('finish', () => {
      deps.observe('POST', res.statusCode === 404 ? 'unmatched' : `/api/webhook/${m[1]}/:id`, res.statusCode, Number(process.hrtime.bigint() - started) / 1e9);
    });
    receive(req, res, m[1]!, m[2]!).catch((err: unknown) => {
      if (res.headersSent) return void res.destroy();
      if (err instanceof AppError) return writeError(res, err);
      const requestId = randomUUID();
      logger.error({ err, requestId, path }, 'unhandled webhook error');
      writeError(res, new AppError('INTERNAL_ERROR', `Internal server error (request ${requestId}).`), requestId);
    });
    return true;
  }

  return { router, handlePost, cache, close: () => cache.stop() };
}
