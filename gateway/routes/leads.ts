import { conversationView } from '../../lib/conversations.js';
import { inTransaction, query, type SqlPool } from '../../lib/db.js';
import { notFound } from '../../lib/errors.js';
import { moveLead, updateLeadContact, type LeadContact, type LeadMover } from '../../lib/leads.js';
import type { TenantScope } from '../../lib/tenancy.js';
import { ConversationSchema } from '../../schema/conversation-entities.js';
import { LeadSchema, LeadStageMoveSchema, type Lead, type LeadStageMove } from '../../schema/lead-entities.js';
import type { Principal } from '../auth/authenticate.js';
import { bodyValidator, idFilter, idParam, idPathParam, invalidField, invalidFields } from '../http/validate.js';
import { examplePage, PAGE_PARAMS, pageOf, pageParams, type Page } from '../http/pagination.js';
import { defineRoute, type QueryParams, type Route } from '../http/route.js';
import { arrayOf, BIG_ID, CONVERSATION, COUNT, EXAMPLE_CONVERSATION, EXAMPLE_TIME, ID, nullable, object, STRING, TIMESTAMP, UUID, type JsonSchema } from '../http/schemas.js';
import { EXAMPLE_USER_ID } from './auth.js';

/**
 * Leads (contract.md § Behaviour customers expect from an agent): every customer of the
 * company, in a stage of a pipeline, with the sessions (conversations) they had and the
 * history of their moves. Operators move a lead with PATCH; the agent moves it with
 * lib/leads.ts moveLeadToStage.
 */
export interface LeadRouteDeps {
  /** Plain `pg` (lib/leads.ts moves leads with it, the worker in its own transactions). */
  sql: SqlPool;
}

/** A lead's conversations and moves shown by GET /api/leads/:id, newest first. */
const LEAD_HISTORY_LIMIT = 200;

/** A stage to move to and/or what the team knows of the customer (null clears a field). */
const patchBody = bodyValidator<{ stageId?: number } & Partial<LeadContact>>({
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    stageId: { type: 'integer', minimum: 1, maximum: 2_147_483_647 },
    name: { type: ['string', 'null'], maxLength: 200 },
    email: { type: ['string', 'null'], format: 'email', maxLength: 254 },
    phone: { type: ['string', 'null'], maxLength: 40 },
  },
});

/** Names and phones are stored trimmed; a blank one clears the field. */
const trimmedOrNull = (v: string | null | undefined) => (typeof v === 'string' ? v.trim() || null : v);

/** What the list shows of a lead's sessions. */
interface SessionSummary {
  lead_id: number;
  conversation_count: number;
  last_conversation_id: number | null;
  last_status: string | null;
  channel: string | null;
  transport: string | null;
  last_activity_at: Date | null;
}

const iso = (d: Date | null | undefined) => (d ? new Date(d).toISOString() : null);

function leadView(l: Lead, s: SessionSummary | undefined) {
  return {
    id: l.id,
    pipelineId: l.pipelineId,
    stageId: l.stageId,
    integrationId: l.integrationId,
    clientId: l.clientId,
    name: l.name,
    email: l.email,
    phone: l.phone,
    verifiedId: l.verifiedId,
    channel: s?.channel ?? null,
    transport: s?.transport ?? null,
    conversationCount: s?.conversation_count ?? 0,
    lastConversation: s?.last_conversation_id ? { id: s.last_conversation_id, status: s.last_status } : null,
    lastActivityAt: iso(s?.last_activity_at),
    createdAt: l.createdAt.toISOString(),
    stageChangedAt: l.stageChangedAt.toISOString(),
  };
}

const moveView = (m: LeadStageMove) => ({
  id: Number(m.id),
  fromStageId: m.fromStageId,
  toStageId: m.toStageId,
  by: m.movedBy,
  userId: m.userId,
  apiTokenId: m.apiTokenId,
  conversationId: m.conversationId,
  at: m.at.toISOString(),
});

const moverOf = (p: Principal): LeadMover => (p.kind === 'session' ? { kind: 'operator', userId: p.userId } : { kind: 'api_token', apiTokenId: p.apiTokenId });

const LEAD = object(
  {
    id: ID,
    pipelineId: ID,
    stageId: ID,
    integrationId: ID,
    clientId: { type: 'string', description: 'The helpdesk client_id, or the webchat visitor id.' },
    name: { ...nullable(STRING), description: "The customer's name: as the team wrote it (PATCH), else as the host page identified them, the pre-chat form or the helpdesk's client card said." },
    email: { ...nullable(STRING), description: "The customer's email (same sources as the name)." },
    phone: { ...nullable(STRING), description: "The customer's phone (the team's, else the helpdesk's)." },
    verifiedId: { ...nullable(STRING), description: "The host page's id of the customer, once the widget's `MAS.identify` hash verified; null: not verified." },
    channel: { ...nullable({ type: 'string', enum: ['helpdesk', 'webchat', 'whatsapp', 'telegram'] }), description: 'Of its latest session.' },
    transport: { ...nullable(STRING), description: 'Of its latest session (telegram, whatsapp, …).' },
    conversationCount: COUNT,
    lastConversation: nullable(object({ id: ID, status: nullable({ type: 'string', enum: ['active', 'paused', 'closed'] }) })),
    lastActivityAt: nullable(TIMESTAMP),
    createdAt: TIMESTAMP,
    stageChangedAt: TIMESTAMP,
  },
  { title: 'Lead' },
);
const LEAD_MOVE = object(
  {
    id: BIG_ID,
    fromStageId: nullable(ID),
    toStageId: ID,
    by: { type: 'string', enum: ['operator', 'api_token', 'agent'] },
    userId: { ...nullable(UUID), description: 'The operator who moved it (by `operator`), else null.' },
    apiTokenId: nullable(ID),
    conversationId: nullable(ID),
    at: TIMESTAMP,
  },
  { title: 'LeadMove' },
);
const LEAD_DETAIL = object(
  { ...(LEAD.properties as Record<string, JsonSchema>), conversations: { ...arrayOf(CONVERSATION), description: `Its sessions, newest first (at most ${LEAD_HISTORY_LIMIT}).` }, moves: { ...arrayOf(LEAD_MOVE), description: `Its stage history, newest first (at most ${LEAD_HISTORY_LIMIT}).` } },
  { title: 'LeadDetail' },
);
const EXAMPLE_LEAD = {
  id: 1, pipelineId: 1, stageId: 1, integrationId: 1, clientId: 'c-1', name: 'Maria Lopez', email: 'maria@example.com', phone: '+34 600 000 000', verifiedId: null, channel: 'helpdesk', transport: 'telegram', conversationCount: 1,
  lastConversation: { id: 1, status: 'active' }, lastActivityAt: EXAMPLE_TIME, createdAt: EXAMPLE_TIME, stageChangedAt: EXAMPLE_TIME,
};
const EXAMPLE_LEAD_DETAIL = {
  ...EXAMPLE_LEAD,
  conversations: [EXAMPLE_CONVERSATION],
  moves: [{ id: 1, fromStageId: 1, toStageId: 2, by: 'operator', userId: EXAMPLE_USER_ID, apiTokenId: null, conversationId: null, at: EXAMPLE_TIME }],
};
const ONE_LEAD = { schema: object({ lead: LEAD_DETAIL }), example: { lead: { ...EXAMPLE_LEAD_DETAIL, stageId: 2 } } };

/** `pipelineId`, `stageId` (filters) and the page of GET /api/leads; a bad filter is refused before a bad page. */
const LIST_QUERY: QueryParams<{ pipelineId?: number; stageId?: number } & Page> = {
  params: [
    { name: 'pipelineId', in: 'query', description: 'Only leads of this pipeline.', schema: ID },
    { name: 'stageId', in: 'query', description: 'Only leads in this stage.', schema: ID },
    ...PAGE_PARAMS,
  ],
  parse: (q) => {
    const details: { field: string; message: string }[] = [];
    const pipelineId = idFilter(q, 'pipelineId', details);
    const stageId = idFilter(q, 'stageId', details);
    if (details.length) throw invalidFields(details);
    return { pipelineId, stageId, ...pageParams(q) };
  },
};
const LEAD_ID = idPathParam('lead');

export function leadRoutes({ sql }: LeadRouteDeps): readonly Route[] {
  /** Each lead's session count, latest session and last activity: two index lookups per lead (conversations_client_idx). */
  async function summaries(companyId: number, leads: Lead[]): Promise<Map<number, SessionSummary>> {
    if (leads.length === 0) return new Map();
    const rows = await query<SessionSummary>(
      sql,
      'lead_sessions',
      `select k.id as lead_id, n.conversation_count, last.id as last_conversation_id, last.status as last_status, last.channel, last.transport,
              coalesce(last.last_message_at, last.created_at) as last_activity_at
       from unnest($1::int[], $2::int[], $3::text[]) as k(id, integration_id, client_id)
       cross join lateral (
         select count(*)::int as conversation_count from conversations c
         where c.integration_id = k.integration_id and c.client_id = k.client_id and c.company_id = $4
       ) n
       left join lateral (
         select c.id, c.status, c.channel, c.transport, c.last_message_at, c.created_at from conversations c
         where c.integration_id = k.integration_id and c.client_id = k.client_id and c.company_id = $4
         order by c.id desc limit 1
       ) last on true`,
      [leads.map((l) => l.id), leads.map((l) => l.integrationId), leads.map((l) => l.clientId), companyId],
    );
    return new Map(rows.map((r) => [r.lead_id, r]));
  }

  async function load(tenant: TenantScope, id: number): Promise<Lead> {
    const lead = await tenant.em.findOne(LeadSchema, { id });
    if (!lead) throw notFound('Lead');
    return lead;
  }

  async function fullView(tenant: TenantScope, lead: Lead) {
    const [summary, conversations, moves] = await Promise.all([
      summaries(tenant.companyId, [lead]),
      tenant.em.find(ConversationSchema, { integrationId: lead.integrationId, clientId: lead.clientId }, { orderBy: { id: 'desc' }, limit: LEAD_HISTORY_LIMIT }),
      tenant.em.find(LeadStageMoveSchema, { leadId: lead.id }, { orderBy: { id: 'desc' }, limit: LEAD_HISTORY_LIMIT }),
    ]);
    return { ...leadView(lead, summary.get(lead.id)), conversations: conversations.map((c) => conversationView(c)), moves: moves.map(moveView) };
  }

  return [
    defineRoute({
      method: 'GET', path: '/leads', operationId: 'listLeads', tag: 'Leads', access: 'any',
      summary: "The company's leads, most recently moved first, paged",
      description: 'Every customer (helpdesk client, webchat visitor) is a lead, in the first stage of the default pipeline from their first message.',
      query: LIST_QUERY,
      responses: { 200: { description: 'A page of leads.', schema: pageOf('leads', LEAD), example: examplePage('leads', EXAMPLE_LEAD) } },
      errors: { VALIDATION_ERROR: 'a bad pipelineId, stageId, limit or offset' },
      handler: async ({ req, res, query: { pipelineId, stageId, limit, offset } }) => {
        const tenant = req.tenant!;
        const where = { ...(pipelineId !== undefined ? { pipelineId } : {}), ...(stageId !== undefined ? { stageId } : {}) };
        const [leads, total] = await tenant.em.findAndCount(LeadSchema, where, { orderBy: { stageChangedAt: 'desc', id: 'desc' }, limit, offset });
        const byLead = await summaries(tenant.companyId, leads);
        res.json({ leads: leads.map((l) => leadView(l, byLead.get(l.id))), total, limit, offset });
      },
    }),
    defineRoute({
      method: 'GET', path: '/leads/:id', operationId: 'getLead', tag: 'Leads', access: 'any',
      summary: 'A lead with its sessions and its stage history',
      params: [LEAD_ID],
      responses: { 200: { description: 'The lead.', schema: object({ lead: LEAD_DETAIL }), example: { lead: EXAMPLE_LEAD_DETAIL } } },
      errors: { NOT_FOUND: 'no such lead' },
      handler: async ({ req, res }) => {
        const tenant = req.tenant!;
        res.json({ lead: await fullView(tenant, await load(tenant, idParam(req.params.id, 'Lead'))) });
      },
    }),
    /** Moves the lead to `stageId` (a stage of any pipeline of the company, 400 otherwise) and/or sets its name, email, phone: all or nothing. */
    defineRoute({
      method: 'PATCH', path: '/leads/:id', operationId: 'moveLead', tag: 'Leads', access: 'any',
      summary: "Move a lead to a stage (of any pipeline of the company), and/or set the customer's name, email and phone",
      params: [LEAD_ID],
      body: { validators: [patchBody], example: { stageId: 2, name: 'Maria Lopez', phone: '+34 600 000 000' } },
      responses: { 200: { description: 'The lead as changed, a move recorded.', ...ONE_LEAD } },
      errors: { NOT_FOUND: 'no such lead', VALIDATION_ERROR: 'an empty body, a stageId that is not a stage of a pipeline of this company, a bad email, a name over 200 or a phone over 40 characters' },
      load: (req) => idParam(req.params.id, 'Lead'),
      handler: async ({ req, res, loaded: leadId, body }) => {
        const tenant = req.tenant!;
        const { stageId, ...given } = body;
        const contact: Partial<LeadContact> = {};
        if (given.name !== undefined) contact.name = trimmedOrNull(given.name);
        if (given.email !== undefined) contact.email = given.email;
        if (given.phone !== undefined) contact.phone = trimmedOrNull(given.phone);
        await inTransaction(sql, async (client) => {
          if (stageId !== undefined) {
            const outcome = await moveLead(client, { companyId: tenant.companyId, leadId, stage: stageId, by: moverOf(req.principal!) });
            if (!outcome.ok && outcome.reason === 'lead_not_found') throw notFound('Lead');
            if (!outcome.ok) throw invalidField('stageId', 'is not a stage of a pipeline of this company');
          }
          if (Object.keys(contact).length && !(await updateLeadContact(client, { companyId: tenant.companyId, leadId, contact }))) throw notFound('Lead');
        });
        res.json({ lead: await fullView(tenant, await load(tenant, leadId)) });
      },
    }),
  ];
}
