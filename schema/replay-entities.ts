import { EntitySchema } from '@mikro-orm/core';

/**
 * An agent's versions and the replays of its past conversations with changes (migration
 * 0023, contract.md § Replay before publishing). Company-owned like the others: each carries
 * `companyId` and the default-on `tenant` filter. Versions are written by the API
 * (lib/agents/versions.ts); replays are created and read by the API and answered by the
 * workers (lib/agents/replays/store.ts owns their SQL).
 */
const tenantFilter = {
  tenant: {
    name: 'tenant',
    cond: (args: { companyId: number }) => ({ companyId: args.companyId }),
    default: true,
  },
};

export interface AgentVersion {
  id: number;
  companyId: number;
  agentId: number;
  /** 1, 2, 3, … per agent. */
  version: number;
  /** The agent's behaviour settings in this version (lib/agents/versions.ts AgentSettings; the model key sealed). */
  settings: Record<string, unknown>;
  /** The fields this version changed (`systemPrompt`, `model.name`, …); empty for the first. */
  changes: string[];
  /** The user who made it; null: an API token, or a version recorded by a migration. */
  createdBy: string | null;
  /** A restore: the version it copied. */
  restoredFrom: number | null;
  /** A publish: the replay whose changes it applied. */
  replayId: number | null;
  createdAt: Date;
}

export const AgentVersionSchema = new EntitySchema<AgentVersion>({
  name: 'AgentVersion',
  tableName: 'agent_versions',
  filters: tenantFilter,
  properties: {
    id: { type: 'integer', primary: true, autoincrement: true },
    companyId: { type: 'integer' },
    agentId: { type: 'integer' },
    version: { type: 'integer' },
    settings: { type: 'json', lazy: true },
    changes: { type: 'text[]', default: '{}' },
    createdBy: { type: 'uuid', nullable: true },
    restoredFrom: { type: 'integer', nullable: true },
    replayId: { type: 'integer', nullable: true },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
  },
});

export type ReplayStatus = 'running' | 'done' | 'failed';

export interface AgentReplay {
  id: number;
  companyId: number;
  agentId: number;
  status: ReplayStatus;
  /** The agent fields as PATCH /api/agents/:id takes them (a model key sealed as `model.apiKeySealed`). */
  changes: Record<string, unknown>;
  /** The behaviour the replay answers with: the base version's settings with `changes` applied (lib/agents/versions.ts AgentSettings). */
  settings: Record<string, unknown>;
  /** The fields `changes` sets (`systemPrompt`, `model.name`, …). */
  changeFields: string[];
  /** The agent's version the changes were applied to. */
  baseVersion: number;
  total: number;
  /** Why a failed replay stopped. */
  error: string | null;
  createdBy: string | null;
  leaseOwner: string | null;
  leaseUntil: Date | null;
  /** The version its publish made. */
  publishedVersion: number | null;
  createdAt: Date;
  finishedAt: Date | null;
}

export const AgentReplaySchema = new EntitySchema<AgentReplay>({
  name: 'AgentReplay',
  tableName: 'agent_replays',
  filters: tenantFilter,
  properties: {
    id: { type: 'integer', primary: true, autoincrement: true },
    companyId: { type: 'integer' },
    agentId: { type: 'integer' },
    status: { type: 'text', default: 'running' },
    changes: { type: 'json', lazy: true },
    settings: { type: 'json', lazy: true },
    changeFields: { type: 'text[]' },
    baseVersion: { type: 'integer' },
    total: { type: 'integer' },
    error: { type: 'text', nullable: true },
    createdBy: { type: 'uuid', nullable: true },
    leaseOwner: { type: 'text', nullable: true },
    leaseUntil: { type: 'datetime', nullable: true },
    publishedVersion: { type: 'integer', nullable: true },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
    finishedAt: { type: 'datetime', nullable: true },
  },
});

/** An answer as a replay compares it: what the customer got, or would get. */
export interface ReplayAnswer {
  kind: 'reply' | 'handoff';
  text: string;
  sources: { documentId: number; chunkId: number; title: string }[];
  /** Why the agent handed over (handoff only). */
  reason?: string;
}

export interface AgentReplayItem {
  id: string;
  replayId: number;
  companyId: number;
  /** 1, 2, 3, … in the replay: conversations oldest first, each one's messages in order. */
  seq: number;
  conversationId: number;
  /** The customer message answered again. */
  messageId: string;
  question: string;
  before: ReplayAnswer;
  /** null until answered. */
  after: ReplayAnswer | null;
  changed: boolean | null;
  costUsd: string;
  doneAt: Date | null;
}

export const AgentReplayItemSchema = new EntitySchema<AgentReplayItem>({
  name: 'AgentReplayItem',
  tableName: 'agent_replay_items',
  filters: tenantFilter,
  properties: {
    id: { type: 'bigint', primary: true, autoincrement: true },
    replayId: { type: 'integer' },
    companyId: { type: 'integer' },
    seq: { type: 'integer' },
    conversationId: { type: 'integer' },
    messageId: { type: 'bigint' },
    question: { type: 'text' },
    before: { type: 'json' },
    after: { type: 'json', nullable: true },
    changed: { type: 'boolean', nullable: true },
    costUsd: { type: 'decimal', precision: 18, scale: 6, default: 0 },
    doneAt: { type: 'datetime', nullable: true },
  },
});

export const replayEntities = [AgentVersionSchema, AgentReplaySchema, AgentReplayItemSchema];
