// The conversation's composer: one text area, two modes. Reply goes to the customer (and, on
// a conversation the bot still answers, takes it over); Note stays with the team. Typing `/`
// at the start opens the company's canned replies, filtered as one types: arrow keys and
// Enter, or a click, put one in the text area.
import { api, seg } from '../api.js';
import { busy, h, messages, svg, uid } from '../dom.js';

const SEARCH_DEBOUNCE_MS = 120;
/** Canned replies shown at once (the list filters as the user types). */
const SHOWN = 20;

/** A padlock (drawn: no emoji font needed), beside what only the team sees. */
export function lockIcon() {
  return svg(
    'svg',
    { class: 'lock-icon', viewBox: '0 0 16 16', width: '12', height: '12', 'aria-hidden': 'true', focusable: 'false' },
    svg('path', { d: 'M4.5 7V5a3.5 3.5 0 0 1 7 0v2H13v8H3V7h1.5zm1.75 0h3.5V5a1.75 1.75 0 0 0-3.5 0v2z' }),
  );
}

/**
 * composer({ id, signal, onSent }) → { el, textarea, setStatus(status), focus() }.
 * onSent(mode) runs after the API took a reply or a note.
 */
export function composer({ id, signal, onSent }) {
  let mode = 'reply';
  let status = null;

  const textarea = h('textarea', { name: 'text', rows: 3, maxlength: '4096', id: uid('compose'), 'aria-autocomplete': 'list', 'aria-expanded': 'false', autocomplete: 'off' });
  const label = h('label', { for: textarea.id }, 'Reply');
  const hint = h('p', { class: 'hint', id: uid('hint') });
  textarea.setAttribute('aria-describedby', hint.id);
  const replyMode = h('button', { type: 'button', class: 'mode', 'aria-pressed': 'true', dataset: { mode: 'reply' } }, 'Reply');
  const noteMode = h('button', { type: 'button', class: 'mode', 'aria-pressed': 'false', dataset: { mode: 'note' } }, lockIcon(), 'Note');
  const send = h('button', { type: 'submit', class: 'primary' }, 'Send reply');
  const msg = messages();

  // ---- canned replies ----
  const listbox = h('ul', { class: 'canned', role: 'listbox', id: uid('canned'), 'aria-label': 'Canned replies', hidden: true });
  textarea.setAttribute('aria-controls', listbox.id);
  let options = []; // [{ item, el }]
  let active = -1;
  let generation = 0;
  let timer = null;

  const open = () => !listbox.hidden;
  function close() {
    generation++;
    clearTimeout(timer);
    listbox.hidden = true;
    textarea.setAttribute('aria-expanded', 'false');
    textarea.removeAttribute('aria-activedescendant');
    options = [];
    active = -1;
  }
  function highlight(i) {
    active = i;
    options.forEach((o, k) => o.el.setAttribute('aria-selected', String(k === i)));
    if (i >= 0) {
      textarea.setAttribute('aria-activedescendant', options[i].el.id);
      options[i].el.scrollIntoView({ block: 'nearest' });
    } else textarea.removeAttribute('aria-activedescendant');
  }
  function insert(item) {
    textarea.value = item.text;
    close();
    textarea.focus();
    textarea.setSelectionRange(textarea.value.length, textarea.value.length);
  }
  function show(items, query) {
    listbox.replaceChildren();
    options = items.map((item) => {
      const el = h('li', { role: 'option', id: uid('canned-opt'), 'aria-selected': 'false' }, h('span', { class: 'canned-key' }, `/${item.shortcut}`), h('span', { class: 'canned-text' }, item.text));
      // mousedown would move the focus out of the text area before the click.
      el.addEventListener('mousedown', (e) => e.preventDefault());
      el.addEventListener('click', () => insert(item));
      listbox.append(el);
      return { item, el };
    });
    if (!items.length) listbox.append(h('li', { class: 'canned-empty muted', role: 'presentation' }, query ? `No canned reply matches “${query}”.` : 'No canned replies yet. Add canned replies in Settings (owners and admins).'));
    listbox.hidden = false;
    textarea.setAttribute('aria-expanded', 'true');
    highlight(items.length ? 0 : -1);
  }
  function lookup(query) {
    const gen = ++generation;
    clearTimeout(timer);
    timer = setTimeout(async () => {
      const q = new URLSearchParams({ limit: String(SHOWN) });
      if (query) q.set('q', query);
      try {
        const out = await api('GET', `/api/canned-replies?${q}`, undefined, { signal });
        if (gen === generation) show(out.cannedReplies ?? [], query);
      } catch (err) {
        if (err.name === 'AbortError' || gen !== generation) return;
        listbox.replaceChildren(h('li', { class: 'canned-empty error', role: 'presentation' }, `Canned replies unavailable: ${err.message}`));
        listbox.hidden = false;
      }
    }, SEARCH_DEBOUNCE_MS);
  }
  signal.addEventListener('abort', () => clearTimeout(timer), { once: true });

  textarea.addEventListener('input', () => {
    const v = textarea.value;
    if (v.startsWith('/') && !v.includes('\n')) lookup(v.slice(1).trim().slice(0, 100));
    else close();
  });
  textarea.addEventListener('keydown', (e) => {
    if (open() && options.length) {
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        const step = e.key === 'ArrowDown' ? 1 : -1;
        highlight((active + step + options.length) % options.length);
        return;
      }
      if (e.key === 'Enter' && !e.shiftKey && !e.ctrlKey && !e.metaKey && active >= 0) {
        e.preventDefault();
        insert(options[active].item);
        return;
      }
    }
    if (open() && e.key === 'Escape') {
      e.preventDefault();
      close();
      return;
    }
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      form.requestSubmit();
    }
  });
  textarea.addEventListener('blur', () => setTimeout(() => document.activeElement !== textarea && close(), 150));

  // ---- modes ----
  function showMode() {
    replyMode.setAttribute('aria-pressed', String(mode === 'reply'));
    noteMode.setAttribute('aria-pressed', String(mode === 'note'));
    form.classList.toggle('as-note', mode === 'note');
    label.textContent = mode === 'reply' ? 'Reply' : 'Note';
    send.textContent = mode === 'reply' ? 'Send reply' : 'Add note';
    textarea.placeholder = mode === 'reply' ? 'Write to the customer… (/ for canned replies)' : 'Write a note for your team… (/ for canned replies)';
    const closed = status === 'closed';
    send.disabled = closed;
    textarea.disabled = closed;
    hint.textContent = closed
      ? 'This conversation is closed.'
      : mode === 'note'
        ? 'Only your team sees notes: they are never sent to the customer.'
        : status === 'active'
          ? 'Replying takes over from the bot: it stays silent until you resume it.'
          : 'Sent to the customer. Ctrl+Enter sends.';
    hint.classList.toggle('takeover', mode === 'reply' && status === 'active');
  }
  for (const b of [replyMode, noteMode])
    b.addEventListener('click', () => {
      mode = b.dataset.mode;
      msg.clear();
      showMode();
      textarea.focus();
    });

  const form = h(
    'form',
    { method: 'post', class: 'composer' },
    h('div', { class: 'modes', role: 'group', 'aria-label': 'Write a' }, replyMode, noteMode),
    h('div', { class: 'field compose-field' }, label, h('div', { class: 'compose-box' }, listbox, textarea), hint),
    h('div', { class: 'actions' }, send),
    msg.el,
  );
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    close();
    const text = textarea.value.trim();
    if (!text) {
      msg.error(new Error(mode === 'reply' ? 'Type a reply first.' : 'Type a note first.'));
      textarea.focus();
      return;
    }
    const sentMode = mode;
    try {
      await busy(send, () => api('POST', `/api/conversations/${seg(id)}/${sentMode === 'reply' ? 'messages' : 'notes'}`, { text }, { signal }));
      textarea.value = '';
      msg.ok(sentMode === 'reply' ? 'Reply sent.' : 'Note added. Only your team sees it.');
      onSent?.(sentMode);
    } catch (err) {
      if (err.name !== 'AbortError') msg.error(err);
    } finally {
      showMode(); // busy() re-enabled the button; the status rules decide
    }
  });
  showMode();

  return {
    el: form,
    textarea,
    setStatus(next) {
      if (next === status) return;
      status = next;
      showMode();
    },
    focus: () => textarea.focus(),
  };
}
