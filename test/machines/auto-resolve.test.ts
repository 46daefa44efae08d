import t from 'tap';
import { initialTransition, transition, type SnapshotFrom } from 'xstate';
import { conversationMachine, conversationMachineDefinition, statusOf } from '../../machines/conversation.js';
import type { AgentOutput, ConversationEvent } from '../../schema/conversation.js';

// Auto-resolve (contract.md § The first hour), stepped with xstate's pure transition() as the
// host steps the machine: only a session at rest after the agent's answer closes.
type Snapshot = SnapshotFrom<typeof conversationMachine>;

const AT = '2025-01-01T00:00:00.000Z';
const RESOLVE = { type: 'agent.auto_resolve', at: '2025-01-02T00:00:00.000Z', answeredAt: AT, idleMinutes: 1440 } as ConversationEvent;
const msg = (messageId: string, text: string, extra: Partial<ConversationEvent> = {}) => ({ type: 'customer.message', messageId, text, at: AT, ...extra }) as ConversationEvent;
const done = (output: AgentOutput) => ({ type: 'xstate.done.actor.agent', output }) as unknown as ConversationEvent;

function step(snapshot: Snapshot, event: ConversationEvent) {
  const [next, actions] = transition(conversationMachine, snapshot, event);
  return { next, named: actions.filter((a) => !a.type.startsWith('xstate.')).map((a) => ({ type: a.type, params: a.params })) };
}

function answered(): Snapshot {
  let [s] = initialTransition(conversationMachine);
  s = step(s, msg('m1', 'When do you open?')).next;
  return step(s, done({ kind: 'reply', text: 'At nine.' })).next;
}

t.test('answered and at rest: closes as resolved by the agent', async (t) => {
  const { next, named } = step(answered(), RESOLVE);
  t.equal(next.value, 'closed');
  t.equal(statusOf(next.value), 'closed');
  t.equal(next.context.closedAt, '2025-01-02T00:00:00.000Z', 'closed when the worker applied it');
  t.same(named, [{ type: 'session_close', params: { origin: 'agent', event: 'agent.auto_resolve', at: '2025-01-02T00:00:00.000Z', reason: 'auto_resolved' } }]);
  const closedAgain = step(next, msg('m2', 'One more thing'));
  t.equal(closedAgain.next.value, 'closed', 'closed is final: the host opens a new session for the next message');
});

t.test('a customer who wrote after the answer, or a person who has it: not closed', async (t) => {
  const answering = step(answered(), msg('m2', 'And on Sunday?')).next;
  t.same(answering.value, { active: 'answering' });
  t.same(step(answering, RESOLVE).next.value, { active: 'answering' }, 'the agent is answering the customer');
  t.same(step(answering, RESOLVE).named, []);

  const collecting = step(answered(), msg('m2', 'And on Sunday?', { debounceMs: 1500 })).next;
  t.same(step(collecting, RESOLVE).next.value, { active: 'collecting' }, 'the agent waits for more messages');

  const paused = step(answered(), { type: 'operator.pause', at: AT }).next;
  t.same(step(paused, RESOLVE).next.value, { paused: 'operator' }, 'an operator has it');

  const handedOver = step(step(answered(), msg('m2', 'I want a person')).next, done({ kind: 'handoff', reason: 'asked_for_human' })).next;
  t.same(step(handedOver, RESOLVE).next.value, { paused: { handedOver: 'idle' } }, 'handed over: waits for a person');
});

t.test('the machine definition lists the event', async (t) => {
  t.ok(conversationMachineDefinition().events.includes('agent.auto_resolve'));
});
