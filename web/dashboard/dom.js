// Tiny DOM helpers. Every piece of data reaches the page as a text node or a property:
// nothing here parses HTML (the CSP forbids string-to-DOM sinks anyway).

const PROPS = new Set(['value', 'checked', 'disabled', 'selected', 'hidden', 'readOnly', 'required', 'multiple']);

/**
 * h('button', { class: 'primary', onclick: fn, 'aria-label': 'Copy' }, 'Copy') → element.
 * Attributes are set as strings; `text` sets textContent; on* functions become listeners;
 * `value`, `checked`, `disabled`… are set as properties. Children: nodes, strings, arrays, null.
 */
export function h(tag, props = {}, ...children) {
  return build(document.createElement(tag), props, children);
}

const SVG_NS = 'http://www.w3.org/2000/svg';
export function svg(tag, props = {}, ...children) {
  return build(document.createElementNS(SVG_NS, tag), props, children);
}

function build(el, props, children) {
  for (const [key, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'text') el.textContent = String(value);
    else if (key === 'class') el.setAttribute('class', Array.isArray(value) ? value.filter(Boolean).join(' ') : value);
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
    else if (PROPS.has(key)) el[key] = value;
    else if (key === 'style' || key.startsWith('on')) throw new Error(`dom: refusing attribute ${key}`);
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Replaces an element's children. */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

let nextId = 0;
export const uid = (prefix = 'f') => `${prefix}-${++nextId}`;

/** A labelled form control: <div class="field"><label for>…</label>control hint</div>. */
export function field(label, control, hint) {
  control.id ||= uid('field');
  let hintEl = null;
  if (hint) {
    hintEl = h('p', { class: 'hint', id: uid('hint') }, hint);
    control.setAttribute('aria-describedby', hintEl.id);
  }
  return h('div', { class: 'field' }, h('label', { for: control.id }, label), control, hintEl);
}

/** A labelled checkbox (the label follows the box). */
export function checkbox(label, props = {}) {
  const input = h('input', { type: 'checkbox', id: uid('check'), ...props });
  return { input, el: h('div', { class: 'field check' }, input, h('label', { for: input.id }, label)) };
}

/**
 * A write-only secret (an API key or token): the stored one is never shown, only whether there
 * is one. `input` goes in a field, `forget` ("Remove the stored …", shown while one is stored)
 * after it. `show(stored)` resets both for a record that has one or not; `change()` answers
 * what to send: undefined (keep the stored one), null (remove it) or the new one.
 */
export function secretInput(name, forgetLabel, { autocomplete = 'new-password' } = {}) {
  const input = h('input', { type: 'password', name, autocomplete, spellcheck: 'false', maxlength: '4096' });
  const forget = checkbox(forgetLabel, { name: `remove-${name}` });
  forget.input.addEventListener('change', () => {
    input.disabled = forget.input.checked;
    if (input.disabled) input.value = '';
  });
  return {
    input,
    forget: forget.el,
    show(stored) {
      input.value = '';
      input.disabled = false;
      forget.input.checked = false;
      forget.el.hidden = !stored;
    },
    change: () => (forget.input.checked ? null : input.value.trim() || undefined),
  };
}

export function select(options, props = {}) {
  const el = h('select', props);
  for (const o of options) el.append(h('option', { value: String(o.value), selected: o.selected }, o.label));
  return el;
}

/**
 * A message area: role="status" for news, role="alert" for errors. Both live regions exist
 * from the start so screen readers announce later changes.
 */
export function messages() {
  const status = h('p', { role: 'status', class: 'status' });
  const alert = h('p', { role: 'alert', class: 'error' });
  return {
    el: h('div', { class: 'messages' }, status, alert),
    ok(text) {
      alert.textContent = '';
      status.textContent = text;
    },
    error(err) {
      status.textContent = '';
      alert.textContent = errorText(err);
    },
    clear() {
      status.textContent = '';
      alert.textContent = '';
    },
  };
}

/** The user-facing text of an API (or other) error: error.message, plus any field details. */
export function errorText(err) {
  if (!err) return '';
  // 403 FORBIDDEN: the caller's role is below what the action needs (contract.md § A team works the conversations).
  if (err.code === 'FORBIDDEN') return `${err.message || 'Your role does not allow this.'} Ask an owner or admin of your company if you need it.`;
  const details = Array.isArray(err.details) && err.details.length ? ` (${err.details.map((d) => `${d.field}: ${d.message}`).join('; ')})` : '';
  return `${err.message || String(err)}${details}`;
}

/**
 * An API error's `details[]` shown beside the fields they name. `controls(field)` answers the
 * control of an API field path (`hours.timezone`, `model.apiKey`, `hours.weekly.mon.0`) or
 * null; each message goes under that control's `.field` and is tied to it (aria-invalid,
 * aria-describedby). `show` answers how many details found a field; `clear` removes them all.
 * A control's `data-expects` ("a time HH:MM") replaces the API's "must match pattern …".
 */
export function fieldErrors() {
  let shown = [];
  const clear = () => {
    for (const { control, el } of shown) {
      el.remove();
      control.removeAttribute('aria-invalid');
      const rest = (control.getAttribute('aria-describedby') ?? '').split(' ').filter((id) => id && id !== el.id);
      if (rest.length) control.setAttribute('aria-describedby', rest.join(' '));
      else control.removeAttribute('aria-describedby');
    }
    shown = [];
  };
  const show = (err, controls) => {
    clear();
    let placed = 0;
    for (const d of Array.isArray(err?.details) ? err.details : []) {
      const control = typeof d?.field === 'string' ? controlOf(controls, d.field) : null;
      if (!control) continue;
      // A regular expression is no explanation: a control may say what it expects (data-expects).
      const text = /^must match pattern/.test(d.message ?? '') && control.dataset.expects ? `must be ${control.dataset.expects}` : String(d.message ?? 'is invalid');
      const el = h('p', { class: 'field-error', id: uid('error') }, text.charAt(0).toUpperCase() + text.slice(1) + (/[.!?]$/.test(text) ? '' : '.'));
      const holder = control.closest('.field, .range') ?? control.parentElement;
      holder.append(el);
      control.setAttribute('aria-invalid', 'true');
      control.setAttribute('aria-describedby', [control.getAttribute('aria-describedby'), el.id].filter(Boolean).join(' '));
      shown.push({ control, el });
      placed += 1;
    }
    shown[0]?.control.focus();
    return placed;
  };
  /**
   * The error in `msg` and at its fields: when every detail found its field, the summary
   * names the fields by their labels (not the API's paths) with what is wrong.
   */
  const report = (msg, err, controls) => {
    const placed = show(err, controls);
    if (!placed || placed !== err.details.length) {
      msg.error(err);
      return;
    }
    const named = shown.map(({ control, el }) => `${labelOf(control)}: ${el.textContent.replace(/\.$/, '').replace(/^./, (c) => c.toLowerCase())}`);
    msg.error(new Error(`Please check ${named.join('; ')}.`));
  };
  return { show, clear, report };
}

/** The visible name of a form control: its <label>, else its aria-label. */
function labelOf(control) {
  const label = control.id ? document.querySelector(`label[for="${CSS.escape(control.id)}"]`) : null;
  return (label?.textContent ?? control.getAttribute('aria-label') ?? control.name ?? 'a field').trim();
}

/** The control of `field`, or of its nearest parent path that has one (`hours.holidays.2` → `hours.holidays`). */
function controlOf(controls, field) {
  for (let path = field; path; path = path.includes('.') ? path.slice(0, path.lastIndexOf('.')) : '') {
    const control = typeof controls === 'function' ? controls(path) : controls[path];
    if (control) return control;
  }
  return null;
}

export function time(iso) {
  if (!iso) return h('span', { class: 'muted' }, '—');
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return h('span', {}, String(iso));
  return h('time', { datetime: d.toISOString(), title: d.toISOString() }, d.toLocaleString());
}

/** Copies text; falls back to selecting a field and execCommand where the Clipboard API is unavailable. */
export async function copyText(text, fallbackField) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    if (!fallbackField) return false;
    fallbackField.focus();
    fallbackField.select();
    return document.execCommand('copy');
  }
}

/** A read-only value with a Copy button: [label] [input readonly] [Copy …]. */
export function copyField(label, value, { buttonLabel = `Copy ${label.toLowerCase()}`, multiline = false, onCopied } = {}) {
  const control = multiline
    ? h('textarea', { readOnly: true, rows: 2, class: 'mono', spellcheck: 'false' })
    : h('input', { type: 'text', readOnly: true, class: 'mono', spellcheck: 'false' });
  control.value = value;
  const button = h('button', { type: 'button', class: 'secondary' }, buttonLabel);
  const note = h('span', { role: 'status', class: 'copied' });
  button.addEventListener('click', async () => {
    const ok = await copyText(control.value, control);
    note.textContent = ok ? 'Copied' : 'Select the text and copy it';
    onCopied?.(ok);
    setTimeout(() => (note.textContent = ''), 2500);
  });
  control.id = uid('copy');
  return h('div', { class: 'field copy' }, h('label', { for: control.id }, label), h('div', { class: 'copy-row' }, control, button, note));
}

/** Disables a button while an async action runs; returns the action's result. */
export async function busy(button, action) {
  button.disabled = true;
  button.setAttribute('aria-busy', 'true');
  try {
    return await action();
  } finally {
    button.disabled = false;
    button.removeAttribute('aria-busy');
  }
}

/** A table from column definitions: [{ label, cell: (row) => node|string }]. */
export function table(caption, columns, rows, { empty = 'Nothing yet.', rowProps } = {}) {
  if (!rows.length) return h('p', { class: 'muted empty' }, empty);
  return h(
    'table',
    {},
    h('caption', { class: caption.startsWith('!') ? 'visually-hidden' : '' }, caption.replace(/^!/, '')),
    h('thead', {}, h('tr', {}, columns.map((c) => h('th', { scope: 'col' }, c.label)))),
    h('tbody', {}, rows.map((r) => h('tr', rowProps?.(r) ?? {}, columns.map((c) => h('td', { class: c.class }, c.cell(r)))))),
  );
}

/**
 * Previous / Next over a paged list (`limit`, `offset`, `total`). `offset` is the page to ask
 * for; after each read, `shown(total, count)` updates the buttons and the "1–50 of 120" text, or,
 * when the list shrank under that page (closed, filtered away), moves `offset` to its last page
 * and returns false: read again.
 */
export function pager(pageSize, onMove, { rangeRole } = {}) {
  const range = h('span', { class: 'muted small', ...(rangeRole ? { role: rangeRole } : {}) });
  const previous = h('button', { type: 'button', class: 'secondary' }, 'Previous');
  const next = h('button', { type: 'button', class: 'secondary' }, 'Next');
  const el = h('div', { class: 'row pager', role: 'group', 'aria-label': 'Pages', hidden: true }, previous, range, next);
  const p = {
    el,
    offset: 0,
    shown(total, count) {
      if (p.offset > 0 && p.offset >= total) {
        p.offset = Math.max(0, Math.floor((total - 1) / pageSize) * pageSize);
        return false;
      }
      range.textContent = total ? `${p.offset + 1}–${p.offset + count} of ${total}` : '';
      previous.disabled = p.offset === 0;
      next.disabled = p.offset + count >= total;
      el.hidden = total <= pageSize && p.offset === 0;
      return true;
    },
  };
  previous.addEventListener('click', () => {
    p.offset = Math.max(0, p.offset - pageSize);
    onMove();
  });
  next.addEventListener('click', () => {
    p.offset += pageSize;
    onMove();
  });
  return p;
}
