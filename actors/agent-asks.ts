import type { AnyEventObject } from 'xstate';
import type { AnswerSettlement } from '../lib/credit.js';
import { isAnswering } from '../machines/conversation.js';
import type { AgentInput, AgentOutput, ToolCallRecord } from '../schema/conversation.js';
import type { AgentInputForRunner, AgentRunner } from './agents/types.js';
import type { Plan } from './plan.js';
import type { ConversationRow } from './tables/conversations.js';

/**
 * A conversation's agent asked, and its answer applied (actors/steps.ts): the same whether the
 * agent answers inside the message's transaction (a local agent) or outside it
 * (actors/answers.ts), and whether the conversation is the bot's or one it handed over that
 * waits for a person (machines/states.ts).
 */

/** What a conversation asks its agent: its collected text, answering its last customer message (machines/params.ts agentInputOf). */
export interface AgentAsk {
  conv: ConversationRow;
  input: AgentInput;
  agentId: number | null;
}

/**
 * Asks the conversation's agent; its answer as the machine's event. Inside the transaction
 * (a local agent) or outside it (actors/answers.ts, with the abort signal, the call's place
 * and the webchat's deltas).
 */
export async function askAgent(agent: AgentRunner, ask: AgentAsk, how: Pick<AgentInputForRunner, 'signal' | 'slot' | 'onDelta'> = {}): Promise<AnyEventObject> {
  const { conv, input } = ask;
  const output = await agent.answer({
    companyId: conv.company_id, conversationId: conv.id, agentId: ask.agentId, text: input.text, messageId: input.messageId, firstMessage: conv.message_seq <= 1,
    ...(input.options ? { options: input.options } : {}),
    ...(input.handedOver ? { handedOver: true } : {}),
    ...how,
  });
  return { type: 'xstate.done.actor.agent', output };
}

/**
 * Applies an answer to a locked conversation, if its machine still waits for it; notes what
 * its model call costs or frees. A human who took over meanwhile (pause, transfer, close)
 * wins: the answer is kept for the record, never sent, never charged. The company tools it
 * called are logged (`tool.called`) in either case.
 */
export function applyAnswer(plan: Plan, conv: ConversationRow, messageId: string, event: AnyEventObject, settle: AnswerSettlement[]): void {
  let output = (event as { output?: AgentOutput }).output;
  // The company tools the answer called happened whatever becomes of it (taken over and
  // cancelled mid-answer included): each is a row of its own, before the answer's.
  const calls = output?.toolCalls ?? (event as { toolCalls?: ToolCallRecord[] }).toolCalls;
  if (calls) {
    for (const call of calls) plan.log(conv, 'tool.called', { ...call });
    const { toolCalls: _inOutput, ...rest } = output ?? {};
    const { toolCalls: _inEvent, ...logged } = event as AnyEventObject & { toolCalls?: unknown };
    event = output ? { ...logged, output: rest } : logged;
    output = event.output as AgentOutput | undefined;
  }
  const release = { companyId: conv.company_id, conversationId: conv.id, messageId, usage: null };
  if (!isAnswering(conv.state) || conv.snapshot.context.lastCustomerMessageId !== messageId) {
    if (output?.kind === 'reply') plan.addMessage(conv, { role: 'agent', kind: 'reply', text: output.text, reply_to_id: messageId, delivery: 'cancelled', agent_version: output.agentVersion ?? null });
    settle.push(release);
    return;
  }
  // A reply committed while an operator's pause / close is pending is cancelled, not sent (actors/plan.ts): it is not charged either.
  const hold = conv.hold_requested_at !== null;
  const applied = plan.step(conv, event);
  settle.push(applied && output?.usage && !hold ? { ...release, usage: output.usage } : release);
}
