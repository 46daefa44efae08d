import t from 'tap';
import { initialTransition, transition, type SnapshotFrom } from 'xstate';
import { conversationMachine, conversationMachineDefinition, isAnswering, isCollecting, isHandedOver, statusOf } from '../../machines/conversation.js';
import type { AgentOutput, ClarifyOption, ConversationEvent } from '../../schema/conversation.js';

// Never silent after a handoff, and clarify options (contract.md § Answers that find what the
// help centre says), stepped with xstate's pure transition() as the host steps the machine.
type Snapshot = SnapshotFrom<typeof conversationMachine>;

const AT = '2025-01-01T00:00:00.000Z';
const at = (s: number) => new Date(Date.parse(AT) + s * 1000).toISOString();
const msg = (messageId: string, text: string, extra: Partial<ConversationEvent> = {}) => ({ type: 'customer.message', messageId, text, at: AT, ...extra }) as ConversationEvent;
const done = (output: AgentOutput) => ({ type: 'xstate.done.actor.agent', output }) as unknown as ConversationEvent;
const failed = { type: 'xstate.error.actor.agent', error: new Error('model down') } as unknown as ConversationEvent;

const OPTIONS: ClarifyOption[] = [
  { documentId: 1, chunkId: 11, title: 'Returns' },
  { documentId: 2, chunkId: 22, title: 'Exchanges' },
];

/** One event: the next snapshot, the host's named actions, and the agent's input if it was invoked. */
function step(snapshot: Snapshot, event: ConversationEvent) {
  const [next, actions] = transition(conversationMachine, snapshot, event);
  const spawn = actions.find((a) => a.type === 'xstate.spawnChild');
  return {
    next,
    named: actions.filter((a) => !a.type.startsWith('xstate.')).map((a) => ({ type: a.type, params: a.params })),
    input: (spawn?.params as { input?: unknown } | undefined)?.input,
  };
}

/** A conversation the agent handed over: the customer asked for a person. */
function handedOver(): Snapshot {
  let [s] = initialTransition(conversationMachine);
  s = step(s, msg('m1', 'I want to talk to a person')).next;
  const handoff = step(s, done({ kind: 'handoff', reason: 'asked_for_human', text: 'A person will answer.' }));
  return handoff.next;
}

t.test('an agent handoff goes to paused.handedOver: transferred once, still paused', async (t) => {
  let [s] = initialTransition(conversationMachine);
  s = step(s, msg('m1', 'I want to talk to a person')).next;
  const handoff = step(s, done({ kind: 'handoff', reason: 'asked_for_human', text: 'A person will answer.' }));
  t.same(handoff.next.value, { paused: { handedOver: 'idle' } });
  t.equal(statusOf(handoff.next.value), 'paused', 'the conversation is paused (needsHuman)');
  t.ok(isHandedOver(handoff.next.value));
  t.equal(handoff.next.context.handoffReason, 'asked_for_human');
  t.same(handoff.named, [{ type: 'session_transfer_external', params: { origin: 'agent', reason: 'asked_for_human', messageId: 'm1', text: 'A person will answer.' } }]);

  // A failure hands over too.
  const failure = step(s, failed);
  t.same(failure.next.value, { paused: { handedOver: 'idle' } });
  t.equal(failure.next.context.handoffReason, 'model_failed');
  t.same(failure.named.map((a) => a.type), ['session_transfer_external']);
});

t.test('handed over: a customer message is answered, the reply sent, still handed over', async (t) => {
  const asked = step(handedOver(), msg('m2', 'hello'));
  t.same(asked.next.value, { paused: { handedOver: 'answering' } });
  t.ok(isAnswering(asked.next.value));
  t.same(asked.named, [], 'nothing sent before the agent answers');
  t.same(asked.input, { messageId: 'm2', text: 'hello', handedOver: true }, 'the agent is told it handed over');
  const replied = step(asked.next, done({ kind: 'reply', text: 'Hello! How can I help you?' }));
  t.same(replied.next.value, { paused: { handedOver: 'idle' } }, 'stays handed over');
  t.equal(replied.next.context.handoffReason, 'asked_for_human', 'the reason is kept');
  t.same(replied.named, [{ type: 'agent_reply', params: { messageId: 'm2', text: 'Hello! How can I help you?' } }]);
  t.same(replied.next.context.collected, [], 'nothing left to answer');
});

t.test('handed over: a handoff (or a failure) sends nothing and makes no second transfer', async (t) => {
  const asked = step(handedOver(), msg('m2', 'Do you sell bitcoin wallets?'));
  const handoff = step(asked.next, done({ kind: 'handoff', reason: 'no_answer', text: 'Sorry.' }));
  t.same(handoff.next.value, { paused: { handedOver: 'idle' } });
  t.same(handoff.named, [], 'no reply, no transfer: the customer waits for the person');
  t.equal(handoff.next.context.handoffReason, 'asked_for_human', 'the first reason stays');
  const failure = step(asked.next, failed);
  t.same(failure.next.value, { paused: { handedOver: 'idle' } });
  t.same(failure.named, []);
  const close = step(asked.next, done({ kind: 'close', reason: 'goodbye', text: 'Bye' }));
  t.same(close.next.value, { paused: { handedOver: 'idle' } }, 'the agent does not close a conversation that waits for a person');
  t.same(close.named, []);
});

t.test('handed over: a message arriving mid-answer is not taken; debounce works there too', async (t) => {
  const asked = step(handedOver(), msg('m2', 'hello')).next;
  const again = step(asked, msg('m3', 'anyone?'));
  t.same(again.next.value, { paused: { handedOver: 'answering' } });
  t.equal(again.next.context.lastCustomerMessageId, 'm2');

  let s = step(handedOver(), msg('m2', 'Hi', { at: at(0), debounceMs: 1000 })).next;
  t.same(s.value, { paused: { handedOver: 'collecting' } });
  t.ok(isCollecting(s.value));
  s = step(s, msg('m3', 'how do I return shoes?', { at: at(0.5), debounceMs: 1000 })).next;
  t.equal(s.context.answerDueAt, at(1.5));
  t.same(step(s, { type: 'debounce.elapsed', at: at(1) }).next.value, { paused: { handedOver: 'collecting' } });
  const due = step(s, { type: 'debounce.elapsed', at: at(1.5) });
  t.same(due.next.value, { paused: { handedOver: 'answering' } });
  t.same(due.input, { messageId: 'm3', text: 'Hi\nhow do I return shoes?', handedOver: true });
});

t.test('a person acting ends handed over: an operator pause (or reply), a helpdesk transfer, close, resume', async (t) => {
  for (const from of ['idle', 'answering'] as const) {
    const s = from === 'idle' ? handedOver() : step(handedOver(), msg('m2', 'hello')).next;
    const pause = step(s, { type: 'operator.pause', at: AT, by: 'op-1' });
    t.same(pause.next.value, { paused: 'operator' }, `operator.pause from handedOver.${from}`);
    t.same(pause.named, []);
    t.equal(pause.next.context.handoffReason, 'asked_for_human', 'still paused for the reason the agent gave');
    // Now a person has it: the agent is silent.
    const silent = step(pause.next, msg('m4', 'hello again'));
    t.same(silent.next.value, { paused: 'operator' });
    t.same(silent.named, []);
    t.equal(silent.input, undefined, 'the agent is not asked');
    t.equal(silent.next.context.lastCustomerMessageId, 'm4');

    const transferred = step(s, { type: 'helpdesk.dialog_transferred', requestId: 5, at: AT });
    t.same(transferred.next.value, { paused: 'transferred' }, `helpdesk transfer from handedOver.${from}`);
    t.match(transferred.named, [{ type: 'session_transfer_external', params: { origin: 'helpdesk', requestId: 5 } }]);

    const closed = step(s, { type: 'operator.close', at: AT });
    t.equal(closed.next.value, 'closed');
    t.match(closed.named, [{ type: 'session_close', params: { origin: 'operator' } }]);

    const resumed = step(s, { type: 'operator.resume', at: AT });
    t.same(resumed.next.value, { active: 'idle' });
    t.equal(resumed.next.context.handoffReason, null);
  }
});

t.test('clarify options: remembered, passed in the next input, cleared by the next answer', async (t) => {
  let [s] = initialTransition(conversationMachine);
  s = step(s, msg('m1', 'What is your policy?')).next;
  const clarify = step(s, done({ kind: 'reply', text: 'Do you mean: 1. Returns 2. Exchanges?', options: OPTIONS }));
  t.same(clarify.named, [{ type: 'agent_reply', params: { messageId: 'm1', text: 'Do you mean: 1. Returns 2. Exchanges?', options: OPTIONS } }], 'the reply carries its options');
  t.same(clarify.next.context.pendingOptions, OPTIONS);

  const picked = step(clarify.next, msg('m2', '2'));
  t.same(picked.input, { messageId: 'm2', text: '2', options: OPTIONS }, 'the next message may pick one');
  const answered = step(picked.next, done({ kind: 'reply', text: 'Exchanges are free within 30 days.' }));
  t.equal(answered.next.context.pendingOptions, null, 'an answer without options forgets them');
  t.same(answered.named, [{ type: 'agent_reply', params: { messageId: 'm2', text: 'Exchanges are free within 30 days.' } }]);
  t.same(step(answered.next, msg('m3', 'thanks')).input, { messageId: 'm3', text: 'thanks' }, 'no options once forgotten');

  // A handoff forgets them too; while handed over a clarify reply offers them again.
  const handoff = step(picked.next, done({ kind: 'handoff', reason: 'no_answer' }));
  t.equal(handoff.next.context.pendingOptions, null);
  const asked = step(handoff.next, msg('m3', 'policy?'));
  t.same(asked.input, { messageId: 'm3', text: 'policy?', handedOver: true });
  const again = step(asked.next, done({ kind: 'reply', text: 'Do you mean: 1. Returns 2. Exchanges?', options: OPTIONS }));
  t.same(again.next.context.pendingOptions, OPTIONS);
  t.same(again.next.value, { paused: { handedOver: 'idle' } });
  const next = step(again.next, msg('m4', 'Returns'));
  t.same(next.input, { messageId: 'm4', text: 'Returns', handedOver: true, options: OPTIONS });
  t.equal(step(next.next, failed).next.context.pendingOptions, null, 'a failure forgets them');
  t.equal(step(next.next, done({ kind: 'handoff', reason: 'no_answer' })).next.context.pendingOptions, null);

  // Empty options are no options.
  const empty = step(picked.next, done({ kind: 'reply', text: 'ok', options: [] }));
  t.same(empty.named, [{ type: 'agent_reply', params: { messageId: 'm2', text: 'ok' } }]);
});

t.test('the machine description lists the new states', async (t) => {
  const { states } = conversationMachineDefinition();
  for (const s of ['paused.handedOver', 'paused.handedOver.idle', 'paused.handedOver.collecting', 'paused.handedOver.answering']) t.ok(states.includes(s), s);
  t.equal(statusOf({ paused: { handedOver: 'answering' } }), 'paused');
  t.notOk(isHandedOver({ paused: 'operator' }));
  t.notOk(isAnswering({ paused: 'operator' }));
  t.ok(isAnswering({ active: 'answering' }));
});
