import { uniqueEmail, type ApiClient } from './service.js';

export type Role = 'owner' | 'admin' | 'operator';

export interface Teammate {
  id: string;
  email: string;
  password: string;
  role: Role;
  /** A session access token. */
  token: string;
}

/** Invites a new user (by `inviterToken`), accepts the invitation as they would and logs them in. */
export async function join(api: ApiClient, inviterToken: string, role: Role, displayName?: string): Promise<Teammate> {
  const email = uniqueEmail(role);
  const password = 'teammate password';
  const invited = await api('POST', '/api/users/invitations', { token: inviterToken, body: { email, role, ...(displayName ? { displayName } : {}) } });
  if (invited.status !== 201) throw new Error(`invite: ${invited.status} ${JSON.stringify(invited.body)}`);
  const accepted = await api('POST', '/api/auth/accept-invitation', { body: { token: invited.body.invitation.token, password } });
  if (accepted.status !== 201) throw new Error(`accept: ${accepted.status} ${JSON.stringify(accepted.body)}`);
  return { id: accepted.body.user.id, email, password, role, token: await login(api, email, password) };
}

/** A new session's access token. */
export async function login(api: ApiClient, email: string, password: string): Promise<string> {
  const res = await api('POST', '/api/auth/login', { body: { email, password } });
  if (res.status !== 200) throw new Error(`login: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.session.access_token;
}
