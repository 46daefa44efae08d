// The "What happened" cell of a conversation's log (conversation-view.js): a transition's event
// in words, with what came of a tool call and what the agent decided for a customer message.
import { decisionNote } from '../decisions.js';
import { h } from '../dom.js';
import { argsText, eventText, toolCallText } from '../words.js';

/** A tool call of the agent in the log: what came of it, and the arguments it was called with (redacted by the server). */
function toolCallCell(payload) {
  const p = payload ?? {};
  return h(
    'div',
    { class: ['tool-call', `tool-${String(p.status ?? '').replace(/[^a-z_]/g, '')}`] },
    h('span', {}, toolCallText(p)),
    p.args !== undefined ? h('p', { class: 'tool-args' }, h('span', { class: 'muted' }, 'Arguments: '), h('code', {}, argsText(p.args))) : null,
  );
}

/** What happened at a transition (`t` as GET /api/conversations/{id}/transitions lists it). */
export function whatHappened(t, people) {
  if (t.event === 'tool.called') return toolCallCell(t.payload);
  const text = eventText(t.event, t.payload, people);
  const decision = t.event === 'xstate.done.actor.agent' ? decisionNote(t.payload?.output?.decision) : null;
  return decision ? h('div', { class: 'log-event' }, h('span', {}, text), decision) : text;
}
