// "Try it" (Get started): a chat with the company's own agent inside the dashboard, over the
// same webchat WebSocket a customer's widget uses (contract.md § Webchat; the frames are in
// gateway/webchat/frames.ts), so what it shows is what a customer would get. Under each answer,
// what the agent decided ("answered from Returns and refunds, 82 %"): the frames do not carry
// it, the conversation's transition log does (the signed-in user may read it).
import { api, seg } from './api.js';
import { decisionText, optionTitles } from './decisions.js';
import { h, replace } from './dom.js';

const ROLE_NAMES = { customer: 'You', agent: 'Agent', operator: 'Operator' };
const RECONNECT_MS = [500, 1000, 2000, 5000];
// The decision is written with the answer; a slow worker may store it a moment after the frame.
const DECISION_TRIES = 4;
const DECISION_RETRY_MS = 400;
const ACK_PATIENCE_MS = 15_000;
const NOT_TAKEN = 'The service has not taken the message yet: it is kept and sent again when the chat reconnects.';

/** Where a visitor of this integration's Try-it chat is kept, per browser: it resumes its conversation. */
const storageKey = (integrationId) => `mas.try-chat:${integrationId}`;

function loadVisitor(integrationId) {
  try {
    const v = JSON.parse(localStorage.getItem(storageKey(integrationId)) ?? 'null');
    return v && typeof v.visitorToken === 'string' ? v : null;
  } catch {
    return null;
  }
}

/**
 * The chat panel for webchat integration `integrationId`. `onAnswered()` is called once the agent
 * answered (the "Try it" step is done). Answers { el, close }: close() ends the socket for good.
 */
export function tryChat(integrationId, { onAnswered, signal } = {}) {
  const log = h('ol', { class: 'try-log', role: 'log', 'aria-label': 'Try-it conversation', 'aria-live': 'polite' });
  const statusLine = h('p', { class: 'muted small try-status', role: 'status' }, 'Connecting…');
  const typingLine = h('p', { class: 'muted small', hidden: true }, 'The agent is writing…');
  const input = h('input', { type: 'text', name: 'message', maxlength: '4096', autocomplete: 'off', 'aria-label': 'Message to the agent', placeholder: 'Ask what a customer would ask, e.g. “How do I return an item?”' });
  const sendButton = h('button', { type: 'submit', class: 'primary' }, 'Send');
  const form = h('form', { class: 'try-form', method: 'post', 'aria-label': 'Write to the agent' }, input, sendButton);
  const el = h('div', { class: 'try-chat' }, log, typingLine, statusLine, form);

  const state = { ws: null, welcomed: false, closed: false, attempt: 0, timer: null, visitor: loadVisitor(integrationId), conversationId: null, seen: new Map(), pending: new Map(), draft: null, greeting: null };

  const bubble = (role, text, extra) => h('li', { class: ['try-msg', `try-${ROLE_NAMES[role] ? role : 'agent'}`] }, h('span', { class: 'who' }, ROLE_NAMES[role] ?? 'Agent'), h('p', { class: 'text' }, text), extra ?? null);
  const scrollDown = () => (log.scrollTop = log.scrollHeight);

  function send(frame) {
    if (state.ws?.readyState !== WebSocket.OPEN) return false;
    state.ws.send(JSON.stringify(frame));
    return true;
  }

  function sendText(text) {
    const clientMessageId = `try-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
    const li = bubble('customer', text);
    li.classList.add('sending');
    log.append(li);
    scrollDown();
    state.pending.set(clientMessageId, { text, li });
    if (!send({ type: 'message', clientMessageId, text })) statusLine.textContent = 'Not connected: the message goes as soon as the chat is back.';
    // Stored messages are acknowledged within moments; silence means the service is stuck or overloaded.
    setTimeout(() => {
      if (state.pending.has(clientMessageId) && !state.closed) statusLine.textContent = NOT_TAKEN;
    }, ACK_PATIENCE_MS);
  }

  /** Stored messages in seq order (a reconnect replays from the start: each shows once). */
  function showMessage(frame) {
    if (state.seen.has(frame.seq)) return;
    state.draft?.remove();
    state.draft = null;
    typingLine.hidden = true;
    const titles = frame.role === 'agent' ? optionTitles(frame.options) : [];
    const choices = titles.length
      ? h(
          'div',
          { class: 'choices', role: 'group', 'aria-label': 'Options' },
          titles.map((title, i) => h('button', { type: 'button', class: 'secondary small', onclick: () => sendText(String(i + 1)) }, `${i + 1}. ${title}`)),
        )
      : null;
    const li = bubble(frame.role, frame.text, choices);
    li.dataset.seq = String(frame.seq);
    state.seen.set(frame.seq, li);
    const later = [...log.children].find((c) => c.classList.contains('sending') || Number(c.dataset.seq) > frame.seq);
    log.insertBefore(li, later ?? null);
    scrollDown();
    if (frame.role === 'agent') {
      onAnswered?.();
      explain(li);
    }
  }

  /** "answered from …": the latest decision of the agent in the conversation's log. */
  async function explain(li, tries = DECISION_TRIES) {
    if (!state.conversationId || li.querySelector('.decision')) return;
    try {
      const path = `/api/conversations/${seg(state.conversationId)}/transitions`;
      const { total } = await api('GET', `${path}?limit=1`, undefined, { signal });
      const { transitions } = await api('GET', `${path}?limit=50&offset=${Math.max(0, total - 50)}`, undefined, { signal });
      const done = transitions.filter((t) => t.event === 'xstate.done.actor.agent' && t.payload?.output?.decision).at(-1);
      const text = done ? decisionText(done.payload.output.decision) : null;
      if (!text) {
        if (tries > 1) setTimeout(() => explain(li, tries - 1), DECISION_RETRY_MS);
        return;
      }
      // Only the newest answer gets it: an earlier one's decision is an older transition.
      if ([...log.querySelectorAll('.try-agent')].at(-1) === li) li.append(h('p', { class: 'decision muted small' }, text));
    } catch {
      /* the explanation is an extra: the answer itself is shown */
    }
  }

  /** Another session's seqs start again at 1: what is shown stays, but no longer dedupes the new ones. */
  function newSession(conversationId) {
    if (conversationId !== state.conversationId && state.conversationId !== null) state.seen = new Map();
    state.conversationId = conversationId;
  }

  function onFrame(frame) {
    switch (frame.type) {
      case 'welcome':
        state.visitor = { visitorToken: frame.visitorToken };
        newSession(frame.conversationId);
        try {
          localStorage.setItem(storageKey(integrationId), JSON.stringify(state.visitor));
        } catch {
          /* private mode: the visitor lasts as long as the page */
        }
        if (!state.greeting && frame.greeting) {
          state.greeting = bubble('agent', frame.greeting);
          state.greeting.classList.add('greeting');
          log.prepend(state.greeting);
        }
        statusLine.textContent = '';
        // Messages written while the socket was down go now (the server dedupes by clientMessageId);
        // a second welcome on the same socket only announces the session a message opened.
        if (!state.welcomed) for (const [clientMessageId, p] of state.pending) send({ type: 'message', clientMessageId, text: p.text });
        state.welcomed = true;
        break;
      case 'ack': {
        const p = state.pending.get(frame.clientMessageId);
        state.pending.delete(frame.clientMessageId);
        if (statusLine.textContent === NOT_TAKEN) statusLine.textContent = '';
        newSession(frame.conversationId ?? state.conversationId);
        if (p && !state.seen.has(frame.seq)) {
          p.li.classList.remove('sending');
          p.li.dataset.seq = String(frame.seq);
          state.seen.set(frame.seq, p.li);
        } else p?.li.remove();
        break;
      }
      case 'message':
        showMessage(frame);
        break;
      case 'typing':
        typingLine.hidden = false;
        break;
      case 'delta':
        if (!state.draft) {
          state.draft = bubble('agent', '');
          state.draft.classList.add('streaming');
          log.insertBefore(state.draft, log.querySelector('.sending'));
        }
        state.draft.querySelector('.text').append(frame.text);
        typingLine.hidden = true;
        scrollDown();
        break;
      case 'status':
        statusLine.textContent = frame.status === 'paused' ? 'The agent handed this conversation to a person (see the Inbox).' : frame.status === 'closed' ? 'This conversation was closed: write to start a new one.' : '';
        break;
      case 'error': {
        statusLine.textContent = frame.message;
        const p = frame.clientMessageId ? state.pending.get(frame.clientMessageId) : null;
        if (p && frame.code !== 'RATE_LIMITED') {
          p.li.classList.replace('sending', 'failed');
          state.pending.delete(frame.clientMessageId);
        }
        break;
      }
    }
  }

  function connect() {
    if (state.closed) return;
    const url = new URL(`/api/webchat/${seg(integrationId)}/ws`, location.href);
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    const ws = new WebSocket(url.href);
    state.ws = ws;
    state.welcomed = false;
    ws.addEventListener('open', () => {
      state.attempt = 0;
      const hello = { type: 'hello', lastSeq: 0 };
      if (state.visitor?.visitorToken) hello.visitorToken = state.visitor.visitorToken;
      ws.send(JSON.stringify(hello));
    });
    ws.addEventListener('message', (e) => {
      try {
        onFrame(JSON.parse(e.data));
      } catch {
        /* not a frame of ours */
      }
    });
    ws.addEventListener('close', () => {
      if (state.ws !== ws || state.closed) return;
      state.ws = null;
      statusLine.textContent = 'The chat is reconnecting…';
      state.timer = setTimeout(connect, RECONNECT_MS[Math.min(state.attempt++, RECONNECT_MS.length - 1)]);
    });
  }

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const text = input.value.trim();
    if (!text) return;
    input.value = '';
    sendText(text);
  });

  const close = () => {
    state.closed = true;
    clearTimeout(state.timer);
    state.ws?.close(1000);
    state.ws = null;
  };
  signal?.addEventListener('abort', close);
  replace(log);
  connect();
  return { el, close, input };
}
