// The conversation machine: one XState v5 machine per conversation session.
// Pure: no I/O here. The host performs the named actions `agent_reply`,
// `session_transfer_external` and `session_close` (via `machine.provide({ actions })`,
// inspection, or the actions returned by the pure `transition()` API) and supplies the
// real `agent` actor via `machine.provide({ actors: { agent } })`.
//
// The agent takes customer messages in `active` and, after it handed the conversation over,
// in `paused.handedOver` until a person acts (contract.md § Answers that find what the help
// centre says: never silent): there it still answers what it can, and whatever it cannot
// waits for the person (nothing sent, no second transfer).
import { assertEvent, assign, createActor, enqueueActions, fromPromise, initialTransition, setup, type AnyActorScope, type ExecutableActionsFrom, type StateValue } from 'xstate';
import type {
  AgentInput,
  AgentOutput,
  AgentReplyParams,
  ConversationContext,
  ConversationEvent,
  ConversationStatus,
  LeadStageParams,
  SessionCloseParams,
  SessionTransferExternalParams,
} from '../schema/conversation.js';
import { toJsonSafe } from './json-safe.js';
import {
  agentHandoffParams,
  agentInputOf,
  agentReplyParams,
  autoResolveParams,
  channelBlockedParams,
  clarifyOptionsOf,
  handoffReasonOf,
  hasRequestId,
  helpdeskCloseParams,
  helpdeskTransferParams,
  initialContext,
  operatorCloseParams,
  rememberId,
  type EventOf,
  type HelpdeskCloseEvent,
} from './params.js';

export { MAX_REMEMBERED_IDS, agentInputOf, collectedText } from './params.js';
export { isAnswering, isCollecting, isHandedOver } from './states.js';

/** A helpdesk close (either kind) ends the session only when it names the request. */
const helpdeskClose = [
  {
    guard: 'hasRequestId',
    target: '#conversation.closed',
    actions: [
      'rememberHelpdeskIds',
      'recordClosed',
      { type: 'session_close', params: ({ event }: { event: HelpdeskCloseEvent }) => helpdeskCloseParams(event) },
    ],
  },
  { actions: 'rememberHelpdeskIds' },
] as const;

/**
 * How a session that is not closed ends, or passes to a human in the helpdesk: the same
 * from `active` and from `paused`. Not declared on the root: the host steps the machine with
 * xstate's pure `transition()`, which would take a root transition from the final `closed` too.
 */
const sessionEnds = {
  'helpdesk.close_dialog': helpdeskClose,
  'helpdesk.close_request': helpdeskClose,
  // A human now has it; leaving `answering` stops the invoked agent.
  'helpdesk.dialog_transferred': [
    {
      guard: 'hasRequestId',
      target: '#conversation.paused.transferred',
      actions: [
        'rememberHelpdeskIds',
        'recordTransfer',
        {
          type: 'session_transfer_external',
          params: ({ event }: { event: EventOf<'helpdesk.dialog_transferred'> }) => helpdeskTransferParams(event),
        },
      ],
    },
    { actions: 'rememberHelpdeskIds' },
  ],
  'operator.close': {
    target: '#conversation.closed',
    actions: ['recordClosed', { type: 'session_close', params: ({ event }: { event: EventOf<'operator.close'> }) => operatorCloseParams(event) }],
  },
  // WhatsApp takes no free text 24 h after the customer's last message: only a person can reach them now.
  'channel.window_closed': {
    target: '#conversation.paused.operator',
    actions: 'recordWindowClosed',
  },
  // The customer blocked the bot: nothing more can reach them in this session.
  'channel.blocked': {
    target: '#conversation.closed',
    actions: ['recordClosed', { type: 'session_close', params: ({ event }: { event: EventOf<'channel.blocked'> }) => channelBlockedParams(event) }],
  },
} as const;

/** A message the agent answers together with the next ones, once the debounce window ends. */
const collectAndWait = ['recordCustomerMessage', 'collectMessage', 'armDebounce'] as const;

/** A customer message to the agent: answered at once, or once its debounce window ends. */
const takeMessage = [
  // The agent waits debounceMs for more messages and answers them together.
  { guard: 'debounces', target: 'collecting', actions: collectAndWait },
  { target: 'answering', actions: ['recordCustomerMessage', 'collectMessage'] },
] as const;

/** Waiting out the debounce window (a durable deadline in the context, see `answerDueAt`). */
const collecting = {
  on: {
    'customer.message': { actions: collectAndWait },
    'debounce.elapsed': { guard: 'answerIsDue', target: 'answering' },
  },
} as const;

/** The agent's reply goes out (with the options of a `clarify` reply, remembered for the next message). */
const sendReply = [
  {
    type: 'agent_reply',
    params: ({ context, event }: { context: ConversationContext; event: { output: AgentOutput } }) => agentReplyParams(context.lastCustomerMessageId, event.output),
  },
  'moveLead',
  'rememberOptions',
] as const;

export const conversationMachine = setup({
  types: {} as {
    context: ConversationContext;
    events: ConversationEvent;
  },
  actors: {
    // Placeholder: the host supplies the real agent with `machine.provide({ actors: { agent } })`.
    agent: fromPromise<AgentOutput, AgentInput>(async () => {
      throw new Error('conversation machine: the "agent" actor must be provided via machine.provide({ actors: { agent } })');
    }),
  },
  guards: {
    hasRequestId: ({ event }) => hasRequestId(event),
    outputIsReply: ({ event }) => {
      const output = (event as { output?: AgentOutput }).output;
      return output?.kind === 'reply' && typeof output.text === 'string';
    },
    outputIsClose: ({ event }) => (event as { output?: AgentOutput }).output?.kind === 'close',
    debounces: ({ event }) => event.type === 'customer.message' && typeof event.debounceMs === 'number' && event.debounceMs > 0,
    answerIsDue: ({ context, event }) =>
      event.type === 'debounce.elapsed' && (context.answerDueAt == null || Date.parse(event.at) >= Date.parse(context.answerDueAt)),
  },
  actions: {
    // ---- named actions performed by the host (no-ops here) ----
    agent_reply: (_args, _params: AgentReplyParams) => {},
    session_transfer_external: (_args, _params: SessionTransferExternalParams) => {},
    session_close: (_args, _params: SessionCloseParams) => {},
    lead_stage: (_args, _params: LeadStageParams) => {},

    // ---- context updates ----
    rememberHelpdeskIds: assign(({ context, event }) => ({
      requestIds: rememberId(context.requestIds, 'requestId' in event ? event.requestId : undefined),
      dialogIds: rememberId(context.dialogIds, 'dialogId' in event ? event.dialogId : undefined),
    })),
    recordCustomerMessage: assign(({ context, event }) => {
      assertEvent(event, 'customer.message');
      return {
        lastCustomerMessageId: event.messageId,
        requestIds: rememberId(context.requestIds, event.requestId),
        dialogIds: rememberId(context.dialogIds, event.dialogId),
      };
    }),
    recordTransfer: assign(({ context, event }) => {
      assertEvent(event, 'helpdesk.dialog_transferred');
      return {
        transfers: [
          ...context.transfers,
          { requestId: event.requestId, dialogId: event.dialogId ?? null, at: event.at },
        ],
        handoffReason: 'dialog_transferred',
      };
    }),
    recordClosed: assign(({ event }) => ({ closedAt: 'at' in event ? event.at : new Date().toISOString() })),
    recordOperatorPause: assign({ handoffReason: 'operator_pause' }),
    recordWindowClosed: assign({ handoffReason: 'window_closed' }),
    clearHandoffReason: assign({ handoffReason: null }),
    recordAgentHandoff: assign(({ event }) => ({
      handoffReason: handoffReasonOf((event as { output?: AgentOutput }).output),
    })),
    recordAgentFailure: assign({ handoffReason: 'model_failed' }),
    /**
     * The options of a `clarify` reply are what the customer's next message may pick; any
     * other answer (or a failure: no output) forgets them. Left unwritten when nothing changes.
     */
    rememberOptions: assign(({ context, event }) => {
      const options = clarifyOptionsOf((event as { output?: AgentOutput }).output);
      return options || context.pendingOptions ? { pendingOptions: options } : {};
    }),
    /** The message is what the agent answers next (alone, or with the others of the debounce window). */
    collectMessage: assign(({ context, event }) => {
      assertEvent(event, 'customer.message');
      return { collected: [...(context.collected ?? []), { messageId: event.messageId, text: event.text }] };
    }),
    /** The answer is due debounceMs after the latest message. */
    armDebounce: assign(({ event }) => {
      assertEvent(event, 'customer.message');
      return { answerDueAt: new Date(Date.parse(event.at) + (event.debounceMs ?? 0)).toISOString() };
    }),
    forgetCollected: assign({ collected: [], answerDueAt: null }),
    /** The agent's set_lead_stage tool, with any answer. */
    moveLead: enqueueActions(({ event, enqueue }) => {
      const stage = (event as { output?: AgentOutput }).output?.leadStage;
      // Enqueued by name (setup's own action table is not typed inside itself).
      if (typeof stage === 'string' && stage) enqueue({ type: 'lead_stage', params: { stage } } as never);
    }),
  },
}).createMachine({
  id: 'conversation',
  context: initialContext,
  initial: 'active',
  states: {
    active: {
      initial: 'idle',
      on: {
        ...sessionEnds,
        'operator.pause': {
          target: '#conversation.paused.operator',
          actions: 'recordOperatorPause',
        },
      },
      states: {
        idle: {
          entry: 'forgetCollected',
          on: {
            'customer.message': takeMessage,
            // Only from `idle`: a session collecting or answering a message has a customer who wrote last.
            'agent.auto_resolve': {
              target: '#conversation.closed',
              actions: ['recordClosed', { type: 'session_close', params: ({ event }) => autoResolveParams(event) }],
            },
          },
        },
        collecting,
        answering: {
          // No `customer.message` handler here (nor on `active`): the host serialises
          // events per conversation, so one arriving mid-answer is ignored, not queued.
          invoke: {
            id: 'agent',
            src: 'agent',
            input: ({ context }) => agentInputOf(context, false),
            onDone: [
              { guard: 'outputIsReply', target: 'idle', actions: sendReply },
              {
                // The agent's close_conversation tool: what it said last goes out, then the session ends.
                guard: 'outputIsClose',
                target: '#conversation.closed',
                actions: [
                  { type: 'agent_reply', params: ({ context, event }) => agentReplyParams(context.lastCustomerMessageId, event.output) },
                  'moveLead',
                  'recordClosed',
                  {
                    type: 'session_close',
                    params: ({ event }) => ({
                      origin: 'agent',
                      event: 'agent.close',
                      at: new Date().toISOString(),
                      reason: event.output.kind === 'close' ? event.output.reason : 'close_conversation',
                    }),
                  },
                ],
              },
              {
                target: '#conversation.paused.handedOver',
                actions: [
                  'recordAgentHandoff',
                  'moveLead',
                  'rememberOptions',
                  {
                    type: 'session_transfer_external',
                    params: ({ context, event }) => agentHandoffParams(context.lastCustomerMessageId, event.output),
                  },
                ],
              },
            ],
            onError: {
              target: '#conversation.paused.handedOver',
              actions: [
                'recordAgentFailure',
                'rememberOptions',
                {
                  type: 'session_transfer_external',
                  params: ({ context }) => agentHandoffParams(context.lastCustomerMessageId, undefined),
                },
              ],
            },
          },
        },
      },
    },
    paused: {
      initial: 'operator',
      on: {
        ...sessionEnds,
        'operator.resume': {
          target: '#conversation.active.idle',
          actions: 'clearHandoffReason',
        },
      },
      states: {
        // A person has it: the customer's messages are stored by the host, no bot reply.
        operator: {
          on: { 'customer.message': { actions: 'recordCustomerMessage' } },
        },
        transferred: {
          on: { 'customer.message': { actions: 'recordCustomerMessage' } },
        },
        // The agent handed it over and no person has acted yet. An operator's pause (the host
        // also steps one for an operator's reply) hands it to them: `paused.operator`, the
        // agent's reason kept (it is still why the conversation is paused).
        handedOver: {
          initial: 'idle',
          on: {
            'operator.pause': { target: '#conversation.paused.operator' },
          },
          states: {
            idle: {
              entry: 'forgetCollected',
              on: { 'customer.message': takeMessage },
            },
            collecting,
            answering: {
              // As in `active.answering`: a message arriving mid-answer is not taken here.
              invoke: {
                id: 'agent',
                src: 'agent',
                input: ({ context }) => agentInputOf(context, true),
                onDone: [
                  { guard: 'outputIsReply', target: 'idle', actions: sendReply },
                  // A handoff (or a close) waits for the person: nothing sent, no second transfer.
                  { target: 'idle', actions: ['moveLead', 'rememberOptions'] },
                ],
                onError: { target: 'idle', actions: 'rememberOptions' },
              },
            },
          },
        },
      },
    },
    // Final for this session: the host opens a new session for the next message.
    closed: {
      type: 'final',
    },
  },
});

export type ConversationMachine = typeof conversationMachine;

/**
 * A conversation's machine as it is stored: what `resolveState` needs to bring it back
 * (state value and context) and its status. The host keeps no machine in memory between
 * events: it loads this, steps it with `stepConversation`, performs the returned actions and
 * stores the result.
 */
export interface StoredSnapshot {
  status: string;
  value: StateValue;
  context: ConversationContext;
}

/** A named action the host performs (agent_reply, session_transfer_external, session_close, lead_stage), with its params. */
export interface HostAction {
  type: string;
  params: unknown;
}

// xstate's `transition()` builds a throw-away actor (and the machine's initial state) for every
// call; the host steps thousands of machines a second, so one inert scope serves every step.
// Nothing is started in it: children of `invoke` are created, never registered.
let collected: ExecutableActionsFrom<ConversationMachine>[] = [];
const inertSelf = createActor(conversationMachine);
const inertScope = {
  self: inertSelf,
  defer: () => {},
  id: '',
  logger: () => {},
  sessionId: '',
  stopChild: () => {},
  system: inertSelf.system,
  emit: () => {},
  actionExecutor: (action: ExecutableActionsFrom<ConversationMachine>) => {
    collected.push(action);
  },
} as unknown as AnyActorScope;

const stored = (s: { status: string; value: StateValue; context: ConversationContext }): StoredSnapshot => ({ status: s.status, value: s.value, context: s.context });

/** The snapshot of a new session. */
export function initialConversationSnapshot(): StoredSnapshot {
  return stored(initialTransition(conversationMachine)[0]);
}

/**
 * One event applied to a stored snapshot, purely: the next snapshot and the host's named
 * actions to perform (xstate's own built-in actions are left out).
 */
export function stepConversation(snapshot: { value: StateValue; context: ConversationContext }, event: ConversationEvent): { next: StoredSnapshot; actions: HostAction[] } {
  const current = conversationMachine.resolveState({ value: snapshot.value, context: snapshot.context });
  collected = [];
  const next = conversationMachine.transition(current, event, inertScope);
  const actions = collected.filter((a) => !a.type.startsWith('xstate.')).map((a) => ({ type: a.type, params: a.params as unknown }));
  collected = [];
  return { next: stored(next), actions };
}

/** Top-level status of a (persisted) snapshot value. */
export function statusOf(snapshotValue: StateValue): ConversationStatus {
  const top = typeof snapshotValue === 'string' ? snapshotValue : Object.keys(snapshotValue ?? {})[0];
  if (top === 'active' || top === 'paused' || top === 'closed') return top;
  throw new Error(`conversation machine: unknown state value ${JSON.stringify(snapshotValue)}`);
}

export interface ConversationMachineDefinition {
  id: string;
  /** Every state path, dot-separated (`active`, `active.idle`, ...). */
  states: string[];
  /** Every event type with a transition somewhere in the machine, sorted. */
  events: string[];
  /** Names of the actions the host performs. */
  hostActions: string[];
  /** `conversationMachine.toJSON()` made safe for `JSON.stringify`. */
  definition: unknown;
}

/** JSON-serialisable machine definition for `GET /api/machines/conversation`. */
export function conversationMachineDefinition(): ConversationMachineDefinition {
  const definition = toJsonSafe(conversationMachine.toJSON(), new WeakSet()) as Record<string, unknown>;
  const states: string[] = [];
  const events = new Set<string>();
  const walk = (node: Record<string, unknown>, path: string[]): void => {
    if (path.length > 0) states.push(path.join('.'));
    const on = node.on;
    if (on && typeof on === 'object') for (const e of Object.keys(on)) events.add(e);
    const children = node.states;
    if (children && typeof children === 'object') {
      for (const [key, child] of Object.entries(children as Record<string, unknown>)) {
        if (child && typeof child === 'object') walk(child as Record<string, unknown>, [...path, key]);
      }
    }
  };
  walk(definition, []);
  return {
    id: conversationMachine.id,
    states,
    events: [...events].sort(),
    hostActions: ['agent_reply', 'session_transfer_external', 'session_close', 'lead_stage'],
    definition,
  };
}
