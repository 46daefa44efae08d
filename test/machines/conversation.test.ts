import t from 'tap';
import {
  createActor,
  fromPromise,
  initialTransition,
  transition,
  waitFor,
  type SnapshotFrom,
} from 'xstate';
import {
  conversationMachine,
  conversationMachineDefinition,
  statusOf,
  MAX_REMEMBERED_IDS,
} from '../../machines/conversation.js';
import type {
  AgentInput,
  AgentOutput,
  ConversationEvent,
} from '../../schema/conversation.js';

type Snapshot = SnapshotFrom<typeof conversationMachine>;
type AgentImpl = (input: AgentInput) => Promise<AgentOutput>;
interface HostCall {
  type: 'agent_reply' | 'session_transfer_external' | 'session_close';
  params: unknown;
}

const AT = '2025-01-01T00:00:00.000Z';
const msg = (messageId: string, text = 'hello', extra: Partial<ConversationEvent> = {}): ConversationEvent =>
  ({ type: 'customer.message', messageId, text, at: AT, ...extra }) as ConversationEvent;

function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Actor with a provided agent and host actions that record their calls. */
function start(agent?: AgentImpl, snapshot?: Snapshot) {
  const calls: HostCall[] = [];
  const agentInputs: AgentInput[] = [];
  const provided = conversationMachine.provide({
    actions: {
      agent_reply: (_, params) => void calls.push({ type: 'agent_reply', params }),
      session_transfer_external: (_, params) => void calls.push({ type: 'session_transfer_external', params }),
      session_close: (_, params) => void calls.push({ type: 'session_close', params }),
    },
    ...(agent
      ? {
          actors: {
            agent: fromPromise<AgentOutput, AgentInput>(async ({ input }) => {
              agentInputs.push(input);
              return agent(input);
            }),
          },
        }
      : {}),
  });
  const actor = createActor(provided, snapshot ? { snapshot } : {});
  actor.start();
  return { actor, calls, agentInputs, machine: provided };
}

const replying: AgentImpl = async ({ text }) => ({ kind: 'reply', text: `echo: ${text}` });
const never: AgentImpl = () => new Promise<AgentOutput>(() => {});
const tick = () => new Promise((r) => setTimeout(r, 10));

/** Drive an actor to paused.operator via operator.pause. */
function toPausedOperator(actor: ReturnType<typeof start>['actor']) {
  actor.send({ type: 'operator.pause', at: AT });
}

t.test('starts in active.idle with an empty context', async (t) => {
  const { actor } = start(replying);
  t.same(actor.getSnapshot().value, { active: 'idle' });
  t.same(actor.getSnapshot().context, {
    requestIds: [],
    dialogIds: [],
    transfers: [],
    lastCustomerMessageId: null,
    collected: [],
    answerDueAt: null,
    handoffReason: null,
    closedAt: null,
  });
  t.equal(statusOf(actor.getSnapshot().value), 'active');
});

t.test('active.idle + customer.message -> answering -> reply -> active.idle with agent_reply', async (t) => {
  const d = deferred<AgentOutput>();
  const { actor, calls, agentInputs } = start(() => d.promise);
  actor.send(msg('m1', 'where is my order?'));
  t.same(actor.getSnapshot().value, { active: 'answering' });
  t.equal(actor.getSnapshot().context.lastCustomerMessageId, 'm1');
  await tick();
  t.same(agentInputs, [{ messageId: 'm1', text: 'where is my order?' }], 'agent invoked with the message');
  t.same(calls, [], 'nothing sent before the agent answers');
  d.resolve({ kind: 'reply', text: 'on its way' });
  await waitFor(actor, (s) => s.matches({ active: 'idle' }), { timeout: 1000 });
  t.same(calls, [{ type: 'agent_reply', params: { messageId: 'm1', text: 'on its way' } }]);
  t.equal(actor.getSnapshot().context.handoffReason, null);

  // a second message is answered again
  actor.send(msg('m2', 'thanks'));
  await waitFor(actor, (s) => s.matches({ active: 'idle' }), { timeout: 1000 });
  t.equal(agentInputs.length, 2);
  t.same(calls[1], { type: 'agent_reply', params: { messageId: 'm2', text: 'on its way' } });
});

t.test('agent handoff -> paused.handedOver with session_transfer_external', async (t) => {
  for (const reason of ['asked_for_human', 'no_answer', 'no_credit'] as const) {
    const { actor, calls } = start(async () => ({ kind: 'handoff', reason, text: 'A human will answer' }));
    actor.send(msg('m1'));
    await waitFor(actor, (s) => s.matches('paused'), { timeout: 1000 });
    t.same(actor.getSnapshot().value, { paused: { handedOver: 'idle' } }, reason);
    t.equal(actor.getSnapshot().context.handoffReason, reason);
    t.same(calls, [
      {
        type: 'session_transfer_external',
        params: { origin: 'agent', reason, messageId: 'm1', text: 'A human will answer' },
      },
    ]);
    t.equal(statusOf(actor.getSnapshot().value), 'paused');
  }
});

t.test('agent error -> paused.handedOver, handoffReason model_failed', async (t) => {
  const { actor, calls } = start(async () => {
    throw new Error('model timeout');
  });
  actor.send(msg('m1'));
  await waitFor(actor, (s) => s.matches('paused'), { timeout: 1000 });
  t.same(actor.getSnapshot().value, { paused: { handedOver: 'idle' } });
  t.equal(actor.getSnapshot().context.handoffReason, 'model_failed');
  t.same(calls, [{ type: 'session_transfer_external', params: { origin: 'agent', reason: 'model_failed', messageId: 'm1' } }]);
});

t.test('malformed agent output is treated as a model failure', async (t) => {
  const { actor, calls } = start(async () => ({ kind: 'nonsense' }) as unknown as AgentOutput);
  actor.send(msg('m1'));
  await waitFor(actor, (s) => s.matches('paused'), { timeout: 1000 });
  t.equal(actor.getSnapshot().context.handoffReason, 'model_failed');
  t.equal(calls[0]?.type, 'session_transfer_external');
});

t.test('the placeholder agent rejects (must be provided), which hands off', async (t) => {
  const errors: unknown[] = [];
  const actor = createActor(conversationMachine, {
    inspect: (ev) => {
      if (ev.type === '@xstate.event' && ev.event.type === 'xstate.error.actor.agent') errors.push(ev.event.error);
    },
  });
  actor.start();
  actor.send(msg('m1'));
  await waitFor(actor, (s) => s.matches('paused'), { timeout: 1000 });
  t.same(actor.getSnapshot().value, { paused: { handedOver: 'idle' } });
  t.equal(actor.getSnapshot().context.handoffReason, 'model_failed');
  t.equal(errors.length, 1);
  t.match(String((errors[0] as Error).message), /machine\.provide/);
});

t.test('customer.message while answering is ignored', async (t) => {
  const d = deferred<AgentOutput>();
  const { actor, calls, agentInputs } = start(() => d.promise);
  actor.send(msg('m1', 'first'));
  await tick();
  actor.send(msg('m2', 'second'));
  await tick();
  t.same(actor.getSnapshot().value, { active: 'answering' });
  t.equal(actor.getSnapshot().context.lastCustomerMessageId, 'm1');
  t.equal(agentInputs.length, 1, 'agent not invoked a second time');
  d.resolve({ kind: 'reply', text: 'ok' });
  await waitFor(actor, (s) => s.matches({ active: 'idle' }), { timeout: 1000 });
  t.same(calls, [{ type: 'agent_reply', params: { messageId: 'm1', text: 'ok' } }]);
});

t.test('helpdesk close events close the session from every non-final state', async (t) => {
  const cases: { name: string; setup: (a: ReturnType<typeof start>['actor']) => Promise<void> }[] = [
    { name: 'active.idle', setup: async () => {} },
    { name: 'active.answering', setup: async (a) => void a.send(msg('m1')) },
    { name: 'paused.operator', setup: async (a) => toPausedOperator(a) },
    {
      name: 'paused.transferred',
      setup: async (a) => void a.send({ type: 'helpdesk.dialog_transferred', requestId: 1, at: AT }),
    },
  ];
  for (const type of ['helpdesk.close_dialog', 'helpdesk.close_request'] as const) {
    for (const c of cases) {
      const { actor, calls, agentInputs } = start(never);
      await c.setup(actor);
      const before = calls.length;
      actor.send({ type, requestId: 77, dialogId: 88, at: '2025-02-02T00:00:00.000Z' });
      const s = actor.getSnapshot();
      t.equal(s.value, 'closed', `${type} from ${c.name}`);
      t.equal(s.status, 'done');
      t.equal(statusOf(s.value), 'closed');
      t.equal(s.context.closedAt, '2025-02-02T00:00:00.000Z');
      t.ok(s.context.requestIds.includes(77));
      t.ok(s.context.dialogIds.includes(88));
      t.same(calls.slice(before), [
        {
          type: 'session_close',
          params: { origin: 'helpdesk', event: type, at: '2025-02-02T00:00:00.000Z', requestId: 77, dialogId: 88 },
        },
      ]);
      if (c.name === 'active.answering') {
        t.equal(agentInputs.length, 1);
        t.same(Object.keys(s.children), [], 'invoked agent stopped');
      }
    }
  }
});

t.test('closing while the agent works: its late answer is never sent', async (t) => {
  const d = deferred<AgentOutput>();
  const { actor, calls } = start(() => d.promise);
  actor.send(msg('m1'));
  await tick();
  actor.send({ type: 'helpdesk.close_dialog', requestId: 5, at: AT });
  d.resolve({ kind: 'reply', text: 'late' });
  await tick();
  t.equal(actor.getSnapshot().value, 'closed');
  t.same(
    calls.map((c) => c.type),
    ['session_close'],
  );
});

t.test('helpdesk close without a requestId does not close, but remembers the dialogId', async (t) => {
  const { actor, calls } = start(replying);
  actor.send({ type: 'helpdesk.close_dialog', dialogId: 9, at: AT } as unknown as ConversationEvent);
  t.same(actor.getSnapshot().value, { active: 'idle' });
  t.same(actor.getSnapshot().context.dialogIds, [9]);
  t.same(actor.getSnapshot().context.requestIds, []);
  t.same(calls, []);
  toPausedOperator(actor);
  actor.send({ type: 'helpdesk.close_request', at: AT } as unknown as ConversationEvent);
  actor.send({ type: 'helpdesk.dialog_transferred', at: AT } as unknown as ConversationEvent);
  t.same(actor.getSnapshot().value, { paused: 'operator' });
  t.same(calls, []);
});

t.test('dialog_transferred from active -> paused.transferred, transfer appended', async (t) => {
  for (const from of ['idle', 'answering'] as const) {
    const d = deferred<AgentOutput>();
    const { actor, calls } = start(() => d.promise);
    if (from === 'answering') actor.send(msg('m1'));
    t.same(actor.getSnapshot().value, { active: from });
    actor.send({ type: 'helpdesk.dialog_transferred', requestId: 10, dialogId: 20, at: AT });
    const s = actor.getSnapshot();
    t.same(s.value, { paused: 'transferred' }, `from active.${from}`);
    t.same(s.context.transfers, [{ requestId: 10, dialogId: 20, at: AT }]);
    t.equal(s.context.handoffReason, 'dialog_transferred');
    t.same(s.context.requestIds, [10]);
    t.same(s.context.dialogIds, [20]);
    t.same(calls, [
      { type: 'session_transfer_external', params: { origin: 'helpdesk', requestId: 10, dialogId: 20, at: AT } },
    ]);
    if (from === 'answering') {
      t.same(Object.keys(s.children), [], 'agent stopped');
      d.resolve({ kind: 'reply', text: 'too late' });
      await tick();
      t.equal(calls.length, 1, 'no agent_reply after the transfer');
      t.same(actor.getSnapshot().value, { paused: 'transferred' });
    }
  }
});

t.test('dialog_transferred from paused.operator and again from paused.transferred appends', async (t) => {
  const { actor, calls } = start(replying);
  toPausedOperator(actor);
  t.same(actor.getSnapshot().value, { paused: 'operator' });
  actor.send({ type: 'helpdesk.dialog_transferred', requestId: 1, at: AT });
  t.same(actor.getSnapshot().value, { paused: 'transferred' });
  actor.send({ type: 'helpdesk.dialog_transferred', requestId: 1, dialogId: 3, at: '2025-01-02T00:00:00.000Z' });
  const s = actor.getSnapshot();
  t.same(s.value, { paused: 'transferred' });
  t.same(s.context.transfers, [
    { requestId: 1, dialogId: null, at: AT },
    { requestId: 1, dialogId: 3, at: '2025-01-02T00:00:00.000Z' },
  ]);
  t.same(s.context.requestIds, [1], 'deduplicated');
  t.same(
    calls.map((c) => c.type),
    ['session_transfer_external', 'session_transfer_external'],
  );
  t.same(calls[0]?.params, { origin: 'helpdesk', requestId: 1, dialogId: null, at: AT });
});

t.test('customer.message while paused: no agent, same child state, message id recorded', async (t) => {
  for (const child of ['operator', 'transferred'] as const) {
    const { actor, calls, agentInputs } = start(replying);
    if (child === 'operator') toPausedOperator(actor);
    else actor.send({ type: 'helpdesk.dialog_transferred', requestId: 1, at: AT });
    const before = calls.length;
    actor.send(msg('p1', 'hello?', { requestId: 1234, dialogId: 5678 } as Partial<ConversationEvent>));
    await tick();
    const s = actor.getSnapshot();
    t.same(s.value, { paused: child });
    t.equal(agentInputs.length, 0, 'agent not invoked');
    t.same(Object.keys(s.children), []);
    t.equal(calls.length, before, 'no host action');
    t.equal(s.context.lastCustomerMessageId, 'p1');
    t.ok(s.context.requestIds.includes(1234), 'inbox requestId remembered');
    t.same(s.context.dialogIds, [5678]);
  }
});

t.test('operator.pause from active (idle and answering) -> paused.operator', async (t) => {
  for (const from of ['idle', 'answering'] as const) {
    const d = deferred<AgentOutput>();
    const { actor, calls } = start(() => d.promise);
    if (from === 'answering') actor.send(msg('m1'));
    actor.send({ type: 'operator.pause', at: AT, by: 'op-1' });
    const s = actor.getSnapshot();
    t.same(s.value, { paused: 'operator' }, `from ${from}`);
    t.equal(s.context.handoffReason, 'operator_pause');
    d.resolve({ kind: 'reply', text: 'late' });
    await tick();
    t.same(calls, [], 'no named action on pause, no late reply');
  }
});

t.test('operator.pause while paused is ignored; operator.resume while active is ignored', async (t) => {
  const { actor } = start(replying);
  actor.send({ type: 'operator.resume', at: AT });
  t.same(actor.getSnapshot().value, { active: 'idle' });
  actor.send({ type: 'helpdesk.dialog_transferred', requestId: 1, at: AT });
  actor.send({ type: 'operator.pause', at: AT });
  t.same(actor.getSnapshot().value, { paused: 'transferred' }, 'pause does not move transferred to operator');
});

t.test('operator.resume from either paused child -> active.idle, agent answers again', async (t) => {
  for (const child of ['operator', 'transferred'] as const) {
    const { actor, calls, agentInputs } = start(replying);
    if (child === 'operator') toPausedOperator(actor);
    else actor.send({ type: 'helpdesk.dialog_transferred', requestId: 1, at: AT });
    t.same(actor.getSnapshot().value, { paused: child });
    actor.send({ type: 'operator.resume', at: AT, by: 'op-1' });
    t.same(actor.getSnapshot().value, { active: 'idle' }, `resume from ${child}`);
    t.equal(actor.getSnapshot().context.handoffReason, null);
    actor.send(msg('m9', 'back'));
    await waitFor(actor, (s) => s.matches({ active: 'idle' }), { timeout: 1000 });
    t.same(agentInputs, [{ messageId: 'm9', text: 'back' }]);
    t.same(calls[calls.length - 1], { type: 'agent_reply', params: { messageId: 'm9', text: 'echo: back' } });
  }
});

t.test('operator.close from active and paused -> closed with session_close', async (t) => {
  const froms = ['active.idle', 'active.answering', 'paused.operator', 'paused.transferred'] as const;
  for (const from of froms) {
    const { actor, calls } = start(never);
    if (from === 'active.answering') actor.send(msg('m1'));
    if (from === 'paused.operator') toPausedOperator(actor);
    if (from === 'paused.transferred') actor.send({ type: 'helpdesk.dialog_transferred', requestId: 1, at: AT });
    const before = calls.length;
    actor.send({ type: 'operator.close', at: '2025-03-03T00:00:00.000Z', by: 'op-7' });
    const s = actor.getSnapshot();
    t.equal(s.value, 'closed', from);
    t.equal(s.status, 'done');
    t.equal(s.context.closedAt, '2025-03-03T00:00:00.000Z');
    t.same(calls.slice(before), [
      {
        type: 'session_close',
        params: { origin: 'operator', event: 'operator.close', at: '2025-03-03T00:00:00.000Z', by: 'op-7' },
      },
    ]);
  }
});

t.test('closed is final and ignores every event (actor and pure transition)', async (t) => {
  const { actor, calls, agentInputs } = start(replying);
  actor.send({ type: 'operator.close', at: AT });
  const closed = actor.getSnapshot();
  t.equal(closed.status, 'done');
  const all: ConversationEvent[] = [
    msg('late'),
    { type: 'helpdesk.close_dialog', requestId: 1, at: AT },
    { type: 'helpdesk.close_request', requestId: 1, at: AT },
    { type: 'helpdesk.dialog_transferred', requestId: 1, dialogId: 2, at: AT },
    { type: 'operator.pause', at: AT },
    { type: 'operator.resume', at: AT },
    { type: 'operator.close', at: AT },
  ];
  for (const ev of all) {
    actor.send(ev);
    const [next, actions] = transition(conversationMachine, closed, ev);
    t.equal(next.value, 'closed', `pure ${ev.type}`);
    t.same(next.context, closed.context);
    t.same(actions, [], `no actions for ${ev.type}`);
  }
  await tick();
  t.equal(actor.getSnapshot().value, 'closed');
  t.same(actor.getSnapshot().context, closed.context);
  t.equal(agentInputs.length, 0);
  t.equal(calls.length, 1, 'only the one session_close');
});

t.test('remembered ids are deduplicated and capped', async (t) => {
  const { actor } = start(replying);
  toPausedOperator(actor);
  const n = MAX_REMEMBERED_IDS + 10;
  for (let i = 1; i <= n; i++) {
    actor.send({ type: 'helpdesk.dialog_transferred', requestId: i, dialogId: 1000 + (i % 3), at: AT });
  }
  let ctx = actor.getSnapshot().context;
  t.equal(ctx.requestIds.length, MAX_REMEMBERED_IDS);
  t.same(ctx.requestIds, Array.from({ length: MAX_REMEMBERED_IDS }, (_, k) => k + 11), 'keeps the last 50');
  t.equal(new Set(ctx.dialogIds).size, ctx.dialogIds.length, 'dialog ids unique');
  t.same([...ctx.dialogIds].sort(), [1000, 1001, 1002]);
  t.equal(ctx.transfers.length, n, 'every transfer recorded');
  // an old id seen again moves to the end and survives the next evictions
  actor.send({ type: 'helpdesk.dialog_transferred', requestId: 11, at: AT });
  ctx = actor.getSnapshot().context;
  t.equal(ctx.requestIds[ctx.requestIds.length - 1], 11);
  t.equal(ctx.requestIds.length, MAX_REMEMBERED_IDS);
  t.equal(ctx.requestIds.filter((x) => x === 11).length, 1);
});

t.test('persist and restore keeps state and context', async (t) => {
  const first = start(replying);
  first.actor.send(msg('m1', 'hi', { requestId: 42 } as Partial<ConversationEvent>));
  await waitFor(first.actor, (s) => s.matches({ active: 'idle' }), { timeout: 1000 });
  first.actor.send({ type: 'helpdesk.dialog_transferred', requestId: 42, dialogId: 7, at: AT });
  const persisted = JSON.parse(JSON.stringify(first.actor.getPersistedSnapshot())) as Snapshot;
  first.actor.stop();

  const restored = start(replying, persisted);
  const s = restored.actor.getSnapshot();
  t.same(s.value, { paused: 'transferred' });
  t.same(s.context, {
    requestIds: [42],
    dialogIds: [7],
    transfers: [{ requestId: 42, dialogId: 7, at: AT }],
    lastCustomerMessageId: 'm1',
    collected: s.context.collected,
    answerDueAt: null,
    handoffReason: 'dialog_transferred',
    closedAt: null,
  });
  t.same(restored.calls, [], 'actions are not re-run on restore');

  // keeps working after restore
  restored.actor.send({ type: 'operator.resume', at: AT });
  restored.actor.send(msg('m2', 'again'));
  await waitFor(restored.actor, (s2) => s2.matches({ active: 'idle' }), { timeout: 1000 });
  t.same(restored.calls, [{ type: 'agent_reply', params: { messageId: 'm2', text: 'echo: again' } }]);
  t.same(restored.actor.getSnapshot().context.requestIds, [42]);

  // a persisted closed session restores as closed
  restored.actor.send({ type: 'operator.close', at: AT });
  const closedSnap = JSON.parse(JSON.stringify(restored.actor.getPersistedSnapshot())) as Snapshot;
  const reopened = start(replying, closedSnap);
  t.equal(reopened.actor.getSnapshot().value, 'closed');
  t.equal(reopened.actor.getSnapshot().status, 'done');
  t.equal(reopened.actor.getSnapshot().context.closedAt, AT);
});

t.test('persisted mid-answer: the agent runs again on restore with the same input', async (t) => {
  const first = start(never);
  first.actor.send(msg('m1', 'question'));
  await tick();
  const persisted = JSON.parse(JSON.stringify(first.actor.getPersistedSnapshot())) as Snapshot;
  first.actor.stop();
  t.same(persisted.value, { active: 'answering' });

  const restored = start(replying, persisted);
  await waitFor(restored.actor, (s) => s.matches({ active: 'idle' }), { timeout: 1000 });
  t.same(restored.agentInputs, [{ messageId: 'm1', text: 'question' }]);
  t.same(restored.calls, [{ type: 'agent_reply', params: { messageId: 'm1', text: 'echo: question' } }]);
});

t.test('pure transition() API exposes named actions with resolved params', async (t) => {
  const [s0, a0] = initialTransition(conversationMachine);
  t.same(s0.value, { active: 'idle' });
  t.same(a0, []);

  const [s1, a1] = transition(conversationMachine, s0, msg('m1', 'hi'));
  t.same(s1.value, { active: 'answering' });
  const spawn = a1.find((a) => a.type === 'xstate.spawnChild');
  t.ok(spawn, 'agent invocation is an action the host can see');
  t.match(spawn?.params, { id: 'agent', src: 'agent', input: { messageId: 'm1', text: 'hi' } });

  const done = { type: 'xstate.done.actor.agent', output: { kind: 'reply', text: 'hey' } } as unknown as ConversationEvent;
  const [s2, a2] = transition(conversationMachine, s1, done);
  t.same(s2.value, { active: 'idle' });
  const reply = a2.find((a) => a.type === 'agent_reply');
  t.same(reply?.params, { messageId: 'm1', text: 'hey' });

  const [s3, a3] = transition(conversationMachine, s2, { type: 'helpdesk.close_request', requestId: 3, at: AT });
  t.equal(s3.value, 'closed');
  t.same(
    a3.filter((a) => !a.type.startsWith('xstate.')).map((a) => [a.type, a.params]),
    [['session_close', { origin: 'helpdesk', event: 'helpdesk.close_request', at: AT, requestId: 3 }]],
  );
  t.same(s0.value, { active: 'idle' }, 'pure transitions do not mutate the input snapshot');
  t.equal(s0.context.lastCustomerMessageId, null);
  t.equal(s1.context.lastCustomerMessageId, 'm1');
});

t.test('default named host actions are no-ops', async (t) => {
  const actor = createActor(conversationMachine);
  actor.start();
  actor.send({ type: 'helpdesk.dialog_transferred', requestId: 1, at: AT });
  actor.send({ type: 'operator.close', at: AT });
  t.equal(actor.getSnapshot().value, 'closed');
});

t.test('statusOf', async (t) => {
  t.equal(statusOf({ active: 'idle' }), 'active');
  t.equal(statusOf({ active: 'answering' }), 'active');
  t.equal(statusOf({ paused: 'operator' }), 'paused');
  t.equal(statusOf({ paused: 'transferred' }), 'paused');
  t.equal(statusOf('closed'), 'closed');
  t.equal(statusOf('active'), 'active');
  t.throws(() => statusOf('nope'));
  t.throws(() => statusOf({}));
});

t.test('conversationMachineDefinition() is JSON-safe and complete', async (t) => {
  const def = conversationMachineDefinition();
  const text = JSON.stringify(def);
  const parsed = JSON.parse(text) as typeof def;
  t.same(parsed, def, 'round-trips unchanged: no functions, undefined or cycles');
  t.notMatch(text, /<cycle>/);
  t.equal(parsed.id, 'conversation');
  t.same(parsed.states, [
    'active',
    'active.idle',
    'active.collecting',
    'active.answering',
    'paused',
    'paused.operator',
    'paused.transferred',
    'paused.handedOver',
    'paused.handedOver.idle',
    'paused.handedOver.collecting',
    'paused.handedOver.answering',
    'closed',
  ]);
  for (const ev of [
    'customer.message',
    'debounce.elapsed',
    'helpdesk.close_dialog',
    'helpdesk.close_request',
    'helpdesk.dialog_transferred',
    'operator.pause',
    'operator.resume',
    'operator.close',
  ]) {
    t.ok(parsed.events.includes(ev), `lists ${ev}`);
    t.ok(text.includes(`"${ev}"`));
  }
  t.same(parsed.hostActions, ['agent_reply', 'session_transfer_external', 'session_close', 'lead_stage']);
  for (const a of parsed.hostActions) t.ok(text.includes(`"${a}"`), `definition mentions ${a}`);
  t.same(parsed.definition, JSON.parse(JSON.stringify(conversationMachine.toJSON())), 'same as xstate toJSON');
  const closed = (parsed.definition as { states: Record<string, { type: string }> }).states.closed;
  t.equal(closed?.type, 'final');
});

// ---- debounce, tools (issue #20): pure transitions, no I/O ---------------------------

/** Steps the machine with xstate's pure transition(), as the host does; returns the named actions. */
function step(snapshot: Snapshot, event: ConversationEvent | { type: string; output?: AgentOutput; at?: string }) {
  const [next, actions] = transition(conversationMachine, snapshot, event as ConversationEvent);
  return { next, named: actions.filter((a) => !a.type.startsWith('xstate.')).map((a) => ({ type: a.type, params: a.params })) };
}
const at = (s: number) => new Date(Date.parse(AT) + s * 1000).toISOString();

t.test('debounce: messages within the window are answered once, together, at the durable deadline', async (t) => {
  let [s] = initialTransition(conversationMachine);
  s = step(s, msg('m1', 'Hi', { at: at(0), debounceMs: 1500 })).next;
  t.same(s.value, { active: 'collecting' }, 'the agent is not asked yet');
  t.equal(s.context.answerDueAt, at(1.5), 'the deadline is in the context (it survives a restart)');
  s = step(s, msg('m2', 'I have a question', { at: at(1), debounceMs: 1500 })).next;
  s = step(s, msg('m3', 'about my order', { at: at(2), debounceMs: 1500 })).next;
  t.equal(s.context.answerDueAt, at(3.5), 'each message moves the deadline');
  t.same(step(s, { type: 'debounce.elapsed', at: at(3) }).next.value, { active: 'collecting' }, 'before the deadline nothing happens');
  const due = step(s, { type: 'debounce.elapsed', at: at(3.5) });
  t.same(due.next.value, { active: 'answering' });
  t.equal(due.next.context.lastCustomerMessageId, 'm3');
  t.same(due.next.context.collected?.map((m) => m.text), ['Hi', 'I have a question', 'about my order'], 'the three are answered together');
  const done = step(due.next, { type: 'xstate.done.actor.agent', output: { kind: 'reply', text: 'Sure.' } });
  t.same(done.named, [{ type: 'agent_reply', params: { messageId: 'm3', text: 'Sure.' } }], 'one reply, to the last message');
  t.same(done.next.context.collected, [], 'idle again, nothing collected');

  // Restored from its persisted snapshot (a worker crashed inside the window): same deadline, same outcome.
  const restored = conversationMachine.resolveState(JSON.parse(JSON.stringify(conversationMachine.getPersistedSnapshot(s))));
  t.same(step(restored, { type: 'debounce.elapsed', at: at(4) }).next.value, { active: 'answering' });
});

t.test('debounce: an operator pause inside the window drops the pending answer', async (t) => {
  let [s] = initialTransition(conversationMachine);
  s = step(s, msg('m1', 'Hi', { at: at(0), debounceMs: 1500 })).next;
  s = step(s, { type: 'operator.pause', at: at(1) }).next;
  t.same(s.value, { paused: 'operator' });
  t.same(step(s, { type: 'debounce.elapsed', at: at(2) }).named, [], 'a late deadline changes nothing');
  s = step(s, { type: 'operator.resume', at: at(3) }).next;
  t.same(s.context.collected, [], 'resumed with nothing pending');
});

t.test('no debounce: a message is answered at once', async (t) => {
  const [s] = initialTransition(conversationMachine);
  const next = step(s, msg('m1', 'Hi', { at: at(0) })).next;
  t.same(next.value, { active: 'answering' });
  t.same(next.context.collected, [{ messageId: 'm1', text: 'Hi' }]);
});

t.test('tools: close_conversation closes with the reason; set_lead_stage moves the lead with any answer', async (t) => {
  const [s0] = initialTransition(conversationMachine);
  const answering = step(s0, msg('m1', 'That is all, thanks')).next;
  const closed = step(answering, { type: 'xstate.done.actor.agent', output: { kind: 'close', reason: 'customer said goodbye', text: 'Goodbye!', leadStage: 'Won' } });
  t.equal(closed.next.value, 'closed');
  t.match(closed.named, [
    { type: 'agent_reply', params: { messageId: 'm1', text: 'Goodbye!' } },
    { type: 'lead_stage', params: { stage: 'Won' } },
    { type: 'session_close', params: { origin: 'agent', event: 'agent.close', reason: 'customer said goodbye' } },
  ]);
  const handoff = step(answering, { type: 'xstate.done.actor.agent', output: { kind: 'handoff', reason: 'no_answer', detail: 'refund request', leadStage: 'Qualified' } });
  t.same(handoff.next.value, { paused: { handedOver: 'idle' } });
  t.same(handoff.named.map((a) => a.type), ['lead_stage', 'session_transfer_external']);
  const plain = step(answering, { type: 'xstate.done.actor.agent', output: { kind: 'reply', text: 'ok' } });
  t.notOk(plain.named.some((a) => a.type === 'lead_stage'), 'no stage, no move');
  const outside = step(answering, { type: 'xstate.done.actor.agent', output: { kind: 'handoff', reason: 'outside_hours' } });
  t.equal(outside.next.context.handoffReason, 'outside_hours', 'outside business hours is a reason of its own');
});
