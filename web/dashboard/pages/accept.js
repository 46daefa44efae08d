// Joining a company by invitation (#/accept?token=…): a display name and a password, then the
// new user is logged in like anyone else (POST /api/auth/login). Signed in as someone else,
// the page offers to log out first: one browser holds one session.
import { api, logIn } from '../api.js';
import { busy, field, fieldErrors, h, messages } from '../dom.js';

const GONE = 'This invitation cannot be used any more: it was already used, revoked, or it expired (invitations last 7 days). Ask whoever invited you for a new link.';

export function renderAccept(root, { token, signedIn, logOut, onJoined }) {
  const card = h('div', { class: 'auth-card' });
  root.append(card);
  const title = h('h1', { id: 'accept-title' }, 'Join your team');

  if (!token) {
    card.append(title, h('p', { role: 'alert', class: 'error' }, 'This invitation link is incomplete: open the whole link you were sent.'), h('p', {}, h('a', { href: '#/' }, 'Go to the login page')));
    return;
  }

  if (signedIn) {
    const out = h('button', { type: 'button', class: 'primary' }, 'Log out and accept');
    out.addEventListener('click', () => busy(out, () => logOut()));
    card.append(
      title,
      h('p', {}, 'You are logged in to the dashboard in this browser. To accept the invitation with a new account, log out first.'),
      h('div', { class: 'actions' }, out, h('a', { href: '#/' }, 'Back to the dashboard')),
    );
    out.focus();
    return;
  }

  const displayName = h('input', { type: 'text', name: 'displayName', autocomplete: 'name', maxlength: '200' });
  const password = h('input', { type: 'password', name: 'password', autocomplete: 'new-password', required: true, minlength: '8' });
  const join = h('button', { type: 'submit', class: 'primary' }, 'Join');
  const msg = messages();
  const errors = fieldErrors();
  const form = h(
    'form',
    { class: 'auth-form', method: 'post', 'aria-labelledby': 'accept-title', novalidate: true },
    title,
    h('p', { class: 'muted' }, 'You were invited to a company’s dashboard. Choose how your teammates see you and a password.'),
    field('Your name', displayName, 'Shown to your teammates and, on your replies, to customers. Empty: the name in the invitation.'),
    field('Password', password, 'At least 8 characters.'),
    h('div', { class: 'actions' }, join),
    msg.el,
  );
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    errors.clear();
    if (password.value.length < 8) {
      msg.error(new Error('Choose a password of at least 8 characters.'));
      password.focus();
      return;
    }
    msg.ok('Creating your account…');
    try {
      await busy(join, async () => {
        const body = { token, password: password.value };
        if (displayName.value.trim()) body.displayName = displayName.value.trim();
        const { user } = await api('POST', '/api/auth/accept-invitation', body, { auth: false });
        await logIn({ email: user.email, password: password.value });
      });
      onJoined();
    } catch (err) {
      if (err?.status === 404) msg.error(new Error(GONE));
      else {
        errors.report(msg, err, { password, displayName });
      }
    }
  });
  card.append(form);
  (displayName.value ? password : displayName).focus();
}
