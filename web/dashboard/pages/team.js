// Team: the company's users (display name, email, role), inviting someone (the link is shown
// once, to copy and send), open invitations (revoke), changing a role or a display name,
// removing a user. Owners and admins manage it; operators see who is on the team and may
// rename themselves only (the API: GET /api/users for everyone, the rest owner/admin).
import { api, apiAll, seg } from '../api.js';
import { append, busy, copyField, field, fieldErrors, h, messages, replace, select, table, time } from '../dom.js';

const ROLES = [
  { value: 'operator', label: 'Operator', hint: 'works the conversations and leads' },
  { value: 'admin', label: 'Admin', hint: 'also sets up integrations, agents, knowledge, API tokens and the team' },
  { value: 'owner', label: 'Owner', hint: 'an admin who can also make and remove owners' },
];
const ROLE_LABEL = Object.fromEntries(ROLES.map((r) => [r.value, r.label]));
/** operator < admin < owner, as ROLES lists them. */
const rank = (role) => ROLES.findIndex((r) => r.value === role);

export function render(root, { signal, me, role, refresh, refreshWho }) {
  const myId = me?.user?.id;
  const manages = role === 'owner' || role === 'admin';
  // Making or unmaking an owner needs an owner (and so does removing one).
  const mayChange = (u) => manages && (role === 'owner' || u.role !== 'owner');
  const roleChoices = ROLES.filter((r) => role === 'owner' || r.value !== 'owner');
  const state = { users: [], invitations: [], renaming: null };
  const who = (u) => u.displayName?.trim() || u.email;

  // ---- members ----
  const usersEl = h('div');
  const usersMsg = messages();

  async function patchUser(u, body, button, done) {
    try {
      const { user } = await busy(button, () => api('PATCH', `/api/users/${seg(u.id)}`, body, { signal }));
      state.users = state.users.map((x) => (x.id === user.id ? { ...x, ...user } : x));
      state.renaming = null;
      renderUsers();
      usersMsg.ok(done(user));
      // My own role changed: the page and the navigation follow; my name: the account line.
      if (user.id === myId && body.role !== undefined) refresh();
      else if (user.id === myId) refreshWho();
    } catch (err) {
      if (err.name === 'AbortError') return;
      usersMsg.error(err);
      renderUsers();
    }
  }

  function nameCell(u) {
    const you = u.id === myId ? h('span', { class: 'tag' }, 'You') : null;
    if (state.renaming !== u.id) return h('div', {}, u.displayName ? h('strong', {}, u.displayName) : h('span', { class: 'muted' }, 'No name'), you);
    const input = h('input', { type: 'text', name: 'displayName', maxlength: '200', 'aria-label': `Display name of ${u.email}`, value: u.displayName ?? '' });
    const save = h('button', { type: 'submit', class: 'primary small' }, 'Save');
    const cancel = h('button', { type: 'button', class: 'secondary small' }, 'Cancel');
    cancel.addEventListener('click', () => {
      state.renaming = null;
      renderUsers();
    });
    const form = h('form', { method: 'post', class: 'rename' }, input, save, cancel);
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const name = input.value.trim();
      patchUser(u, { displayName: name || null }, save, (user) => (user.displayName ? `${user.email} is now shown as “${user.displayName}”.` : `${user.email} has no display name now.`));
    });
    queueMicrotask(() => input.focus());
    return form;
  }

  function roleCell(u) {
    if (!mayChange(u)) return h('span', { class: ['role-badge', `role-${u.role}`] }, ROLE_LABEL[u.role] ?? u.role);
    const picker = select(roleChoices, { name: 'role', 'aria-label': `Role of ${u.email}` });
    picker.value = u.role;
    picker.addEventListener('change', async () => {
      const wanted = picker.value;
      const self = u.id === myId;
      // A lower role revokes what they made with the one they had (the API does it in the same step).
      const lowering = rank(wanted) < rank(u.role);
      const they = self ? 'you' : 'they';
      const theirs = `The API tokens ${they} made and the invitations ${they} sent`;
      const warning = `${self && wanted === 'operator' ? ' You will no longer manage the team or the company’s setup.' : ''}${lowering ? ` ${theirs} stop working.` : ''}`;
      const question = `Make ${self ? 'yourself' : who(u)} an ${ROLE_LABEL[wanted].toLowerCase()}?${warning}`;
      if ((self || lowering) && !window.confirm(question)) {
        picker.value = u.role;
        return;
      }
      await patchUser(u, { role: wanted }, picker, (user) => `The role of ${who(user)} is now ${ROLE_LABEL[user.role] ?? user.role}.${lowering ? ` ${theirs} were revoked.` : ''}`);
      // Mine: the page is drawn again for my new role.
      if (lowering && !self) loadInvitations();
    });
    return picker;
  }

  function actionsCell(u) {
    const buttons = [];
    // Renaming another user needs an admin, and an owner to rename an owner (like any change to one).
    if (u.id === myId || mayChange(u)) {
      const rename = h('button', { type: 'button', class: 'secondary small', 'aria-label': `Rename ${u.email}` }, 'Rename');
      rename.addEventListener('click', () => {
        state.renaming = u.id;
        renderUsers();
      });
      buttons.push(rename);
    }
    if (mayChange(u)) {
      const remove = h('button', { type: 'button', class: 'danger small', 'aria-label': `Remove ${u.email}` }, 'Remove');
      remove.addEventListener('click', () => removeUser(u, remove));
      buttons.push(remove);
    }
    return buttons.length ? h('div', { class: 'actions tight' }, buttons) : h('span', { class: 'muted' }, '—');
  }

  async function removeUser(u, button) {
    const self = u.id === myId;
    const question = self
      ? 'Remove yourself from the team? You are logged out at once and cannot log in again; the API tokens you made and the invitations you sent stop working.'
      : `Remove ${who(u)} (${u.email}) from the team? They are logged out at once, the API tokens they made and the invitations they sent stop working, and their conversations become unassigned.`;
    if (!window.confirm(question)) return;
    try {
      await busy(button, () => api('DELETE', `/api/users/${seg(u.id)}`, undefined, { signal }));
      state.users = state.users.filter((x) => x.id !== u.id);
      renderUsers();
      usersMsg.ok(`${who(u)} was removed from the team.`);
      if (self) refresh();
      else loadInvitations();
    } catch (err) {
      if (err.name !== 'AbortError') usersMsg.error(err);
    }
  }

  function renderUsers() {
    replace(
      usersEl,
      table(
        '!Team members',
        [
          { label: 'Name', cell: nameCell },
          { label: 'Email', cell: (u) => u.email },
          { label: 'Role', cell: roleCell },
          { label: 'Joined', cell: (u) => time(u.createdAt) },
          { label: 'Actions', cell: actionsCell },
        ],
        state.users,
        { empty: 'No one yet.', rowProps: (u) => ({ dataset: { userId: u.id } }) },
      ),
    );
  }

  async function loadUsers() {
    try {
      state.users = (await apiAll('/api/users', 'users', { signal })).users;
      renderUsers();
    } catch (err) {
      if (err.name !== 'AbortError') usersMsg.error(err);
    }
  }

  // ---- invitations (owners and admins) ----
  const invitesEl = h('div');
  const invitesMsg = messages();
  const created = h('div', { class: 'once', hidden: true });
  const email = h('input', { type: 'email', name: 'email', required: true, maxlength: '254', autocomplete: 'off' });
  const inviteRole = select(roleChoices, { name: 'role' });
  const displayName = h('input', { type: 'text', name: 'displayName', maxlength: '200', autocomplete: 'off' });
  const invite = h('button', { type: 'submit', class: 'primary' }, 'Create invitation');
  const inviteErrors = fieldErrors();
  const inviteForm = h(
    'form',
    { method: 'post', class: 'panel', 'aria-labelledby': 'invite-title', novalidate: true },
    h('h2', { id: 'invite-title' }, 'Invite someone'),
    h('p', { class: 'muted' }, 'You get a link to send them yourself (no email is sent). It works once, for 7 days.'),
    h('div', { class: 'grid-3' }, field('Email', email), field('Role', inviteRole, roleChoices.map((r) => `${r.label}: ${r.hint}.`).join(' ')), field('Display name', displayName, 'Optional: they can change it when they join.')),
    h('div', { class: 'actions' }, invite),
    created,
    invitesMsg.el,
  );
  inviteForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    inviteErrors.clear();
    if (!email.value.trim()) {
      invitesMsg.error(new Error('Type the email address of the person to invite.'));
      email.focus();
      return;
    }
    const body = { email: email.value.trim(), role: inviteRole.value };
    if (displayName.value.trim()) body.displayName = displayName.value.trim();
    try {
      const { invitation } = await busy(invite, () => api('POST', '/api/users/invitations', body, { signal }));
      email.value = '';
      displayName.value = '';
      replace(
        created,
        h('p', {}, h('strong', {}, `Invitation for ${invitation.email} created. `), 'Copy the link and send it to them: it is shown only once. It works until ', time(invitation.expiresAt), '.'),
        copyField('Invitation link', invitation.url, { buttonLabel: 'Copy link' }),
      );
      created.hidden = false;
      invitesMsg.ok('Copy the link now: it is shown only once.');
      created.querySelector('input')?.focus();
      loadInvitations();
    } catch (err) {
      if (err.name === 'AbortError') return;
      inviteErrors.report(invitesMsg, err, { email, role: inviteRole, displayName });
    }
  });

  function renderInvitations() {
    replace(
      invitesEl,
      table(
        '!Open invitations',
        [
          { label: 'Email', cell: (i) => i.email },
          { label: 'Role', cell: (i) => h('span', { class: ['role-badge', `role-${i.role}`] }, ROLE_LABEL[i.role] ?? i.role) },
          { label: 'Name', cell: (i) => i.displayName ?? h('span', { class: 'muted' }, '—') },
          { label: 'Invited', cell: (i) => time(i.createdAt) },
          { label: 'Expires', cell: (i) => time(i.expiresAt) },
          {
            label: 'Actions',
            cell: (i) => {
              const revoke = h('button', { type: 'button', class: 'danger small', 'aria-label': `Revoke the invitation for ${i.email}` }, 'Revoke');
              revoke.addEventListener('click', async () => {
                if (!window.confirm(`Revoke the invitation for ${i.email}? Its link stops working at once.`)) return;
                try {
                  await busy(revoke, () => api('DELETE', `/api/users/invitations/${seg(i.id)}`, undefined, { signal }));
                  state.invitations = state.invitations.filter((x) => x.id !== i.id);
                  renderInvitations();
                  invitesMsg.ok(`The invitation for ${i.email} was revoked.`);
                } catch (err) {
                  if (err.name !== 'AbortError') invitesMsg.error(err);
                }
              });
              return revoke;
            },
          },
        ],
        state.invitations,
        { empty: 'No open invitations.' },
      ),
    );
  }

  async function loadInvitations() {
    try {
      state.invitations = (await apiAll('/api/users/invitations', 'invitations', { signal })).invitations;
      renderInvitations();
    } catch (err) {
      if (err.name !== 'AbortError') invitesMsg.error(err);
    }
  }

  // dom.js append: the sections a role does not see are null, which Element.append would print.
  append(root, [
    h('h1', {}, 'Team'),
    h(
      'p',
      { class: 'lead muted' },
      manages
        ? 'Owners and admins set up the company: integrations, agents, knowledge, API tokens and the team. Operators work the conversations and leads.'
        : 'Who works the conversations with you. Only owners and admins invite people or change roles; you can change your own display name.',
    ),
    manages ? inviteForm : null,
    h('section', { class: 'panel', 'aria-labelledby': 'members-title' }, h('h2', { id: 'members-title' }, 'Members'), usersMsg.el, usersEl),
    manages ? h('section', { class: 'panel', 'aria-labelledby': 'invitations-title' }, h('h2', { id: 'invitations-title' }, 'Open invitations'), invitesEl) : null,
  ]);
  loadUsers();
  if (manages) loadInvitations();
}
