// A conversation's labels (conversation-view.js): the chips with their Remove buttons and the
// form that adds one. Drawn again only when the labels changed: every event of the stream
// applies the conversation, and a focused Remove button must not be pulled from under the reader.
import { api, seg } from '../api.js';
import { busy, field, h, messages, replace } from '../dom.js';

const MAX_LABELS = 20;
const MAX_LABEL_LENGTH = 40;

/**
 * labelsEditor({ id, signal, current, onSaved }) → { list, form, show(conversation) }.
 * `current()` the conversation as last applied; `onSaved(conversation)` the API's answer to a change.
 */
export function labelsEditor({ id, signal, current, onSaved }) {
  const list = h('ul', { class: 'label-list', 'aria-label': 'Labels' });
  const newLabel = h('input', { type: 'text', name: 'label', maxlength: String(MAX_LABEL_LENGTH), autocomplete: 'off', spellcheck: 'false' });
  const addLabel = h('button', { type: 'submit', class: 'secondary' }, 'Add');
  const msg = messages();
  const form = h('form', { class: 'label-form' }, h('div', { class: 'row' }, field('Add a label', newLabel), addLabel), msg.el);
  let shown = null;
  function show(c) {
    const labels = c.labels ?? [];
    const sig = JSON.stringify(labels);
    if (sig === shown) return;
    shown = sig;
    replace(
      list,
      labels.length
        ? labels.map((l) =>
            h(
              'li',
              { class: 'label-chip' },
              l,
              h('button', { type: 'button', class: 'remove', 'aria-label': `Remove label ${l}`, title: `Remove ${l}`, onclick: () => save(labels.filter((x) => x !== l), `Label “${l}” removed.`) }, '×'),
            ),
          )
        : h('li', { class: 'muted small' }, 'No labels.'),
    );
  }
  async function save(labels, done) {
    try {
      const out = await busy(addLabel, () => api('PUT', `/api/conversations/${seg(id)}/labels`, { labels }, { signal }));
      if (out?.conversation) onSaved(out.conversation);
      msg.ok(done);
      return true;
    } catch (err) {
      if (err.name !== 'AbortError') msg.error(err);
      return false;
    }
  }
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const l = newLabel.value.trim();
    const labels = current()?.labels ?? [];
    if (!l) return msg.error(new Error('Type a label first.'));
    if (l.includes(',')) return msg.error(new Error('A label cannot contain a comma.'));
    if (labels.includes(l)) return msg.ok(`It already has “${l}”.`);
    if (labels.length >= MAX_LABELS) return msg.error(new Error(`A conversation has at most ${MAX_LABELS} labels.`));
    if (await save([...labels, l], `Label “${l}” added.`)) newLabel.value = '';
  });
  return { list, form, show };
}
