// The business hours of an agent (agent.hours, lib/agents/hours.ts): a time zone, opening
// ranges per weekday, holidays, and what the agent does outside them. Unset: always open.
import { checkbox, field, h, replace, select, uid } from '../dom.js';

const DAYS = [
  ['mon', 'Monday'],
  ['tue', 'Tuesday'],
  ['wed', 'Wednesday'],
  ['thu', 'Thursday'],
  ['fri', 'Friday'],
  ['sat', 'Saturday'],
  ['sun', 'Sunday'],
];
const OUTSIDE = [
  { value: 'message', label: 'Reply with the message below, once per conversation' },
  { value: 'handoff', label: 'Hand over to a person (saying the message below, if any)' },
  { value: 'answer', label: 'Answer as usual' },
];
const TIME = '^(([01]?\\d|2[0-3]):[0-5]\\d|24:00)$';
const WORKDAY = [['09:00', '18:00']];

/** "9:00" → "09:00": the API wants two-digit hours. */
const hhmm = (v) => v.trim().replace(/^(\d):/, '0$1:');

function browserTimeZone() {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  } catch {
    return 'UTC';
  }
}

function timeZones() {
  try {
    return ['UTC', ...Intl.supportedValuesOf('timeZone')];
  } catch {
    return ['UTC'];
  }
}

/**
 * The editor: `el` to place in a form, `set(hours|null)` to show an agent's, `value()` the
 * hours to send (null: always open), `control(path)` the control of an API error's field
 * (`hours.timezone`, `hours.weekly.mon.0.1`, `hours.holidays.2`).
 */
export function hoursEditor() {
  const enabled = checkbox('Set business hours', { name: 'hoursEnabled' });
  const zonesId = uid('zones');
  const timezone = h('input', { type: 'text', name: 'timezone', list: zonesId, spellcheck: 'false', autocomplete: 'off', maxlength: '100' });
  const zones = h('datalist', { id: zonesId }, timeZones().map((z) => h('option', { value: z })));
  const outside = select(OUTSIDE, { name: 'outside' });
  const outsideMessage = h('input', { type: 'text', name: 'outsideMessage', maxlength: '1000' });
  const holidays = h('textarea', { name: 'holidays', rows: 2, spellcheck: 'false', placeholder: '2026-12-25\n2026-12-26', dataset: { expects: 'dates written YYYY-MM-DD' } });
  const days = Object.fromEntries(DAYS.map(([key]) => [key, []])); // day → [{ from, to }]
  const dayRows = Object.fromEntries(DAYS.map(([key]) => [key, h('div', { class: 'ranges' })]));

  function renderDay(key, label) {
    const ranges = days[key];
    replace(
      dayRows[key],
      ranges.length
        ? ranges.map((r, i) => {
            const remove = h('button', { type: 'button', class: 'secondary small', 'aria-label': `Remove ${label} range ${i + 1}` }, 'Remove');
            remove.addEventListener('click', () => {
              ranges.splice(i, 1);
              renderDay(key, label);
            });
            // Numbered by position: removing a range renumbers the ones after it.
            r.from.setAttribute('aria-label', `${label} range ${i + 1} opens`);
            r.to.setAttribute('aria-label', `${label} range ${i + 1} closes`);
            return h('div', { class: 'range' }, r.from, h('span', { 'aria-hidden': 'true' }, '–'), r.to, remove);
          })
        : h('span', { class: 'muted small closed' }, 'Closed'),
    );
  }

  function addRange(key, [from, to] = ['09:00', '18:00']) {
    const input = (value) => h('input', { type: 'text', class: 'time', inputmode: 'numeric', pattern: TIME, placeholder: 'HH:MM', maxlength: '5', value, dataset: { expects: 'a time HH:MM, from 00:00 to 24:00' } });
    days[key].push({ from: input(from), to: input(to) });
  }

  const grid = h(
    'div',
    { class: 'week', role: 'group', 'aria-label': 'Opening hours per day' },
    DAYS.map(([key, label]) => {
      const add = h('button', { type: 'button', class: 'secondary small', 'aria-label': `Add opening hours on ${label}` }, 'Add hours');
      add.addEventListener('click', () => {
        addRange(key);
        renderDay(key, label);
        days[key].at(-1).from.focus();
      });
      return h('div', { class: 'day', dataset: { day: key } }, h('span', { class: 'day-name' }, label), dayRows[key], add);
    }),
  );
  const copyMonday = h('button', { type: 'button', class: 'secondary small' }, 'Copy Monday to Tuesday–Friday');
  copyMonday.addEventListener('click', () => {
    const monday = days.mon.map((r) => [r.from.value, r.to.value]);
    for (const [key, label] of DAYS.slice(1, 5)) {
      days[key] = [];
      for (const range of monday) addRange(key, range);
      renderDay(key, label);
    }
  });

  const details = h(
    'div',
    { class: 'hours' },
    h(
      'div',
      { class: 'grid-2' },
      field('Time zone', timezone, 'Where the hours are kept, e.g. Europe/Berlin (daylight saving is followed).'),
      field('Outside business hours', outside),
    ),
    zones,
    field('Message when closed', outsideMessage, 'Empty: “We are closed right now; we will answer during our opening hours.” (with a handover: nothing is said).'),
    h('p', { class: 'group-label' }, 'Opening hours'),
    h('p', { class: 'hint' }, 'Local times, HH:MM. 24:00 ends at midnight; a range ending before it starts runs overnight. A day without hours is closed.'),
    grid,
    h('div', { class: 'actions' }, copyMonday),
    field('Holidays', holidays, 'Closed all day: one date per line, YYYY-MM-DD.'),
  );
  const alwaysOpen = h('p', { class: 'muted small' }, 'No business hours: the agent answers at any hour.');
  const sync = () => {
    details.hidden = !enabled.input.checked;
    alwaysOpen.hidden = enabled.input.checked;
  };
  enabled.input.addEventListener('change', () => {
    // Switched on for the first time: a working week to start from.
    if (enabled.input.checked && DAYS.every(([key]) => !days[key].length)) fill({ timezone: browserTimeZone(), weekly: Object.fromEntries(DAYS.slice(0, 5).map(([k]) => [k, WORKDAY])), outside: 'message' });
    sync();
  });

  function fill(hours) {
    timezone.value = hours?.timezone ?? '';
    outside.value = hours?.outside ?? 'message';
    outsideMessage.value = hours?.outsideMessage ?? '';
    holidays.value = (hours?.holidays ?? []).join('\n');
    for (const [key, label] of DAYS) {
      days[key] = [];
      for (const range of hours?.weekly?.[key] ?? []) addRange(key, range);
      renderDay(key, label);
    }
  }

  return {
    el: h('div', {}, enabled.el, alwaysOpen, details),
    set(hours) {
      enabled.input.checked = Boolean(hours);
      fill(hours);
      sync();
    },
    value() {
      if (!enabled.input.checked) return null;
      const weekly = {};
      for (const [key] of DAYS) if (days[key].length) weekly[key] = days[key].map((r) => [hhmm(r.from.value), hhmm(r.to.value)]);
      return {
        timezone: timezone.value.trim(),
        weekly,
        holidays: holidays.value.split(/[\s,;]+/).filter(Boolean),
        outside: outside.value,
        outsideMessage: outsideMessage.value.trim() || null,
      };
    },
    control(path) {
      if (path === 'hours') return enabled.input;
      if (path === 'hours.timezone') return timezone;
      if (path === 'hours.outside') return outside;
      if (path === 'hours.outsideMessage') return outsideMessage;
      if (path === 'hours.holidays') return holidays;
      const m = /^hours\.weekly\.(\w+)(?:\.(\d+)(?:\.(\d))?)?$/.exec(path);
      if (!m || !days[m[1]]) return null;
      const range = days[m[1]][Number(m[2] ?? 0)];
      return range ? (m[3] === '1' ? range.to : range.from) : null;
    },
  };
}
