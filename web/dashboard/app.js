// The dashboard shell: session check, navigation, hash routing. Each page is its own module
// exporting render(root, ctx) and optionally returning a cleanup function.
import { api, logOut, onSignedOut, session } from './api.js';
import { h, replace } from './dom.js';
import { renderAuth } from './pages/auth.js';

const PAGES = {
  integrations: { title: 'Integrations', load: () => import('./pages/integrations.js') },
  agents: { title: 'Agents', load: () => import('./pages/agents.js') },
  'test-agent': { title: 'Test agent', load: () => import('./pages/test-agent.js') },
  knowledge: { title: 'Knowledge', load: () => import('./pages/knowledge.js') },
  conversations: { title: 'Conversations', load: () => import('./pages/conversations.js') },
  leads: { title: 'Leads', load: () => import('./pages/leads.js') },
  outcomes: { title: 'Outcomes', load: () => import('./pages/outcomes.js') },
  settings: { title: 'Settings', load: () => import('./pages/settings.js') },
};
const DEFAULT_PAGE = 'integrations';

const app = document.getElementById('app');
let current = null; // { controller: AbortController, cleanup?: () => void }
let shell = null; // { nav, main, account }

function parseHash() {
  const parts = location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  const [page = DEFAULT_PAGE, ...params] = parts;
  return PAGES[page] ? { page, params } : { page: DEFAULT_PAGE, params: [] };
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
  const account = h('span', { class: 'account muted' });
  const nav = h(
    'nav',
    { 'aria-label': 'Main' },
    h('ul', {}, Object.entries(PAGES).map(([key, p]) => h('li', {}, h('a', { href: `#/${key}`, dataset: { page: key } }, p.title)))),
  );
  const logout = h('button', { type: 'button', class: 'secondary small' }, 'Log out');
  logout.addEventListener('click', () => logOut());
  const main = h('main', { id: 'main', tabindex: '-1' });
  const header = h('header', { class: 'topbar' }, h('a', { class: 'brand', href: '#/' }, 'Messaging automation'), nav, h('div', { class: 'who' }, account, logout));
  replace(app, header, main);
  shell = { nav, main, account };
  api('GET', '/api/auth/me')
    .then((me) => {
      if (shell?.account === account) account.textContent = `${me.company.companyName} · ${me.user.email}`;
    })
    .catch(() => {});
}

async function route() {
  if (!session.get()) {
    showAuth('');
    return;
  }
  if (!shell) buildShell();
  teardownPage();
  const { page, params } = parseHash();
  for (const a of shell.nav.querySelectorAll('a')) {
    if (a.dataset.page === page) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const def = PAGES[page];
  document.title = `${def.title} · Messaging automation`;
  const controller = new AbortController();
  const entry = { controller };
  current = entry;
  const root = h('div', { class: 'page', dataset: { page } });
  replace(shell.main, root);
  try {
    const mod = await def.load();
    if (current !== entry) return;
    entry.cleanup = await mod.render(root, { params, signal: controller.signal, navigate });
  } catch (err) {
    if (current !== entry || err?.name === 'AbortError') return;
    replace(root, h('h1', {}, def.title), h('p', { role: 'alert', class: 'error' }, err?.message ?? String(err)));
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
  document.title = 'Log in · Messaging automation';
  const main = h('main', { id: 'main', tabindex: '-1', class: 'auth-main' });
  replace(app, main);
  renderAuth(main, {
    message,
    onSignedIn: () => {
      if (!location.hash || location.hash === '#/') location.hash = `#/${DEFAULT_PAGE}`;
      route();
    },
  });
}

onSignedOut((reason) => showAuth(reason));
window.addEventListener('hashchange', () => route());
document.addEventListener('click', (e) => {
  const skip = e.target instanceof Element && e.target.closest('.skip-link');
  if (skip) {
    e.preventDefault();
    document.getElementById('main')?.focus();
  }
});
route();
