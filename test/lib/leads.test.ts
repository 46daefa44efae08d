import t from 'tap';
import { openConversations, type NewConversation } from '../../actors/tables/conversations.js';
import { inTransaction, migrate, openDatabase, openSqlPool, type SqlPool } from '../../lib/db.js';
import { moveLeadToStage } from '../../lib/leads.js';
import { createTestDatabase } from '../support/database.js';

// Where leads come from (the worker's openConversations) and how the agent moves them
// (moveLeadToStage), against the real PostgreSQL; and migration 0014 giving the customers of
// an existing database their leads.
const { url } = await createTestDatabase(t, 'leads_lib');
const pool: SqlPool = openSqlPool({ url, poolMax: 3 });
t.teardown(() => pool.end());

const STAGES = ['New lead', 'Contacted', 'Qualified', 'Proposal', 'Won', 'Lost'];

/** A company with (or without) its default pipeline, and a helpdesk integration. */
async function company(name: string, { pipeline = true } = {}) {
  const db = pool;
  const { rows: [c] } = await db.query(`insert into companies (public_id, name, balance_usd) values (gen_random_uuid(), $1, 5) returning id`, [name]);
  const stages: Record<string, number> = {};
  if (pipeline) {
    const { rows: [p] } = await db.query(`insert into pipelines (company_id, name, is_default) values ($1, 'Sales', true) returning id`, [c.id]);
    for (const [position, stage] of STAGES.entries()) {
      const { rows: [s] } = await db.query(`insert into pipeline_stages (company_id, pipeline_id, name, position) values ($1, $2, $3, $4) returning id`, [c.id, p.id, stage, position]);
      stages[stage] = s.id;
    }
  }
  const { rows: [i] } = await db.query(`insert into integrations (company_id, type, name, webhook_secret_sealed) values ($1, 'helpdesk', 'Desk', 'x') returning id`, [c.id]);
  return { companyId: c.id as number, integrationId: i.id as number, stages };
}

const session = (co: { companyId: number; integrationId: number }, clientId: string): NewConversation => ({
  company_id: co.companyId, integration_id: co.integrationId, channel: 'helpdesk', client_id: clientId, partition: 0, channel_id: null, transport: 'telegram',
});
const leadsOf = async (co: { integrationId: number }) =>
  (await pool.query(`select id, client_id, stage_id, created_at from leads where integration_id = $1 order by client_id`, [co.integrationId])).rows;
const closeAll = (co: { integrationId: number }) => pool.query(`update conversations set status = 'closed', closed_at = now() where integration_id = $1`, [co.integrationId]);

t.test('sessions opened together: each new customer gets a lead in the first stage of the default pipeline', async (t) => {
  const co = await company('Batch');
  const rows = await inTransaction(pool, (c) => openConversations(c, ['a', 'b', 'c'].map((id) => session(co, id))));
  t.same(rows.map((r) => r.client_id), ['a', 'b', 'c'], 'the sessions come back as before');
  const leads = await leadsOf(co);
  t.same(leads.map((l) => [l.client_id, l.stage_id]), [['a', co.stages['New lead']], ['b', co.stages['New lead']], ['c', co.stages['New lead']]]);
});

t.test('a customer who comes back after a closed session keeps their lead and its stage', async (t) => {
  const co = await company('Returning');
  const [first] = await inTransaction(pool, (c) => openConversations(c, [session(co, 'r-1')]));
  const [lead] = await leadsOf(co);
  await inTransaction(pool, (c) => moveLeadToStage(c, { companyId: co.companyId, conversationId: first!.id, stage: 'Proposal' }));
  await closeAll(co);
  const [second] = await inTransaction(pool, (c) => openConversations(c, [session(co, 'r-1'), session(co, 'r-2')]));
  t.not(second!.id, first!.id, 'a new session');
  const leads = await leadsOf(co);
  t.same(leads.map((l) => [l.client_id, l.stage_id]), [['r-1', co.stages.Proposal], ['r-2', co.stages['New lead']]]);
  t.equal(leads[0].id, lead.id, 'the same lead');
  t.same(leads[0].created_at, lead.created_at, 'dated by the first contact');
});

t.test('crash before the commit: neither the session nor the lead; the redelivery makes one of each', async (t) => {
  const co = await company('Crashy');
  await t.rejects(
    inTransaction(pool, async (c) => {
      await openConversations(c, [session(co, 'x-1')]);
      throw new Error('worker died');
    }),
  );
  t.same(await leadsOf(co), []);
  await inTransaction(pool, (c) => openConversations(c, [session(co, 'x-1')]));
  t.equal((await leadsOf(co)).length, 1);
});

t.test('a company without a default pipeline still gets its sessions (and no lead)', async (t) => {
  const co = await company('No pipeline', { pipeline: false });
  const rows = await inTransaction(pool, (c) => openConversations(c, [session(co, 'n-1')]));
  t.equal(rows.length, 1);
  t.same(await leadsOf(co), []);
  const moved = await inTransaction(pool, (c) => moveLeadToStage(c, { companyId: co.companyId, conversationId: rows[0]!.id, stage: 'Won' }));
  t.match(moved, { ok: false, reason: 'lead_not_found' });
});

t.test("moveLeadToStage, the agent's tool: names, ids, unknown stages, history, the caller's transaction", async (t) => {
  const co = await company('Tool');
  const stranger = await company('Stranger');
  const [conv] = await inTransaction(pool, (c) => openConversations(c, [session(co, 't-1')]));
  const [strangerConv] = await inTransaction(pool, (c) => openConversations(c, [session(stranger, 't-1')]));
  const move = (stage: number | string, companyId = co.companyId, conversationId = conv!.id) => inTransaction(pool, (c) => moveLeadToStage(c, { companyId, conversationId, stage }));
  const [lead] = await leadsOf(co);

  t.match(await move('  qualified '), { ok: true, leadId: lead.id, moved: true, from: { id: co.stages['New lead'], name: 'New lead' }, to: { id: co.stages.Qualified, name: 'Qualified' } }, 'a name, case and spaces ignored');
  t.match(await move(co.stages.Proposal!), { ok: true, moved: true, from: { name: 'Qualified' }, to: { name: 'Proposal' } }, 'an id');
  t.match(await move(String(co.stages.Won)), { ok: true, moved: true, to: { name: 'Won' } }, 'an id given as text');
  t.match(await move('won'), { ok: true, moved: false }, 'the stage it is in: nothing to do');

  const unknown = await move('Negotiation');
  t.match(unknown, { ok: false, reason: 'stage_not_found' });
  t.equal(!unknown.ok && unknown.error, 'no stage "Negotiation" in pipeline "Sales"; its stages are: New lead, Contacted, Qualified, Proposal, Won, Lost', 'the error names the stages to choose from');
  t.match(await move(stranger.stages.Lost!), { ok: false, reason: 'stage_not_found' }, "another company's stage id");
  t.match(await move('Lost', co.companyId, strangerConv!.id), { ok: false, reason: 'lead_not_found' }, "another company's conversation");
  t.match(await move('Lost', stranger.companyId, conv!.id), { ok: false, reason: 'lead_not_found' }, 'a conversation of the company only');

  await t.rejects(
    inTransaction(pool, async (c) => {
      t.match(await moveLeadToStage(c, { companyId: co.companyId, conversationId: conv!.id, stage: 'Lost' }), { ok: true, moved: true });
      throw new Error('the reply could not be stored');
    }),
  );
  const history = (await pool.query(`select from_stage_id, to_stage_id, moved_by, user_id, conversation_id from lead_stage_moves where lead_id = $1 order by id`, [lead.id])).rows;
  t.same(history, [
    { from_stage_id: co.stages['New lead'], to_stage_id: co.stages.Qualified, moved_by: 'agent', user_id: null, conversation_id: conv!.id },
    { from_stage_id: co.stages.Qualified, to_stage_id: co.stages.Proposal, moved_by: 'agent', user_id: null, conversation_id: conv!.id },
    { from_stage_id: co.stages.Proposal, to_stage_id: co.stages.Won, moved_by: 'agent', user_id: null, conversation_id: conv!.id },
  ], 'every move recorded once; the rolled-back one with its transaction');
  t.equal((await leadsOf(co))[0].stage_id, co.stages.Won);
  const [{ n }] = (await pool.query(`select count(*)::int as n from lead_stage_moves where lead_id in (select id from leads where integration_id = $1)`, [stranger.integrationId])).rows;
  t.equal(n, 0, "the stranger's lead was never touched");
});

t.test('moveLeadToStage gives a customer without a lead (a session from before the migration) one, then moves it', async (t) => {
  const co = await company('Late');
  const [conv] = await inTransaction(pool, (c) => openConversations(c, [session(co, 'l-1')]));
  await pool.query(`delete from leads where integration_id = $1`, [co.integrationId]);
  t.match(await inTransaction(pool, (c) => moveLeadToStage(c, { companyId: co.companyId, conversationId: conv!.id, stage: 'Contacted' })), { ok: true, moved: true, from: { name: 'New lead' }, to: { name: 'Contacted' } });
  t.same((await leadsOf(co)).map((l) => [l.client_id, l.stage_id]), [['l-1', co.stages.Contacted]]);
});

t.test('migration 0014: customers of an existing database get their leads, dated by their first session', async (t) => {
  const name = `mas_t_leads_migration_${Date.now().toString(36)}`;
  const admin = openSqlPool({ url: url.replace(/\/[^/]+$/, '/postgres'), poolMax: 1 });
  await admin.query(`create database "${name}"`);
  t.teardown(async () => {
    await admin.query(`drop database if exists "${name}" with (force)`);
    await admin.end();
  });
  const old = await openDatabase({ url: url.replace(/\/[^/]+$/, `/${name}`), poolMax: 2 });
  t.teardown(() => old.close(true));
  await old.getMigrator().up({ to: '0011-exactly-once-delivery' });
  const em = old.em.fork();
  await em.execute(`insert into companies (id, public_id, name, balance_usd) values (1, gen_random_uuid(), 'Legacy', 5), (2, gen_random_uuid(), 'Bare', 5)`);
  await em.execute(`insert into pipelines (id, company_id, name, is_default) values (1, 1, 'Old', false), (2, 1, 'Sales', true)`);
  await em.execute(`insert into pipeline_stages (company_id, pipeline_id, name, position) values (1, 1, 'Old first', 0), (1, 2, 'New lead', 0), (1, 2, 'Won', 1)`);
  await em.execute(`insert into integrations (id, company_id, type, name, webhook_secret_sealed) values (1, 1, 'helpdesk', 'Desk', 'x'), (2, 2, 'webchat', 'Chat', 'x')`);
  const conv = (integration: number, companyId: number, client: string, status: string, createdAt: string) =>
    em.execute(
      `insert into conversations (company_id, integration_id, channel, client_id, partition, status, state, snapshot, created_at, closed_at)
       values (?, ?, 'helpdesk', ?, 0, ?, '"closed"', '{}', ?, case when ? = 'closed' then ?::timestamptz end)`,
      [companyId, integration, client, status, createdAt, status, createdAt],
    );
  await conv(1, 1, 'old-1', 'closed', '2026-01-05T10:00:00.000Z');
  await conv(1, 1, 'old-1', 'active', '2026-02-01T10:00:00.000Z');
  await conv(1, 1, 'old-2', 'active', '2026-03-01T08:30:00.000Z');
  await conv(2, 2, 'visitor', 'active', '2026-03-02T08:30:00.000Z');

  t.ok((await migrate(old)).includes('0014-leads'), 'migration 0014 ran');
  const leads = await em.execute(`select l.company_id, l.client_id, s.name as stage, l.created_at, l.stage_changed_at from leads l join pipeline_stages s on s.id = l.stage_id order by l.client_id`);
  t.same(
    leads.map((l: any) => [l.company_id, l.client_id, l.stage, new Date(l.created_at).toISOString(), new Date(l.stage_changed_at).toISOString()]),
    [
      [1, 'old-1', 'New lead', '2026-01-05T10:00:00.000Z', '2026-01-05T10:00:00.000Z'],
      [1, 'old-2', 'New lead', '2026-03-01T08:30:00.000Z', '2026-03-01T08:30:00.000Z'],
    ],
    'one lead per customer, in the default pipeline; a company without one gets none',
  );
});
