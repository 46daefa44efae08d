import type { Request } from 'express';
import { notFound } from '../../lib/errors.js';
import { recordVersion, settingsOf, storedSettings, versionView } from '../../lib/agents/versions.js';
import type { TenantScope } from '../../lib/tenancy.js';
import type { Agent } from '../../schema/entities.js';
import { AgentVersionSchema, type AgentVersion } from '../../schema/replay-entities.js';
import { conflictOnUnique } from '../http/errors.js';
import type { AgentChanges } from '../lib/agent-changes.js';
import { BAD_PAGE, examplePage, PAGE_QUERY, pageOf } from '../http/pagination.js';
import type { ParamDoc } from '../http/route-docs.js';
import { defineRoute, type Route } from '../http/route.js';
import { assertTenantUrl, idParam } from '../http/validate.js';
import { AGENT_AND_VERSION, AGENT_ID, AGENT_VERSION_SCHEMA, agentView, EXAMPLE_AGENT_VERSION } from './agent-schemas.js';
import { AGENT_CHANGED, checkKnowledgeBase, loadPathAgent, versionAuthor, type AgentConfig } from './agents.js';

/**
 * An agent's versions (lib/agents/versions.ts): `GET /api/agents/:id/versions` pages through
 * them, newest first; `POST /api/agents/:id/versions/:v/restore` gives the agent the settings
 * of version `v` again, as a new version (its history is never rewritten). Mounted with the
 * agents' routes (the same roles: operators are refused).
 */
const VERSION_PARAM: ParamDoc = { name: 'v', in: 'path', description: "The version's number.", schema: { type: 'integer', minimum: 1, maximum: 2_147_483_647 }, example: 2 };

/** The version `v` of the agent, its settings loaded; 404 when it has none such. */
async function loadVersion(tenant: TenantScope, agent: Agent, rawV: unknown): Promise<AgentVersion> {
  const version = await tenant.em.findOne(AgentVersionSchema, { agentId: agent.id, version: idParam(rawV, 'Version') }, { populate: ['settings'] });
  if (!version) throw notFound('Version');
  return version;
}

/**
 * The settings of a version on the agent, checked as a PATCH would check them where the
 * world may have changed since: the knowledge base may be gone, the model server's address
 * may lead elsewhere now.
 */
async function restoreOnto(req: Request, agent: Agent, version: AgentVersion, config: AgentConfig): Promise<void> {
  const restored = storedSettings(version);
  if (restored.knowledgeBaseId !== undefined) await checkKnowledgeBase(req.tenant!, restored.knowledgeBaseId);
  if (restored.modelBaseUrl && restored.modelBaseUrl !== agent.modelBaseUrl) await assertTenantUrl(config, 'model.baseUrl', restored.modelBaseUrl);
  Object.assign(agent, restored);
}

/** `/api/agents/:id/versions`: mounted with the agents' routes; a restore is announced to the workers before the answer. */
export function agentVersionRoutes(config: AgentConfig, changes: AgentChanges): readonly Route[] {
  return [
    defineRoute({
      method: 'GET', path: '/:id/versions', operationId: 'listAgentVersions', tag: 'Agents', access: 'any',
      summary: "The agent's versions, newest first, paged",
      params: [AGENT_ID],
      query: PAGE_QUERY,
      responses: { 200: { description: 'A page of versions.', schema: pageOf('versions', AGENT_VERSION_SCHEMA), example: examplePage('versions', EXAMPLE_AGENT_VERSION) } },
      errors: { NOT_FOUND: 'no such agent', VALIDATION_ERROR: BAD_PAGE },
      load: loadPathAgent,
      handler: async ({ req, res, loaded: agent, query: page }) => {
        const [rows, total] = await req.tenant!.em.findAndCount(AgentVersionSchema, { agentId: agent.id }, { orderBy: { version: 'desc' }, ...page });
        res.json({ versions: rows.map((v) => versionView(v, agent.version)), total, ...page });
      },
    }),
    defineRoute({
      method: 'POST', path: '/:id/versions/:v/restore', operationId: 'restoreAgentVersion', tag: 'Agents', access: 'any',
      summary: 'Give the agent the settings of an earlier version again, as a new version',
      description: 'The new version copies every setting of version `v` (its model key included) and names the fields that differ. When the agent already has those settings nothing changes: 200 with the current version.',
      params: [AGENT_ID, VERSION_PARAM],
      responses: {
        201: { description: 'The agent as it is now, and the version the restore made.', ...AGENT_AND_VERSION },
        200: { description: 'The agent already had those settings: it and its current version, unchanged.', ...AGENT_AND_VERSION },
      },
      errors: { NOT_FOUND: 'no such agent, or no such version of it', VALIDATION_ERROR: "the version's knowledge base was deleted (knowledgeBaseId), or its model.baseUrl leads to a private address now", CONFLICT: 'the agent was changed at the same moment' },
      load: loadPathAgent,
      handler: async ({ req, res, loaded: agent }) => {
        const tenant = req.tenant!;
        const version = await loadVersion(tenant, agent, req.params.v);
        const before = settingsOf(agent);
        await restoreOnto(req, agent, version, config);
        const made = recordVersion(tenant.em, agent, before, { createdBy: versionAuthor(req), restoredFrom: version.version });
        if (!made) {
          // Nothing differs: nothing is written (the entity may hold the same values in another spelling).
          const current = version.version === agent.version ? version : await tenant.em.findOneOrFail(AgentVersionSchema, { agentId: agent.id, version: agent.version });
          res.json({ agent: agentView(agent), version: versionView(current, agent.version) });
          return;
        }
        agent.updatedAt = new Date();
        await conflictOnUnique(AGENT_CHANGED, () => tenant.em.flush());
        await changes.announce(tenant.companyId);
        res.status(201).json({ agent: agentView(agent), version: versionView(made, agent.version) });
      },
    }),
  ];
}
