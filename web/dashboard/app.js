// The dashboard shell: session check, who is signed in (role), navigation, hash routing. Each
// page is its own module exporting render(root, ctx) and optionally returning a cleanup function.
import { api, logOut, onSignedOut, session } from './api.js';
import { h, replace } from './dom.js';
import { renderAccept } from './pages/accept.js';
import { renderAuth } from './pages/auth.js';

// `admin`: the company's setup, which operators may not use (the API answers them 403 FORBIDDEN).
// In the order a new company sets up (contract.md § The first hour): an agent needs a help
// centre, a channel needs an agent; then the pages of the daily work.
const PAGES = {
  'get-started': { title: 'Get started', admin: true, load: () => import('./pages/get-started.js') },
  knowledge: { title: 'Knowledge', admin: true, load: () => import('./pages/knowledge.js') },
  agents: { title: 'Agents', admin: true, load: () => import('./pages/agents.js') },
  integrations: { title: 'Integrations', admin: true, load: () => import('./pages/integrations.js') },
  'test-agent': { title: 'Test agent', admin: true, load: () => import('./pages/test-agent.js') },
  conversations: { title: 'Inbox', load: () => import('./pages/conversations.js') },
  leads: { title: 'Leads', load: () => import('./pages/leads.js') },
  outcomes: { title: 'Outcomes', load: () => import('./pages/outcomes.js') },
  team: { title: 'Team', load: () => import('./pages/team.js') },
  settings: { title: 'Settings', load: () => import('./pages/settings.js') },
};
const ROLE_LABEL = { owner: 'Owner', admin: 'Admin', operator: 'Operator' };

/** The signed-in user's role; an API that does not say (before roles existed) meant an owner. */
const roleOf = (me) => me?.user?.role ?? 'owner';
const mayUse = (def, role) => !def.admin || role !== 'operator';
/**
 * The page the bare address opens: operators work the inbox; owners and admins get "Get
 * started" until its steps are all done (right after sign-up above all), the inbox after.
 */
async function defaultPage(role, signal) {
  if (role === 'operator') return 'conversations';
  try {
    const { firstHour } = await PAGES['get-started'].load();
    return (await firstHour(signal)).finished ? 'conversations' : 'get-started';
  } catch {
    return 'get-started';
  }
}

const app = document.getElementById('app');
let current = null; // { controller: AbortController, cleanup?: () => void }
let shell = null; // { nav, main, account }
let me = null; // GET /api/auth/me: { user: { id, email, role, displayName, … }, company }

const decode = (part) => {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
};

/** `#/page/param…?query`: `page` null when the hash names no page (the role's default page then). */
function parseHash() {
  const raw = location.hash.replace(/^#\/?/, '');
  const q = raw.indexOf('?');
  const query = new URLSearchParams(q >= 0 ? raw.slice(q + 1) : '');
  const [page, ...params] = (q >= 0 ? raw.slice(0, q) : raw).split('/').filter(Boolean).map(decode);
  if (page === 'accept') return { page, params: [], query };
  return PAGES[page] ? { page, params, query } : { page: null, params: [], query };
}

export function navigate(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

function teardownPage() {
  if (!current) return;
  current.controller.abort();
  try {
    current.cleanup?.();
  } catch {
    /* a page's cleanup must not break navigation */
  }
  current = null;
}

function buildShell() {
  const account = h('span', { class: 'account' });
  const nav = h(
    'nav',
    { 'aria-label': 'Main' },
    h('ul', {}, Object.entries(PAGES).map(([key, p]) => h('li', { dataset: { page: key } }, h('a', { href: `#/${key}`, dataset: { page: key } }, p.title)))),
  );
  const logout = h('button', { type: 'button', class: 'secondary small' }, 'Log out');
  logout.addEventListener('click', () => logOut());
  const main = h('main', { id: 'main', tabindex: '-1' });
  const header = h('header', { class: 'topbar' }, h('a', { class: 'brand', href: '#/' }, 'Messaging automation'), nav, h('div', { class: 'who' }, account, logout));
  replace(app, header, main);
  shell = { nav, main, account };
}

/** The navigation and the account line for who is signed in: operators see only the pages they can use. */
function showWho(who) {
  const role = roleOf(who);
  for (const li of shell.nav.querySelectorAll('li')) li.hidden = !mayUse(PAGES[li.dataset.page], role);
  if (!who?.user?.email) return;
  const name = who.user.displayName?.trim();
  replace(
    shell.account,
    h('span', { class: 'account-who' }, name ? h('strong', { class: 'account-name' }, name) : null, h('span', { class: ['role-badge', `role-${role}`] }, ROLE_LABEL[role] ?? role)),
    h('span', { class: 'muted' }, `${who.company.companyName} · ${who.user.email}`),
  );
}

/**
 * Who is signed in, asked on every navigation: a role changed meanwhile shows in the
 * navigation at once, and a removed user's next step ends at the login form (the API answers
 * 401 and the session ends). Null when the session ended or the navigation was superseded.
 */
async function whoAmI(signal) {
  try {
    me = await api('GET', '/api/auth/me', undefined, { signal });
  } catch (err) {
    if (err?.name === 'AbortError' || err?.status === 401) return null;
    // The server could not be asked: keep what was known (the pages say what fails).
  }
  return me ?? { user: {}, company: {} };
}

/** The navigation and the account line asked again, the page left as it is (a user renamed themselves). */
async function refreshWho() {
  const who = await whoAmI();
  if (who && shell) showWho(who);
}

async function route() {
  const where = parseHash();
  if (where.page === 'accept') {
    showAccept(where.query);
    return;
  }
  if (!session.get()) {
    showAuth('');
    return;
  }
  if (!shell) buildShell();
  teardownPage();
  const controller = new AbortController();
  const entry = { controller };
  current = entry;
  const who = await whoAmI(controller.signal);
  if (current !== entry || !who || !shell) return;
  showWho(who);
  const role = roleOf(who);
  const page = where.page ?? (await defaultPage(role, controller.signal));
  if (current !== entry) return;
  // The bare address shows the role's first page; the address says which. Not over a page chosen meanwhile: a click
  // on the navigation changes the hash before its hashchange runs, and replacing it then would show this page instead.
  if (!where.page && parseHash().page === null) history.replaceState(null, '', `#/${page}`);
  for (const a of shell.nav.querySelectorAll('a')) {
    if (a.dataset.page === page) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const def = PAGES[page];
  document.title = `${def.title} · Messaging automation`;
  const root = h('div', { class: 'page', dataset: { page } });
  replace(shell.main, root);
  if (!mayUse(def, role)) {
    replace(
      root,
      h('h1', {}, def.title),
      h(
        'p',
        { class: 'notice', role: 'alert' },
        `${def.title} is for the owners and admins of ${who.company?.companyName ?? 'the company'}. You are signed in as an ${ROLE_LABEL[role]?.toLowerCase() ?? role}: ask an owner or admin if you need it. `,
        h('a', { href: '#/conversations' }, 'Go to the inbox'),
        '.',
      ),
    );
  } else {
    try {
      const mod = await def.load();
      if (current !== entry) return;
      entry.cleanup = await mod.render(root, { params: where.params, query: where.query, signal: controller.signal, navigate, me: who, role, refresh: () => route(), refreshWho });
    } catch (err) {
      if (current !== entry || err?.name === 'AbortError') return;
      replace(root, h('h1', {}, def.title), h('p', { role: 'alert', class: 'error' }, err?.code === 'FORBIDDEN' ? `${def.title} is for the owners and admins of the company.` : (err?.message ?? String(err))));
    }
  }
  // Move focus to the new page's heading (announced by screen readers), unless the user is typing.
  const heading = root.querySelector('h1');
  if (heading && current === entry && (document.activeElement === document.body || shell.nav.contains(document.activeElement))) {
    heading.tabIndex = -1;
    heading.focus({ preventScroll: true });
  }
}

function showAuth(message) {
  teardownPage();
  shell = null;
  me = null;
  document.title = 'Log in · Messaging automation';
  const main = h('main', { id: 'main', tabindex: '-1', class: 'auth-main' });
  replace(app, main);
  renderAuth(main, { message, onSignedIn: () => route() });
}

/** `#/accept?token=…`: joining a company by invitation, signed out (a signed-in user is offered to log out first). */
function showAccept(query) {
  teardownPage();
  shell = null;
  me = null;
  document.title = 'Join your team · Messaging automation';
  const main = h('main', { id: 'main', tabindex: '-1', class: 'auth-main' });
  replace(app, main);
  renderAccept(main, {
    token: query.get('token') ?? '',
    signedIn: Boolean(session.get()),
    logOut: () => logOut(),
    // Joined and logged in: the invitation's address leaves the history (its token is spent anyway).
    onJoined: () => {
      history.replaceState(null, '', '#/conversations');
      route();
    },
  });
}

// A session ended (logged out here or in another tab, refused): the login form, or the
// invitation form when that is where the user is.
onSignedOut((reason) => (parseHash().page === 'accept' ? route() : showAuth(reason)));
window.addEventListener('hashchange', () => route());
document.addEventListener('click', (e) => {
  const skip = e.target instanceof Element && e.target.closest('.skip-link');
  if (skip) {
    e.preventDefault();
    document.getElementById('main')?.focus();
  }
});
route();
