// Sign up / log in: one form, two buttons. Enter submits "Log in"; "Sign up" also needs a
// company name, registers, then logs in.
import { logIn, signUp } from '../api.js';
import { busy, field, h, messages } from '../dom.js';

export function renderAuth(root, { message, onSignedIn }) {
  const email = h('input', { type: 'email', name: 'email', autocomplete: 'username', required: true });
  const password = h('input', { type: 'password', name: 'password', autocomplete: 'current-password', required: true, minlength: '8' });
  const company = h('input', { type: 'text', name: 'companyName', autocomplete: 'organization' });
  const logInButton = h('button', { type: 'submit', class: 'primary' }, 'Log in');
  const signUpButton = h('button', { type: 'button', class: 'secondary' }, 'Sign up');
  const msg = messages();
  if (message) msg.ok(message);

  const form = h(
    'form',
    { class: 'auth-form', method: 'post', 'aria-labelledby': 'auth-title', novalidate: true },
    h('h1', { id: 'auth-title' }, 'Messaging automation'),
    h('p', { class: 'muted' }, 'Log in to your company, or sign up to create one.'),
    field('Email', email),
    field('Password', password, 'At least 8 characters.'),
    field('Company name', company, 'Only needed to sign up.'),
    h('div', { class: 'actions' }, logInButton, signUpButton),
    msg.el,
  );

  const credentials = () => ({ email: email.value.trim(), password: password.value });
  const check = (needCompany) => {
    const missing = [!email.value.trim() && 'Email', !password.value && 'Password', needCompany && !company.value.trim() && 'Company name'].filter(Boolean);
    if (!missing.length) return true;
    msg.error(new Error(`Please fill in: ${missing.join(', ')}.`));
    ({ Email: email, Password: password, 'Company name': company })[missing[0]].focus();
    return false;
  };

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (!check(false)) return;
    msg.ok('Logging in…');
    try {
      await busy(logInButton, () => logIn(credentials()));
      onSignedIn();
    } catch (err) {
      msg.error(err);
    }
  });

  signUpButton.addEventListener('click', async () => {
    if (!check(true)) return;
    msg.ok('Creating your account…');
    try {
      await busy(signUpButton, () => signUp({ ...credentials(), companyName: company.value.trim() }));
      onSignedIn();
    } catch (err) {
      msg.error(err);
    }
  });

  root.append(h('div', { class: 'auth-card' }, form));
  email.focus();
}
