import { Router } from 'express';
import { DEFAULT_HANDOFF_TEXT } from '../../lib/conversations.js';
import { AppError, notFound } from '../../lib/errors.js';
import type { SecretBox } from '../../lib/secrets.js';
import type { TenantScope } from '../../lib/tenancy.js';
import { AgentSchema, KnowledgeBaseSchema, type Agent, type ModelPricing } from '../../schema/entities.js';
import type { Authenticator } from '../auth/authenticate.js';
import { bodyValidator, idParam } from '../http/validate.js';

interface ModelInput {
  provider?: 'builtin' | 'openai';
  name?: string | null;
  baseUrl?: string | null;
  apiKey?: string | null;
  pricing?: ModelPricing | null;
}

interface AgentInput {
  name?: string;
  systemPrompt?: string;
  model?: ModelInput;
  knowledgeBaseId?: number | null;
  /** Told to the customer when the agent hands off; null restores the default. */
  handoffMessage?: string | null;
}

const DECIMAL = '^\\d{1,9}(\\.\\d{1,9})?$';
const modelSchema = {
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
      properties: { inputUsdPerMTok: { type: 'string', pattern: DECIMAL }, outputUsdPerMTok: { type: 'string', pattern: DECIMAL } },
    },
  },
};
const agentProperties = {
  name: { type: 'string', minLength: 1, maxLength: 200, pattern: '\\S' },
  systemPrompt: { type: 'string', maxLength: 100_000 },
  model: modelSchema,
  knowledgeBaseId: { type: ['integer', 'null'], minimum: 1 },
  handoffMessage: { type: ['string', 'null'], minLength: 1, maxLength: 1000, pattern: '\\S' },
};
const createBody = bodyValidator<AgentInput & { name: string }>({ type: 'object', additionalProperties: false, required: ['name'], properties: agentProperties });
const patchBody = bodyValidator<AgentInput>({ type: 'object', additionalProperties: false, properties: agentProperties });

export const agentView = (a: Agent) => ({
  id: a.id,
  name: a.name,
  systemPrompt: a.systemPrompt,
  model: { provider: a.modelProvider, name: a.modelName, baseUrl: a.modelBaseUrl, hasApiKey: a.modelApiKeySealed !== null, pricing: a.modelPricing },
  knowledgeBaseId: a.knowledgeBaseId,
  handoffMessage: a.handoffMessage ?? DEFAULT_HANDOFF_TEXT,
  createdAt: a.createdAt.toISOString(),
  updatedAt: a.updatedAt.toISOString(),
});

async function checkKnowledgeBase(tenant: TenantScope, id: number | null | undefined): Promise<void> {
  if (id === null || id === undefined) return;
  if (!(await tenant.em.count(KnowledgeBaseSchema, { id }))) {
    throw new AppError('VALIDATION_ERROR', 'Invalid knowledgeBaseId.', { details: [{ field: 'knowledgeBaseId', message: 'no such knowledge base' }] });
  }
}

function applyModel(agent: Agent, model: ModelInput | undefined, secrets: SecretBox): void {
  if (model) {
    if (model.provider !== undefined) agent.modelProvider = model.provider;
    if (model.name !== undefined) agent.modelName = model.name;
    if (model.baseUrl !== undefined) agent.modelBaseUrl = model.baseUrl;
    if (model.pricing !== undefined) agent.modelPricing = model.pricing;
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

export function agentRoutes(auth: Authenticator, secrets: SecretBox): Router {
  const router = Router();
  router.use(auth.any);

  router.get('/', async (req, res) => {
    const agents = await req.tenant!.em.find(AgentSchema, {}, { orderBy: { id: 'asc' }, populate: ['modelApiKeySealed'] });
    res.json({ agents: agents.map(agentView) });
  });

  router.post('/', async (req, res) => {
    const body = createBody(req.body);
    const tenant = req.tenant!;
    await checkKnowledgeBase(tenant, body.knowledgeBaseId);
    const now = new Date();
    const agent = tenant.em.create(AgentSchema, {
      companyId: tenant.companyId, name: body.name.trim(), systemPrompt: body.systemPrompt ?? '', modelProvider: 'builtin',
      modelName: null, modelBaseUrl: null, modelApiKeySealed: null, modelPricing: null,
      knowledgeBaseId: body.knowledgeBaseId ?? null, handoffMessage: body.handoffMessage?.trim() ?? null, createdAt: now, updatedAt: now,
    } as never);
    applyModel(agent, body.model, secrets);
    await tenant.em.flush();
    res.status(201).json({ agent: agentView(agent) });
  });

  const load = async (tenant: TenantScope, rawId: unknown) => {
    const agent = await tenant.em.findOne(AgentSchema, { id: idParam(rawId, 'Agent') }, { populate: ['modelApiKeySealed'] });
    if (!agent) throw notFound('Agent');
    return agent;
  };

  router.get('/:id', async (req, res) => {
    res.json({ agent: agentView(await load(req.tenant!, req.params.id)) });
  });

  router.patch('/:id', async (req, res) => {
    const tenant = req.tenant!;
    const agent = await load(tenant, req.params.id);
    const body = patchBody(req.body);
    await checkKnowledgeBase(tenant, body.knowledgeBaseId);
    if (body.name !== undefined) agent.name = body.name.trim();
    if (body.systemPrompt !== undefined) agent.systemPrompt = body.systemPrompt;
    if (body.knowledgeBaseId !== undefined) agent.knowledgeBaseId = body.knowledgeBaseId;
    if (body.handoffMessage !== undefined) agent.handoffMessage = body.handoffMessage === null ? null : body.handoffMessage.trim();
    applyModel(agent, body.model, secrets);
    agent.updatedAt = new Date();
    await tenant.em.flush();
    res.json({ agent: agentView(agent) });
  });

  router.delete('/:id', async (req, res) => {
    const n = await req.tenant!.em.nativeDelete(AgentSchema, { id: idParam(req.params.id, 'Agent') });
    if (n === 0) throw notFound('Agent');
    res.status(204).end();
  });
  return router;
}
