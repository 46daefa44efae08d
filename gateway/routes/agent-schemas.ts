import { DEFAULT_FALLBACK_TEXT, DEFAULT_PASSAGES, DEFAULT_RELEVANCE_THRESHOLD } from '../../lib/agents/answer.js';
import { AUTO_RESOLVE_HINT, DEFAULT_AUTO_RESOLVE_MINUTES, MAX_AUTO_RESOLVE_MINUTES } from '../../lib/agents/auto-resolve.js';
import { WEEKDAYS, type BusinessHours } from '../../lib/agents/hours.js';
import { DEFAULT_HANDOFF_TEXT } from '../../lib/conversations.js';
import { formatUsd } from '../../lib/money.js';
import { SETTING_FIELDS } from '../../lib/agents/versions.js';
import type { Agent } from '../../schema/entities.js';
import { arrayOf, BOOLEAN, EXAMPLE_TIME, FRACTION, ID, nullable, object, STRING, TIMESTAMP, USD, UUID } from '../http/schemas.js';
import { bodyValidator, idPathParam, USD_AMOUNT } from '../http/validate.js';
import { EXAMPLE_USER_ID } from './auth.js';

/**
 * What the agent routes (gateway/routes/agents.ts) accept and answer: the bodies they check,
 * the view of an agent with the schema the OpenAPI document shows for it, and its examples.
 */

export interface ModelInput {
  provider?: 'builtin' | 'openai';
  name?: string | null;
  baseUrl?: string | null;
  apiKey?: string | null;
  /** Decimal strings or JSON numbers ("0.15" or 0.15); stored and shown as decimal strings. */
  pricing?: { inputUsdPerMTok: string | number; outputUsdPerMTok: string | number } | null;
  /** This agent's model calls in flight at most, per worker; null: no cap of its own. */
  maxConcurrency?: number | null;
}

export interface AgentInput {
  name?: string;
  systemPrompt?: string;
  model?: ModelInput;
  knowledgeBaseId?: number | null;
  /** Told to the customer when the agent hands off; null restores the default. */
  handoffMessage?: string | null;
  /** This agent's model spend per UTC day; past it its conversations go to a human. null: no cap. */
  spendCapUsdPerDay?: string | null;
  /** Nothing relevant in the knowledge base: hand off after the fallback text, or only answer the fallback text. */
  onNoAnswer?: 'handoff' | 'fallback';
  /** null restores the default. */
  fallbackMessage?: string | null;
  /** The short reply to a greeting; null: a default in the customer's language (a thanks always gets the default). */
  greeting?: string | null;
  /** The reply to a message not about this business; null: a default polite line in the customer's language. */
  outOfScopeText?: string | null;
  relevanceThreshold?: number;
  /** How many of the best passages a model agent is given, with their confidence (0–20). */
  knowledgePassages?: number;
  /** Customer messages within this many ms of each other are answered once, together (0: off). */
  debounceMs?: number;
  /** Business hours; null: always open. */
  hours?: BusinessHours | null;
  /** A conversation the agent answered last closes, resolved, after its customer is silent this many minutes (0: never). */
  autoResolveMinutes?: number;
}


export const DECIMAL = '^\\d{1,9}(\\.\\d{1,9})?$';
/** A price per million tokens: a decimal string (`pattern`) or a JSON number (`minimum` / `maximum`; its decimals are checked by decimalPrice). */
const PRICE = { type: ['string', 'number'], pattern: DECIMAL, minimum: 0, maximum: 999_999_999 };
/** What an agent's `model.pricing` shows: decimal strings, as stored. */
const pricingView = {
  type: ['object', 'null'],
  additionalProperties: false,
  required: ['inputUsdPerMTok', 'outputUsdPerMTok'],
  properties: { inputUsdPerMTok: { type: 'string', pattern: DECIMAL }, outputUsdPerMTok: { type: 'string', pattern: DECIMAL } },
};
const modelSchema = {
  title: 'AgentModelInput',
  type: 'object',
  additionalProperties: false,
  properties: {
    provider: { type: 'string', enum: ['builtin', 'openai'] },
    name: { type: ['string', 'null'], minLength: 1, maxLength: 200 },
    baseUrl: { type: ['string', 'null'], format: 'uri', pattern: '^https?://', maxLength: 2000 },
    apiKey: { type: ['string', 'null'], minLength: 1, maxLength: 4096 },
    pricing: {
      type: ['object', 'null'],
      additionalProperties: false,
      required: ['inputUsdPerMTok', 'outputUsdPerMTok'],
      properties: { inputUsdPerMTok: PRICE, outputUsdPerMTok: PRICE },
    },
    maxConcurrency: { type: ['integer', 'null'], minimum: 1, maximum: 100_000 },
  },
};


/** `["09:00","18:00"]`: a local opening range (24:00 ends at midnight; an end before the start runs overnight). */
const HOURS_RANGE = { type: 'array', minItems: 2, maxItems: 2, items: { type: 'string', pattern: '^(([01]\\d|2[0-3]):[0-5]\\d|24:00)$' } };
const hoursSchema = {
  title: 'BusinessHours',
  description: 'Business hours and what the agent does outside them (null: always open).',
  type: ['object', 'null'],
  additionalProperties: false,
  required: ['timezone', 'weekly', 'outside'],
  properties: {
    timezone: { type: 'string', minLength: 1, maxLength: 100, description: 'IANA time zone, e.g. Europe/Berlin.' },
    weekly: {
      type: 'object',
      additionalProperties: false,
      properties: Object.fromEntries(WEEKDAYS.map((d) => [d, { type: 'array', maxItems: 10, items: HOURS_RANGE }])),
    },
    holidays: { type: 'array', maxItems: 400, items: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}$' } },
    outside: { type: 'string', enum: ['answer', 'handoff', 'message'] },
    outsideMessage: { type: ['string', 'null'], minLength: 1, maxLength: 1000, pattern: '\\S' },
  },
};
const MAX_DEBOUNCE_MS = 60_000;
const AUTO_RESOLVE_MINUTES = { type: 'integer', minimum: 0, maximum: MAX_AUTO_RESOLVE_MINUTES, description: AUTO_RESOLVE_HINT };
/** A model agent's passages (contract.md § Answers that find what the help centre says): retrieval is for recall, the model decides. */
export const DEFAULT_KNOWLEDGE_PASSAGES = DEFAULT_PASSAGES;
const MAX_KNOWLEDGE_PASSAGES = 20;
const OUT_OF_SCOPE_HINT = 'The reply to a message that is not about this business (the weather, a poem, another company): the conversation stays with the agent, no handoff. null: a default polite line saying what the agent can help with, in the customer\'s language.';
const KNOWLEDGE_PASSAGES_HINT = `How many of the best passages of the knowledge base a model agent is given with their confidence, to decide whether they answer (0–${MAX_KNOWLEDGE_PASSAGES}, default ${DEFAULT_KNOWLEDGE_PASSAGES}; 0: none). The built-in agent answers from the best one and does not use it.`;
/** contract.md § No tenant slows another down: a system prompt is at most 20000 characters. */
const MAX_SYSTEM_PROMPT = 20_000;
const agentProperties = {
  name: { type: 'string', minLength: 1, maxLength: 200, pattern: '\\S' },
  systemPrompt: { type: 'string', maxLength: MAX_SYSTEM_PROMPT },
  model: modelSchema,
  knowledgeBaseId: nullable(ID),
  handoffMessage: { type: ['string', 'null'], minLength: 1, maxLength: 1000, pattern: '\\S' },
  spendCapUsdPerDay: { type: ['string', 'null'], pattern: USD_AMOUNT },
  onNoAnswer: { type: 'string', enum: ['handoff', 'fallback'] },
  fallbackMessage: { type: ['string', 'null'], minLength: 1, maxLength: 1000, pattern: '\\S' },
  greeting: { type: ['string', 'null'], minLength: 1, maxLength: 1000, pattern: '\\S', description: 'The short reply to a greeting ("hi", "good morning"); null: a default in the customer\'s language. A thanks always gets the default ("You\'re welcome!…") in the customer\'s language.' },
  outOfScopeText: { type: ['string', 'null'], minLength: 1, maxLength: 1000, pattern: '\\S', description: OUT_OF_SCOPE_HINT },
  relevanceThreshold: FRACTION,
  knowledgePassages: { type: 'integer', minimum: 0, maximum: MAX_KNOWLEDGE_PASSAGES, description: KNOWLEDGE_PASSAGES_HINT },
  debounceMs: { type: 'integer', minimum: 0, maximum: MAX_DEBOUNCE_MS },
  hours: hoursSchema,
  autoResolveMinutes: AUTO_RESOLVE_MINUTES,
};
export const createBody = bodyValidator<AgentInput & { name: string }>({ title: 'AgentCreate', type: 'object', additionalProperties: false, required: ['name'], properties: agentProperties });
export const patchBody = bodyValidator<AgentInput>({ title: 'AgentPatch', type: 'object', additionalProperties: false, properties: agentProperties });

export const agentView = (a: Agent) => ({
  id: a.id,
  name: a.name,
  systemPrompt: a.systemPrompt,
  model: { provider: a.modelProvider, name: a.modelName, baseUrl: a.modelBaseUrl, hasApiKey: a.modelApiKeySealed !== null, pricing: a.modelPricing, maxConcurrency: a.modelMaxConcurrency },
  knowledgeBaseId: a.knowledgeBaseId,
  handoffMessage: a.handoffMessage ?? DEFAULT_HANDOFF_TEXT,
  spendCapUsdPerDay: a.spendCapUsdPerDay === null ? null : formatUsd(a.spendCapUsdPerDay),
  onNoAnswer: a.onNoAnswer,
  fallbackMessage: a.fallbackMessage ?? DEFAULT_FALLBACK_TEXT,
  greeting: a.greeting,
  outOfScopeText: a.outOfScopeText ?? null,
  relevanceThreshold: a.relevanceThreshold,
  knowledgePassages: a.knowledgePassages ?? DEFAULT_KNOWLEDGE_PASSAGES,
  debounceMs: a.debounceMs,
  hours: a.hours,
  autoResolveMinutes: a.autoResolveMinutes ?? DEFAULT_AUTO_RESOLVE_MINUTES,
  version: a.version,
  createdAt: a.createdAt.toISOString(),
  updatedAt: a.updatedAt.toISOString(),
});


/** What agentView answers. */
export const AGENT_SCHEMA = object(
  {
    id: ID,
    name: STRING,
    systemPrompt: STRING,
    model: object({ provider: { type: 'string', enum: ['builtin', 'openai'] }, name: nullable(STRING), baseUrl: nullable(STRING), hasApiKey: BOOLEAN, pricing: pricingView, maxConcurrency: nullable({ type: 'integer', minimum: 1, maximum: 100_000 }) }),
    knowledgeBaseId: nullable(ID),
    handoffMessage: STRING,
    spendCapUsdPerDay: nullable(USD),
    onNoAnswer: { type: 'string', enum: ['handoff', 'fallback'] },
    fallbackMessage: STRING,
    greeting: { ...nullable(STRING), description: 'The short reply to a greeting; null: a default in the customer\'s language.' },
    outOfScopeText: { ...nullable(STRING), description: OUT_OF_SCOPE_HINT },
    relevanceThreshold: { type: 'number', minimum: 0, maximum: 1 },
    knowledgePassages: { type: 'integer', minimum: 0, maximum: MAX_KNOWLEDGE_PASSAGES, description: KNOWLEDGE_PASSAGES_HINT },
    debounceMs: { type: 'integer', minimum: 0, maximum: MAX_DEBOUNCE_MS, description: 'Customer messages within this many ms of each other are answered once, together (0: off).' },
    hours: hoursSchema,
    autoResolveMinutes: AUTO_RESOLVE_MINUTES,
    version: { type: 'integer', minimum: 1, description: 'The current version: each change of anything but the name and autoResolveMinutes makes the next one (GET /api/agents/{id}/versions).' },
    createdAt: TIMESTAMP,
    updatedAt: TIMESTAMP,
  },
  { title: 'Agent' },
);
export const EXAMPLE_HOURS = {
  timezone: 'Europe/Berlin',
  weekly: { mon: [['09:00', '18:00']], tue: [['09:00', '18:00']], wed: [['09:00', '18:00']], thu: [['09:00', '18:00']], fri: [['09:00', '17:00']] },
  holidays: ['2026-12-25'],
  outside: 'message',
  outsideMessage: 'We are closed now and answer from 9:00.',
};
export const EXAMPLE_AGENT = {
  id: 1,
  name: 'Support',
  systemPrompt: 'Be brief.',
  model: { provider: 'openai', name: 'gpt-4o-mini', baseUrl: 'https://api.openai.com/v1', hasApiKey: true, pricing: null, maxConcurrency: null },
  knowledgeBaseId: null,
  handoffMessage: DEFAULT_HANDOFF_TEXT,
  spendCapUsdPerDay: null,
  onNoAnswer: 'handoff',
  fallbackMessage: DEFAULT_FALLBACK_TEXT,
  greeting: 'Hello! Ask me anything about your order.',
  outOfScopeText: 'I can help with your orders, delivery and returns.',
  relevanceThreshold: DEFAULT_RELEVANCE_THRESHOLD,
  knowledgePassages: DEFAULT_KNOWLEDGE_PASSAGES,
  debounceMs: 1500,
  hours: EXAMPLE_HOURS,
  autoResolveMinutes: DEFAULT_AUTO_RESOLVE_MINUTES,
  version: 3,
  createdAt: EXAMPLE_TIME,
  updatedAt: EXAMPLE_TIME,
};
export const ONE_AGENT = { schema: object({ agent: AGENT_SCHEMA }), example: { agent: EXAMPLE_AGENT } };

/** What versionView (lib/agents/versions.ts) answers. */
export const AGENT_VERSION_SCHEMA = object(
  {
    version: { type: 'integer', minimum: 1 },
    createdAt: TIMESTAMP,
    createdBy: { ...nullable(UUID), description: 'The user who made it; null: a company API token, or the version every agent had when versions began.' },
    changes: { ...arrayOf({ type: 'string', enum: Object.values(SETTING_FIELDS) }), description: 'The fields it changed, as the API names them (empty for the first version).' },
    restoredFrom: { ...nullable({ type: 'integer', minimum: 1 }), description: 'A restore: the version it copied.' },
    replayId: { ...nullable(ID), description: "A publish: the replay whose changes it applied." },
    current: { ...BOOLEAN, description: "Whether it is the agent's version now." },
  },
  { title: 'AgentVersion' },
);
export const EXAMPLE_AGENT_VERSION = { version: 3, createdAt: EXAMPLE_TIME, createdBy: EXAMPLE_USER_ID, changes: ['systemPrompt', 'relevanceThreshold'], restoredFrom: null, replayId: null, current: true };
/** The answer of a restore (and of a replay's publish): the agent as it is now and the version it is. */
export const AGENT_AND_VERSION = { schema: object({ agent: AGENT_SCHEMA, version: AGENT_VERSION_SCHEMA }), example: { agent: EXAMPLE_AGENT, version: EXAMPLE_AGENT_VERSION } };
export const BAD_AGENT = 'a bad field (hours: an unknown time zone, a bad range or date), an unknown knowledgeBaseId, provider openai without model.name or model.baseUrl, a model.baseUrl at a private address, or a new model.baseUrl without model.apiKey';
export const AGENT_ID = idPathParam('agent');
