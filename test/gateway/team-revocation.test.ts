import pg from 'pg';
import t from 'tap';
import { TEAM_LOCK } from '../../gateway/auth/team-lock.js';
import { signUp, startTestService, uniqueEmail, type ApiResponse } from '../support/service.js';
import { readEvents, type SseEvent } from '../support/sse.js';
import { join } from '../support/team.js';
import { eventually, sql } from '../support/worker.js';

/**
 * What a teammate made does not outlive what they may do (contract.md § Tools that cannot be
 * turned against us, "Users"): removing a user, or lowering their role, revokes the API tokens
 * they made (their requests 401, their event streams end) and the invitations they sent that
 * are still open (their links answer 404), in the same transaction, so a request racing it
 * cannot slip in; role changes need an owner's or admin's session, never an API token.
 */
const svc = await startTestService(t, 'team_revoke');
const { api } = svc;

const invite = (token: string, body: Record<string, unknown>) => api('POST', '/api/users/invitations', { token, body });
const accept = (token: string) => api('POST', '/api/auth/accept-invitation', { body: { token, password: 'joining password' } });
const patch = (token: string, id: string, body: Record<string, unknown>) => api('PATCH', `/api/users/${id}`, { token, body });
const newApiToken = async (session: string, name: string) => {
  const res = await api('POST', '/api/api-tokens', { token: session, body: { name } });
  if (res.status !== 201) throw new Error(`api token: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.apiToken as { id: number; token: string; createdBy: string };
};
const openInvitationEmails = async (session: string) => (await api('GET', '/api/users/invitations', { token: session })).body.invitations.map((i: { email: string }) => i.email);

t.test('an admin removed: the API tokens they made answer 401, their open invitations 404, their token streams end', async (t) => {
  const owner = await signUp(api, 'Removal Co');
  const ownersToken = await newApiToken(owner.token, 'owner script');
  const ownersGuest = uniqueEmail('guest');
  await invite(owner.token, { email: ownersGuest, role: 'operator' });
  const admin = await join(api, owner.token, 'admin', 'Ada');
  const adminsToken = await newApiToken(admin.token, 'ada script');
  t.equal((await invite(adminsToken.token, { email: uniqueEmail('alt'), role: 'operator' })).status, 201, 'the token works before');
  const bySession = (await invite(admin.token, { email: uniqueEmail('alt'), role: 'admin' })).body.invitation;
  const byToken = (await invite(adminsToken.token, { email: uniqueEmail('alt'), role: 'admin' })).body.invitation;

  const ac = new AbortController();
  t.teardown(() => ac.abort());
  const stream = await fetch(`${svc.url}/api/conversations/events`, { headers: { authorization: `Bearer ${adminsToken.token}` }, signal: ac.signal });
  t.equal(stream.status, 200, 'an event stream opened with the token');
  const events: SseEvent[] = [];
  const ended = readEvents(stream.body!, (e) => events.push(e)).then((byServer) => (byServer ? Date.now() : Infinity));

  const removedAt = Date.now();
  t.equal((await api('DELETE', `/api/users/${admin.id}`, { token: owner.token })).status, 204);
  t.match(await api('GET', '/api/agents', { token: adminsToken.token }), { status: 401, body: { error: { code: 'UNAUTHORIZED' } } }, 'their API token answers 401 at once');
  t.equal((await invite(adminsToken.token, { email: uniqueEmail('late'), role: 'admin' })).status, 401, 'and invites nobody');
  for (const [how, invitation] of [['by session', bySession], ['by API token', byToken]] as const) {
    t.match(await accept(invitation.token), { status: 404, body: { error: { code: 'NOT_FOUND' } } }, `an invitation they sent ${how} brings nobody in`);
  }
  t.same(await openInvitationEmails(owner.token), [ownersGuest], "only the owner's invitation is open");
  t.equal((await api('GET', '/api/agents', { token: ownersToken.token })).status, 200, "the owner's token still works");
  t.same((await api('GET', '/api/api-tokens', { token: owner.token })).body.apiTokens.map((x: { id: number }) => x.id), [ownersToken.id], 'the list holds the live ones');

  const endedAt = await Promise.race([ended, new Promise<number>((resolve) => setTimeout(() => resolve(Infinity), 8_000))]);
  t.ok(endedAt - removedAt <= 5_000, `the token's stream ended ${endedAt - removedAt} ms after the removal`);
  t.same(events.at(-1), { event: 'end', data: { reason: 'credential_revoked' } }, 'its last event says why');
});

t.test("a demoted admin's API token cannot change billing nor raise them back; their invitations are revoked", async (t) => {
  const owner = await signUp(api, 'Demotion Co');
  const admin = await join(api, owner.token, 'admin', 'Ada');
  const adminsToken = await newApiToken(admin.token, 'ada script');
  const invitation = (await invite(admin.token, { email: uniqueEmail('alt'), role: 'admin' })).body.invitation;

  t.match(await patch(owner.token, admin.id, { role: 'operator' }), { status: 200, body: { user: { role: 'operator' } } });
  t.equal((await api('PATCH', '/api/billing', { token: adminsToken.token, body: { spendCapUsdPerDay: '0.01' } })).status, 401, 'the token changes no billing');
  t.equal((await patch(adminsToken.token, admin.id, { role: 'admin' })).status, 401, 'nor raises its maker back');
  t.equal((await api('GET', '/api/billing', { token: owner.token })).body.billing.spendCapUsdPerDay, null, 'no cap was set');
  t.equal((await accept(invitation.token)).status, 404, 'the invitation they sent is revoked');
  t.equal((await patch(admin.token, admin.id, { role: 'admin' })).status, 403, 'their own session raises nobody');
  t.match((await api('GET', '/api/users', { token: owner.token })).body.users.find((u: { id: string }) => u.id === admin.id), { role: 'operator' }, 'still an operator');
});

t.test('an owner made admin loses their tokens and invitations too; a raised role keeps them', async (t) => {
  const owner = await signUp(api, 'Owners Co');
  const second = await join(api, owner.token, 'owner', 'Olga');
  const secondsToken = await newApiToken(second.token, 'olga script');
  const ownerInvitation = (await invite(second.token, { email: uniqueEmail('boss'), role: 'owner' })).body.invitation;
  t.equal((await patch(owner.token, second.id, { role: 'admin' })).status, 200, 'owner → admin lowers the role');
  t.equal((await api('GET', '/api/agents', { token: secondsToken.token })).status, 401, 'their token is revoked');
  t.equal((await accept(ownerInvitation.token)).status, 404, 'and their invitation (of an owner, which an admin could not send)');

  const admin = await join(api, owner.token, 'admin', 'Ada');
  const adminsToken = await newApiToken(admin.token, 'ada script');
  const guest = uniqueEmail('guest');
  await invite(admin.token, { email: guest, role: 'operator' });
  t.equal((await patch(owner.token, admin.id, { role: 'owner' })).status, 200, 'admin → owner raises it');
  t.equal((await api('GET', '/api/agents', { token: adminsToken.token })).status, 200, 'the token they made still works');
  t.ok((await openInvitationEmails(owner.token)).includes(guest), 'their invitation is still open');
});

t.test('role changes need a session: an API token changes no role, its own maker\'s or anyone\'s', async (t) => {
  const owner = await signUp(api, 'Session Co');
  const operator = await join(api, owner.token, 'operator', 'Otto');
  const ownersToken = await newApiToken(owner.token, 'owner script');
  for (const [id, role] of [[operator.id, 'admin'], [owner.userId, 'admin']] as const) {
    const res = await patch(ownersToken.token, id, { role });
    t.match(res, { status: 403, body: { error: { code: 'FORBIDDEN', message: /session/ } } }, `an API token making ${id === owner.userId ? 'its maker' : 'an operator'} ${role}`);
  }
  t.same((await api('GET', '/api/users', { token: owner.token })).body.users.map((u: { role: string }) => u.role), ['owner', 'operator'], 'no role changed');
  t.match(await patch(ownersToken.token, operator.id, { displayName: 'Otto K.', role: 'operator' }), { status: 200, body: { user: { displayName: 'Otto K.' } } }, 'a display name it may change, stating the role they have');
});

/** Backends of the test's database waiting for a lock in a statement naming `what`. */
async function waiting(what: string): Promise<number> {
  const [row] = await sql<{ n: number }>(
    svc.orm,
    `select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query ilike ?`,
    [`%${what}%`],
  );
  return row!.n;
}

/** Whether `n` backends come to wait for a lock in a statement naming `what` within 3 s. */
const queued = (what: string, n: number) =>
  eventually(async () => (await waiting(what)) >= n, 3_000, `${n} waiting`).then(() => true, () => false);

/**
 * Holds a lock (`lockSql`) in a transaction of its own, starts `first` and waits until it is
 * queued for it, then `second`, then lets both through: they get the lock in that order.
 * `inOrder` says whether both were seen queued (a request that does not take the lock goes ahead).
 */
async function inOrderBehind(lockSql: string, params: unknown[], waitsIn: string, first: () => Promise<ApiResponse>, second: () => Promise<ApiResponse>) {
  const holder = new pg.Client({ connectionString: svc.config.databaseUrl });
  await holder.connect();
  try {
    await holder.query('begin');
    await holder.query(lockSql, params);
    const a = first();
    const firstQueued = await queued(waitsIn, 1);
    const b = second();
    const bothQueued = await queued(waitsIn, 2);
    await holder.query('commit');
    return { answers: [await a, await b] as const, inOrder: firstQueued && bothQueued };
  } finally {
    await holder.end();
  }
}

t.test('an invitation accepted at the same moment as its sender is removed brings nobody in', async (t) => {
  const owner = await signUp(api, 'Race Co');
  const admin = await join(api, owner.token, 'admin');
  const { invitation } = (await invite(admin.token, { email: uniqueEmail('alt'), role: 'admin' })).body;
  // The removal reaches the invitation first; the acceptance waits for the same row.
  const { answers: [removal, acceptance], inOrder } = await inOrderBehind('select id from user_invitations where id = $1 for update', [invitation.id], 'user_invitations',
    () => api('DELETE', `/api/users/${admin.id}`, { token: owner.token }),
    () => accept(invitation.token));
  t.ok(inOrder, 'the removal waited for the invitation, and the acceptance behind it');
  t.equal(removal.status, 204);
  t.match(acceptance, { status: 404, body: { error: { code: 'NOT_FOUND' } } }, 'the acceptance finds the invitation revoked');
  t.same((await api('GET', '/api/users', { token: owner.token })).body.users.map((u: { id: string }) => u.id), [owner.userId], 'nobody came in');
});

t.test('a token made, or an invitation sent, while its maker is demoted or removed does not outlive them', async (t) => {
  const owner = await signUp(api, 'Queue Co');
  const teamLock = 'select pg_advisory_xact_lock($1, $2)';
  const admin = await join(api, owner.token, 'admin');
  const made = await inOrderBehind(teamLock, [TEAM_LOCK, owner.companyId], 'advisory',
    () => patch(owner.token, admin.id, { role: 'operator' }),
    () => api('POST', '/api/api-tokens', { token: admin.token, body: { name: 'late' } }));
  const [demotion, making] = made.answers;
  t.ok(made.inOrder, 'the demotion holds the team lock first, the new token waits for it');
  t.equal(demotion.status, 200);
  t.match(making, { status: 403, body: { error: { code: 'FORBIDDEN' } } }, 'the token is refused to the operator they now are');
  t.same((await api('GET', '/api/api-tokens', { token: owner.token })).body.apiTokens, [], 'no token was made');

  const other = await join(api, owner.token, 'admin');
  const othersToken = await newApiToken(other.token, 'script');
  const email = uniqueEmail('late');
  const sent = await inOrderBehind(teamLock, [TEAM_LOCK, owner.companyId], 'advisory',
    () => api('DELETE', `/api/users/${other.id}`, { token: owner.token }),
    () => invite(othersToken.token, { email, role: 'admin' }));
  const [removal, inviting] = sent.answers;
  t.ok(sent.inOrder, 'the removal holds the team lock first, the invitation waits for it');
  t.equal(removal.status, 204);
  t.equal(inviting.status, 401, 'their token, revoked meanwhile, invites nobody');
  t.notOk((await openInvitationEmails(owner.token)).includes(email), 'no invitation was made');
});
