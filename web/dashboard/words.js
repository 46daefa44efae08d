// What the service's identifiers mean to the people who read the dashboard: machine events,
// host actions, handoff reasons, states, channels, customers and times, in plain English.
// Everything the conversation pages show passes through here; an identifier this module does
// not know yet still reads as words ("some_thing" → "Some thing"), never as code.

/** "some_thing", "some.thing", "someThing" → "Some thing". */
export function humanise(id) {
  const text = String(id ?? '')
    .replace(/^xstate\./, '')
    .replace(/([a-z\d])([A-Z])/g, '$1 $2')
    .replace(/[._\-\s]+/g, ' ')
    .trim()
    .toLowerCase();
  return text ? text[0].toUpperCase() + text.slice(1) : '';
}

const REASONS = {
  asked_for_human: 'Customer asked for a person',
  no_answer: 'Agent had no answer',
  no_credit: 'Out of credit',
  spend_cap: 'Daily spending limit reached',
  outside_hours: 'Outside working hours',
  model_failed: 'The AI model did not answer',
  operator_pause: 'Paused by a teammate',
  dialog_transferred: 'Transferred to a person in the helpdesk',
  close_conversation: 'The agent ended the conversation',
  window_closed: "WhatsApp's 24-hour reply window closed",
  unsupported_message: 'The customer sent something other than text',
  blocked: 'The customer blocked the bot',
};

/** Why a conversation went to a person (context.handoffReason, a transfer's reason). */
export function reasonText(reason) {
  if (reason === null || reason === undefined || reason === '') return '';
  return REASONS[reason] ?? humanise(reason);
}

/**
 * Who did something, from a user id (`by`): "you", a teammate's name, or "an operator" when
 * the id is unknown (an API token, a removed user).
 */
function byName(by, people) {
  if (!by) return 'an operator';
  if (people?.me && by === people.me.id) return 'you';
  const user = people?.users?.get(by);
  return user ? userName(user) : 'an operator';
}

/** A user's name as the team knows it: the display name, else the email. */
export function userName(user) {
  return (user?.displayName && String(user.displayName).trim()) || user?.email || 'A teammate';
}

/** A transition's event in words, with its payload when known (who paused, what the agent answered, which action). */
export function eventText(event, payload = {}, people) {
  const p = payload ?? {};
  switch (event) {
    case 'customer.message':
      return 'Customer wrote';
    case 'debounce.elapsed':
      return 'Done waiting for more messages';
    case 'xstate.done.actor.agent': {
      const out = p.output;
      if (out?.kind === 'handoff') return `Agent handed over: ${reasonText(out.reason)}`;
      if (out?.kind === 'close') return 'Agent ended the conversation';
      return 'Agent answered';
    }
    case 'xstate.error.actor.agent':
      return 'Agent could not answer';
    case 'operator.pause':
      return `Paused by ${byName(p.by, people)}`;
    case 'operator.resume':
      return `Resumed by ${byName(p.by, people)}`;
    case 'operator.close':
      return `Closed by ${byName(p.by, people)}`;
    case 'helpdesk.close_dialog':
      return 'Dialog closed in the helpdesk';
    case 'helpdesk.close_request':
      return 'Request closed in the helpdesk';
    case 'helpdesk.dialog_transferred':
      return 'Transferred to a person in the helpdesk';
    case 'agent.close':
      return 'Agent ended the conversation';
    case 'tool.called':
      return toolCallText(p);
    default: {
      // Another invoked actor of the machine finishing or failing.
      const actor = /^xstate\.(done|error)\.actor\.(.+)$/.exec(String(event));
      if (actor) return `${humanise(actor[2])} ${actor[1] === 'done' ? 'finished' : 'failed'}`;
      return humanise(event);
    }
  }
}

/** The short form for the state diagram's arrows. */
export function eventShort(event) {
  switch (event) {
    case 'xstate.done.actor.agent':
      return 'Agent answered';
    case 'xstate.error.actor.agent':
      return 'Agent failed';
    case 'operator.pause':
      return 'Paused';
    case 'operator.resume':
      return 'Resumed';
    case 'operator.close':
      return 'Closed by a teammate';
    case 'debounce.elapsed':
      return 'Done waiting';
    case 'helpdesk.close_dialog':
    case 'helpdesk.close_request':
      return 'Closed in the helpdesk';
    case 'helpdesk.dialog_transferred':
      return 'Helpdesk transfer';
    default:
      return eventText(event);
  }
}

/** What the service did for a transition (a host action and what came of it). */
export function actionText(action) {
  const type = typeof action === 'string' ? action : action?.type;
  const effect = typeof action === 'object' && typeof action?.effect === 'string' ? action.effect : '';
  const params = (typeof action === 'object' && action?.params) || {};
  switch (type) {
    case 'agent_reply':
      if (effect.startsWith('cancelled')) return 'Reply not sent: a person took over';
      if (effect === 'nothing to say') return 'No reply needed';
      return 'Reply sent';
    case 'session_transfer_external':
      return params.reason ? `Handed to a person (${reasonText(params.reason).toLowerCase()})` : 'Handed to a person';
    case 'session_close':
      return 'Conversation closed';
    case 'lead_stage': {
      // actors/plan.ts: `lead 5 moved from "New" to "Won"`, `lead 5 already in "Won"`, `not moved: …`.
      const moved = /moved from (".*") to (".*")$/.exec(effect);
      const already = /already in (".*")$/.exec(effect);
      const name = (json) => {
        try {
          return String(JSON.parse(json));
        } catch {
          return json;
        }
      };
      if (moved) return `Lead moved from “${name(moved[1])}” to “${name(moved[2])}”`;
      if (already) return `Lead already in “${name(already[1])}”`;
      if (effect.startsWith('not moved')) return `Lead not moved${effect.slice('not moved'.length)}`;
      return params.stage ? `Lead moved to ${params.stage}` : 'Lead stage updated';
    }
    default:
      return humanise(type);
  }
}

const HTTP_STATUS = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
  204: 'No Content',
  301: 'Moved Permanently',
  302: 'Found',
  304: 'Not Modified',
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  410: 'Gone',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

/** An HTTP status with its reason phrase: 200 → "200 OK"; an unusual one stays a number. */
export function httpStatusText(status) {
  return HTTP_STATUS[status] ? `${status} ${HTTP_STATUS[status]}` : String(status);
}

const TOOL_STATUS = {
  started: 'Calling…',
  ok: 'OK',
  error: 'Failed',
  timeout: 'Timed out',
  blocked: 'Blocked',
  invalid_arguments: 'Invalid arguments',
  uncertain: 'Uncertain',
  not_called: 'Not called',
};

/** How a tool call ended (ToolCallStatus, schema/action-entities.ts), as a short word. */
export function toolStatusText(status) {
  return TOOL_STATUS[status] ?? humanise(status);
}

const milliseconds = (ms) => (typeof ms === 'number' && Number.isFinite(ms) ? `${Math.round(ms)} ms` : '');

/**
 * A tool call of the agent (the transition log's `tool.called` payload, a ledger row, a
 * "Try it" outcome: {name, status, httpStatus?, ms, error?, reused?}) in a sentence:
 * "Called get_order — 200 OK, 112 ms", "get_order was not called: invalid arguments (…)".
 */
export function toolCallText(call) {
  const c = call ?? {};
  const name = c.name ? String(c.name) : 'a tool';
  const ms = milliseconds(c.ms);
  const error = c.error ? String(c.error) : '';
  const answered = c.httpStatus ? httpStatusText(c.httpStatus) : '';
  const took = (what) => `Called ${name} — ${[what, ms].filter(Boolean).join(', ')}`;
  // A call that changes data, already made for this answer: its recorded result was given again.
  if (c.reused) return `${name} was not called again: it had already been called for this message (${answered || toolStatusText(c.status).toLowerCase()})`;
  switch (c.status) {
    case 'ok':
      return took(answered || 'OK');
    case 'error':
      return took(answered || (error ? `failed: ${error}` : 'failed'));
    case 'timeout':
      return `Called ${name} — timed out${ms ? ` after ${ms}` : ''}`;
    case 'blocked':
      return `${name} was blocked: address not allowed`;
    case 'invalid_arguments':
      return `${name} was not called: invalid arguments${error ? ` (${error.replace(/^arguments\./, '')})` : ''}`;
    case 'uncertain':
      return `${name} uncertain: not repeated (an earlier attempt was interrupted and may have taken effect)`;
    case 'not_called':
      if (/called already/.test(error)) return `${name} was not called again: it was called already in this answer`;
      return `${name} was not called${error ? `: ${error.replace(/^not called: /, '')}` : ''}`;
    case 'started':
      return `Calling ${name}…`;
    default:
      return c.name ? `Agent used the tool ${name}` : 'Agent used a tool';
  }
}

/** A tool call's arguments on one line ("orderId: "A-1", quantity: 2"), as the server redacted them. */
export function argsText(args) {
  if (!args || typeof args !== 'object' || Array.isArray(args)) return args === undefined ? '' : JSON.stringify(args);
  const entries = Object.entries(args);
  if (!entries.length) return 'none';
  return entries.map(([k, v]) => `${k}: ${JSON.stringify(v)}`).join(', ');
}

const STATES = {
  active: 'Bot on',
  'active.idle': 'Bot waiting for the customer',
  'active.collecting': 'Bot reading the customer’s messages',
  'active.answering': 'Bot answering',
  paused: 'Paused',
  'paused.operator': 'Paused: a person has it',
  'paused.transferred': 'With a person in the helpdesk',
  // The agent handed the conversation over and no person acted yet: it still answers what it can
  // (contract.md § Answers that find what the help centre says).
  'paused.handedOver': 'Handed over — waiting for a person',
  'paused.handedOver.idle': 'Handed over — waiting for a person',
  'paused.handedOver.collecting': 'Handed over — waiting for a person; the bot is reading the customer’s messages',
  'paused.handedOver.answering': 'Handed over — waiting for a person; the bot is answering meanwhile',
  closed: 'Closed',
};

/** A state path ("paused.operator") in words. */
export function stateText(path) {
  if (!path) return '—';
  if (STATES[path]) return STATES[path];
  if (path.startsWith('paused.handedOver.')) return STATES['paused.handedOver'];
  return path.split('.').map(humanise).join(' › ');
}

const STATE_KEYS = {
  active: 'Bot on',
  idle: 'Waiting',
  collecting: 'Collecting',
  answering: 'Answering',
  paused: 'Paused',
  operator: 'A person has it',
  transferred: 'In the helpdesk',
  handedOver: 'Handed over',
  closed: 'Closed',
};

/** One level of a state path (a box of the diagram): "operator" → "A person has it". */
export function stateKeyText(key) {
  return STATE_KEYS[key] ?? humanise(key);
}

const STATUS = { active: 'Bot on', paused: 'Paused', closed: 'Closed' };
export function statusText(status) {
  return STATUS[status] ?? humanise(status);
}

const CHANNELS = { helpdesk: 'Helpdesk', webchat: 'Webchat', whatsapp: 'WhatsApp', telegram: 'Telegram' };
/** "Helpdesk · telegram", "Webchat". */
export function channelText(channel, transport) {
  const c = CHANNELS[channel] ?? humanise(channel ?? '—');
  return transport ? `${c} · ${transport}` : c;
}

const ROLES = { customer: 'Customer', agent: 'Agent', operator: 'Operator', system: 'System' };
export function roleText(role) {
  return ROLES[role] ?? humanise(role);
}

const DELIVERY = { pending: 'Sending…', sent: 'Sent', failed: 'Not delivered', cancelled: 'Not sent' };
export function deliveryText(delivery) {
  return delivery ? (DELIVERY[delivery] ?? humanise(delivery)) : '';
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Who the customer is: their name, phone or email (from the lead) when known; a webchat visitor's random id
 * shortened ("Visitor 3f2a…"); other ids as they are, cut when very long.
 */
export function customerName(conversation) {
  // The lead's name, else how the customer can be reached (a helpdesk's phone, a pre-chat email), else the channel's id.
  for (const known of [conversation?.customer?.name, conversation?.customer?.phone, conversation?.customer?.email]) {
    if (typeof known === 'string' && known.trim()) return known.trim();
  }
  const id = String(conversation?.clientId ?? '');
  if (!id) return `Conversation ${conversation?.id ?? ''}`.trim();
  if (UUID.test(id) || (conversation?.channel === 'webchat' && id.length > 12)) return `Visitor ${id.slice(0, 4)}…`;
  return id.length > 28 ? `${id.slice(0, 24)}…` : id;
}

/** A conversation waits for a person: paused, and the customer wrote last. */
export function needsHuman(conversation) {
  if (typeof conversation?.needsHuman === 'boolean') return conversation.needsHuman;
  return conversation?.status === 'paused' && conversation?.lastMessage?.role === 'customer';
}

/**
 * A short time for a list: "now", "5 min", "14:05" (today), "Mon" (this week), "12 Mar",
 * "12 Mar 2024". The full date goes in the element's title.
 */
export function shortTime(iso, now = Date.now()) {
  const d = new Date(iso);
  const ms = d.getTime();
  if (Number.isNaN(ms)) return '';
  const ago = now - ms;
  if (ago < 60_000) return 'now';
  if (ago < 3_600_000) return `${Math.floor(ago / 60_000)} min`;
  const today = new Date(now);
  if (d.toDateString() === today.toDateString()) return d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  if (ago < 6 * 86_400_000) return d.toLocaleDateString([], { weekday: 'short' });
  if (d.getFullYear() === today.getFullYear()) return d.toLocaleDateString([], { day: 'numeric', month: 'short' });
  return d.toLocaleDateString([], { day: 'numeric', month: 'short', year: 'numeric' });
}

/** A message's time: the hour today ("14:05"), else the day and the hour ("12 Mar, 14:05"). */
export function messageTime(iso, now = Date.now()) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const hour = d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  const today = new Date(now);
  if (d.toDateString() === today.toDateString()) return hour;
  const day = d.toLocaleDateString([], d.getFullYear() === today.getFullYear() ? { day: 'numeric', month: 'short' } : { day: 'numeric', month: 'short', year: 'numeric' });
  return `${day}, ${hour}`;
}

/** Server-written system lines name a handoff reason by its id ("… (asked_for_human)."): in words. */
export function systemText(text) {
  return String(text ?? '').replace(/\(([a-z]+(?:_[a-z]+)+)\)/g, (whole, id) => (REASONS[id] ? `(${REASONS[id].toLowerCase()})` : `(${humanise(id).toLowerCase()})`));
}

/** What an agent does when nothing relevant is found (onNoAnswer), as its form offers it. */
export const NO_ANSWER_CHOICES = [
  { value: 'handoff', label: 'Say the fallback text, then hand over to a human' },
  { value: 'fallback', label: 'Only say the fallback text (the bot stays on)' },
];

// An agent's settings by the names the API gives them (a version's `changes`, a replay's
// `changeFields`, an error's `details[].field`), as its form labels them.
const AGENT_FIELDS = {
  name: 'Name',
  systemPrompt: 'System prompt',
  model: 'Model',
  'model.provider': 'Model provider',
  'model.name': 'Model name',
  'model.baseUrl': 'Model base URL',
  'model.apiKey': 'Model API key',
  'model.pricing': 'Model prices',
  'model.maxConcurrency': 'Concurrent model calls',
  knowledgeBaseId: 'Knowledge base',
  handoffMessage: 'Handoff text',
  spendCapUsdPerDay: 'Spend cap per day',
  onNoAnswer: 'When nothing relevant is found',
  fallbackMessage: 'Fallback text',
  greeting: 'Greeting',
  outOfScopeText: 'Out-of-scope reply',
  relevanceThreshold: 'Confidence threshold',
  knowledgePassages: 'Passages given to the model',
  debounceMs: 'Debounce',
  hours: 'Business hours',
};

/** An agent field ("model.name", "changes.greeting", "hours.weekly.mon.0") in words: its own label, else its nearest parent's. */
export function agentFieldText(field) {
  const path = String(field ?? '').replace(/^changes\./, '');
  for (let p = path; p; p = p.includes('.') ? p.slice(0, p.lastIndexOf('.')) : '') if (AGENT_FIELDS[p]) return AGENT_FIELDS[p];
  return humanise(path);
}

/** Several agent fields in words: "System prompt, Greeting". */
export function agentFieldsText(fields) {
  return (fields ?? []).map(agentFieldText).join(', ');
}

const REPLAY_STATUS = { running: 'Running', done: 'Done', failed: 'Stopped' };
/** A replay's status (running, done, failed) as a short word. */
export function replayStatusText(status) {
  return REPLAY_STATUS[status] ?? humanise(status);
}
