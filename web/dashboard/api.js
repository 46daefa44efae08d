// The public API client: the dashboard has no other way in. Tokens live in localStorage and
// only ever travel in the Authorization header (never in a URL).

const STORAGE_KEY = 'mas.session';

export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

export const session = {
  /** { access_token, refresh_token, expires_at } or null */
  get() {
    try {
      const s = JSON.parse(localStorage.getItem(STORAGE_KEY) ?? 'null');
      return s && typeof s.access_token === 'string' && typeof s.refresh_token === 'string' ? s : null;
    } catch {
      return null;
    }
  },
  set(s) {
    localStorage.setItem(STORAGE_KEY, JSON.stringify({ access_token: s.access_token, refresh_token: s.refresh_token, expires_at: s.expires_at }));
  },
  clear() {
    localStorage.removeItem(STORAGE_KEY);
  },
};

const signedOutListeners = new Set();
/** Called with a reason when the session ends (refresh failed, logged out, or another tab logged out). */
export function onSignedOut(fn) {
  signedOutListeners.add(fn);
  return () => signedOutListeners.delete(fn);
}
function signedOut(reason) {
  session.clear();
  for (const fn of signedOutListeners) fn(reason);
}
window.addEventListener('storage', (e) => {
  if (e.key === STORAGE_KEY && !e.newValue) for (const fn of signedOutListeners) fn('');
});

async function errorFrom(res) {
  let body = null;
  try {
    body = await res.json();
  } catch {
    /* not JSON */
  }
  const e = body?.error;
  if (e && typeof e.message === 'string') return new ApiError(res.status, e.code ?? 'ERROR', e.message, e.details);
  return new ApiError(res.status, 'HTTP_' + res.status, `The server answered ${res.status} ${res.statusText}`.trim() + '.');
}

async function send(path, init) {
  try {
    return await fetch(path, { credentials: 'omit', cache: 'no-store', ...init });
  } catch (err) {
    if (err?.name === 'AbortError') throw err;
    throw new ApiError(0, 'NETWORK_ERROR', 'The server cannot be reached. Check your connection and try again.');
  }
}

let refreshing = null;

/**
 * Gets a fresh access token after `failedToken` was refused. One refresh at a time, across
 * tabs too (Web Locks), because refresh tokens rotate and presenting a rotated one revokes
 * the whole session: whoever comes second finds a new token in storage and uses it.
 */
function refreshAccess(failedToken) {
  const run = async () => {
    const current = session.get();
    if (!current) return null;
    if (current.access_token !== failedToken) return current.access_token;
    const res = await send('/api/auth/refresh', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ refresh_token: current.refresh_token }),
    });
    if (!res.ok) {
      const again = session.get();
      return again && again.access_token !== failedToken ? again.access_token : null;
    }
    const { session: next } = await res.json();
    session.set(next);
    return next.access_token;
  };
  refreshing ??= (navigator.locks ? navigator.locks.request('mas.session.refresh', run) : run()).finally(() => {
    refreshing = null;
  });
  return refreshing;
}

const EXPIRY_MARGIN_S = 5;

/**
 * fetch() with the session's Bearer token. An expired or refused access token is refreshed
 * silently and the request retried once; when that fails the session ends (onSignedOut).
 */
export async function authFetch(path, init = {}) {
  let s = session.get();
  if (!s) {
    signedOut('Please log in.');
    throw new ApiError(401, 'UNAUTHORIZED', 'Please log in.');
  }
  let token = s.access_token;
  if (typeof s.expires_at === 'number' && s.expires_at - EXPIRY_MARGIN_S <= Date.now() / 1000) {
    token = (await refreshAccess(token).catch(() => null)) ?? token;
  }
  const call = (t) => send(path, { ...init, headers: { ...init.headers, authorization: `Bearer ${t}` } });
  let res = await call(token);
  if (res.status !== 401) return res;
  const fresh = await refreshAccess(token).catch(() => null);
  if (fresh) {
    res = await call(fresh);
    if (res.status !== 401) return res;
  }
  signedOut('Your session has ended. Please log in again.');
  throw await errorFrom(res);
}

/** JSON API call. Resolves with the parsed body (null for 204); rejects with ApiError. */
export async function api(method, path, body, { signal, auth = true } = {}) {
  const init = { method, signal, headers: { accept: 'application/json' } };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = auth ? await authFetch(path, init) : await send(path, init);
  if (!res.ok) throw await errorFrom(res);
  if (res.status === 204) return null;
  const text = await res.text();
  return text ? JSON.parse(text) : null;
}

/** The largest page a list answers (`limit`, contract.md: lists take limit ≤ 200 and offset, and answer total). */
const MAX_PAGE = 200;

/**
 * Every item of a list, fetched page by page until its `total`, answered as `{ [key]: items }`
 * like the list itself: the pages that pick among agents, knowledge bases or integrations need
 * them all, and the company's quotas keep them few.
 */
export async function apiAll(path, key, { signal } = {}) {
  const items = [];
  for (;;) {
    const page = await api('GET', `${path}${path.includes('?') ? '&' : '?'}limit=${MAX_PAGE}&offset=${items.length}`, undefined, { signal });
    items.push(...page[key]);
    // An empty page ends it too: items deleted meanwhile leave the total out of reach.
    if (page[key].length === 0 || items.length >= page.total) return { [key]: items };
  }
}

/** A multipart upload (FormData): the browser writes the boundary. Resolves with the parsed body; rejects with ApiError. */
export async function apiUpload(path, form, { signal } = {}) {
  const res = await authFetch(path, { method: 'POST', signal, headers: { accept: 'application/json' }, body: form });
  if (!res.ok) throw await errorFrom(res);
  return res.json();
}

export async function signUp({ email, password, companyName }) {
  await api('POST', '/api/auth/register', { email, password, companyName }, { auth: false });
  return logIn({ email, password });
}

export async function logIn({ email, password }) {
  const out = await api('POST', '/api/auth/login', { email, password }, { auth: false });
  session.set(out.session);
  return out;
}

export async function logOut() {
  if (session.get()) {
    // Revoke the session server-side (refreshing first if the access token expired); locally
    // it ends whatever the answer.
    await authFetch('/api/auth/logout', { method: 'POST' }).catch(() => {});
  }
  signedOut('');
}

/** A path segment from a value (ids come from the API, but never trust them into a URL raw). */
export const seg = (v) => encodeURIComponent(String(v));
