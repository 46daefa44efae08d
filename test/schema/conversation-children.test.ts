// A conversation's rows go with it: deleting an integration, a company or a conversation
// leaves no message, transition, helpdesk ref or outbox row behind, and its receipts (kept for
// deduplication) lose the conversation, as the foreign keys did before migration 0020.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import t from 'tap';
import { createTestDatabase } from '../support/database.js';

const CHILDREN = ['conversation_messages', 'conversation_transitions', 'conversation_refs', 'outbox'] as const;

t.test('deleting integrations, companies and conversations deletes their conversations\' rows', async (t) => {
  const { url } = await createTestDatabase(t, 'conversation_children');
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  t.teardown(() => db.end());
  const one = async <T = Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<T> => (await db.query(sql, params)).rows[0] as T;

  const company = async (name: string) => (await one<{ id: number }>(`insert into companies (public_id, name) values ($1, $2) returning id`, [randomUUID(), name])).id;
  const integration = async (companyId: number) =>
    (await one<{ id: number }>(`insert into integrations (company_id, type, name, webhook_secret_sealed) values ($1, 'helpdesk', 'desk', 'sealed') returning id`, [companyId])).id;
  /** A conversation with two messages, a transition, a ref, an outbox row and a receipt. */
  const conversation = async (companyId: number, integrationId: number, clientId: string) => {
    const { id } = await one<{ id: number }>(
      `insert into conversations (company_id, integration_id, channel, client_id, partition, status, state, snapshot)
       values ($1, $2, 'helpdesk', $3, 0, 'active', '"active"', '{}') returning id`,
      [companyId, integrationId, clientId],
    );
    await db.query(`insert into conversation_messages (company_id, conversation_id, seq, role, text) values ($1, $2, 1, 'customer', 'hi'), ($1, $2, 2, 'agent', 'hello')`, [companyId, id]);
    const reply = await one<{ id: string }>(`select id from conversation_messages where conversation_id = $1 and seq = 2`, [id]);
    await db.query(`insert into conversation_transitions (company_id, conversation_id, seq, event, to_state) values ($1, $2, 1, 'customer.message', '"active"')`, [companyId, id]);
    await db.query(`insert into conversation_refs (integration_id, kind, ref_id, conversation_id, company_id) values ($1, 'dialog', $2, $3, $4)`, [integrationId, 1000 + id, id, companyId]);
    await db.query(`insert into outbox (company_id, conversation_id, message_id, partition, kind) values ($1, $2, $3, 0, 'agent_reply')`, [companyId, id, reply.id]);
    await db.query(`insert into inbound_receipts (integration_id, idempotency_key, company_id, kind, outcome, conversation_id) values ($1, $2, $3, 'message', 'applied', $4)`, [integrationId, `key-${clientId}`, companyId, id]);
    return id;
  };
  const rowsOf = async (conversationId: number) => {
    const counts: Record<string, number> = {};
    for (const table of CHILDREN) counts[table] = Number((await one<{ n: string }>(`select count(*) n from ${table} where conversation_id = $1`, [conversationId])).n);
    return counts;
  };
  const none = Object.fromEntries(CHILDREN.map((table) => [table, 0]));
  const all = { conversation_messages: 2, conversation_transitions: 1, conversation_refs: 1, outbox: 1 };

  const acme = await company('acme');
  const [deskA, deskB] = [await integration(acme), await integration(acme)];
  const a1 = await conversation(acme, deskA, 'a1');
  const a2 = await conversation(acme, deskA, 'a2');
  const b1 = await conversation(acme, deskB, 'b1');
  const b2 = await conversation(acme, deskB, 'b2');
  const globex = await company('globex');
  const g1 = await conversation(globex, await integration(globex), 'g1');

  await db.query(`delete from integrations where id = $1`, [deskA]);
  t.same(await rowsOf(a1), none, 'an integration deleted: its conversations\' rows are gone');
  t.same(await rowsOf(a2), none);
  t.same(await rowsOf(b1), all, 'the other integration\'s conversations keep theirs');
  t.same(await rowsOf(g1), all, 'another company\'s conversations keep theirs');

  await db.query(`delete from conversations where id = $1`, [b1]);
  t.same(await rowsOf(b1), none, 'a conversation deleted: its rows are gone');
  t.same(await rowsOf(b2), all, 'its neighbour keeps its rows');
  t.same((await db.query(`select conversation_id from inbound_receipts where integration_id = $1 order by idempotency_key`, [deskB])).rows, [{ conversation_id: null }, { conversation_id: b2 }], 'its receipt stays, without the conversation');

  await db.query(`delete from companies where id = $1`, [globex]);
  t.same(await rowsOf(g1), none, 'a company deleted: its conversations\' rows are gone');
  t.same(await rowsOf(b2), all);
});
