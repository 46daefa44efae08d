// Request headers as name/value rows, for an action and for an MCP server. Their values are
// write-only in the API: a stored one comes back as "********", and sending "********" back
// keeps it, so a row left alone stays as it was and only a value typed anew replaces one.
import { h, replace, uid } from '../dom.js';

/** What the API shows for a stored header value, and takes back as "keep it". */
export const MASK = '********';
const MAX_HEADERS = 20;

/**
 * The editor: `el` to place in a form; `set(headers)` shows a stored map ({name: "********"});
 * `value()` the map to send; `changed(stored)` whether it differs from the stored map;
 * `duplicate()` a name given twice (a map cannot hold both), or null; `control(path)` the
 * control of an API error's field (`request.headers`, `request.headers.X-Api-Key.value`:
 * see placeHeaderDetails).
 */
export function headerRows({ prefix = 'headers' } = {}) {
  const rows = []; // { name: input, value: input }
  const list = h('div', { class: 'header-rows' });
  const add = h('button', { type: 'button', class: 'secondary small' }, 'Add header');
  const hintId = uid('hint');
  const headingId = uid('heading');

  function render() {
    replace(
      list,
      rows.length
        ? rows.map((r, i) => {
            // Numbered by position: removing a row renumbers the ones after it.
            r.name.setAttribute('aria-label', `Header ${i + 1} name`);
            r.value.setAttribute('aria-label', `Header ${i + 1} value`);
            const remove = h('button', { type: 'button', class: 'secondary small', 'aria-label': `Remove header ${i + 1}` }, 'Remove');
            remove.addEventListener('click', () => {
              rows.splice(i, 1);
              render();
              (rows[i]?.name ?? add).focus();
            });
            return h('div', { class: 'header-row' }, r.name, r.value, remove);
          })
        : h('p', { class: 'muted small' }, 'No headers.'),
    );
    add.disabled = rows.length >= MAX_HEADERS;
  }

  function addRow(name = '', value = '') {
    const nameInput = h('input', { type: 'text', name: `${prefix}-name`, value: name, placeholder: 'Authorization', spellcheck: 'false', autocomplete: 'off', maxlength: '200', dataset: { expects: 'a header name: letters, digits and - (no spaces or colons)' } });
    // A password field: a secret typed here is not shown on the screen.
    const valueInput = h('input', { type: 'password', name: `${prefix}-value`, value, placeholder: 'Bearer …', spellcheck: 'false', autocomplete: 'new-password', maxlength: '4096' });
    // A stored value is replaced as a whole, not appended to.
    valueInput.addEventListener('focus', () => {
      if (valueInput.value === MASK) valueInput.select();
    });
    rows.push({ name: nameInput, value: valueInput });
  }

  add.addEventListener('click', () => {
    addRow();
    render();
    rows.at(-1).name.focus();
  });

  const filled = () => rows.filter((r) => r.name.value.trim() || r.value.value);
  const el = h(
    'div',
    { class: 'headers', role: 'group', 'aria-labelledby': headingId, 'aria-describedby': hintId },
    h('span', { class: 'group-label', id: headingId }, 'Headers'),
    h('p', { class: 'hint', id: hintId }, `Sent with every request (at most ${MAX_HEADERS}), e.g. Authorization. Values are stored encrypted and never shown again: a stored one shows as ${MASK} and is kept unless you type a new one.`),
    list,
    h('div', { class: 'actions tight' }, add),
  );

  return {
    el,
    set(headers) {
      rows.length = 0;
      for (const [name, value] of Object.entries(headers ?? {})) addRow(name, value);
      render();
    },
    value() {
      return Object.fromEntries(filled().map((r) => [r.name.value.trim(), r.value.value]));
    },
    changed(stored) {
      const now = filled();
      const before = Object.keys(stored ?? {});
      if (now.length !== before.length) return true;
      return now.some((r) => !before.includes(r.name.value.trim()) || r.value.value !== MASK);
    },
    duplicate() {
      const seen = new Set();
      for (const r of filled()) {
        const key = r.name.value.trim().toLowerCase();
        if (seen.has(key)) return r.name;
        seen.add(key);
      }
      return null;
    },
    control(path) {
      const m = /^(?:request\.)?headers(?:\.(.+?))?(?:\.(name|value))?$/.exec(path);
      if (!m) return null;
      // The whole map: its values must be sent again (a new address), or there are too many.
      if (!m[1]) return rows[0]?.value ?? add;
      const row = rows.find((r) => r.name.value.trim().toLowerCase() === m[1].toLowerCase());
      if (!row) return rows[0]?.name ?? add;
      return m[2] === 'value' ? row.value : row.name;
    },
  };
}

/**
 * The API names a header's problem by the header (`request.headers.X-Api-Key`), whether it is
 * the name (not a token, set by the request itself, given twice) or the value (a line break,
 * "********" with nothing stored): which control it belongs to, from the message.
 */
export function placeHeaderDetails(err) {
  if (!Array.isArray(err?.details)) return err;
  err.details = err.details.map((d) => {
    if (typeof d?.field !== 'string' || !/^(?:request\.)?headers\../.test(d.field)) return d;
    const ofValue = /line break|control character|no value is stored|characters/i.test(String(d.message ?? ''));
    return { ...d, field: `${d.field}.${ofValue ? 'value' : 'name'}` };
  });
  return err;
}
