import type { ConversationEvent } from '../../schema/conversation.js';
import type { InboundEnvelope } from '../../schema/envelope.js';
import { insertReceipts, lockConversation } from '../store.js';
import { rowToView } from '../tx-plan.js';
import type { Commits } from './commit.js';
import type { ItemResult } from './lanes.js';

/**
 * Operator commands from the API (pause, resume, close, reply), one transaction each, on the
 * conversation's lane like any event. The API waits for the "applied" notice published after
 * the commit (`outcome`: applied, duplicate, ignored, not_found). A pause or close clears the
 * hold the API set at once in the database (an agent reply committed meanwhile was
 * cancelled: actors/tx-plan.ts).
 */
type OperatorEnvelope = Extract<InboundEnvelope, { kind: 'operator' }>;

export async function applyOperator(commits: Commits, env: OperatorEnvelope): Promise<ItemResult> {
  await commits.single(async (client, plan) => {
    const receipt = { integrationId: env.integrationId, key: env.idempotencyKey, companyId: env.companyId, kind: 'operator', outcome: 'applied', conversationId: env.conversationId };
    const fresh = (await insertReceipts(client, [receipt])).size > 0;
    const conv = await lockConversation(client, env.conversationId);
    if (!conv || conv.company_id !== env.companyId || conv.integration_id !== env.integrationId) {
      plan.notice(env.companyId, () => ({ type: 'applied', conversationId: env.conversationId, idempotencyKey: env.idempotencyKey, outcome: 'not_found', conversation: null }));
      return;
    }
    let outcome: 'applied' | 'duplicate' | 'ignored' = fresh ? 'applied' : 'duplicate';
    if (fresh) {
      const cmd = env.command;
      if (cmd.action === 'reply') {
        if (conv.status === 'closed') outcome = 'ignored';
        else {
          plan.addMessage(conv, { role: 'operator', kind: 'message', text: cmd.text, delivery: 'pending' }, 'operator_reply');
          plan.touch(conv, { lastMessageAt: new Date() });
        }
      } else {
        const event = { type: `operator.${cmd.action}`, at: env.receivedAt, ...(cmd.by ? { by: cmd.by } : {}) } as ConversationEvent;
        const clearHold = cmd.action === 'pause' || cmd.action === 'close';
        const changed = plan.step(conv, event, { clearHold });
        if (!changed && clearHold && conv.hold_requested_at) plan.touch(conv, { clearHold });
      }
    }
    // Built after the writes, so the view carries the saved row.
    plan.notice(conv.company_id, () => ({ type: 'applied', conversationId: conv.id, idempotencyKey: env.idempotencyKey, outcome, conversation: rowToView(conv) }));
  });
  return 'ack';
}
