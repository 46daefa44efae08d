import type { InboundEnvelope } from '../schema/envelope.js';
import { isHandedOver } from '../machines/conversation.js';
import type { Plan } from './plan.js';
import type { ConversationRow } from './tables/conversations.js';

type OperatorEnvelope = Extract<InboundEnvelope, { kind: 'operator' }>;

/**
 * Operator commands from the API (pause, resume, close, reply, note), the auto-resolve sweep's (actors/auto-resolve.ts) and the
 * outbox sender's (`channel_refused`: actors/outbox/sender.ts), in turn with the customer's messages. The API waits for the
 * "applied" notice published after the commit. A pause or close clears the hold the API set
 * at once in the database (an agent reply committed meanwhile was cancelled: actors/plan.ts).
 */
/** Returns the conversation it applied to, or null when the command names none of its company's. */
export function applyOperatorCommand(plan: Plan, env: OperatorEnvelope, conv: ConversationRow | null, fresh: boolean, now: Date): ConversationRow | null {
  if (!conv || conv.company_id !== env.companyId || conv.integration_id !== env.integrationId) {
    plan.notice(env.companyId, () => ({ type: 'applied', conversationId: env.conversationId, idempotencyKey: env.idempotencyKey, outcome: 'not_found', conversation: null }));
    return null;
  }
  let outcome: 'applied' | 'duplicate' | 'ignored' = fresh ? 'applied' : 'duplicate';
  if (fresh) {
    const cmd = env.command;
    if (cmd.action === 'channel_refused') {
      const type = cmd.reason === 'blocked' ? 'channel.blocked' : 'channel.window_closed';
      if (conv.status === 'closed' || !plan.step(conv, { type, at: now.toISOString(), outboxId: cmd.outboxId })) outcome = 'ignored';
      // The refused reply answered nobody: the customer waits for a person (needsHuman).
      else if (type === 'channel.window_closed') conv.last_message_role = 'customer';
    } else if (cmd.action === 'auto_resolve') {
      if (!answeredLast(conv, cmd.answeredAt) || !plan.step(conv, { type: 'agent.auto_resolve', at: now.toISOString(), answeredAt: cmd.answeredAt, idleMinutes: cmd.idleMinutes })) outcome = 'ignored';
    } else if (cmd.action === 'reply' || cmd.action === 'note') {
      if (conv.status === 'closed') outcome = 'ignored';
      else if (cmd.action === 'note') plan.addMessage(conv, { role: 'operator', kind: 'note', text: cmd.text, author_id: cmd.by });
      else {
        // Take-over: a person answering first pauses the bot (the API set the hold), then the reply goes out. Handed
        // over by the agent and no person had acted yet: the reply is that person acting, the agent stops answering
        // (`paused.operator`). Paused otherwise: the hold the API set goes all the same, or it would cancel the bot's
        // replies after a resume.
        if (conv.status === 'active' || isHandedOver(conv.state)) plan.step(conv, { type: 'operator.pause', at: env.receivedAt, ...(cmd.by ? { by: cmd.by } : {}) }, { clearHold: true });
        else if (conv.hold_requested_at !== null) plan.touch(conv, { clearHold: true });
        plan.addMessage(conv, { role: 'operator', kind: 'message', text: cmd.text, delivery: 'pending', author_id: cmd.by }, 'operator_reply');
      }
    } else {
      const clearHold = cmd.action === 'pause' || cmd.action === 'close';
      plan.step(conv, { type: `operator.${cmd.action}`, at: env.receivedAt, ...(cmd.by ? { by: cmd.by } : {}) }, { clearHold });
    }
  }
  // Built after the writes, so the view carries the saved row.
  plan.notice(conv.company_id, (viewOf) => ({ type: 'applied', conversationId: conv.id, idempotencyKey: env.idempotencyKey, outcome, conversation: viewOf(conv) }));
  return conv;
}

/**
 * The agent's answer the sweep saw is still the conversation's last message: nobody wrote since (the customer's message, an
 * operator's reply or a new answer would have moved last_message_at). The machine decides the rest (only `active.idle` closes).
 */
function answeredLast(conv: ConversationRow, answeredAt: string): boolean {
  return conv.status === 'active' && conv.last_message_role === 'agent' && conv.last_message_at !== null && new Date(conv.last_message_at).getTime() === Date.parse(answeredAt);
}

