import type { Request } from 'express';
import { DEFAULT_RELEVANCE_THRESHOLD } from '../../lib/agents/answer.js';
import { DEFAULT_AUTO_RESOLVE_MINUTES } from '../../lib/agents/auto-resolve.js';
import { hoursProblems, type BusinessHours } from '../../lib/agents/hours.js';
import type { Config } from '../../lib/config.js';
import { AppError, notFound } from '../../lib/errors.js';
import { recordFirstVersion, recordVersion, settingsOf } from '../../lib/agents/versions.js';
import { withinQuota } from '../../lib/quotas.js';
import type { SecretBox } from '../../lib/secrets.js';
import type { TenantScope } from '../../lib/tenancy.js';
import { AgentSchema, KnowledgeBaseSchema, type Agent, type ModelPricing } from '../../schema/entities.js';
import { deleteById } from '../http/delete-by-id.js';
import { conflictOnUnique } from '../http/errors.js';
import type { AgentChanges } from '../lib/agent-changes.js';
import { BAD_PAGE, examplePage, PAGE_QUERY, pageOf } from '../http/pagination.js';
import { defineRoute, type Route } from '../http/route.js';
import { assertTenantUrl, idParam, invalidFields } from '../http/validate.js';
import { AGENT_ID, AGENT_SCHEMA, agentView, BAD_AGENT, createBody, DECIMAL, DEFAULT_KNOWLEDGE_PASSAGES, EXAMPLE_AGENT, EXAMPLE_HOURS, ONE_AGENT, patchBody, type AgentInput, type ModelInput } from './agent-schemas.js';

/*
 * The agents' routes, and what their fields must be beyond what the schemas of
 * gateway/routes/agent-schemas.ts can say (a price's decimals, real hours, a knowledge base
 * of the company, a model server at a public address with its key).
 */

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

/** 400 VALIDATION_ERROR on `knowledgeBaseId` unless the company has that knowledge base (null: none, fine). */
export async function checkKnowledgeBase(tenant: TenantScope, id: number | null | undefined): Promise<void> {
  if (id === null || id === undefined) return;
  if (!(await tenant.em.count(KnowledgeBaseSchema, { id }))) {
    throw new AppError('VALIDATION_ERROR', 'Invalid knowledgeBaseId.', { details: [{ field: 'knowledgeBaseId', message: 'no such knowledge base' }] });
  }
}

/** The hours as stored: checked beyond what the schema can say (a real time zone, real dates), optional fields filled in. */
function hoursOf(hours: BusinessHours | null | undefined): BusinessHours | null | undefined {
  if (!hours) return hours;
  const details = hoursProblems(hours);
  if (details.length) throw invalidFields(details);
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

export type AgentConfig = Pick<Config, 'allowPrivateUrls' | 'helpdeskGlobalUrl' | 'helpdeskEuropeUrl' | 'quotas'>;

/**
 * A PATCH body applied to `agent` with every rule of the agent's fields (a knowledge base of
 * the company, real hours, the model server's address and key): on a managed entity, or on a
 * plain copy (`{...agent}`) to see what a change would make of it without saving anything
 * (gateway/routes/replays.ts); nothing is read or written of the agent through the manager.
 */
export async function applyAgentInput(tenant: TenantScope, agent: Agent, body: AgentInput, secrets: SecretBox, config: AgentConfig): Promise<void> {
  await checkKnowledgeBase(tenant, body.knowledgeBaseId);
  if (body.name !== undefined) agent.name = body.name.trim();
  if (body.systemPrompt !== undefined) agent.systemPrompt = body.systemPrompt;
  if (body.knowledgeBaseId !== undefined) agent.knowledgeBaseId = body.knowledgeBaseId;
  if (body.handoffMessage !== undefined) agent.handoffMessage = body.handoffMessage === null ? null : body.handoffMessage.trim();
  if (body.spendCapUsdPerDay !== undefined) agent.spendCapUsdPerDay = body.spendCapUsdPerDay;
  if (body.onNoAnswer !== undefined) agent.onNoAnswer = body.onNoAnswer;
  if (body.fallbackMessage !== undefined) agent.fallbackMessage = body.fallbackMessage === null ? null : body.fallbackMessage.trim();
  if (body.greeting !== undefined) agent.greeting = body.greeting === null ? null : body.greeting.trim();
  if (body.outOfScopeText !== undefined) agent.outOfScopeText = body.outOfScopeText === null ? null : body.outOfScopeText.trim();
  if (body.relevanceThreshold !== undefined) agent.relevanceThreshold = body.relevanceThreshold;
  if (body.knowledgePassages !== undefined) agent.knowledgePassages = body.knowledgePassages;
  if (body.debounceMs !== undefined) agent.debounceMs = body.debounceMs;
  if (body.hours !== undefined) agent.hours = hoursOf(body.hours)!;
  if (body.autoResolveMinutes !== undefined) agent.autoResolveMinutes = body.autoResolveMinutes;
  await applyModel(agent, body.model, secrets, config);
  agent.updatedAt = new Date();
}

/** Who makes a version: the user of a session; null for a company API token. */
export const versionAuthor = (req: Request): string | null => (req.principal?.kind === 'session' ? req.principal.userId : null);

/** Two changes of one agent at the same moment: the second is refused (its version number was taken). */
export const AGENT_CHANGED = 'The agent was changed at the same moment; load it again and retry.';

/**
 * The agent the path names (`:id`), with its sealed model key; 404 when the company has none
 * such. The `load` of the routes of one agent, its evaluations' (gateway/routes/evaluations.ts) too.
 */
export async function loadPathAgent(req: Request): Promise<Agent> {
  const agent = await req.tenant!.em.findOne(AgentSchema, { id: idParam(req.params.id, 'Agent') }, { populate: ['modelApiKeySealed'] });
  if (!agent) throw notFound('Agent');
  return agent;
}

/** `/api/agents`: every route needs a company credential (gateway/app.ts mounts them so). Every change is announced to the workers before the answer. */
export function agentRoutes(secrets: SecretBox, config: AgentConfig, changes: AgentChanges): readonly Route[] {
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
          outOfScopeText: body.outOfScopeText?.trim() ?? null,
          relevanceThreshold: body.relevanceThreshold ?? DEFAULT_RELEVANCE_THRESHOLD, knowledgePassages: body.knowledgePassages ?? DEFAULT_KNOWLEDGE_PASSAGES,
          debounceMs: body.debounceMs ?? 0, hours: hoursOf(body.hours) ?? null, autoResolveMinutes: body.autoResolveMinutes ?? DEFAULT_AUTO_RESOLVE_MINUTES,
          createdAt: now, updatedAt: now,
        } as never);
        await applyModel(agent, body.model, secrets, config);
        const quota = { companyId: tenant.companyId, field: 'agents', limit: config.quotas.agents, entity: AgentSchema };
        // The agent and its version 1, in one transaction (the version needs the agent's id).
        await withinQuota(tenant.em, quota, async () => {
          await tenant.em.flush();
          recordFirstVersion(tenant.em, agent, versionAuthor(req));
          await tenant.em.flush();
        });
        await changes.announce(tenant.companyId);
        res.status(201).json({ agent: agentView(agent) });
      },
    }),
    defineRoute({
      method: 'GET', path: '/:id', operationId: 'getAgent', tag: 'Agents', access: 'any',
      summary: 'One agent',
      params: [AGENT_ID],
      responses: { 200: { description: 'The agent.', ...ONE_AGENT } },
      errors: { NOT_FOUND: 'no such agent' },
      load: loadPathAgent,
      handler: ({ res, loaded: agent }) => {
        res.json({ agent: agentView(agent) });
      },
    }),
    defineRoute({
      method: 'PATCH', path: '/:id', operationId: 'updateAgent', tag: 'Agents', access: 'any',
      summary: 'Change an agent (only the fields sent; null restores a default)',
      description: 'A change of anything but `name` and `autoResolveMinutes` makes a new version of the agent (GET /api/agents/{id}/versions).',
      params: [AGENT_ID],
      body: {
        validators: [patchBody],
        example: { onNoAnswer: 'fallback', spendCapUsdPerDay: '2.50', greeting: 'Hello! Ask me anything about your order.', outOfScopeText: 'I can help with your orders, delivery and returns.', knowledgePassages: 8, debounceMs: 1500, hours: EXAMPLE_HOURS },
      },
      responses: { 200: { description: 'The agent as it is now.', ...ONE_AGENT } },
      errors: { NOT_FOUND: 'no such agent', VALIDATION_ERROR: BAD_AGENT, CONFLICT: 'the agent was changed at the same moment' },
      load: loadPathAgent,
      handler: async ({ req, res, loaded: agent, body }) => {
        const tenant = req.tenant!;
        const before = settingsOf(agent);
        await applyAgentInput(tenant, agent, body, secrets, config);
        recordVersion(tenant.em, agent, before, { createdBy: versionAuthor(req) });
        await conflictOnUnique(AGENT_CHANGED, () => tenant.em.flush());
        await changes.announce(tenant.companyId);
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
        await deleteById(req.tenant!, AgentSchema, req.params.id, 'Agent');
        await changes.announce(req.tenant!.companyId);
        res.status(204).end();
      },
    }),
  ];
}
