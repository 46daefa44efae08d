import { EntitySchema } from '@mikro-orm/core';
import { conversationEntities } from './conversation-entities.js';

/**
 * Entities of the data layer (MikroORM EntitySchema, no decorators). Every company-owned
 * entity carries `companyId` and the `tenant` filter, which is on by default and needs a
 * `companyId` parameter: a query that forgot its tenant fails instead of leaking rows.
 * Use lib/tenancy.ts to get an EntityManager scoped to one company.
 */
const tenantFilter = {
  tenant: {
    name: 'tenant',
    cond: (args: { companyId: number }) => ({ companyId: args.companyId }),
    default: true,
  },
};

export interface Company {
  id: number;
  publicId: string;
  name: string;
  balanceUsd: string;
  createdAt: Date;
}

export const CompanySchema = new EntitySchema<Company>({
  name: 'Company',
  tableName: 'companies',
  properties: {
    id: { type: 'integer', primary: true, autoincrement: true },
    publicId: { type: 'uuid', unique: true },
    name: { type: 'text' },
    balanceUsd: { type: 'decimal', precision: 18, scale: 6 },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
  },
});

export interface User {
  id: string;
  email: string;
  passwordHash: string;
  companyId: number;
  isSuperadmin: boolean;
  createdAt: Date;
}

export const UserSchema = new EntitySchema<User>({
  name: 'User',
  tableName: 'users',
  properties: {
    id: { type: 'uuid', primary: true },
    email: { type: 'text', unique: true },
    passwordHash: { type: 'text', lazy: true },
    companyId: { type: 'integer' },
    isSuperadmin: { type: 'boolean', default: false },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
  },
});

export interface AuthSession {
  id: string;
  userId: string;
  companyId: number;
  createdAt: Date;
  expiresAt: Date;
  revokedAt: Date | null;
  revokedReason: string | null;
}

export const AuthSessionSchema = new EntitySchema<AuthSession>({
  name: 'AuthSession',
  tableName: 'auth_sessions',
  properties: {
    id: { type: 'uuid', primary: true },
    userId: { type: 'uuid' },
    companyId: { type: 'integer' },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
    expiresAt: { type: 'datetime' },
    revokedAt: { type: 'datetime', nullable: true },
    revokedReason: { type: 'text', nullable: true },
  },
});

export interface RefreshToken {
  id: string;
  sessionId: string;
  tokenHash: string;
  createdAt: Date;
  expiresAt: Date;
  usedAt: Date | null;
}

export const RefreshTokenSchema = new EntitySchema<RefreshToken>({
  name: 'RefreshToken',
  tableName: 'refresh_tokens',
  properties: {
    id: { type: 'bigint', primary: true, autoincrement: true },
    sessionId: { type: 'uuid' },
    tokenHash: { type: 'text', unique: true },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
    expiresAt: { type: 'datetime' },
    usedAt: { type: 'datetime', nullable: true },
  },
});

export interface ApiToken {
  id: number;
  companyId: number;
  name: string;
  prefix: string;
  tokenHash: string;
  createdBy: string | null;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

export const ApiTokenSchema = new EntitySchema<ApiToken>({
  name: 'ApiToken',
  tableName: 'api_tokens',
  filters: tenantFilter,
  properties: {
    id: { type: 'integer', primary: true, autoincrement: true },
    companyId: { type: 'integer' },
    name: { type: 'text' },
    prefix: { type: 'text' },
    tokenHash: { type: 'text', unique: true },
    createdBy: { type: 'uuid', nullable: true },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
    lastUsedAt: { type: 'datetime', nullable: true },
    revokedAt: { type: 'datetime', nullable: true },
  },
});

export type LedgerKind = 'signup_bonus' | 'model_usage' | 'top_up' | 'adjustment';

export interface LedgerEntry {
  id: string;
  companyId: number;
  kind: LedgerKind;
  amountUsd: string;
  balanceAfterUsd: string;
  inputTokens: number | null;
  outputTokens: number | null;
  model: string | null;
  conversationId: number | null;
  at: Date;
}

export const LedgerEntrySchema = new EntitySchema<LedgerEntry>({
  name: 'LedgerEntry',
  tableName: 'credit_ledger',
  filters: tenantFilter,
  properties: {
    id: { type: 'bigint', primary: true, autoincrement: true },
    companyId: { type: 'integer' },
    kind: { type: 'text' },
    amountUsd: { type: 'decimal', precision: 18, scale: 6 },
    balanceAfterUsd: { type: 'decimal', precision: 18, scale: 6 },
    inputTokens: { type: 'integer', nullable: true },
    outputTokens: { type: 'integer', nullable: true },
    model: { type: 'text', nullable: true },
    conversationId: { type: 'integer', nullable: true },
    at: { type: 'datetime', defaultRaw: 'now()' },
  },
});

export interface Pipeline {
  id: number;
  companyId: number;
  name: string;
  isDefault: boolean;
  createdAt: Date;
}

export const PipelineSchema = new EntitySchema<Pipeline>({
  name: 'Pipeline',
  tableName: 'pipelines',
  filters: tenantFilter,
  properties: {
    id: { type: 'integer', primary: true, autoincrement: true },
    companyId: { type: 'integer' },
    name: { type: 'text' },
    isDefault: { type: 'boolean', default: false },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
  },
});

export interface PipelineStage {
  id: number;
  companyId: number;
  pipelineId: number;
  name: string;
  position: number;
  isWon: boolean;
  isLost: boolean;
}

export const PipelineStageSchema = new EntitySchema<PipelineStage>({
  name: 'PipelineStage',
  tableName: 'pipeline_stages',
  filters: tenantFilter,
  properties: {
    id: { type: 'integer', primary: true, autoincrement: true },
    companyId: { type: 'integer' },
    pipelineId: { type: 'integer' },
    name: { type: 'text' },
    position: { type: 'integer' },
    isWon: { type: 'boolean', default: false },
    isLost: { type: 'boolean', default: false },
  },
});

export interface KnowledgeBase {
  id: number;
  companyId: number;
  name: string;
  createdAt: Date;
}

export const KnowledgeBaseSchema = new EntitySchema<KnowledgeBase>({
  name: 'KnowledgeBase',
  tableName: 'knowledge_bases',
  filters: tenantFilter,
  properties: {
    id: { type: 'integer', primary: true, autoincrement: true },
    companyId: { type: 'integer' },
    name: { type: 'text' },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
  },
});

export interface KnowledgeDocument {
  id: number;
  companyId: number;
  knowledgeBaseId: number;
  title: string;
  content: string;
  createdAt: Date;
}

/**
 * The table also has a generated `search_vector` (tsvector) column, deliberately not mapped:
 * PostgreSQL computes it, and lib/knowledge.ts queries it with raw SQL.
 */
export const KnowledgeDocumentSchema = new EntitySchema<KnowledgeDocument>({
  name: 'KnowledgeDocument',
  tableName: 'knowledge_documents',
  filters: tenantFilter,
  properties: {
    id: { type: 'integer', primary: true, autoincrement: true },
    companyId: { type: 'integer' },
    knowledgeBaseId: { type: 'integer' },
    title: { type: 'text' },
    content: { type: 'text' },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
  },
});

export interface ModelPricing {
  inputUsdPerMTok: string;
  outputUsdPerMTok: string;
}

export interface Agent {
  id: number;
  companyId: number;
  name: string;
  systemPrompt: string;
  modelProvider: 'builtin' | 'openai';
  modelName: string | null;
  modelBaseUrl: string | null;
  /** Sealed with lib/secrets.ts; write-only through the API. */
  modelApiKeySealed: string | null;
  modelPricing: ModelPricing | null;
  knowledgeBaseId: number | null;
  /** Sent to the customer whenever the agent hands off; null = the default notice. */
  handoffMessage: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export const AgentSchema = new EntitySchema<Agent>({
  name: 'Agent',
  tableName: 'agents',
  filters: tenantFilter,
  properties: {
    id: { type: 'integer', primary: true, autoincrement: true },
    companyId: { type: 'integer' },
    name: { type: 'text' },
    systemPrompt: { type: 'text' },
    modelProvider: { type: 'text' },
    modelName: { type: 'text', nullable: true },
    modelBaseUrl: { type: 'text', nullable: true },
    modelApiKeySealed: { type: 'text', nullable: true, lazy: true },
    modelPricing: { type: 'json', nullable: true },
    knowledgeBaseId: { type: 'integer', nullable: true },
    handoffMessage: { type: 'text', nullable: true },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
    updatedAt: { type: 'datetime', defaultRaw: 'now()' },
  },
});

export type IntegrationType = 'helpdesk' | 'webchat';

export interface Integration {
  id: number;
  companyId: number;
  type: IntegrationType;
  name: string;
  agentId: number | null;
  active: boolean;
  /** Helpdesk instance base URL (Chat2Desk global or Europe). */
  apiUrl: string | null;
  region: 'global' | 'europe' | null;
  /** Helpdesk API token, sealed (lib/secrets.ts). */
  apiTokenSealed: string | null;
  webhookSecretSealed: string;
  /** The secret before the last rotation; verifies until previousSecretExpiresAt. */
  previousSecretSealed: string | null;
  previousSecretExpiresAt: Date | null;
  webhookStatus: 'pending' | 'ok';
  webhookRegisteredAt: Date | null;
  /** The helpdesk's id of our webhook registration. */
  webhookRemoteId: string | null;
  /** Webchat: Origins allowed to open the socket; empty = any. */
  allowedOrigins: string[];
  createdAt: Date;
  updatedAt: Date;
}

export const IntegrationSchema = new EntitySchema<Integration>({
  name: 'Integration',
  tableName: 'integrations',
  filters: tenantFilter,
  properties: {
    id: { type: 'integer', primary: true, autoincrement: true },
    companyId: { type: 'integer' },
    type: { type: 'text' },
    name: { type: 'text' },
    agentId: { type: 'integer', nullable: true },
    active: { type: 'boolean', default: true },
    apiUrl: { type: 'text', nullable: true },
    region: { type: 'text', nullable: true },
    apiTokenSealed: { type: 'text', nullable: true, lazy: true },
    webhookSecretSealed: { type: 'text', lazy: true },
    previousSecretSealed: { type: 'text', nullable: true, lazy: true },
    previousSecretExpiresAt: { type: 'datetime', nullable: true },
    webhookStatus: { type: 'text', default: 'pending' },
    webhookRegisteredAt: { type: 'datetime', nullable: true },
    webhookRemoteId: { type: 'text', nullable: true },
    allowedOrigins: { type: 'json', default: '[]' },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
    updatedAt: { type: 'datetime', defaultRaw: 'now()' },
  },
});

export const entities = [
  CompanySchema,
  UserSchema,
  AuthSessionSchema,
  RefreshTokenSchema,
  ApiTokenSchema,
  LedgerEntrySchema,
  PipelineSchema,
  PipelineStageSchema,
  KnowledgeBaseSchema,
  KnowledgeDocumentSchema,
  AgentSchema,
  IntegrationSchema,
  ...conversationEntities,
];
