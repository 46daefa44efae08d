import type { Request } from 'express';
import { DEFAULT_FALLBACK_TEXT, DEFAULT_RELEVANCE_THRESHOLD } from '../../lib/agents/answer.js';
import { hoursProblems, WEEKDAYS, type BusinessHours } from '../../lib/agents/hours.js';
import { DEFAULT_HANDOFF_TEXT } from '../../lib/conversations.js';
import { AppError, notFound } from '../../lib/errors.js';
import { formatUsd } from '../../lib/money.js';
import type { SecretBox } from '../../lib/secrets.js';
import type { TenantScope } from '../../lib/tenancy.js';
import { AgentSchema, KnowledgeBaseSchema, type Agent, type ModelPricing } from '../../schema/entities.js';
import type { Config } from '../../lib/config.js';
import { withinQuota } from '../../lib/quotas.js';
import { BAD_PAGE, examplePage, PAGE_QUERY, pageOf } from '../http/pagination.js';
import { defineRoute, type Route } from '../http/route.js';
import { BOOLEAN, EXAMPLE_TIME, FRACTION, ID, nullable, object, STRING, TIMESTAMP, USD } from '../http/schemas.js';
import { assertTenantUrl, bodyValidator, idParam, idPathParam, USD_AMOUNT } from '../http/validate.js';

interface ModelInput {
  provider?: 'builtin' | 'openai';
  name?: string | null;
  baseUrl?: string | null;
  apiKey?: string | null;
  /** Decimal strings or JSON numbers ("0.15" or 0.15); stored and shown as decimal strings. */
  pricing?: { inputUsdPerMTok: string | number; outputUsdPerMTok: string | number } | null;
  /** This agent's model calls in flight at most, per worker; null: no cap of its own. */
  maxConcurrency?: number | null;
}

interface AgentInput {
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
  relevanceThreshold?: number;
  /** Customer messages within this many ms of each other are answered once, together (0: off). */
  debounceMs?: number;
  /** Business hours; null: always open. */
  hours?: BusinessHours | null;
}

const DECIMAL = '^\\d{1,9}(\\.\\d{1,9})?$';
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

/**
 * A price as the decimal string it is stored as: a string as sent, a number as it is written
 * in JSON (0.15 → "0.15", 1e-7 → "0.0000001"); more than 9 decimals is refused, never rounded.
 */
function decimalPrice(value: string | number, field: string): string {
  if (typeof value === 'string') return value;
  const text = /e/i.test(String(value)) ? value.toFixed(9).replace(/\.?0+$/, '') : String(value);
  if (!new RegExp(DECIMAL).test(text) || Number(text) !== value) {
    throw new AppError('VALIDATION_ERROR', `Invalid ${field}.`, { details: [{ field, message: 'must have at most 9 decimals' }] });
  }
  return text;
}

function pricingOf(p: NonNullable<ModelInput['pricing']>): ModelPricing {
  return { inputUsdPerMTok: decimalPrice(p.inputUsdPerMTok, 'model.pricing.inputUsdPerMTok'), outputUsdPerMTok: decimalPrice(p.outputUsdPerMTok, 'model.pricing.outputUsdPerMTok') };
}
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
export const MAX_DEBOUNCE_MS = 60_000;
/** contract.md § No tenant slows another down: a system prompt is at most 20000 characters. */
export const MAX_SYSTEM_PROMPT = 20_000;
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
  relevanceThreshold: FRACTION,
  debounceMs: { type: 'integer', minimum: 0, maximum: MAX_DEBOUNCE_MS },
  hours: hoursSchema,
};
const createBody = bodyValidator<AgentInput & { name: string }>({ title: 'AgentCreate', type: 'object', additionalProperties: false, required: ['name'], properties: agentProperties });
const patchBody = bodyValidator<AgentInput>({ title: 'AgentPatch', type: 'object', additionalProperties: false, properties: agentProperties });

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
  relevanceThreshold: a.relevanceThreshold,
  debounceMs: a.debounceMs,
  hours: a.hours,
  createdAt: a.createdAt.toISOString(),
  updatedAt: a.updatedAt.toISOString(),
});

async function checkKnowledgeBase(tenant: TenantScope, id: number | null | undefined): Promise<void> {
  if (id === null || id === undefined) return;
  if (!(await tenant.em.count(KnowledgeBaseSchema, { id }))) {
    throw new AppError('VALIDATION_ERROR', 'Invalid knowledgeBaseId.', { details: [{ field: 'knowledgeBaseId', message: 'no such knowledge base' }] });
  }
}

/** The hours as stored: checked beyond what the schema can say (a real time zone, real dates), optional fields filled in. */
function hoursOf(hours: BusinessHours | null | undefined): BusinessHours | null | undefined {
  if (!hours) return hours;
  const details = hoursProblems(hours);
  if (details.length) throw new AppError('VALIDATION_ERROR', `Invalid ${details.map((d) => d.field).join(', ')}.`, { details });
  return { timezone: hours.timezone, weekly: hours.weekly, holidays: hours.holidays ?? [], outside: hours.outside, outsideMessage: hours.outsideMessage?.trim() ?? null };
}

async function applyModel(agent: Agent, model: ModelInput | undefined, secrets: SecretBox, config: AgentConfig): Promise<void> {
  if (model) {
    if (model.baseUrl !== undefined && model.baseUrl !== null && model.baseUrl !== agent.modelBaseUrl) {
      await assertTenantUrl(config, 'model.baseUrl', model.baseUrl);
      // A stolen API token must not steer the stored model key to a listener of its choice.
      if (agent.modelApiKeySealed !== null && model.apiKey === undefined) {
        throw new AppError('VALIDATION_ERROR', 'Send model.apiKey again to change model.baseUrl.', {
          details: [{ field: 'model.apiKey', message: 'is required when model.baseUrl changes (the stored key is never sent to a new address)' }],
        });
      }
    }
    if (model.provider !== undefined) agent.modelProvider = model.provider;
    if (model.name !== undefined) agent.modelName = model.name;
    if (model.baseUrl !== undefined) agent.modelBaseUrl = model.baseUrl;
    if (model.pricing !== undefined) agent.modelPricing = model.pricing === null ? null : pricingOf(model.pricing);
    if (model.maxConcurrency !== undefined) agent.modelMaxConcurrency = model.maxConcurrency;
    if (model.apiKey !== undefined) agent.modelApiKeySealed = model.apiKey === null ? null : secrets.seal(model.apiKey);
  }
  if (agent.modelProvider === 'openai') {
    const details = [
      ...(agent.modelName ? [] : [{ field: 'model.name', message: 'is required for provider openai' }]),
      ...(agent.modelBaseUrl ? [] : [{ field: 'model.baseUrl', message: 'is required for provider openai' }]),
    ];
    if (details.length) throw new AppError('VALIDATION_ERROR', 'Invalid model.', { details });
  }
}

type AgentConfig = Pick<Config, 'allowPrivateUrls' | 'helpdeskGlobalUrl' | 'helpdeskEuropeUrl' | 'quotas'>;

/** The agent the path names (`:id`), with its sealed model key; 404 when the company has none such. */
export async function loadAgent(tenant: TenantScope, rawId: unknown): Promise<Agent> {
  const agent = await tenant.em.findOne(AgentSchema, { id: idParam(rawId, 'Agent') }, { populate: ['modelApiKeySealed'] });
  if (!agent) throw notFound('Agent');
  return agent;
}

/** `/api/agents`: every route needs a company credential (gateway/app.ts mounts them so). */
export function agentRoutes(secrets: SecretBox, config: AgentConfig): readonly Route[] {
  const load = (req: Request) => loadAgent(req.tenant!, req.params.id);
  return [
    defineRoute({
      method: 'GET', path: '/', operationId: 'listAgents', tag: 'Agents', access: 'any',
      summary: "The company's agents, oldest first, paged",
      query: PAGE_QUERY,
      responses: { 200: { description: 'A page of agents.', schema: pageOf('agents', AGENT_SCHEMA), example: examplePage('agents', EXAMPLE_AGENT) } },
      errors: { VALIDATION_ERROR: BAD_PAGE },
      handler: async ({ req, res, query: page }) => {
        const [agents, total] = await req.tenant!.em.findAndCount(AgentSchema, {}, { orderBy: { id: 'asc' }, populate: ['modelApiKeySealed'], ...page });
        res.json({ agents: agents.map(agentView), total, ...page });
      },
    }),
    defineRoute({
      method: 'POST', path: '/', operationId: 'createAgent', tag: 'Agents', access: 'any',
      summary: 'Create an agent (builtin answers from its knowledge base; openai calls any OpenAI-compatible server)',
      body: { validators: [createBody], example: { name: 'Support', systemPrompt: 'Be brief.', model: { provider: 'openai', name: 'gpt-4o-mini', baseUrl: 'https://api.openai.com/v1', apiKey: 'sk-example' } } },
      responses: { 201: { description: 'The new agent (`apiKey` is write-only: `hasApiKey` says whether one is stored).', ...ONE_AGENT } },
      errors: { VALIDATION_ERROR: BAD_AGENT, QUOTA_EXCEEDED: 'the company has QUOTA_AGENTS agents (100 by default)' },
      handler: async ({ req, res, body }) => {
        const tenant = req.tenant!;
        await checkKnowledgeBase(tenant, body.knowledgeBaseId);
        const now = new Date();
        const agent = tenant.em.create(AgentSchema, {
          companyId: tenant.companyId, name: body.name.trim(), systemPrompt: body.systemPrompt ?? '', modelProvider: 'builtin',
          modelName: null, modelBaseUrl: null, modelApiKeySealed: null, modelPricing: null, modelMaxConcurrency: null,
          knowledgeBaseId: body.knowledgeBaseId ?? null, handoffMessage: body.handoffMessage?.trim() ?? null, spendCapUsdPerDay: body.spendCapUsdPerDay ?? null,
          onNoAnswer: body.onNoAnswer ?? 'handoff', fallbackMessage: body.fallbackMessage?.trim() ?? null, greeting: body.greeting?.trim() ?? null,
          relevanceThreshold: body.relevanceThreshold ?? DEFAULT_RELEVANCE_THRESHOLD,
          debounceMs: body.debounceMs ?? 0, hours: hoursOf(body.hours) ?? null,
          createdAt: now, updatedAt: now,
        } as never);
        await applyModel(agent, body.model, secrets, config);
        const quota = { companyId: tenant.companyId, field: 'agents', limit: config.quotas.agents, entity: AgentSchema };
        await withinQuota(tenant.em, quota, () => tenant.em.flush());
        res.status(201).json({ agent: agentView(agent) });
      },
    }),
    defineRoute({
      method: 'GET', path: '/:id', operationId: 'getAgent', tag: 'Agents', access: 'any',
      summary: 'One agent',
      params: [AGENT_ID],
      responses: { 200: { description: 'The agent.', ...ONE_AGENT } },
      errors: { NOT_FOUND: 'no such agent' },
      load,
      handler: ({ res, loaded: agent }) => {
        res.json({ agent: agentView(agent) });
      },
    }),
    defineRoute({
      method: 'PATCH', path: '/:id', operationId: 'updateAgent', tag: 'Agents', access: 'any',
      summary: 'Change an agent (only the fields sent; null restores a default)',
      params: [AGENT_ID],
      body: { validators: [patchBody], example: { onNoAnswer: 'fallback', spendCapUsdPerDay: '2.50', greeting: 'Hello! Ask me anything about your order.', debounceMs: 1500, hours: EXAMPLE_HOURS } },
      responses: { 200: { description: 'The agent as it is now.', ...ONE_AGENT } },
      errors: { NOT_FOUND: 'no such agent', VALIDATION_ERROR: BAD_AGENT },
      load,
      handler: async ({ req, res, loaded: agent, body }) => {
        const tenant = req.tenant!;
        await checkKnowledgeBase(tenant, body.knowledgeBaseId);
        if (body.name !== undefined) agent.name = body.name.trim();
        if (body.systemPrompt !== undefined) agent.systemPrompt = body.systemPrompt;
        if (body.knowledgeBaseId !== undefined) agent.knowledgeBaseId = body.knowledgeBaseId;
        if (body.handoffMessage !== undefined) agent.handoffMessage = body.handoffMessage === null ? null : body.handoffMessage.trim();
        if (body.spendCapUsdPerDay !== undefined) agent.spendCapUsdPerDay = body.spendCapUsdPerDay;
        if (body.onNoAnswer !== undefined) agent.onNoAnswer = body.onNoAnswer;
        if (body.fallbackMessage !== undefined) agent.fallbackMessage = body.fallbackMessage === null ? null : body.fallbackMessage.trim();
        if (body.greeting !== undefined) agent.greeting = body.greeting === null ? null : body.greeting.trim();
        if (body.relevanceThreshold !== undefined) agent.relevanceThreshold = body.relevanceThreshold;
        if (body.debounceMs !== undefined) agent.debounceMs = body.debounceMs;
        if (body.hours !== undefined) agent.hours = hoursOf(body.hours)!;
        await applyModel(agent, body.model, secrets, config);
        agent.updatedAt = new Date();
        await tenant.em.flush();
        res.json({ agent: agentView(agent) });
      },
    }),
    defineRoute({
      method: 'DELETE', path: '/:id', operationId: 'deleteAgent', tag: 'Agents', access: 'any',
      summary: 'Delete an agent',
      params: [AGENT_ID],
      responses: { 204: { description: 'Deleted.' } },
      errors: { NOT_FOUND: 'no such agent' },
      handler: async ({ req, res }) => {
        const n = await req.tenant!.em.nativeDelete(AgentSchema, { id: idParam(req.params.id, 'Agent') });
        if (n === 0) throw notFound('Agent');
        res.status(204).end();
      },
    }),
  ];
}

/** What agentView answers. */
const AGENT_SCHEMA = object(
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
    relevanceThreshold: { type: 'number', minimum: 0, maximum: 1 },
    debounceMs: { type: 'integer', minimum: 0, maximum: MAX_DEBOUNCE_MS, description: 'Customer messages within this many ms of each other are answered once, together (0: off).' },
    hours: hoursSchema,
    createdAt: TIMESTAMP,
    updatedAt: TIMESTAMP,
  },
  { title: 'Agent' },
);
const EXAMPLE_HOURS = {
  timezone: 'Europe/Berlin',
  weekly: { mon: [['09:00', '18:00']], tue: [['09:00', '18:00']], wed: [['09:00', '18:00']], thu: [['09:00', '18:00']], fri: [['09:00', '17:00']] },
  holidays: ['2026-12-25'],
  outside: 'message',
  outsideMessage: 'We are closed now and answer from 9:00.',
};
const EXAMPLE_AGENT = {
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
  relevanceThreshold: DEFAULT_RELEVANCE_THRESHOLD,
  debounceMs: 1500,
  hours: EXAMPLE_HOURS,
  createdAt: EXAMPLE_TIME,
  updatedAt: EXAMPLE_TIME,
};
const ONE_AGENT = { schema: object({ agent: AGENT_SCHEMA }), example: { agent: EXAMPLE_AGENT } };
const BAD_AGENT = 'a bad field (hours: an unknown time zone, a bad range or date), an unknown knowledgeBaseId, provider openai without model.name or model.baseUrl, a model.baseUrl at a private address, or a new model.baseUrl without model.apiKey';
const AGENT_ID = idPathParam('agent');
