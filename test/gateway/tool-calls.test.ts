import t from 'tap';
import { signUp, startTestService } from '../support/service.js';
import { join } from '../support/team.js';
import { sql } from '../support/worker.js';

/**
 * GET /api/agents/:id/tool-calls (contract.md § Agent actions): the calls an agent made of the
 * company's tools, as the worker records them (rows written here with the worker's columns),
 * newest first, filtered by when they were made (`from` included, `to` excluded; a date `to`
 * includes its day), paged with a total; another agent's or company's are not there.
 */
const svc = await startTestService(t, 'tool_calls');
const { api } = svc;
const owner = await signUp(api, 'Tools Co');
const operator = await join(api, owner.token, 'operator');
const stranger = await signUp(api, 'Other Co');

const newAgent = async (name: string, token = owner.token): Promise<number> => (await api('POST', '/api/agents', { token, body: { name } })).body.agent.id;
const agentId = await newAgent('Shop bot');
const siblingId = await newAgent('Sibling bot');
const theirAgentId = await newAgent('Their bot', stranger.token);

const integration = await api('POST', '/api/integrations', { token: owner.token, body: { type: 'webchat', name: 'Site', agentId } });
const [conversation] = await sql(svc.orm, `insert into conversations (company_id, integration_id, channel, client_id, partition, status, state, snapshot)
  values (?, ?, 'webchat', 'visitor-1', 0, 'active', '"idle"', '{}') returning id`, [owner.companyId, integration.body.integration.id]);
const [action] = await sql(svc.orm, `insert into agent_actions (company_id, agent_id, name, description, parameters, method, url, body, idempotent, timeout_ms)
  values (?, ?, 'order_status', 'x', '{"type":"object"}', 'GET', 'https://shop.example.com/orders/{orderId}', 'none', true, 5000) returning id`, [owner.companyId, agentId]);

interface Row {
  companyId?: number;
  agentId?: number;
  conversationId?: number | null;
  messageId?: string | null;
  seq?: number;
  name?: string;
  args?: unknown;
  status?: string;
  httpStatus?: number | null;
  ms?: number | null;
  error?: string | null;
  result?: unknown;
  calledAt: string;
  finished?: boolean;
}
const insertCall = async (r: Row): Promise<number> => {
  const [row] = await sql(
    svc.orm,
    `insert into agent_tool_calls (company_id, agent_id, conversation_id, message_id, seq, source, action_id, mcp_server_id, name, args, idempotent, status, http_status, ms, error, result, called_at, finished_at)
     values (?, ?, ?, ?, ?, 'action', ?, null, ?, ?::jsonb, true, ?, ?, ?, ?, ?::jsonb, ?::timestamptz, case when ? then ?::timestamptz + interval '180 milliseconds' end) returning id`,
    [
      r.companyId ?? owner.companyId, r.agentId ?? agentId, r.conversationId === undefined ? conversation.id : r.conversationId, r.messageId === undefined ? '1001' : r.messageId, r.seq ?? 1,
      action.id, r.name ?? 'order_status', JSON.stringify(r.args ?? { orderId: 'A-1' }), r.status ?? 'ok', r.httpStatus === undefined ? 200 : r.httpStatus, r.ms === undefined ? 180 : r.ms, r.error ?? null,
      r.result === null ? null : JSON.stringify(r.result ?? { status: 200, body: { status: 'shipped' } }), r.calledAt, r.finished ?? true, r.calledAt,
    ],
  );
  return Number(row.id);
};

const at = (hour: number) => `2026-03-01T${String(hour).padStart(2, '0')}:00:00.000Z`;
const ids: number[] = [];
ids.push(await insertCall({ calledAt: at(9) }));
ids.push(await insertCall({ calledAt: at(10), seq: 2, args: { orderId: 'A-2', password: '[redacted]' }, status: 'error', httpStatus: 404, error: 'HTTP 404', result: { status: 404, body: { error: 'no such order' } } }));
ids.push(await insertCall({ calledAt: at(11), messageId: '1002', status: 'timeout', httpStatus: null, error: 'no answer within 5000 ms', result: { error: 'no answer within 5000 ms' } }));
ids.push(await insertCall({ calledAt: at(12), conversationId: null, messageId: null, status: 'not_called', httpStatus: null, ms: null, error: 'not called: this is a test', result: { error: 'not called: this is a test and order_status changes data' } }));
ids.push(await insertCall({ calledAt: at(13), messageId: '1003', status: 'started', httpStatus: null, ms: null, result: null, finished: false }));
await insertCall({ calledAt: at(11), agentId: siblingId, name: 'sibling_tool' });
await insertCall({ calledAt: at(11), companyId: stranger.companyId, agentId: theirAgentId, conversationId: null, name: 'their_tool' });

const list = async (query = '', agent = agentId, token = owner.token) => api('GET', `/api/agents/${agent}/tool-calls${query}`, { token });
const idsOf = (res: any): number[] => res.body.toolCalls.map((c: { id: number }) => c.id);

t.test('newest first, every field as recorded', async (t) => {
  const res = await list();
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.match(res.body, { total: 5, limit: 50, offset: 0 });
  t.same(idsOf(res), [...ids].reverse(), 'newest first');
  t.same(res.body.toolCalls.find((c: any) => c.id === ids[1]), {
    id: ids[1], conversationId: conversation.id, messageId: 1001, seq: 2, source: 'action', actionId: action.id, mcpServerId: null, name: 'order_status',
    args: { orderId: 'A-2', password: '[redacted]' }, idempotent: true, status: 'error', httpStatus: 404, ms: 180, error: 'HTTP 404',
    result: { status: 404, body: { error: 'no such order' } }, calledAt: at(10), finishedAt: '2026-03-01T10:00:00.180Z',
  });
  t.match(res.body.toolCalls[0], { status: 'started', result: null, finishedAt: null, ms: null }, 'a call in flight');
  t.match(res.body.toolCalls[1], { conversationId: null, messageId: null, status: 'not_called' }, 'a call of a test');
});

t.test('from (included) and to (excluded), dates or date-times; paged with the total', async (t) => {
  t.same(idsOf(await list(`?from=${at(10)}&to=${at(12)}`)), [ids[2], ids[1]], 'from 10:00 to 12:00');
  t.match((await list(`?from=${at(10)}&to=${at(12)}`)).body, { total: 2 });
  t.same(idsOf(await list(`?from=${encodeURIComponent('2026-03-01T11:30:00+01:00')}`)), [ids[4], ids[3], ids[2]], 'a date-time with its zone (10:30 UTC)');
  t.same(idsOf(await list(`?to=${at(10)}`)), [ids[0]]);
  t.equal((await list('?from=2026-03-01&to=2026-03-01')).body.total, 5, 'a date to includes its day');
  t.equal((await list('?from=2026-03-02')).body.total, 0);
  const page = await list('?limit=2&offset=2');
  t.same(idsOf(page), [ids[2], ids[1]]);
  t.match(page.body, { total: 5, limit: 2, offset: 2 });
  t.match(await list(`?from=${at(10)}&limit=1`), { body: { toolCalls: [{ id: ids[4] }], total: 4, limit: 1 } });
});

t.test('a bad from, to, limit or offset is a 400 naming it', async (t) => {
  const cases: [string, string[]][] = [
    ['?from=yesterday', ['from']],
    ['?to=2026-13-01', ['to']],
    ['?from=2026-03-01T10:00:00', ['from']],
    ['?from=2026-03-02&to=2026-03-01T00:00:00Z', ['from']],
    ['?from=a&to=b', ['from', 'to']],
    ['?from=2026-03-01&from=2026-03-02', ['from']],
    ['?from=%00', ['from']],
    ['?limit=0', ['limit']],
    ['?limit=201', ['limit']],
    ['?offset=-1', ['offset']],
    ['?from=x&limit=0', ['from', 'limit']],
  ];
  for (const [query, fields] of cases) {
    const res = await list(query);
    t.equal(res.status, 400, query);
    t.equal(res.body.error?.code, 'VALIDATION_ERROR', query);
    t.same(res.body.error?.details.map((d: { field: string }) => d.field).sort(), fields, `${query}: names ${fields.join(', ')}`);
  }
});

t.test("only the agent's own calls; admins only; another company's agent is not there", async (t) => {
  t.same((await list('', siblingId)).body.toolCalls.map((c: { name: string }) => c.name), ['sibling_tool'], "another agent's calls are its own");
  t.match(await list('', agentId, operator.token), { status: 403, body: { error: { code: 'FORBIDDEN' } } }, 'an operator');
  t.match(await list('', agentId, stranger.token), { status: 404, body: { error: { code: 'NOT_FOUND' } } }, 'another company');
  t.same((await list('', theirAgentId, stranger.token)).body.toolCalls.map((c: { name: string }) => c.name), ['their_tool'], 'theirs only');
  t.equal((await list('', theirAgentId)).status, 404, 'and the other way round');
  t.equal((await list('', 99999999)).status, 404, 'no such agent');
});
