import { randomUUID } from 'node:crypto';
import { jetstream } from '@nats-io/jetstream';
import { Router, type Request, type Response } from 'express';
import type { Config } from '../../lib/config.js';
import { conversationView, messageView, type ConversationNotice } from '../../lib/conversations.js';
import { AppError, notFound } from '../../lib/errors.js';
import type { Logger } from '../../lib/logger.js';
import type { NatsConnection } from '../../lib/nats.js';
import { partitionOf, streamNames } from '../../lib/streams.js';
import type { TenantScope } from '../../lib/tenancy.js';
import { conversationMachineDefinition } from '../../machines/conversation.js';
import {
  ConversationMessageSchema,
  ConversationSchema,
  ConversationTransitionSchema,
  type Conversation,
  type ConversationTransition,
} from '../../schema/conversation-entities.js';
import type { InboundEnvelope, OperatorCommand } from '../../schema/envelope.js';
import type { Authenticator } from '../auth/authenticate.js';
import { bodyValidator, idParam } from '../http/validate.js';

/**
 * The operator API over conversations. The gateway never touches a machine: operator
 * commands are published as 'operator' envelopes to the conversation's partition and the
 * answer waits for the worker's notice on names.conversationEvents (the state after the
 * command was applied). Pause and close record a hold in the database first, so a bot
 * reply produced meanwhile is never sent (checked by the worker and its dispatcher).
 */
export interface ConversationRouteDeps {
  auth: Authenticator;
  config: Config;
  nc: NatsConnection;
  logger: Logger;
  /** How long an operator command waits for the worker (then 503 QUEUE_UNAVAILABLE). */
  applyTimeoutMs?: number;
  /** SSE heartbeat comment interval. */
  heartbeatMs?: number;
}

const DEFAULT_APPLY_TIMEOUT_MS = 10_000;
const DEFAULT_HEARTBEAT_MS = 15_000;
const LIST_LIMIT = 200;

const replyBody = bodyValidator<{ text: string }>({
  type: 'object',
  additionalProperties: false,
  required: ['text'],
  properties: { text: { type: 'string', minLength: 1, maxLength: 4096, pattern: '\\S' } },
});

const toView = (c: Conversation) => conversationView(c);

const transitionView = (t: ConversationTransition) => ({
  seq: t.seq,
  at: t.at.toISOString(),
  event: t.event,
  payload: t.payload,
  from: t.fromState,
  to: t.toState,
  actions: t.actions,
});

async function load(tenant: TenantScope, rawId: unknown): Promise<Conversation> {
  const conv = await tenant.em.findOne(ConversationSchema, { id: idParam(rawId, 'Conversation') }, { populate: ['snapshot'] });
  if (!conv) throw notFound('Conversation');
  return conv;
}

export function conversationRoutes(deps: ConversationRouteDeps): Router {
  const { auth, config, nc, logger } = deps;
  const names = streamNames(config.natsPrefix);
  const js = jetstream(nc);
  const applyTimeoutMs = deps.applyTimeoutMs ?? DEFAULT_APPLY_TIMEOUT_MS;
  const heartbeatMs = deps.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
  const router = Router();

  router.get('/machines/conversation', auth.any, (_req, res) => {
    res.json({ machine: conversationMachineDefinition() });
  });

  router.get('/conversations', auth.any, async (req, res) => {
    const where: Record<string, unknown> = {};
    const { status, integrationId } = req.query;
    const details = [];
    if (status !== undefined) {
      if (typeof status !== 'string' || !['active', 'paused', 'closed'].includes(status)) details.push({ field: 'status', message: 'must be one of active, paused, closed' });
      else where.status = status;
    }
    if (integrationId !== undefined) {
      if (typeof integrationId !== 'string' || !/^[1-9]\d{0,9}$/.test(integrationId)) details.push({ field: 'integrationId', message: 'must be a positive integer' });
      else where.integrationId = Number(integrationId);
    }
    if (details.length) throw new AppError('VALIDATION_ERROR', `Invalid ${details.map((d) => d.field).join(', ')}.`, { details });
    const rows = await req.tenant!.em.find(ConversationSchema, where, { orderBy: { updatedAt: 'desc', id: 'desc' }, limit: LIST_LIMIT, populate: ['snapshot'] });
    res.json({ conversations: rows.map(toView) });
  });

  router.get('/conversations/:id', auth.any, async (req, res) => {
    res.json({ conversation: toView(await load(req.tenant!, req.params.id)) });
  });

  router.get('/conversations/:id/messages', auth.any, async (req, res) => {
    const conv = await load(req.tenant!, req.params.id);
    const rows = await req.tenant!.em.find(ConversationMessageSchema, { conversationId: conv.id }, { orderBy: { seq: 'asc' } });
    res.json({ messages: rows.map((m) => messageView(m)) });
  });

  router.get('/conversations/:id/transitions', auth.any, async (req, res) => {
    const conv = await load(req.tenant!, req.params.id);
    const rows = await req.tenant!.em.find(ConversationTransitionSchema, { conversationId: conv.id }, { orderBy: { seq: 'asc' } });
    res.json({ transitions: rows.map(transitionView) });
  });

  /** Publishes an operator command and answers with the conversation once the worker applied it. */
  async function command(req: Request, res: Response, cmd: OperatorCommand): Promise<void> {
    const tenant = req.tenant!;
    const conv = await load(tenant, req.params.id);
    if (cmd.action === 'reply' && conv.status === 'closed') throw new AppError('CONFLICT', 'The conversation is closed.');
    const holds = cmd.action === 'pause' || cmd.action === 'close';
    if (holds && conv.status !== 'closed') {
      // Recorded before anything is queued: from now on no bot reply goes out.
      await tenant.em.nativeUpdate(ConversationSchema, { id: conv.id }, { holdRequestedAt: new Date() });
    }
    const idempotencyKey = `op:${randomUUID()}`;
    const env: InboundEnvelope = {
      v: 1,
      kind: 'operator',
      idempotencyKey,
      companyId: tenant.companyId,
      integrationId: conv.integrationId,
      channel: conv.channel,
      receivedAt: new Date().toISOString(),
      conversationId: conv.id,
      clientId: conv.clientId,
      command: cmd,
    };
    const sub = nc.subscribe(names.conversationEvents(tenant.companyId, conv.id));
    let timer: NodeJS.Timeout | undefined;
    const applied = new Promise<Extract<ConversationNotice, { type: 'applied' }> | null>((resolve) => {
      timer = setTimeout(() => resolve(null), applyTimeoutMs);
      void (async () => {
        for await (const m of sub) {
          try {
            const notice = m.json<ConversationNotice>();
            if (notice.type === 'applied' && notice.idempotencyKey === idempotencyKey) return resolve(notice);
          } catch {
            /* not ours */
          }
        }
        resolve(null);
      })();
    });
    try {
      const subject = names.inboundSubject(partitionOf(conv.integrationId, conv.clientId, config.partitions), tenant.companyId);
      try {
        await js.publish(subject, JSON.stringify(env), { msgID: `${conv.integrationId}:${idempotencyKey}`, timeout: 5000 });
      } catch (err) {
        logger.warn({ err, conversationId: conv.id }, 'operator command could not be queued');
        if (holds) await tenant.em.nativeUpdate(ConversationSchema, { id: conv.id, holdRequestedAt: { $ne: null } }, { holdRequestedAt: null }).catch(() => {});
        throw new AppError('QUEUE_UNAVAILABLE');
      }
      const notice = await applied;
      if (!notice) throw new AppError('QUEUE_UNAVAILABLE', 'The command was queued but not applied in time; retry later.');
      if (notice.outcome === 'not_found' || !notice.conversation) throw notFound('Conversation');
      res.json({ conversation: notice.conversation });
    } finally {
      clearTimeout(timer);
      sub.unsubscribe();
    }
  }

  for (const action of ['pause', 'resume', 'close'] as const) {
    router.post(`/conversations/:id/${action}`, auth.any, async (req, res) => {
      await command(req, res, { action, by: req.principal?.kind === 'session' ? req.principal.userId : null });
    });
  }

  router.post('/conversations/:id/messages', auth.any, async (req, res) => {
    const body = replyBody(req.body);
    await command(req, res, { action: 'reply', text: body.text, by: req.principal?.kind === 'session' ? req.principal.userId : null });
  });

  /** Server-Sent Events: every committed transition / message of the conversation, live. */
  router.get('/conversations/:id/inspect', auth.any, async (req, res) => {
    const tenant = req.tenant!;
    const conv = await load(tenant, req.params.id);
    const sub = nc.subscribe(names.conversationEvents(tenant.companyId, conv.id));
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    res.flushHeaders();
    const send = (event: string, data: unknown) => res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    res.write('retry: 3000\n\n');
    send('conversation', { conversation: toView(conv) });
    const heartbeat = setInterval(() => res.write(': heartbeat\n\n'), heartbeatMs);
    const stop = () => {
      clearInterval(heartbeat);
      sub.unsubscribe();
    };
    req.on('close', stop);
    res.on('close', stop);
    for await (const m of sub) {
      try {
        const notice = m.json<ConversationNotice>();
        if (notice.type === 'applied') continue;
        send(notice.type, notice);
      } catch {
        /* skip malformed */
      }
    }
    if (!res.writableEnded) res.end();
  });

  return router;
}
