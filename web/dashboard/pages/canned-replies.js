// Settings → Canned replies: the texts an operator inserts with `/` in a conversation. Owners
// and admins add, edit (in place) and delete them; operators read the list (the API answers
// their writes 403). A page at a time, with a filter (`q=`) once there is more than a page.
import { api, seg } from '../api.js';
import { busy, field, fieldErrors, h, messages, pager, replace } from '../dom.js';

const PAGE = 20;
const FILTER_DEBOUNCE_MS = 250;
const SHORTCUT_EXPECTS = 'letters, digits, _ or - only (no spaces)';
const TAKEN = 'is taken by another canned reply';

/** A leading `/` is how the shortcut is typed, not part of it. */
const shortcutOf = (input) => input.value.trim().replace(/^\//, '');

/** The shortcut and text controls, as the add form and an edit form both have them. */
function controls(reply) {
  const shortcut = h('input', { type: 'text', name: 'shortcut', maxlength: '33', spellcheck: 'false', autocomplete: 'off', dataset: { expects: SHORTCUT_EXPECTS } });
  const text = h('textarea', { name: 'text', rows: 3, maxlength: '4096' });
  shortcut.value = reply?.shortcut ?? '';
  text.value = reply?.text ?? '';
  return { shortcut, text };
}

/**
 * A write's error at its fields: the API's `details[]`, and a taken shortcut (409, which has
 * none) at the Shortcut field too.
 */
function reportWrite(errors, msg, err, fields) {
  const placed = err.code === 'CONFLICT' ? Object.assign(err, { details: [{ field: 'shortcut', message: TAKEN }] }) : err;
  errors.report(msg, placed, fields);
}

/** cannedReplies({ signal, manages }) → the Settings section. */
export function cannedReplies({ signal, manages }) {
  const msg = messages();
  const listEl = h('div');
  const state = { replies: [], total: 0, editing: null, unfiltered: 0 };

  // ---- the list ----
  const filter = h('input', { type: 'search', name: 'q', spellcheck: 'false', maxlength: '200', placeholder: 'Shortcut or words', autocomplete: 'off' });
  const filterRow = h('div', { class: 'row filter', hidden: true }, field('Filter canned replies', filter));
  const pages = pager(PAGE, () => load(), { rangeRole: 'status' });
  let typing = null;
  filter.addEventListener('input', () => {
    clearTimeout(typing);
    typing = setTimeout(() => {
      pages.offset = 0;
      load();
    }, FILTER_DEBOUNCE_MS);
  });
  signal.addEventListener('abort', () => clearTimeout(typing), { once: true });

  let generation = 0;
  async function load() {
    const gen = ++generation;
    const q = filter.value.trim();
    const query = new URLSearchParams({ limit: String(PAGE), offset: String(pages.offset) });
    if (q) query.set('q', q);
    try {
      const out = await api('GET', `/api/canned-replies?${query}`, undefined, { signal });
      if (gen !== generation) return;
      // A delete emptied the last page: read the one before.
      if (!pages.shown(out.total, out.cannedReplies.length)) return load();
      state.replies = out.cannedReplies;
      state.total = out.total;
      if (!q) state.unfiltered = out.total;
      filterRow.hidden = state.unfiltered <= PAGE && !q;
      renderList(q);
    } catch (err) {
      if (err.name !== 'AbortError' && gen === generation) msg.error(err);
    }
  }

  function renderList(q) {
    if (!state.replies.length) {
      replace(listEl, h('p', { class: 'muted empty' }, q ? `No canned reply matches “${q}”.` : manages ? 'No canned replies yet. Add the first one below.' : 'No canned replies yet.'));
      return;
    }
    replace(
      listEl,
      h(
        'table',
        { class: 'canned-replies' },
        h('caption', { class: 'visually-hidden' }, 'Canned replies'),
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Shortcut'), h('th', { scope: 'col' }, 'Text'), manages ? h('th', { scope: 'col' }, 'Actions') : null)),
        h('tbody', {}, state.replies.map((r) => (state.editing === r.id ? editRow(r) : viewRow(r)))),
      ),
    );
  }

  function viewRow(r) {
    const cells = [h('td', {}, h('code', { class: 'canned-key' }, `/${r.shortcut}`)), h('td', { class: 'canned-full' }, r.text)];
    if (manages) {
      const edit = h('button', { type: 'button', class: 'secondary small', 'aria-label': `Edit /${r.shortcut}` }, 'Edit');
      edit.addEventListener('click', () => {
        msg.clear();
        state.editing = r.id;
        renderList(filter.value.trim());
      });
      const remove = h('button', { type: 'button', class: 'danger small', 'aria-label': `Delete /${r.shortcut}` }, 'Delete');
      remove.addEventListener('click', () => removeReply(r, remove));
      cells.push(h('td', {}, h('div', { class: 'actions tight' }, edit, remove)));
    }
    return h('tr', { dataset: { cannedReplyId: r.id } }, cells);
  }

  /** The row as a form: a form cannot span table cells, so it takes the whole row. */
  function editRow(r) {
    const c = controls(r);
    const errors = fieldErrors();
    const save = h('button', { type: 'submit', class: 'primary small' }, 'Save');
    const cancel = h('button', { type: 'button', class: 'secondary small' }, 'Cancel');
    const form = h(
      'form',
      { method: 'post', class: 'canned-edit', 'aria-label': `Edit /${r.shortcut}`, novalidate: true },
      h('div', { class: 'row' }, field('Shortcut', c.shortcut), field('Text', c.text)),
      h('div', { class: 'actions tight' }, save, cancel),
    );
    cancel.addEventListener('click', () => {
      state.editing = null;
      msg.clear();
      renderList(filter.value.trim());
    });
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      errors.clear();
      const body = {};
      if (shortcutOf(c.shortcut) !== r.shortcut) body.shortcut = shortcutOf(c.shortcut);
      if (c.text.value !== r.text) body.text = c.text.value;
      try {
        const { cannedReply } = await busy(save, () => api('PATCH', `/api/canned-replies/${seg(r.id)}`, body, { signal }));
        // The row shows what was saved before it is announced; the reload then places it by shortcut.
        state.editing = null;
        state.replies = state.replies.map((x) => (x.id === cannedReply.id ? cannedReply : x));
        renderList(filter.value.trim());
        msg.ok(`Canned reply /${cannedReply.shortcut} saved.`);
        load();
      } catch (err) {
        if (err.name !== 'AbortError') reportWrite(errors, msg, err, c);
      }
    });
    queueMicrotask(() => c.text.focus());
    return h('tr', { class: 'editing', dataset: { cannedReplyId: r.id } }, h('td', { colspan: manages ? '3' : '2' }, form));
  }

  async function removeReply(r, button) {
    if (!window.confirm(`Delete the canned reply /${r.shortcut}? Operators can no longer insert it.`)) return;
    try {
      await busy(button, () => api('DELETE', `/api/canned-replies/${seg(r.id)}`, undefined, { signal }));
      if (state.editing === r.id) state.editing = null;
      state.replies = state.replies.filter((x) => x.id !== r.id);
      renderList(filter.value.trim());
      msg.ok(`Canned reply /${r.shortcut} deleted.`);
      load();
    } catch (err) {
      if (err.name !== 'AbortError') msg.error(err);
    }
  }

  // ---- add ----
  let addForm = null;
  if (manages) {
    const c = controls(null);
    const errors = fieldErrors();
    const addMsg = messages();
    const add = h('button', { type: 'submit', class: 'primary' }, 'Add canned reply');
    addForm = h(
      'form',
      { method: 'post', class: 'canned-add', 'aria-label': 'New canned reply', novalidate: true },
      h('h3', {}, 'Add a canned reply'),
      h('div', { class: 'row' }, field('Shortcut', c.shortcut, 'Typed after / in a conversation: letters, digits, _ and -, up to 32.'), field('Text', c.text, 'What the shortcut puts in the reply box (up to 4096 characters).')),
      h('div', { class: 'actions' }, add),
      addMsg.el,
    );
    addForm.addEventListener('submit', async (e) => {
      e.preventDefault();
      errors.clear();
      try {
        const { cannedReply } = await busy(add, () => api('POST', '/api/canned-replies', { shortcut: shortcutOf(c.shortcut), text: c.text.value }, { signal }));
        c.shortcut.value = '';
        c.text.value = '';
        c.shortcut.focus();
        // Listed before it is announced: where it goes depends on the order and the page.
        await load();
        addMsg.ok(`Canned reply /${cannedReply.shortcut} added.`);
      } catch (err) {
        if (err.name !== 'AbortError') reportWrite(errors, addMsg, err, c);
      }
    });
  }

  load();
  return h(
    'section',
    { class: 'panel', 'aria-labelledby': 'canned-title' },
    h('h2', { id: 'canned-title' }, 'Canned replies'),
    h(
      'p',
      { class: 'muted' },
      'Texts the team inserts in a conversation by typing / and the shortcut.',
      manages ? '' : ' Owners and admins of the company add and change them.',
    ),
    filterRow,
    msg.el,
    listEl,
    pages.el,
    addForm,
  );
}
