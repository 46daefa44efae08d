import { BigIntType, EntitySchema } from '@mikro-orm/core';
import { conversationEntities } from './conversation-entities.js';
import { leadEntities } from './lead-entities.js';
import { actionEntities } from './action-entities.js';
import { replayEntities } from './replay-entities.js';
import type { BusinessHours } from '../lib/agents/hours.js';

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
  /** Held by model calls in flight (their estimated cost, lib/credit.ts); settled or released when each call ends. */
  reservedUsd: string;
  /** Model spend allowed per UTC day (decimal string); past it conversations go to a human. null: no cap. */
  spendCapUsdPerDay: string | null;
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
    reservedUsd: { type: 'decimal', precision: 18, scale: 6, defaultRaw: '0' },
    spendCapUsdPerDay: { type: 'decimal', precision: 18, scale: 6, nullable: true },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
  },
});

/** `owner`: who registered (and whom an owner made one); `admin`: everything but owners; `operator`: conversations, leads, canned replies. */
export type UserRole = 'owner' | 'admin' | 'operator';

export interface User {
  id: string;
  email: string;
  passwordHash: string;
  companyId: number;
  role: UserRole;
  displayName: string | null;
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
    role: { type: 'text', default: 'owner' },
    displayName: { type: 'text', nullable: true },
    isSuperadmin: { type: 'boolean', default: false },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
  },
});

/** An invitation to join a company (migration 0021): its token is shown once and stored as a SHA-256 hash. */
export interface UserInvitation {
  id: number;
  companyId: number;
  email: string;
  role: UserRole;
  displayName: string | null;
  tokenHash: string;
  createdBy: string | null;
  createdAt: Date;
  expiresAt: Date;
  acceptedAt: Date | null;
}

export const UserInvitationSchema = new EntitySchema<UserInvitation>({
  name: 'UserInvitation',
  tableName: 'user_invitations',
  filters: tenantFilter,
  properties: {
    id: { type: 'integer', primary: true, autoincrement: true },
    companyId: { type: 'integer' },
    email: { type: 'text' },
    role: { type: 'text' },
    displayName: { type: 'text', nullable: true },
    tokenHash: { type: 'text', unique: true },
    createdBy: { type: 'uuid', nullable: true },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
    expiresAt: { type: 'datetime' },
    acceptedAt: { type: 'datetime', nullable: true },
  },
});

/** A reply an operator inserts by its shortcut (`/` in the conversation view). */
export interface CannedReply {
  id: number;
  companyId: number;
  shortcut: string;
  text: string;
  createdBy: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export const CannedReplySchema = new EntitySchema<CannedReply>({
  name: 'CannedReply',
  tableName: 'canned_replies',
  filters: tenantFilter,
  properties: {
    id: { type: 'integer', primary: true, autoincrement: true },
    companyId: { type: 'integer' },
    shortcut: { type: 'text' },
    text: { type: 'text' },
    createdBy: { type: 'uuid', nullable: true },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
    updatedAt: { type: 'datetime', defaultRaw: 'now()' },
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

export type LedgerKind = 'signup_bonus' | 'model_usage' | 'replay_usage' | 'top_up' | 'adjustment';

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
  agentId: number | null;
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
    inputTokens: { type: new BigIntType('number'), nullable: true },
    outputTokens: { type: new BigIntType('number'), nullable: true },
    model: { type: 'text', nullable: true },
    conversationId: { type: 'integer', nullable: true },
    agentId: { type: 'integer', nullable: true },
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
  /** A PostgreSQL text-search configuration (`simple`, `english`, `russian`, …). */
  language: string;
  /** An OpenAI-compatible embeddings server; null: no vectors. */
  embeddingBaseUrl: string | null;
  embeddingModel: string | null;
  /** Sealed with lib/secrets.ts; write-only through the API. */
  embeddingApiKeySealed: string | null;
  /** Learnt from the first answer of the embedding server. */
  embeddingDimensions: number | null;
  chunkCount: number;
  /** Bumped by every change of the base's chunks or synonyms (vector and answer caches compare it). */
  contentVersion: string;
  /** The company's own synonym groups (words or phrases that mean the same; lib/knowledge/store.ts indexes them). */
  synonyms: string[][];
  createdAt: Date;
  updatedAt: Date;
}

export const KnowledgeBaseSchema = new EntitySchema<KnowledgeBase>({
  name: 'KnowledgeBase',
  tableName: 'knowledge_bases',
  filters: tenantFilter,
  properties: {
    id: { type: 'integer', primary: true, autoincrement: true },
    companyId: { type: 'integer' },
    name: { type: 'text' },
    language: { type: 'text', default: 'auto' },
    embeddingBaseUrl: { type: 'text', nullable: true },
    embeddingModel: { type: 'text', nullable: true },
    embeddingApiKeySealed: { type: 'text', nullable: true, lazy: true },
    embeddingDimensions: { type: 'integer', nullable: true },
    chunkCount: { type: 'integer', default: 0 },
    contentVersion: { type: 'bigint', default: 0 },
    synonyms: { type: 'json', onCreate: () => [] },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
    updatedAt: { type: 'datetime', defaultRaw: 'now()' },
  },
});

export type DocumentStatus = 'processing' | 'ready' | 'failed';

/** Where a document came from. */
export interface DocumentSource {
  type: 'text' | 'markdown' | 'html' | 'pdf' | 'url';
  filename?: string;
  url?: string;
  /** Size of the original (upload or page) in bytes. */
  bytes?: number;
}

export interface KnowledgeDocument {
  id: number;
  companyId: number;
  knowledgeBaseId: number;
  title: string;
  /** The structured text (lib/knowledge/chunker.ts); null until extracted. */
  content: string | null;
  /** How `content` is read: `text` (plain) or `markdown` (headings); the original format is in `source`. */
  format: string;
  source: DocumentSource;
  status: DocumentStatus;
  progress: number;
  error: string | null;
  chunkCount: number;
  /** The uploaded bytes while they wait to be read. */
  raw: Buffer | null;
  attempts: number;
  leaseUntil: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** Chunks (knowledge_chunks) and terms (knowledge_terms) are written and read with raw SQL (lib/knowledge/). */
export const KnowledgeDocumentSchema = new EntitySchema<KnowledgeDocument>({
  name: 'KnowledgeDocument',
  tableName: 'knowledge_documents',
  filters: tenantFilter,
  properties: {
    id: { type: 'integer', primary: true, autoincrement: true },
    companyId: { type: 'integer' },
    knowledgeBaseId: { type: 'integer' },
    title: { type: 'text' },
    content: { type: 'text', nullable: true, lazy: true },
    format: { type: 'text', default: 'markdown' },
    source: { type: 'json' },
    status: { type: 'text', default: 'ready' },
    progress: { type: 'integer', default: 100 },
    error: { type: 'text', nullable: true },
    chunkCount: { type: 'integer', default: 0 },
    raw: { type: 'blob', nullable: true, lazy: true },
    attempts: { type: 'integer', default: 0 },
    leaseUntil: { type: 'datetime', nullable: true },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
    updatedAt: { type: 'datetime', defaultRaw: 'now()' },
  },
});

export interface AgentEvaluation {
  id: number;
  companyId: number;
  agentId: number | null;
  passed: number;
  failed: number;
  cases: unknown[];
  createdAt: Date;
}

export const AgentEvaluationSchema = new EntitySchema<AgentEvaluation>({
  name: 'AgentEvaluation',
  tableName: 'agent_evaluations',
  filters: tenantFilter,
  properties: {
    id: { type: 'integer', primary: true, autoincrement: true },
    companyId: { type: 'integer' },
    agentId: { type: 'integer', nullable: true },
    passed: { type: 'integer' },
    failed: { type: 'integer' },
    cases: { type: 'json' },
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
  /** This agent's model calls in flight at most (per worker); null: no cap of its own. */
  modelMaxConcurrency: number | null;
  knowledgeBaseId: number | null;
  /** Sent to the customer whenever the agent hands off; null = the default notice. */
  handoffMessage: string | null;
  /** Model spend allowed per UTC day for this agent (decimal string); null: no cap of its own. */
  spendCapUsdPerDay: string | null;
  /** When no passage of the knowledge base is relevant enough: hand off (after the fallback text) or only answer the fallback text. */
  onNoAnswer: 'handoff' | 'fallback';
  /** What the customer is told when nothing relevant is found; null = the default. */
  fallbackMessage: string | null;
  /** The short reply to a greeting ("hi", "привет"); null = the default text in the customer's language. */
  greeting: string | null;
  /** The reply to a message that is not about this business (`out_of_scope`); null = a default polite line in the customer's language. */
  outOfScopeText: string | null;
  /** How many of the best passages a model agent is given, with their confidence (0–20; migration 0028). */
  knowledgePassages: number;
  /** A passage's confidence (0–1, lib/knowledge/confidence.ts) below which the agent has no answer. */
  relevanceThreshold: number;
  /** Customer messages within this many ms of each other are answered once, together (0: off). */
  debounceMs: number;
  /** Business hours and what the agent does outside them; null: always open. */
  hours: BusinessHours | null;
  /** A conversation the agent answered last closes, resolved, after its customer is silent this long (0: never; migration 0032). */
  autoResolveMinutes: number;
  /** The current version (migration 0023; lib/agents/versions.ts records each one). */
  version: number;
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
    modelMaxConcurrency: { type: 'integer', nullable: true },
    knowledgeBaseId: { type: 'integer', nullable: true },
    handoffMessage: { type: 'text', nullable: true },
    spendCapUsdPerDay: { type: 'decimal', precision: 18, scale: 6, nullable: true },
    onNoAnswer: { type: 'text', default: 'handoff' },
    fallbackMessage: { type: 'text', nullable: true },
    greeting: { type: 'text', nullable: true },
    outOfScopeText: { type: 'text', nullable: true },
    knowledgePassages: { type: 'integer', default: 5 },
    relevanceThreshold: { type: 'float', default: 0.35 },
    debounceMs: { type: 'integer', default: 0 },
    hours: { type: 'json', nullable: true },
    autoResolveMinutes: { type: 'integer', default: 1440 },
    version: { type: 'integer', default: 1 },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
    updatedAt: { type: 'datetime', defaultRaw: 'now()' },
  },
});

/** `whatsapp` (WhatsApp Cloud API) and `telegram` (Telegram Bot API): direct channels (lib/channels/). */
export type IntegrationType = 'helpdesk' | 'webchat' | 'whatsapp' | 'telegram';

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
  /** Helpdesk: the Chat2Desk operator group a handed-off dialog is transferred to; null: none. */
  handoffGroupId: number | null;
  /** Webchat: what the widget asks before the first message (migration 0031). */
  prechatForm: PrechatForm;
  /** WhatsApp: the business phone number's id in the Graph API (migration 0034). */
  phoneNumberId: string | null;
  /** WhatsApp: the token Meta's GET probe of the webhook must echo (generated; shown to the company to paste into Meta's dashboard). */
  verifyToken: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** The webchat widget's pre-chat form: none, the name, or the name and email. */
export const PRECHAT_FORMS = ['off', 'name', 'name_email'] as const;
export type PrechatForm = (typeof PRECHAT_FORMS)[number];

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
    handoffGroupId: { type: 'integer', nullable: true },
    prechatForm: { type: 'text', default: 'off' },
    phoneNumberId: { type: 'text', nullable: true },
    verifyToken: { type: 'text', nullable: true, lazy: true },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
    updatedAt: { type: 'datetime', defaultRaw: 'now()' },
  },
});

export const entities = [
  CompanySchema,
  UserSchema,
  UserInvitationSchema,
  CannedReplySchema,
  AuthSessionSchema,
  RefreshTokenSchema,
  ApiTokenSchema,
  LedgerEntrySchema,
  PipelineSchema,
  PipelineStageSchema,
  KnowledgeBaseSchema,
  KnowledgeDocumentSchema,
  AgentEvaluationSchema,
  AgentSchema,
  IntegrationSchema,
  ...conversationEntities,
  ...leadEntities,
  ...actionEntities,
  ...replayEntities,
];
