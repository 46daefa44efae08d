import type { SqlPool } from '../../lib/db.js';

/**
 * A constructed history for the outcome figures (GET /api/analytics), written straight into
 * the tables the worker writes (sessions on chosen days cannot be made any other way), with
 * the figures it must give. Period: 2026-03-01 … 2026-03-03 (UTC); some events fall just
 * outside it. Two agents, each with its own helpdesk integration.
 *
 *   session  agent customer  started            closed             what happened
 *   S1       A1    k1        03-01 09:00        03-01 09:30        one reply; closed by the helpdesk          → autoResolved
 *   S2       A1    k2        03-01 10:00        03-02 12:00        the agent handed off 03-01 10:01 (notice)   → handedOff
 *   S3       A1    k1        03-02 08:00        03-02 09:00        back 22.5 h after S1; a reply (+ a failed one); an operator wrote → reopened
 *   S4       A1    k3        03-03 23:59:59.999 —                  one reply
 *   S5       A1    k4        02-20              02-21              (before the period)
 *   S6       A1    k4        03-03 10:00        —                  back 10 days after S5 (not reopened); two helpdesk transfers → handedOff once
 *   S7       A1    k5        02-28 23:59:59.999 03-01 00:30        started before the period, closed in it     → autoResolved
 *   S8       A1    k6        03-02 11:00        03-02 11:30        an operator paused and resumed it
 *   S9       A2    z1        03-02 14:00        03-02 14:10        one reply                                   → autoResolved
 *   S10      A1    k7        03-04 00:00        —                  (after the period)
 * Model usage: A1 0.010000 (03-01), 0.020000 (03-02), 0.000001 (03-03), 1.00 (03-04); A2 0.003000 (03-02).
 */
export const OUTCOMES_FROM = '2026-03-01';
export const OUTCOMES_TO = '2026-03-03';

export const EXPECTED_OUTCOMES = {
  all: {
    conversations: 7, autoResolved: 3, handedOff: 2, reopened: 1, replies: 4, modelCostUsd: '0.033001', costPerResolutionUsd: '0.011',
    byDay: [
      { date: '2026-03-01', conversations: 2, autoResolved: 2, handedOff: 1, reopened: 0, replies: 1, modelCostUsd: '0.01', costPerResolutionUsd: '0.005' },
      { date: '2026-03-02', conversations: 3, autoResolved: 1, handedOff: 0, reopened: 1, replies: 2, modelCostUsd: '0.023', costPerResolutionUsd: '0.023' },
      { date: '2026-03-03', conversations: 2, autoResolved: 0, handedOff: 1, reopened: 0, replies: 1, modelCostUsd: '0.000001', costPerResolutionUsd: null },
    ],
  },
  /** 0.030001 / 2 = 0.0150005, rounded half up to the micro-dollar. */
  agent1: { conversations: 6, autoResolved: 2, handedOff: 2, reopened: 1, replies: 3, modelCostUsd: '0.030001', costPerResolutionUsd: '0.015001' },
  agent2: { conversations: 1, autoResolved: 1, handedOff: 0, reopened: 0, replies: 1, modelCostUsd: '0.003', costPerResolutionUsd: '0.003' },
};

const TRANSFER = [{ type: 'session_transfer_external', params: { origin: 'helpdesk' } }];
const HANDOFF = [{ type: 'session_transfer_external', params: { origin: 'agent', reason: 'asked_for_human' } }];
const CLOSE = [{ type: 'session_close', params: { origin: 'helpdesk' } }];
const REPLY = [{ type: 'agent_reply' }];

interface Step {
  at: string;
  event: string;
  to: unknown;
  actions?: unknown[];
}
interface Message {
  at: string;
  role: 'customer' | 'agent' | 'operator';
  kind?: 'message' | 'reply' | 'handoff_notice';
  delivery?: 'sent' | 'failed';
}

/** Writes the history for `companyId` (its own two agents and integrations); returns their ids. */
export async function seedOutcomes(db: SqlPool, companyId: number): Promise<{ agent1: number; agent2: number; integration1: number; integration2: number }> {
  const one = async (text: string, values: unknown[]) => (await db.query(text, values)).rows[0];
  const agent1 = (await one(`insert into agents (company_id, name) values ($1, 'Outcomes A1') returning id`, [companyId])).id as number;
  const agent2 = (await one(`insert into agents (company_id, name) values ($1, 'Outcomes A2') returning id`, [companyId])).id as number;
  const integration = async (agentId: number) =>
    (await one(`insert into integrations (company_id, type, name, agent_id, webhook_secret_sealed) values ($1, 'helpdesk', 'Outcomes desk', $2, 'x') returning id`, [companyId, agentId])).id as number;
  const integration1 = await integration(agent1);
  const integration2 = await integration(agent2);

  async function session(integrationId: number, clientId: string, startedAt: string, closedAt: string | null, messages: Message[], steps: Step[]): Promise<void> {
    const status = closedAt ? 'closed' : 'active';
    const state = closedAt ? 'closed' : { active: 'idle' };
    const { id } = await one(
      `insert into conversations (company_id, integration_id, channel, client_id, partition, status, state, snapshot, created_at, updated_at, last_message_at, closed_at)
       values ($1, $2, 'helpdesk', $3, 0, $4, $5, '{}', $6, $6, $6, $7) returning id`,
      [companyId, integrationId, clientId, status, JSON.stringify(state), startedAt, closedAt],
    );
    const all: Message[] = [{ at: startedAt, role: 'customer' }, ...messages];
    for (const [i, m] of all.entries()) {
      await db.query(
        `insert into conversation_messages (company_id, conversation_id, seq, role, kind, text, delivery, created_at) values ($1, $2, $3, $4, $5, 'text', $6, $7)`,
        [companyId, id, i + 1, m.role, m.kind ?? (m.role === 'agent' ? 'reply' : 'message'), m.role === 'customer' ? null : (m.delivery ?? 'sent'), m.at],
      );
    }
    for (const [i, s] of steps.entries()) {
      await db.query(
        `insert into conversation_transitions (company_id, conversation_id, seq, at, event, to_state, actions) values ($1, $2, $3, $4, $5, $6, $7)`,
        [companyId, id, i + 1, s.at, s.event, JSON.stringify(s.to), JSON.stringify(s.actions ?? [])],
      );
    }
  }
  const asked = (at: string): Step => ({ at, event: 'customer.message', to: { active: 'answering' } });
  const replied = (at: string): Step => ({ at, event: 'xstate.done.actor.agent', to: { active: 'idle' }, actions: REPLY });
  const closed = (at: string): Step => ({ at, event: 'helpdesk.close_dialog', to: 'closed', actions: CLOSE });

  await session(integration1, 'k1', '2026-03-01T09:00:00.000Z', '2026-03-01T09:30:00.000Z', [{ at: '2026-03-01T09:00:05.000Z', role: 'agent' }], [
    asked('2026-03-01T09:00:00.000Z'), replied('2026-03-01T09:00:05.000Z'), closed('2026-03-01T09:30:00.000Z'),
  ]);
  await session(integration1, 'k2', '2026-03-01T10:00:00.000Z', '2026-03-02T12:00:00.000Z', [{ at: '2026-03-01T10:01:00.000Z', role: 'agent', kind: 'handoff_notice' }], [
    asked('2026-03-01T10:00:00.000Z'),
    { at: '2026-03-01T10:01:00.000Z', event: 'xstate.done.actor.agent', to: { paused: 'operator' }, actions: HANDOFF },
    closed('2026-03-02T12:00:00.000Z'),
  ]);
  await session(
    integration1, 'k1', '2026-03-02T08:00:00.000Z', '2026-03-02T09:00:00.000Z',
    [{ at: '2026-03-02T08:00:03.000Z', role: 'agent' }, { at: '2026-03-02T08:10:00.000Z', role: 'agent', delivery: 'failed' }, { at: '2026-03-02T08:20:00.000Z', role: 'operator' }],
    [asked('2026-03-02T08:00:00.000Z'), replied('2026-03-02T08:00:03.000Z'), closed('2026-03-02T09:00:00.000Z')],
  );
  await session(integration1, 'k3', '2026-03-03T23:59:59.999Z', null, [{ at: '2026-03-03T23:59:59.999Z', role: 'agent' }], [asked('2026-03-03T23:59:59.999Z')]);
  await session(integration1, 'k4', '2026-02-20T10:00:00.000Z', '2026-02-21T10:00:00.000Z', [], [closed('2026-02-21T10:00:00.000Z')]);
  await session(integration1, 'k4', '2026-03-03T10:00:00.000Z', null, [], [
    { at: '2026-03-03T10:05:00.000Z', event: 'helpdesk.dialog_transferred', to: { paused: 'transferred' }, actions: TRANSFER },
    { at: '2026-03-03T10:06:00.000Z', event: 'helpdesk.dialog_transferred', to: { paused: 'transferred' }, actions: TRANSFER },
  ]);
  await session(integration1, 'k5', '2026-02-28T23:59:59.999Z', '2026-03-01T00:30:00.000Z', [], [closed('2026-03-01T00:30:00.000Z')]);
  await session(integration1, 'k6', '2026-03-02T11:00:00.000Z', '2026-03-02T11:30:00.000Z', [], [
    { at: '2026-03-02T11:05:00.000Z', event: 'operator.pause', to: { paused: 'operator' } },
    { at: '2026-03-02T11:10:00.000Z', event: 'operator.resume', to: { active: 'idle' } },
    closed('2026-03-02T11:30:00.000Z'),
  ]);
  await session(integration2, 'z1', '2026-03-02T14:00:00.000Z', '2026-03-02T14:10:00.000Z', [{ at: '2026-03-02T14:00:02.000Z', role: 'agent' }], [
    asked('2026-03-02T14:00:00.000Z'), replied('2026-03-02T14:00:02.000Z'), closed('2026-03-02T14:10:00.000Z'),
  ]);
  await session(integration1, 'k7', '2026-03-04T00:00:00.000Z', null, [{ at: '2026-03-04T00:00:01.000Z', role: 'agent' }], []);

  const usage = (agentId: number, amount: string, at: string) =>
    db.query(
      `insert into credit_ledger (company_id, kind, amount_usd, balance_after_usd, input_tokens, output_tokens, model, agent_id, at) values ($1, 'model_usage', $2, 0, 100, 10, 'gpt-4o', $3, $4)`,
      [companyId, amount, agentId, at],
    );
  await usage(agent1, '-0.010000', '2026-03-01T10:00:00.000Z');
  await usage(agent1, '-0.020000', '2026-03-02T08:00:00.000Z');
  await usage(agent2, '-0.003000', '2026-03-02T14:00:00.000Z');
  await usage(agent1, '-0.000001', '2026-03-03T12:00:00.000Z');
  await usage(agent1, '-1.000000', '2026-03-04T00:00:00.000Z');
  await db.query(`insert into credit_ledger (company_id, kind, amount_usd, balance_after_usd, at) values ($1, 'top_up', 10, 10, '2026-03-02T00:00:00Z')`, [companyId]);
  return { agent1, agent2, integration1, integration2 };
}

/**
 * `sessions` older sessions (January 2026, before the constructed period) of one more
 * integration of `companyId`, each with a customer message, an agent reply, a transition log
 * (every tenth handed off) and a close; then ANALYZE: the volume against which a query of
 * three days must read its indexes rather than the whole history.
 */
export async function seedHistory(db: SqlPool, companyId: number, sessions: number): Promise<void> {
  const { rows: [i] } = await db.query(`insert into integrations (company_id, type, name, webhook_secret_sealed) values ($1, 'helpdesk', 'History desk', 'x') returning id`, [companyId]);
  await db.query(
    `with c as (
       insert into conversations (company_id, integration_id, channel, client_id, partition, status, state, snapshot, created_at, updated_at, closed_at)
       select $1, $2, 'helpdesk', 'h-' || n, 0, 'closed', '"closed"', '{}', t, t, t + interval '10 minutes'
       from generate_series(1, $3::int) n, lateral (select timestamptz '2026-01-01' + (n * interval '7 minutes') as t) x
       returning id, created_at
     ), m as (
       insert into conversation_messages (company_id, conversation_id, seq, role, kind, text, delivery, created_at)
       select $1, c.id, s.seq, s.role, s.kind, 'text', s.delivery, c.created_at + s.seq * interval '1 second'
       from c cross join (values (1, 'customer', 'message', null), (2, 'agent', 'reply', 'sent')) s(seq, role, kind, delivery)
     )
     insert into conversation_transitions (company_id, conversation_id, seq, at, event, to_state, actions)
     select $1, c.id, s.seq, c.created_at + s.seq * interval '1 second', s.event, s.to_state::jsonb,
            case when s.seq = 2 and c.id % 10 = 0 then '[{"type":"session_transfer_external"}]'::jsonb else s.actions::jsonb end
     from c cross join (values (1, 'customer.message', '{"active":"answering"}', '[]'), (2, 'xstate.done.actor.agent', '{"active":"idle"}', '[{"type":"agent_reply"}]'),
                               (3, 'helpdesk.close_dialog', '"closed"', '[{"type":"session_close"}]')) s(seq, event, to_state, actions)`,
    [companyId, i.id, sessions],
  );
  await db.query(
    `insert into credit_ledger (company_id, kind, amount_usd, balance_after_usd, at)
     select $1, 'model_usage', -0.001, 0, timestamptz '2026-01-01' + n * interval '7 minutes' from generate_series(1, $2::int) n`,
    [companyId, sessions],
  );
  await db.query('analyze');
}
