import type { EntityManager } from '../db.js';
import type { Agent } from '../../schema/entities.js';
import { AgentVersionSchema, type AgentVersion } from '../../schema/replay-entities.js';
import { DEFAULT_PASSAGES } from './answer.js';

/**
 * An agent's versions (contract.md § Replay before publishing): every change to what the
 * agent does (all its fields but its name) makes a new version, numbered 1, 2, 3, … per
 * agent, with the settings it has from then on, the fields it changed and who made it.
 * `agents.version` is the current one; each answer records the version that gave it
 * (`conversation_messages.agent_version`). This module owns `agent_versions`: the routes
 * (gateway/routes/agents.ts, agent-versions.ts, replays.ts) record versions through it.
 */

/** The agent fields that make its behaviour (all but its name), as the entity names them; the model key sealed. */
export type AgentSettings = Pick<
  Agent,
  | 'systemPrompt' | 'modelProvider' | 'modelName' | 'modelBaseUrl' | 'modelApiKeySealed' | 'modelPricing' | 'modelMaxConcurrency' | 'knowledgeBaseId'
  | 'handoffMessage' | 'spendCapUsdPerDay' | 'onNoAnswer' | 'fallbackMessage' | 'greeting' | 'outOfScopeText' | 'relevanceThreshold'
  | 'knowledgePassages' | 'debounceMs' | 'hours'
>;

/**
 * Entity property → the API field a version's `changes` names: systemPrompt, model.provider, model.name, model.baseUrl,
 * model.apiKey, model.pricing, model.maxConcurrency, knowledgeBaseId, handoffMessage, spendCapUsdPerDay, onNoAnswer,
 * fallbackMessage, greeting, outOfScopeText, relevanceThreshold, knowledgePassages, debounceMs, hours
 */
export const SETTING_FIELDS: Readonly<Record<keyof AgentSettings, string>> = Object.freeze({
  systemPrompt: 'systemPrompt',
  modelProvider: 'model.provider',
  modelName: 'model.name',
  modelBaseUrl: 'model.baseUrl',
  modelApiKeySealed: 'model.apiKey',
  modelPricing: 'model.pricing',
  modelMaxConcurrency: 'model.maxConcurrency',
  knowledgeBaseId: 'knowledgeBaseId',
  handoffMessage: 'handoffMessage',
  spendCapUsdPerDay: 'spendCapUsdPerDay',
  onNoAnswer: 'onNoAnswer',
  fallbackMessage: 'fallbackMessage',
  greeting: 'greeting',
  outOfScopeText: 'outOfScopeText',
  relevanceThreshold: 'relevanceThreshold',
  knowledgePassages: 'knowledgePassages',
  debounceMs: 'debounceMs',
  hours: 'hours',
});

const SETTING_KEYS = Object.keys(SETTING_FIELDS) as (keyof AgentSettings)[];

/** The agent's behaviour settings: the JSON shape migration 0023 backfills for existing agents. */
export function settingsOf(agent: Pick<Agent, keyof AgentSettings>): AgentSettings {
  return {
    systemPrompt: agent.systemPrompt,
    modelProvider: agent.modelProvider,
    modelName: agent.modelName,
    modelBaseUrl: agent.modelBaseUrl,
    modelApiKeySealed: agent.modelApiKeySealed,
    modelPricing: agent.modelPricing,
    modelMaxConcurrency: agent.modelMaxConcurrency ?? null,
    knowledgeBaseId: agent.knowledgeBaseId,
    handoffMessage: agent.handoffMessage,
    spendCapUsdPerDay: agent.spendCapUsdPerDay,
    onNoAnswer: agent.onNoAnswer,
    fallbackMessage: agent.fallbackMessage,
    greeting: agent.greeting,
    outOfScopeText: agent.outOfScopeText ?? null,
    relevanceThreshold: agent.relevanceThreshold,
    knowledgePassages: agent.knowledgePassages ?? DEFAULT_PASSAGES,
    debounceMs: agent.debounceMs,
    hours: agent.hours,
  };
}

/** A decimal string without the zeros that do not change its value ("2.500000" and "02.5" → "2.5"). */
const decimalKey = (d: string): string => d.trim().replace(/^0+(?=\d)/, '').replace(/(\.\d*?)0+$/, '$1').replace(/\.$/, '');

/** JSON with object keys sorted: jsonb gives keys back in its own order, which is not a change. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.keys(value).sort().map((k) => [k, canonical((value as Record<string, unknown>)[k])]));
  }
  return value;
}

/** A setting as compared: what reads back the same from the database is the same value. */
function comparable(key: keyof AgentSettings, value: unknown): string {
  if (value === undefined || value === null) return 'null';
  if (key === 'spendCapUsdPerDay') return decimalKey(String(value));
  // A real (float4) column: 0.123456789 is read back as 0.12345679.
  if (key === 'relevanceThreshold') return String(Math.fround(Number(value)));
  return JSON.stringify(canonical(value));
}

/** The API fields whose settings differ, in SETTING_FIELDS order (a sealed key differs when it was sent again). */
export function changedFields(before: AgentSettings, after: AgentSettings): string[] {
  return SETTING_KEYS.filter((k) => comparable(k, before[k]) !== comparable(k, after[k])).map((k) => SETTING_FIELDS[k]);
}

/**
 * When the agent's settings differ from `before`: agent.version += 1 and a version row is
 * persisted (the caller flushes, in the transaction that saves the agent: of two changes at
 * once, the second's row breaks the unique (agent_id, version) and nothing of it is saved);
 * null when nothing changed.
 */
export function recordVersion(em: EntityManager, agent: Agent, before: AgentSettings, o: { createdBy: string | null; restoredFrom?: number; replayId?: number }): AgentVersion | null {
  const settings = settingsOf(agent);
  const changes = changedFields(before, settings);
  if (changes.length === 0) return null;
  agent.version += 1;
  return persistVersion(em, agent, settings, changes, o);
}

/** The row of the agent's version as it is now. */
function persistVersion(em: EntityManager, agent: Agent, settings: AgentSettings, changes: string[], o: { createdBy: string | null; restoredFrom?: number; replayId?: number }): AgentVersion {
  return em.create(AgentVersionSchema, {
    companyId: agent.companyId,
    agentId: agent.id,
    version: agent.version,
    settings: settings as unknown as Record<string, unknown>,
    changes,
    createdBy: o.createdBy,
    restoredFrom: o.restoredFrom ?? null,
    replayId: o.replayId ?? null,
    createdAt: new Date(),
  } as never);
}

/** Version 1 of a new agent (persisted, the caller flushes; the agent must have its id). */
export function recordFirstVersion(em: EntityManager, agent: Agent, createdBy: string | null): AgentVersion {
  agent.version = 1;
  return persistVersion(em, agent, settingsOf(agent), [], { createdBy });
}

/**
 * The settings of a stored version as the agent's fields: those it holds (a version
 * recorded before a setting existed keeps the agent's own for it).
 */
export function storedSettings(v: AgentVersion): Partial<AgentSettings> {
  const stored = (v.settings ?? {}) as Record<string, unknown>;
  return Object.fromEntries(SETTING_KEYS.filter((k) => k in stored).map((k) => [k, stored[k]])) as Partial<AgentSettings>;
}

export function versionView(v: AgentVersion, currentVersion: number) {
  return {
    version: v.version,
    createdAt: new Date(v.createdAt).toISOString(),
    createdBy: v.createdBy,
    changes: v.changes,
    restoredFrom: v.restoredFrom,
    replayId: v.replayId,
    current: v.version === currentVersion,
  };
}
