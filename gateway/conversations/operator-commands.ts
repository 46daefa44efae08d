import { randomUUID } from 'node:crypto';
import type { Config } from '../../lib/config.js';
import { noticesOf, type ConversationNotice, type ConversationView, type MessageView } from '../../lib/conversations.js';
import { AppError, notFound } from '../../lib/errors.js';
import { inboundPublisher, type InboundPublisher } from '../../lib/inbound.js';
import type { Logger } from '../../lib/logger.js';
import type { NatsConnection } from '../../lib/nats.js';
import { streamNames, type StreamNames } from '../../lib/streams.js';
import type { TenantScope } from '../../lib/tenancy.js';
import { isHandedOver } from '../../machines/states.js';
import { ConversationSchema, type Conversation } from '../../schema/conversation-entities.js';
import type { InboundEnvelope, OperatorCommand } from '../../schema/envelope.js';

/**
 * Operator commands (pause, resume, close, reply, note). The gateway never touches a machine: a
 * command is published as an 'operator' envelope to the conversation's partition, and the
 * answer waits for the worker's notice on names.conversationEvents (the state after the
 * command was applied). Pause and close record a hold in the database first, so a bot reply
 * produced meanwhile is never sent (checked by the worker and its dispatcher).
 */
export interface OperatorCommandsDeps {
  config: Pick<Config, 'natsPrefix' | 'partitions' | 'publishTimeoutMs'>;
  nc: NatsConnection;
  logger: Logger;
  /** How long a command waits for the worker (then 503 QUEUE_UNAVAILABLE). */
  applyTimeoutMs?: number;
}

const DEFAULT_APPLY_TIMEOUT_MS = 10_000;

/** A command as the worker applied it: the conversation then, and the messages it stored (the reply, the note), from the same commit. */
export interface AppliedCommand {
  outcome: 'applied' | 'duplicate' | 'ignored';
  conversation: ConversationView;
  messages: MessageView[];
}

export class OperatorCommands {
  readonly #nc: NatsConnection;
  readonly #logger: Logger;
  readonly #names: StreamNames;
  readonly #publisher: InboundPublisher;
  readonly #applyTimeoutMs: number;

  constructor(deps: OperatorCommandsDeps) {
    this.#nc = deps.nc;
    this.#logger = deps.logger;
    this.#names = streamNames(deps.config.natsPrefix);
    this.#publisher = inboundPublisher(deps.nc, { names: this.#names, partitions: deps.config.partitions, timeoutMs: deps.config.publishTimeoutMs });
    this.#applyTimeoutMs = deps.applyTimeoutMs ?? DEFAULT_APPLY_TIMEOUT_MS;
  }

  /** Publishes the command; the conversation as it is once the worker applied it. */
  async apply(tenant: TenantScope, conv: Conversation, cmd: OperatorCommand): Promise<ConversationView> {
    return (await this.run(tenant, conv, cmd)).conversation;
  }

  /** Publishes the command; what the worker did with it, once it did. */
  async run(tenant: TenantScope, conv: Conversation, cmd: OperatorCommand): Promise<AppliedCommand> {
    if ((cmd.action === 'reply' || cmd.action === 'note') && conv.status === 'closed') throw new AppError('CONFLICT', 'The conversation is closed.');
    // A reply to an active conversation, or to one the agent handed over and still answers while no person has acted
    // (`paused.handedOver`), takes it over (the worker pauses it first): the bot is held from now on.
    const takesOver = conv.status === 'active' || isHandedOver(conv.state);
    const holds = cmd.action === 'pause' || cmd.action === 'close' || (cmd.action === 'reply' && takesOver);
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
    const sub = this.#nc.subscribe(this.#names.conversationEvents(tenant.companyId, conv.id));
    let timer: NodeJS.Timeout | undefined;
    type Applied = { notice: Extract<ConversationNotice, { type: 'applied' }>; messages: MessageView[] };
    const applied = new Promise<Applied | null>((resolve) => {
      timer = setTimeout(() => resolve(null), this.#applyTimeoutMs);
      void (async () => {
        for await (const m of sub) {
          // One publish is one commit: the messages the command stored come with its notice.
          const notices = noticesOf(m.data);
          const notice = notices.find((n) => n.type === 'applied' && n.idempotencyKey === idempotencyKey);
          if (notice?.type === 'applied') return resolve({ notice, messages: notices.flatMap((n) => (n.type === 'message' ? [n.message] : [])) });
        }
        resolve(null);
      })();
    });
    try {
      try {
        await this.#publisher.publish(env);
      } catch (err) {
        this.#logger.warn({ err, conversationId: conv.id }, 'operator command could not be queued');
        if (holds) await tenant.em.nativeUpdate(ConversationSchema, { id: conv.id, holdRequestedAt: { $ne: null } }, { holdRequestedAt: null }).catch(() => {});
        throw new AppError('QUEUE_UNAVAILABLE');
      }
      const done = await applied;
      if (!done) throw new AppError('QUEUE_UNAVAILABLE', 'The command was queued but not applied in time; retry later.');
      const { notice, messages } = done;
      if (notice.outcome === 'not_found' || !notice.conversation) throw notFound('Conversation');
      return { outcome: notice.outcome, conversation: notice.conversation, messages };
    } finally {
      clearTimeout(timer);
      sub.unsubscribe();
    }
  }
}
