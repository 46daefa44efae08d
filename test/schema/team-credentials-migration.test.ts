import t from 'tap';
import { migrate } from '../../lib/db.js';
import { databaseUpTo } from '../support/database.js';

// Migration 0024 revokes what removals and demotions before it left behind: API tokens whose
// maker is gone or an operator now, and open invitations whose sender is gone, could not send
// them any more, or was an API token (whose maker was not recorded).
t.test('migration 0024 revokes the tokens and invitations of makers removed or demoted before it', async (t) => {
  const { old } = await databaseUpTo(t, 'team_credentials', '0023-agent-versions-replays');
  const em = old.em.fork();
  await em.execute(`insert into companies (public_id, name, balance_usd) values (gen_random_uuid(), 'Legacy', 5)`);
  const users = { owner: 'owner', admin: 'admin', demoted: 'operator' } as const;
  const ids: Record<string, string> = {};
  for (const [name, role] of Object.entries(users)) {
    const [row] = await em.execute<{ id: string }[]>(`insert into users (id, email, password_hash, company_id, role) values (gen_random_uuid(), ?, 'x', 1, ?) returning id`, [`${name}@example.com`, role]);
    ids[name] = row!.id;
  }
  const removed = '00000000-0000-4000-8000-000000000001';
  const tokens: [string, string | null, boolean][] = [['owner', ids.owner!, false], ['admin', ids.admin!, false], ['demoted', ids.demoted!, false], ['orphan', null, false], ['revoked long ago', null, true]];
  for (const [name, maker, revoked] of tokens) {
    await em.execute(`insert into api_tokens (company_id, name, prefix, token_hash, created_by, revoked_at) values (1, ?, 'mas_x', ?, ?, ${revoked ? "'2020-01-01'" : 'null'})`, [name, `hash-${name}`, maker]);
  }
  const invitations: [string, string, string | null, boolean][] = [
    ['by-owner', 'operator', ids.owner!, false],
    ['owner-by-owner', 'owner', ids.owner!, false],
    ['by-admin', 'admin', ids.admin!, false],
    ['accepted-by-removed', 'admin', removed, true],
    ['by-removed', 'admin', removed, false],
    ['by-demoted', 'operator', ids.demoted!, false],
    ['owner-by-admin', 'owner', ids.admin!, false],
    ['by-api-token', 'operator', null, false],
  ];
  for (const [name, role, sender, accepted] of invitations) {
    await em.execute(`insert into user_invitations (company_id, email, role, token_hash, created_by, expires_at, accepted_at) values (1, ?, ?, ?, ?, now() + interval '7 days', ${accepted ? 'now()' : 'null'})`, [`${name}@example.com`, role, `inv-${name}`, sender]);
  }

  t.ok((await migrate(old)).includes('0024-team-credentials'), 'migration 0024 ran');
  const live = await em.execute<{ name: string }[]>(`select name from api_tokens where revoked_at is null order by id`);
  t.same(live.map((r) => r.name), ['owner', 'admin'], 'the tokens of the removed and the demoted are revoked');
  const [earlier] = await em.execute<{ kept: boolean }[]>(`select revoked_at = '2020-01-01' as kept from api_tokens where name = 'revoked long ago'`);
  t.equal(earlier!.kept, true, 'a token revoked before keeps its time');
  const left = await em.execute<{ email: string }[]>(`select email from user_invitations order by id`);
  t.same(left.map((r) => r.email.split('@')[0]), ['by-owner', 'owner-by-owner', 'by-admin', 'accepted-by-removed'], 'the open invitations their senders may no longer send are gone; accepted ones stay');
});
