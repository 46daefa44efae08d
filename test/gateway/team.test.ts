import t from 'tap';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { signUp, startTestService, uniqueEmail } from '../support/service.js';
import { readEvents, type SseEvent } from '../support/sse.js';
import { join, login } from '../support/team.js';
import { createHelpdeskIntegration, eventually, messageEnvelope, publishEnvelope, sql, startTestWorker, waitForPartitions } from '../support/worker.js';

/**
 * A company's team (contract.md § A team works the conversations; .scratch/team-api.md):
 * invitations made, listed, accepted once, revoked, expired; roles and the owner rules; a user
 * removed is out at once (their requests 401, their event streams end within 5 s); the users
 * quota counts users and open invitations; another company's users are not there (404).
 */
const USERS_QUOTA = 5;
const svc = await startTestService(t, 'team', { env: { QUOTA_USERS: String(USERS_QUOTA), PARTITIONS: '1' } });
const { api } = svc;

const invite = (token: string, body: Record<string, unknown>) => api('POST', '/api/users/invitations', { token, body });
const accept = (body: Record<string, unknown>) => api('POST', '/api/auth/accept-invitation', { body });
const usersOf = async (token: string) => (await api('GET', '/api/users', { token })).body;
const openInvitations = async (token: string) => (await api('GET', '/api/users/invitations', { token })).body;

t.test('an invitation: made by an owner, listed without its token, accepted once, then the user logs in', async (t) => {
  const owner = await signUp(api, 'Invite Co');
  const me = await api('GET', '/api/auth/me', { token: owner.token });
  t.match(me.body.user, { id: owner.userId, role: 'owner', displayName: null }, 'who registered is the owner');

  const email = uniqueEmail('bo');
  const made = await invite(owner.token, { email: email.toUpperCase(), role: 'operator', displayName: '  Bo  ' });
  t.equal(made.status, 201, JSON.stringify(made.body));
  const { invitation } = made.body;
  t.match(invitation, { id: Number, email, role: 'operator', displayName: 'Bo', token: /^inv_[\w-]{40,}$/, createdAt: /Z$/ });
  t.equal(invitation.url, `${svc.config.publicBaseUrl}/#/accept?token=${invitation.token}`, 'the dashboard link carries the token');
  const days = (Date.parse(invitation.expiresAt) - Date.parse(invitation.createdAt)) / 86_400_000;
  t.equal(days, 7, 'good for 7 days');
  const [stored] = await sql(svc.orm, 'select token_hash from user_invitations where id = ?', [invitation.id]);
  t.not(stored.token_hash, invitation.token, 'the token is not stored');
  t.match(stored.token_hash, /^[0-9a-f]{64}$/, 'its SHA-256 is');

  const listed = await openInvitations(owner.token);
  t.match(listed, { total: 1, limit: 50, offset: 0 });
  t.same(Object.keys(listed.invitations[0]).sort(), ['createdAt', 'displayName', 'email', 'expiresAt', 'id', 'role'], 'no token, no link');

  const accepted = await accept({ token: invitation.token, password: 'bo password 1' });
  t.equal(accepted.status, 201, JSON.stringify(accepted.body));
  t.match(accepted.body, { user: { id: String, email, role: 'operator', displayName: 'Bo' }, company: { id: owner.companyId, companyName: 'Invite Co' } });
  const again = await accept({ token: invitation.token, password: 'bo password 2' });
  t.match(again, { status: 404, body: { error: { code: 'NOT_FOUND', message: 'Invitation not found or expired.' } } }, 'a token works once');

  const bo = await login(api, email, 'bo password 1');
  t.match((await api('GET', '/api/auth/me', { token: bo })).body, { user: { email, role: 'operator', displayName: 'Bo', companyId: owner.companyId }, company: { id: owner.companyId } });
  t.equal((await openInvitations(owner.token)).total, 0, 'an accepted invitation is no longer open');
  const team = await usersOf(bo);
  t.same(team.users.map((u: any) => [u.email, u.role]), [[owner.email, 'owner'], [email, 'operator']], 'every user sees the team, oldest first');
  t.match(team, { total: 2, limit: 50, offset: 0 });
  t.same(Object.keys(team.users[0]).sort(), ['createdAt', 'displayName', 'email', 'id', 'role']);
});

t.test('the same token used twice at the same moment: one user', async (t) => {
  const owner = await signUp(api, 'Race Co');
  const { invitation } = (await invite(owner.token, { email: uniqueEmail('race'), role: 'admin' })).body;
  const answers = await Promise.all([1, 2, 3].map((n) => accept({ token: invitation.token, password: `race password ${n}` })));
  t.same(answers.map((a) => a.status).sort(), [201, 404, 404], 'one accepted, the others not found');
  t.equal((await usersOf(owner.token)).total, 2);
});

t.test('revoked, expired, replaced and unknown tokens answer 404; an email that has a user is 409', async (t) => {
  const owner = await signUp(api, 'Revoke Co');
  const revoked = (await invite(owner.token, { email: uniqueEmail('rev'), role: 'operator' })).body.invitation;
  t.equal((await api('DELETE', `/api/users/invitations/${revoked.id}`, { token: owner.token })).status, 204);
  t.equal((await accept({ token: revoked.token, password: 'password 123' })).status, 404, 'a revoked token');
  t.equal((await api('DELETE', `/api/users/invitations/${revoked.id}`, { token: owner.token })).status, 404, 'revoked once');

  const expired = (await invite(owner.token, { email: uniqueEmail('exp'), role: 'operator' })).body.invitation;
  await sql(svc.orm, "update user_invitations set expires_at = now() - interval '1 second' where id = ?", [expired.id]);
  t.equal((await accept({ token: expired.token, password: 'password 123' })).status, 404, 'an expired token');
  t.same((await openInvitations(owner.token)).invitations, [], 'an expired invitation is not open');

  const email = uniqueEmail('twice');
  const first = (await invite(owner.token, { email, role: 'operator' })).body.invitation;
  const second = (await invite(owner.token, { email, role: 'admin' })).body.invitation;
  t.equal((await accept({ token: first.token, password: 'password 123' })).status, 404, 'a second invitation of the email replaces the first');
  t.same((await openInvitations(owner.token)).invitations.map((i: any) => i.id), [second.id]);
  t.match(await accept({ token: second.token, password: 'password 123' }), { status: 201, body: { user: { role: 'admin' } } });

  for (const token of ['inv_nothing', 'x'.repeat(512)]) t.equal((await accept({ token, password: 'password 123' })).status, 404, 'an unknown token');

  const other = await signUp(api, 'Other Co');
  for (const taken of [owner.email, other.email.toUpperCase()]) {
    const res = await invite(owner.token, { email: taken, role: 'operator' });
    t.match(res, { status: 409, body: { error: { code: 'CONFLICT' } } }, `${taken} has a user (in any company)`);
  }
  const late = uniqueEmail('late');
  const pending = (await invite(owner.token, { email: late, role: 'operator' })).body.invitation;
  t.equal((await api('POST', '/api/auth/register', { body: { email: late, password: 'password 123', companyName: 'Late Co' } })).status, 201);
  t.match(await accept({ token: pending.token, password: 'password 123' }), { status: 409, body: { error: { code: 'CONFLICT' } } }, 'the email got a user meanwhile');
});

t.test('roles: who may invite, change and list; a changed role holds at the next request', async (t) => {
  const owner = await signUp(api, 'Roles Co');
  const admin = await join(api, owner.token, 'admin', 'Ada');
  const operator = await join(api, admin.token, 'operator', 'Otto');

  t.match(await invite(admin.token, { email: uniqueEmail(), role: 'owner' }), { status: 403, body: { error: { code: 'FORBIDDEN' } } }, 'only an owner invites an owner');
  t.match(await invite(operator.token, { email: uniqueEmail(), role: 'operator' }), { status: 403, body: { error: { code: 'FORBIDDEN' } } }, 'an operator invites nobody');
  t.equal((await api('GET', '/api/users/invitations', { token: operator.token })).status, 403);
  t.equal((await api('GET', '/api/users', { token: operator.token })).status, 200, 'an operator sees the team');

  const patch = (token: string, id: string, body: Record<string, unknown>) => api('PATCH', `/api/users/${id}`, { token, body });
  const renamed = await patch(operator.token, operator.id, { displayName: ' Otto K. ' });
  t.match(renamed, { status: 200, body: { user: { id: operator.id, role: 'operator', displayName: 'Otto K.' } } }, 'anyone renames themselves');
  t.equal((await patch(operator.token, admin.id, { displayName: 'X' })).status, 403, 'an operator renames nobody else');
  t.equal((await patch(operator.token, operator.id, { role: 'admin' })).status, 403, 'nor changes their own role');
  t.equal((await patch(operator.token, operator.id, { role: 'operator', displayName: null })).status, 200, 'stating the role they have is no change');
  t.equal((await patch(admin.token, owner.userId, { displayName: 'Boss' })).status, 403, 'an admin does not change an owner');
  t.equal((await patch(admin.token, operator.id, { role: 'owner' })).status, 403, 'nor makes one');
  t.equal((await patch(admin.token, admin.id, { role: 'owner' })).status, 403, 'not even themselves');

  t.match(await patch(admin.token, operator.id, { role: 'admin' }), { status: 200, body: { user: { role: 'admin' } } }, 'an admin promotes an operator');
  t.equal((await api('GET', '/api/users/invitations', { token: operator.token })).status, 200, 'their very next request is an admin\'s');
  t.equal((await patch(owner.token, operator.id, { role: 'operator' })).status, 200);
  t.equal((await api('GET', '/api/users/invitations', { token: operator.token })).status, 403, 'and back');

  for (const body of [{ role: 'boss' }, { displayName: '' }, { displayName: '   ' }, { displayName: 'x'.repeat(101) }, { displayName: 'a\u0000b' }, { displayName: '\ud800' }, { email: 'x@example.com' }, { displayName: 7 }]) {
    const res = await patch(owner.token, operator.id, body);
    t.equal(res.status, 400, JSON.stringify(body));
    t.equal(res.body.error.code, 'VALIDATION_ERROR');
  }
  for (const body of [{}, { email: 'nope', role: 'operator' }, { email: uniqueEmail(), role: 'root' }, { email: 'x'.repeat(250) + '@example.com', role: 'operator' }, { email: uniqueEmail() }, { email: uniqueEmail(), role: 'operator', displayName: 'x'.repeat(101) }]) {
    const res = await invite(owner.token, body);
    t.equal(res.status, 400, JSON.stringify(body).slice(0, 80));
    t.equal(res.body.error.code, 'VALIDATION_ERROR');
  }
  for (const body of [{ token: 'inv_x', password: 'short' }, { password: 'long enough' }, { token: 'inv_x', password: 'long enough', displayName: '' }, { token: 'a\u0000', password: 'long enough' }, { token: 'x'.repeat(513), password: 'long enough' }]) {
    const res = await accept(body);
    t.equal(res.status, 400, JSON.stringify(body).slice(0, 80));
  }

  const apiToken = (await api('POST', '/api/api-tokens', { token: owner.token, body: { name: 'team' } })).body.apiToken.token;
  t.equal((await invite(apiToken, { email: uniqueEmail(), role: 'operator' })).status, 201, 'an API token acts as an admin');
  t.equal((await invite(apiToken, { email: uniqueEmail(), role: 'owner' })).status, 403, 'not as an owner');
  t.equal((await patch(apiToken, operator.id, { displayName: 'By token' })).status, 200);
});

t.test('owners: made by an owner; the last one cannot stop being one nor be removed', async (t) => {
  const owner = await signUp(api, 'Owners Co');
  const admin = await join(api, owner.token, 'admin');
  const patch = (token: string, id: string, body: Record<string, unknown>) => api('PATCH', `/api/users/${id}`, { token, body });

  t.match(await patch(owner.token, owner.userId, { role: 'admin' }), { status: 409, body: { error: { code: 'CONFLICT' } } }, 'the last owner stays one');
  t.match(await api('DELETE', `/api/users/${owner.userId}`, { token: owner.token }), { status: 409, body: { error: { code: 'CONFLICT' } } }, 'and is not removed');
  t.equal((await api('DELETE', `/api/users/${owner.userId}`, { token: admin.token })).status, 403, 'an admin removes no owner');

  t.equal((await patch(owner.token, admin.id, { role: 'owner' })).status, 200, 'an owner makes another');
  // Two owners demoting each other at the same moment: one of them stays an owner.
  const [a, b] = await Promise.all([patch(owner.token, admin.id, { role: 'admin' }), patch(admin.token, owner.userId, { role: 'admin' })]);
  // The second finds the last owner (409), or finds its caller no owner any more (403).
  t.equal([a, b].filter((r) => r.status === 200).length, 1, `one demotion passes (${a.status}, ${b.status})`);
  t.ok([a, b].some((r) => r.status === 409 || r.status === 403), 'the other is refused');
  const [{ owners }] = await sql(svc.orm, "select count(*)::int as owners from users where company_id = ? and role = 'owner'", [owner.companyId]);
  t.equal(owners, 1);
});

t.test('a user removed: their requests answer 401 at once, their event stream ends within 5 s, their conversations are unassigned', async (t) => {
  const stub = await startChat2DeskStub(t);
  const worker = await startTestWorker(t, svc, { workerId: 'team' });
  await waitForPartitions([worker], 1);
  const owner = await signUp(api, 'Remove Co');
  const integration = await createHelpdeskIntegration(svc, owner, stub, 'Remove desk');
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'c-remove', 'hello'));
  const [conversation] = await eventually(async () => {
    const rows = await sql<{ id: number }>(svc.orm, 'select id from conversations where integration_id = ?', [integration.id]);
    return rows.length ? rows : null;
  }, 15_000, 'the conversation');

  const admin = await join(api, owner.token, 'admin');
  const operator = await join(api, owner.token, 'operator');
  const secondSession = await login(api, operator.email, operator.password);
  await sql(svc.orm, 'update conversations set assignee_id = ? where id = ?', [operator.id, conversation!.id]);

  const ac = new AbortController();
  t.teardown(() => ac.abort());
  const stream = await fetch(`${svc.url}/api/conversations/${conversation!.id}/inspect`, { headers: { authorization: `Bearer ${operator.token}` }, signal: ac.signal });
  t.equal(stream.status, 200);
  const events: SseEvent[] = [];
  // When the server ended it (never, if the test hung up first).
  const ended = readEvents(stream.body!, (e) => events.push(e)).then((byServer) => (byServer ? Date.now() : Infinity));
  await eventually(async () => events.some((e) => e.event === 'conversation'), 5_000, 'the stream open');

  const removedAt = Date.now();
  t.equal((await api('DELETE', `/api/users/${operator.id}`, { token: admin.token })).status, 204);
  for (const token of [operator.token, secondSession]) t.equal((await api('GET', '/api/conversations', { token })).status, 401, 'every session of theirs answers 401 at once');
  t.equal((await api('POST', '/api/auth/login', { body: { email: operator.email, password: operator.password } })).status, 401, 'and they cannot log in');
  const endedAt = await Promise.race([ended, new Promise<number>((resolve) => setTimeout(() => resolve(Infinity), 8_000))]);
  t.ok(endedAt - removedAt <= 5_000, `the stream ended ${endedAt - removedAt} ms after the removal`);
  t.same(events.at(-1), { event: 'end', data: { reason: 'credential_revoked' } }, 'its last event says why');

  const [row] = await sql(svc.orm, 'select assignee_id from conversations where id = ?', [conversation!.id]);
  t.equal(row.assignee_id, null, 'their conversation is unassigned');
  t.same((await usersOf(owner.token)).users.map((u: any) => u.id), [owner.userId, admin.id]);
  t.equal((await api('DELETE', `/api/users/${operator.id}`, { token: admin.token })).status, 404, 'removed once');
});

t.test("another company's users and invitations are not there (404)", async (t) => {
  const acme = await signUp(api, 'Acme');
  const globex = await signUp(api, 'Globex');
  const globexUser = await join(api, globex.token, 'operator');
  const globexInvitation = (await invite(globex.token, { email: uniqueEmail(), role: 'operator' })).body.invitation;
  t.equal((await api('PATCH', `/api/users/${globexUser.id}`, { token: acme.token, body: { displayName: 'Mine' } })).status, 404);
  t.equal((await api('DELETE', `/api/users/${globexUser.id}`, { token: acme.token })).status, 404);
  t.equal((await api('DELETE', `/api/users/invitations/${globexInvitation.id}`, { token: acme.token })).status, 404);
  t.same((await usersOf(acme.token)).users.map((u: any) => u.id), [acme.userId], 'the list holds the company\'s own');
  t.equal((await openInvitations(acme.token)).total, 0);
  for (const path of ['/api/users/not-a-uuid', '/api/users/00000000-0000-0000-0000-000000000000', '/api/users/invitations/abc']) {
    t.equal((await api('DELETE', path, { token: acme.token })).status, 404, path);
  }
  t.equal((await accept({ token: globexInvitation.token, password: 'password 123' })).status, 201, 'the other company\'s invitation still works');
});

t.test('the users quota counts users and open invitations', async (t) => {
  const owner = await signUp(api, 'Quota Co');
  await join(api, owner.token, 'operator');
  const open: any[] = [];
  for (let n = 2; n < USERS_QUOTA; n++) open.push((await invite(owner.token, { email: uniqueEmail('q'), role: 'operator' })).body.invitation);
  const over = await invite(owner.token, { email: uniqueEmail('q'), role: 'operator' });
  t.match(over, { status: 403, body: { error: { code: 'QUOTA_EXCEEDED', details: [{ field: 'users', message: `limit ${USERS_QUOTA}` }] } } }, `${USERS_QUOTA} users and open invitations`);
  t.equal((await accept({ token: open[0].token, password: 'password 123' })).status, 201, 'an open invitation holds its place: accepting it is within the quota');
  t.equal((await invite(owner.token, { email: uniqueEmail('q'), role: 'operator' })).status, 403, 'still full');
  t.equal((await api('DELETE', `/api/users/invitations/${open[1].id}`, { token: owner.token })).status, 204);
  t.equal((await invite(owner.token, { email: uniqueEmail('q'), role: 'operator' })).status, 201, 'a revoked invitation frees its place');
  t.equal((await api('DELETE', `/api/users/invitations/${open[2].id}`, { token: owner.token })).status, 204);
  const racing = await Promise.all([1, 2, 3].map(() => invite(owner.token, { email: uniqueEmail('q'), role: 'operator' })));
  t.same(racing.map((r) => r.status).sort(), [201, 403, 403], 'invitations racing for the last place: one gets it');
});
