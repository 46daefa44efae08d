import { EntitySchema } from '@mikro-orm/core';

/**
 * Leads (migration 0014): every customer of a company is a lead in a pipeline, keyed by
 * (integration, client id), the same key as the customer's sessions (its conversations).
 * Company-owned like the others: each carries `companyId` and the default-on `tenant`
 * filter. The worker creates leads with plain SQL (actors/tables/conversations.ts); lib/leads.ts moves them.
 */
const tenantFilter = {
  tenant: {
    name: 'tenant',
    cond: (args: { companyId: number }) => ({ companyId: args.companyId }),
    default: true,
  },
};

export interface Lead {
  id: number;
  companyId: number;
  integrationId: number;
  /** The helpdesk client_id or the webchat visitor id. */
  clientId: string;
  pipelineId: number;
  stageId: number;
  /** What the team knows of the customer (PATCH /api/leads/:id); shown as the conversation's customer. */
  name: string | null;
  email: string | null;
  phone: string | null;
  /** Who gave the email (migration 0031): only an `operator`'s or a `verified` one is trusted by actions. */
  emailSource: 'operator' | 'verified' | 'customer' | 'helpdesk' | null;
  /** The host page's id of the customer, once its identity hash verified (webchat `identify`). */
  verifiedId: string | null;
  /** The customer's first contact. */
  createdAt: Date;
  /** When the lead entered its current stage (its first contact until it is moved). */
  stageChangedAt: Date;
}

export const LeadSchema = new EntitySchema<Lead>({
  name: 'Lead',
  tableName: 'leads',
  filters: tenantFilter,
  properties: {
    id: { type: 'integer', primary: true, autoincrement: true },
    companyId: { type: 'integer' },
    integrationId: { type: 'integer' },
    clientId: { type: 'text' },
    pipelineId: { type: 'integer' },
    stageId: { type: 'integer' },
    name: { type: 'text', nullable: true },
    email: { type: 'text', nullable: true },
    phone: { type: 'text', nullable: true },
    emailSource: { type: 'text', nullable: true },
    verifiedId: { type: 'text', nullable: true },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
    stageChangedAt: { type: 'datetime', defaultRaw: 'now()' },
  },
});

/** Who moved a lead: an operator (session), a company API token, or the agent of a conversation. */
export type LeadMovedBy = 'operator' | 'api_token' | 'agent';

export interface LeadStageMove {
  id: string;
  companyId: number;
  leadId: number;
  /** null: the stage it left no longer exists. */
  fromStageId: number | null;
  toStageId: number;
  movedBy: LeadMovedBy;
  userId: string | null;
  apiTokenId: number | null;
  conversationId: number | null;
  at: Date;
}

export const LeadStageMoveSchema = new EntitySchema<LeadStageMove>({
  name: 'LeadStageMove',
  tableName: 'lead_stage_moves',
  filters: tenantFilter,
  properties: {
    id: { type: 'bigint', primary: true, autoincrement: true },
    companyId: { type: 'integer' },
    leadId: { type: 'integer' },
    fromStageId: { type: 'integer', nullable: true },
    toStageId: { type: 'integer' },
    movedBy: { type: 'text' },
    userId: { type: 'uuid', nullable: true },
    apiTokenId: { type: 'integer', nullable: true },
    conversationId: { type: 'integer', nullable: true },
    at: { type: 'datetime', defaultRaw: 'now()' },
  },
});

export const leadEntities = [LeadSchema, LeadStageMoveSchema];
