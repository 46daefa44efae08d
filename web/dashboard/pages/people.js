// Who is signed in and who else is on the team: the Inbox's "Mine" view, the Assign control,
// the names on operator replies, notes and "Paused by …" all come from here.
import { api, apiAll } from '../api.js';

/**
 * { me: { id, email, displayName, role } | null, users: Map<id, user> }; `known` is the shell's
 * GET /api/auth/me answer when it has one. A failing read leaves them
 * empty: names then fall back to words.
 */
export async function loadPeople(signal, known) {
  const [me, users] = await Promise.all([
    known?.user?.id ? known : api('GET', '/api/auth/me', undefined, { signal }).catch((err) => {
      if (err?.name === 'AbortError') throw err;
      return null;
    }),
    apiAll('/api/users', 'users', { signal }).catch((err) => {
      if (err?.name === 'AbortError') throw err;
      return { users: [] };
    }),
  ]);
  const map = new Map(users.users.map((u) => [u.id, u]));
  if (me?.user && !map.has(me.user.id)) map.set(me.user.id, me.user);
  return { me: me?.user ?? null, users: map };
}
