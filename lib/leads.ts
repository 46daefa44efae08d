import type { CustomerContact } from '../schema/envelope.js';
import { query, type SqlClient } from './db.js';

/**
 * Leads in their pipelines: where a new customer's lead starts, and moving a lead to
 * another stage with its history. Plain SQL through `pg` so that the worker (the agent's
 * `set_lead_stage` tool, inside its own transaction) and the gateway (operators' PATCH)
 * move leads the same way. Every statement names company_id: the caller's company is the
 * only one it can touch.
 */

/**
 * An `insert … on conflict do nothing` of the lead of each row of `source` (a table, CTE or
 * parenthesised subquery with company_id, integration_id, client_id): the first stage of the
 * company's default pipeline. A customer who already has a lead keeps it, whatever its stage;
 * a company without a default pipeline gets none (and nothing fails). `withContact`: the rows
 * also carry the CONTACT_COLUMNS (null where unknown), which the new lead starts with.
 */
export function insertLeadsFrom(source: string, withContact = false): string {
  const contact = withContact
    ? {
        columns: ', name, email, phone, name_source, email_source, phone_source, verified_id',
        values: CONTACT_FIELDS.map((f) => `, s.${f}`).join('') + CONTACT_FIELDS.map((f) => `, case when s.${f} is not null then s.contact_source end`).join('') + ', s.verified_id',
      }
    : { columns: '', values: '' };
  return `insert into leads (company_id, integration_id, client_id, pipeline_id, stage_id${contact.columns})
    select s.company_id, s.integration_id, s.client_id, f.pipeline_id, f.id${contact.values}
    from ${source} s
    cross join lateral (
      select st.pipeline_id, st.id from pipelines p join pipeline_stages st on st.pipeline_id = p.id
      where p.company_id = s.company_id and p.is_default order by p.id, st.position limit 1
    ) f
    on conflict do nothing`;
}

// ---- what customers tell of themselves (migration 0031; who may replace what: schema/envelope.ts ContactSource)

export type { ContactSource, CustomerContact } from '../schema/envelope.js';

const CONTACT_FIELDS = ['name', 'email', 'phone'] as const;
/** The recordset columns a row of contacts carries beside integration_id and client_id. */
export const CONTACT_COLUMNS = 'name text, email text, phone text, contact_source text, verified_id text';
export const CONTACT_LIMITS = { name: 200, email: 254, phone: 40, verifiedId: 200 } as const;

/** A contact as a row of CONTACT_COLUMNS. */
export const contactRow = (c: CustomerContact | undefined) =>
  c ? { name: c.name, email: c.email, phone: c.phone, contact_source: c.source, verified_id: c.verifiedId ?? null } : {};

const PLAIN_ASCII_WORDS = /^[!-~]+(?: [!-~]+)*$/;

/**
 * Outside text made a contact field: control and format characters (newlines, bidi
 * overrides, zero-width ones) become spaces, spaces collapse, a lone surrogate becomes U+FFFD
 * (PostgreSQL refuses it), at most `max` characters (a surrogate pair is never cut in half);
 * null when nothing is left or it is not text.
 */
export function contactText(value: unknown, max: number): string | null {
  if (typeof value === 'number' && Number.isFinite(value)) value = String(value);
  if (typeof value !== 'string') return null;
  // Most names and phones: printable ASCII words, one space apart, that fit (clean already; every webhook carries one).
  if (value.length <= max && PLAIN_ASCII_WORDS.test(value)) return value;
  const clean = value.toWellFormed().normalize('NFC').replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, ' ').replace(/\s+/g, ' ').trim();
  if (!clean) return null;
  const cut = Array.from(clean).slice(0, max).join('').trim();
  return cut || null;
}

/**
 * An `update leads` from the rows of `source` (integration_id, client_id and CONTACT_COLUMNS):
 * each field given is taken when the lead has none, or when it is verified and the lead's
 * was not an operator's; `verified_id` is taken whenever given. Leads nothing changes are
 * not written (a helpdesk sends the name with every message). A lead that does not exist
 * yet is not made here: insertLeadsFrom makes it with the contact.
 */
export function fillLeadContacts(source: string): string {
  const takes = (f: string) => `(v.${f} is not null and (l.${f} is null or (v.contact_source = 'verified' and l.${f}_source is distinct from 'operator' and l.${f} is distinct from v.${f})))`;
  const sets = CONTACT_FIELDS.map((f) => `${f} = case when ${takes(f)} then v.${f} else l.${f} end, ${f}_source = case when ${takes(f)} then v.contact_source else l.${f}_source end`);
  return `update leads l set ${sets.join(', ')}, verified_id = coalesce(v.verified_id, l.verified_id)
    from ${source} v
    where l.integration_id = v.integration_id and l.client_id = v.client_id
      and (${CONTACT_FIELDS.map(takes).join(' or ')} or (v.verified_id is not null and l.verified_id is distinct from v.verified_id))`;
}

/** Who moves a lead; recorded with the move. */
export type LeadMover =
  | { kind: 'operator'; userId: string }
  | { kind: 'api_token'; apiTokenId: number }
  | { kind: 'agent'; conversationId: number };

export interface StageRef {
  id: number;
  name: string;
  pipelineId: number;
}

export type LeadMove =
  | { ok: true; leadId: number; moved: boolean; from: StageRef; to: StageRef }
  | { ok: false; reason: 'lead_not_found' | 'stage_not_found'; error: string };

interface StageRow {
  id: number;
  name: string;
  pipeline_id: number;
}

const stageRef = (s: StageRow): StageRef => ({ id: s.id, name: s.name, pipelineId: s.pipeline_id });
const normalName = (name: string) => name.normalize('NFC').trim().replace(/\s+/g, ' ').toLowerCase();

/**
 * Moves a lead of `companyId` to `stage`: a stage id (of any pipeline of the company: the lead
 * changes pipeline with it), or a stage name of the lead's own pipeline (case and spacing
 * ignored; a name of digits only that names no stage is taken as an id). A move to the stage
 * the lead is in changes nothing (`moved: false`). Every move is recorded in
 * lead_stage_moves (from, to, who, when). Call it inside a transaction (the worker's, or
 * lib/db.ts `inTransaction`): the lead's row is locked, so concurrent moves are recorded in
 * order; without one the write is still conditional on the stage it read.
 */
export async function moveLead(c: SqlClient, input: { companyId: number; leadId: number; stage: number | string; by: LeadMover }): Promise<LeadMove> {
  const { companyId, leadId, by } = input;
  const [lead] = await query<{ id: number; pipeline_id: number; stage_id: number }>(
    c,
    'lead_lock',
    'select id, pipeline_id, stage_id from leads where id = $1 and company_id = $2 for update',
    [leadId, companyId],
  );
  if (!lead) return { ok: false, reason: 'lead_not_found', error: `lead ${leadId} not found` };
  const stages = await query<StageRow>(
    c,
    'lead_pipeline_stages',
    'select id, name, pipeline_id from pipeline_stages where pipeline_id = $1 and company_id = $2 order by position',
    [lead.pipeline_id, companyId],
  );
  const from = stages.find((s) => s.id === lead.stage_id);
  const target = await resolveStage(c, companyId, stages, input.stage);
  if (!target) {
    const [pipeline] = await query<{ name: string }>(c, 'lead_pipeline_name', 'select name from pipelines where id = $1 and company_id = $2', [lead.pipeline_id, companyId]);
    return {
      ok: false,
      reason: 'stage_not_found',
      error: `no stage ${JSON.stringify(String(input.stage))} in pipeline ${JSON.stringify(pipeline?.name ?? '')}; its stages are: ${stages.map((s) => s.name).join(', ')}`,
    };
  }
  const fromRef = from ? stageRef(from) : { id: lead.stage_id, name: '', pipelineId: lead.pipeline_id };
  if (target.id === lead.stage_id) return { ok: true, leadId, moved: false, from: fromRef, to: stageRef(target) };
  const moved = await query<{ id: string }>(
    c,
    'lead_move',
    `with u as (
       update leads set pipeline_id = $4, stage_id = $5, stage_changed_at = now()
       where id = $1 and company_id = $2 and stage_id = $3 returning id
     )
     insert into lead_stage_moves (company_id, lead_id, from_stage_id, to_stage_id, moved_by, user_id, api_token_id, conversation_id)
     select $2, u.id, $3, $5, $6, $7, $8, $9 from u returning id`,
    [
      leadId, companyId, lead.stage_id, target.pipeline_id, target.id, by.kind,
      by.kind === 'operator' ? by.userId : null, by.kind === 'api_token' ? by.apiTokenId : null, by.kind === 'agent' ? by.conversationId : null,
    ],
  );
  return { ok: true, leadId, moved: moved.length > 0, from: fromRef, to: stageRef(target) };
}

/** What the team knows of a lead's customer (PATCH /api/leads/:id); null: not known. */
export interface LeadContact {
  name: string | null;
  email: string | null;
  phone: string | null;
}

/** Sets the given fields of a lead of `companyId` (the others are kept) as the operator's (ContactSource); false when it has no such lead. */
export async function updateLeadContact(c: SqlClient, input: { companyId: number; leadId: number; contact: Partial<LeadContact> }): Promise<boolean> {
  const { name, email, phone } = input.contact;
  const rows = await query<{ id: number }>(
    c,
    'lead_contact',
    `update leads set
       name = case when $3 then $4 else name end,
       name_source = case when $3 then case when $4::text is not null then 'operator' end else name_source end,
       email = case when $5 then $6 else email end,
       email_source = case when $5 then case when $6::text is not null then 'operator' end else email_source end,
       phone = case when $7 then $8 else phone end,
       phone_source = case when $7 then case when $8::text is not null then 'operator' end else phone_source end
     where id = $1 and company_id = $2 returning id`,
    [input.leadId, input.companyId, name !== undefined, name ?? null, email !== undefined, email ?? null, phone !== undefined, phone ?? null],
  );
  return rows.length > 0;
}

async function resolveStage(c: SqlClient, companyId: number, pipelineStages: StageRow[], stage: number | string): Promise<StageRow | null> {
  if (typeof stage === 'string') {
    const wanted = normalName(stage);
    const named = pipelineStages.find((s) => normalName(s.name) === wanted);
    if (named || !/^\d{1,9}$/.test(stage.trim())) return named ?? null;
    stage = Number(stage.trim());
  }
  if (!Number.isSafeInteger(stage) || stage < 1 || stage > 2_147_483_647) return null;
  const [byId] = await query<StageRow>(c, 'lead_stage_by_id', 'select id, name, pipeline_id from pipeline_stages where id = $1 and company_id = $2', [stage, companyId]);
  return byId ?? null;
}

/**
 * The agent's `set_lead_stage {stage}` tool: moves the lead of the customer of conversation
 * `conversationId` (creating it in the default pipeline's first stage if the customer has
 * none yet) and records the move as the agent's, with the conversation. `stage` as in
 * moveLead. An unknown stage answers `{ok:false, reason:'stage_not_found', error}` naming the
 * pipeline's stages (for the model to choose again); a conversation that is not the
 * company's, or a company without a default pipeline, `{ok:false, reason:'lead_not_found'}`.
 */
export async function moveLeadToStage(c: SqlClient, input: { companyId: number; conversationId: number; stage: number | string }): Promise<LeadMove> {
  const { companyId, conversationId } = input;
  const leadOf = () =>
    query<{ id: number }>(
      c,
      'lead_of_conversation',
      `select l.id from conversations cv join leads l on l.integration_id = cv.integration_id and l.client_id = cv.client_id
       where cv.id = $1 and cv.company_id = $2`,
      [conversationId, companyId],
    ).then((r) => r[0]?.id ?? null);
  let leadId = await leadOf();
  if (leadId === null) {
    await query(c, 'lead_ensure', insertLeadsFrom('(select company_id, integration_id, client_id from conversations where id = $1 and company_id = $2)'), [conversationId, companyId]);
    leadId = await leadOf();
  }
  if (leadId === null) return { ok: false, reason: 'lead_not_found', error: `conversation ${conversationId} has no lead` };
  return moveLead(c, { companyId, leadId, stage: input.stage, by: { kind: 'agent', conversationId } });
}
