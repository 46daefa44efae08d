// An agent's version history (#/agents/<id>/versions, GET /api/agents/:id/versions): every
// change to its behaviour made a version, newest first: when, by whom, what changed (in the
// words of the agent form), which one answers now. An older version can be restored: that
// makes a new version with its settings (POST …/versions/:v/restore), so nothing is lost.
import { api, seg } from '../api.js';
import { busy, h, messages, pager, replace, table, time } from '../dom.js';
import { agentFieldText, agentFieldsText, userName } from '../words.js';
import { loadPeople } from './people.js';

const PAGE = 20;

/** What a version changed, in words: created, restored, published from a replay, or the fields. */
function changesCell(v, agentId) {
  const fields = agentFieldsText(v.changes);
  if (v.restoredFrom != null) return h('span', {}, `Restored version ${v.restoredFrom}`, fields ? h('span', { class: 'muted' }, ` (${fields})`) : null);
  if (v.replayId != null) {
    return h(
      'span',
      {},
      fields || 'Published',
      h('span', { class: 'muted' }, ' · published from '),
      h('a', { href: `#/agents/${seg(agentId)}/replay/${seg(v.replayId)}` }, `replay ${v.replayId}`),
    );
  }
  if (!v.changes?.length) return v.version === 1 ? 'Created' : h('span', { class: 'muted' }, 'No setting changed');
  return fields;
}

/** An API error in words: its message, and the fields it names by their form labels. */
function restoreError(err) {
  const details = Array.isArray(err?.details) ? err.details : [];
  if (err?.name !== 'ApiError' || !details.length) return err;
  return new Error(`${err.message.replace(/\.$/, '')}: ${details.map((d) => `${agentFieldText(d.field)} ${String(d.message ?? 'is invalid').replace(/\.$/, '')}`).join('; ')}.`);
}

export async function render(root, { signal, me }, agentId) {
  const crumbs = h('p', { class: 'crumbs' }, h('a', { href: '#/agents' }, '← Agents'), ' · ', h('a', { href: `#/agents/${seg(agentId)}` }, 'Actions and tools'));
  let agent;
  let people;
  try {
    [{ agent }, people] = await Promise.all([api('GET', `/api/agents/${seg(agentId)}`, undefined, { signal }), loadPeople(signal, me)]);
  } catch (err) {
    if (err.name === 'AbortError') throw err;
    root.append(crumbs, h('h1', {}, 'Version history'), h('p', { role: 'alert', class: 'error' }, err.status === 404 ? 'There is no such agent.' : err.message));
    return;
  }
  document.title = `Versions · ${agent.name} · Messaging automation`;
  const path = `/api/agents/${seg(agent.id)}/versions`;
  const msg = messages();
  const listEl = h('div');
  const pages = pager(PAGE, () => load(), { rangeRole: 'status' });
  let generation = 0;
  /** The newest version seen: a restore that answers a newer one made it; one that does not changed nothing (200). */
  let newest = typeof agent.version === 'number' ? agent.version : 0;

  const byCell = (v) => {
    if (!v.createdBy) return h('span', { class: 'muted', title: 'Made with an API token, or before versions were recorded' }, '—');
    if (people.me?.id === v.createdBy) return 'You';
    const user = people.users.get(v.createdBy);
    return user ? userName(user) : h('span', { class: 'muted' }, 'A former teammate');
  };

  const versionCell = (v) =>
    h('div', { class: 'version-cell' }, h('strong', {}, `Version ${v.version}`), v.current ? ' ' : null, v.current ? h('span', { class: 'badge ok version-current' }, 'Current') : null);

  const actionCell = (v) => {
    if (v.current) return h('span', { class: 'muted small' }, 'Answers customers now');
    const button = h('button', { type: 'button', class: 'secondary small', 'aria-label': `Restore version ${v.version}` }, 'Restore');
    button.addEventListener('click', () => restore(v, button));
    return button;
  };

  async function restore(v, button) {
    if (!window.confirm(`Restore version ${v.version} of ${agent.name}? Its settings become the agent’s, as a new version; customers get answers with them from now on.`)) return;
    try {
      const out = await busy(button, () => api('POST', `${path}/${seg(v.version)}/restore`, undefined, { signal }));
      agent = out.agent ?? agent;
      msg.ok(
        out.version.version > newest
          ? `Version ${v.version} restored as version ${out.version.version}.`
          : `Version ${v.version} has the current settings already: nothing changed.`,
      );
      pages.offset = 0;
      await load({ keepMessage: true });
    } catch (err) {
      if (err.name !== 'AbortError') msg.error(restoreError(err));
    }
  }

  async function load({ keepMessage = false } = {}) {
    const gen = ++generation;
    try {
      const out = await api('GET', `${path}?limit=${PAGE}&offset=${pages.offset}`, undefined, { signal });
      if (gen !== generation) return;
      if (!pages.shown(out.total, out.versions.length)) return load({ keepMessage });
      if (!keepMessage) msg.clear();
      for (const v of out.versions) newest = Math.max(newest, v.version);
      replace(
        listEl,
        table(
          '!Versions',
          [
            { label: 'Version', cell: versionCell },
            { label: 'When', class: 'log-time', cell: (v) => time(v.createdAt) },
            { label: 'By', cell: byCell },
            { label: 'Changes', cell: (v) => changesCell(v, agent.id) },
            { label: 'Actions', class: 'nowrap', cell: actionCell },
          ],
          out.versions,
          { empty: 'No versions recorded yet.', rowProps: (v) => ({ dataset: { version: String(v.version) }, class: v.current ? 'is-current' : null }) },
        ),
      );
    } catch (err) {
      if (err.name !== 'AbortError' && gen === generation) msg.error(err);
    }
  }

  root.append(
    crumbs,
    h('h1', {}, `Version history of ${agent.name}`),
    h(
      'p',
      { class: 'lead muted' },
      'Each change to how the agent answers makes a new version; each answer in a conversation remembers the version that gave it. Restoring an older version makes a new one with its settings. ',
      h('a', { href: `#/agents/${seg(agent.id)}/replay` }, 'Replay changes'),
      ' tries a change on past conversations before customers get it.',
    ),
    h('section', { class: 'panel', 'aria-labelledby': 'versions-title' }, h('h2', { id: 'versions-title' }, 'Versions'), msg.el, listEl, pages.el),
  );
  await load();
}
