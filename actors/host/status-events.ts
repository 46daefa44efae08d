import type { Logger } from '../../lib/logger.js';
import type { InboundPublisher } from '../../lib/inbound.js';
import type { SqlPool } from '../../lib/db.js';
import type { ConversationEvent } from '../../schema/conversation.js';
import type { InboundEnvelope } from '../../schema/envelope.js';
import { findConversationByRef, findOpenConversation, insertReceipts, setReceiptOutcomes } from '../store.js';
import type { Commits } from './commit.js';
import type { Item, ItemResult } from './lanes.js';

/**
 * The helpdesk's status events (`close_dialog`, `close_request`, `dialog_transferred`), one
 * transaction each (they are rare): the receipt drops repeats, the session is found by its
 * helpdesk ids (or the client's open one) and its machine stepped. An event that carries only
 * request_id / dialog_id arrives on the partition of `request:<id>` and is first routed to
 * the partition of the session that saw the id (`route`).
 */
type StatusEnvelope = Extract<InboundEnvelope, { kind: 'status' }>;

interface StatusEventDeps {
  sql: SqlPool;
  /** Publishes a routed event to its session's partition (lib/inbound.ts). */
  publisher: InboundPublisher;
  logger: Logger;
  commits: Commits;
}

export class StatusEvents {
  readonly #deps: StatusEventDeps;

  constructor(deps: StatusEventDeps) {
    this.#deps = deps;
  }

  async apply(env: StatusEnvelope, clientId: string): Promise<ItemResult> {
    const s = env.status;
    await this.#deps.commits.single(async (client, plan) => {
      const receipt = { integrationId: env.integrationId, key: env.idempotencyKey, companyId: env.companyId, kind: 'status', outcome: 'applied', conversationId: null };
      if ((await insertReceipts(client, [receipt])).size === 0) return;
      const conv = (await findConversationByRef(client, env.integrationId, s.requestId, s.dialogId, clientId, true)) ?? (await findOpenConversation(client, env.integrationId, clientId, true));
      if (!conv) {
        await setReceiptOutcomes(client, [{ integrationId: env.integrationId, key: env.idempotencyKey, outcome: 'unknown_session', conversationId: null }]);
        this.#deps.logger.info({ integrationId: env.integrationId, requestId: s.requestId, dialogId: s.dialogId, hook: s.hookType }, 'host: status event for no known session (recorded, ignored)');
        return;
      }
      const event = {
        type: `helpdesk.${s.hookType}`, requestId: s.requestId, ...(s.dialogId !== null ? { dialogId: s.dialogId } : {}), at: env.receivedAt,
      } as ConversationEvent;
      plan.remember(conv, s.requestId, s.dialogId);
      plan.step(conv, event);
      await setReceiptOutcomes(client, [{ integrationId: env.integrationId, key: env.idempotencyKey, outcome: 'applied', conversationId: conv.id }]);
    });
    return 'ack';
  }

  /**
   * Finds the session that saw the event's request / dialog id and hands the event to its
   * partition (`resubmit` when it is this one). Unknown ids are recorded and acked.
   */
  async route(item: Item, env: StatusEnvelope, resubmit: (partition: number, env: InboundEnvelope) => Promise<ItemResult>): Promise<ItemResult> {
    const s = env.status;
    const conv = await findConversationByRef(this.#deps.sql, env.integrationId, s.requestId, s.dialogId, null, false);
    if (!conv) {
      await this.#deps.commits.single(async (client) => {
        await insertReceipts(client, [{ integrationId: env.integrationId, key: env.idempotencyKey, companyId: env.companyId, kind: 'status', outcome: 'unknown_session', conversationId: null }]);
      });
      this.#deps.logger.info({ integrationId: env.integrationId, requestId: s.requestId, dialogId: s.dialogId, hook: s.hookType }, 'host: status event for unknown request/dialog id (recorded, ignored)');
      return 'ack';
    }
    const routed: InboundEnvelope = { ...env, status: { ...s, clientId: conv.client_id } };
    if (conv.partition === item.partition) return resubmit(item.partition, routed);
    await this.#deps.publisher.publish(routed, { dedupSuffix: ':routed' });
    return 'ack';
  }
}
