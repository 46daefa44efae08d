import type { Request } from 'express';
import {
  createReplay, listReplays, lockReplayForPublish, markPublished, MAX_REPLAY_CONVERSATIONS, MAX_RUNNING_REPLAYS, replayWithSummary, unknownConversationIds,
} from '../../lib/agents/replays/store.js';
import { changedFields, recordVersion, settingsOf, versionView } from '../../lib/agents/versions.js';
import { inTransaction, type SqlPool } from '../../lib/db.js';
import { AppError, notFound } from '../../lib/errors.js';
import type { SecretBox } from '../../lib/secrets.js';
import type { Agent } from '../../schema/entities.js';
import { AgentVersionSchema } from '../../schema/replay-entities.js';
import { conflictOnUnique } from '../http/errors.js';
import type { AgentChanges } from '../lib/agent-changes.js';
import { BAD_PAGE, examplePage, PAGE_QUERY, pageOf } from '../http/pagination.js';
import { defineRoute, type Route } from '../http/route.js';
import { object } from '../http/schemas.js';
import { idParam, invalidFields } from '../http/validate.js';
import { AGENT_AND_VERSION, AGENT_ID, agentView, BAD_AGENT, type AgentInput } from './agent-schemas.js';
import { AGENT_CHANGED, applyAgentInput, loadPathAgent, versionAuthor, type AgentConfig } from './agents.js';
import { EXAMPLE_REPLAY, EXAMPLE_REPLAY_LISTED, EXAMPLE_STARTED, ITEMS_QUERY, REPLAY, REPLAY_ID, replayBody, STARTED } from './replay-schemas.js';

/**
 * Replays (contract.md § Replay before publishing): `POST /api/agents/:id/replays` answers
 * the customer messages of past conversations again with changes to the agent, in the
 * background (the workers' actors/replays/; nothing is sent, no conversation changes);
 * `GET …/replays[/:rid]` shows them, the two answers side by side; `POST …/:rid/publish`
 * applies a finished replay's changes to the agent as a new version. Their SQL is
 * lib/agents/replays/store.ts. Mounted with the agents' routes (operators are refused).
 */

export interface ReplayRouteDeps {
  config: AgentConfig;
  sql: SqlPool;
  secrets: SecretBox;
  /** A publish is announced to the workers before the answer (the next customer gets the new behaviour). */
  changes: AgentChanges;
}

/** A PATCH rule broken by `changes` (or by them on the agent as it is now): the fields named as the body names them. */
async function asChanges<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof AppError && err.code === 'VALIDATION_ERROR' && err.details) throw invalidFields(err.details.map((d) => ({ field: `changes.${d.field}`, message: d.message })));
    throw err;
  }
}

/** The changes as kept: a model key sealed (`model.apiKeySealed`: the very one the replay's settings hold), never in clear. */
function keptChanges(changes: AgentInput, sealedKey: string | null): Record<string, unknown> {
  if (changes.model?.apiKey === undefined) return { ...changes };
  const { apiKey: _apiKey, ...model } = changes.model;
  return { ...changes, model: { ...model, apiKeySealed: sealedKey } };
}

/** The kept changes as a PATCH body again (the model key opened). */
function changesInput(kept: Record<string, unknown>, secrets: SecretBox): AgentInput {
  const model = kept.model as (Record<string, unknown> & { apiKeySealed?: string | null }) | undefined;
  if (!model || !('apiKeySealed' in model)) return kept as AgentInput;
  const { apiKeySealed, ...rest } = model;
  return { ...kept, model: { ...rest, apiKey: apiKeySealed === null || apiKeySealed === undefined ? null : secrets.open(apiKeySealed) } } as AgentInput;
}

const replayIdOf = (req: Request): number => idParam(req.params.rid, 'Replay');

const busy = () => new AppError('CONFLICT', `${MAX_RUNNING_REPLAYS} replays are running; wait for one to finish.`);

/** `/api/agents/:id/replays`: mounted with the agents' routes. */
export function replayRoutes(deps: ReplayRouteDeps): readonly Route[] {
  return [
    defineRoute({
      method: 'POST', path: '/:id/replays', operationId: 'startReplay', tag: 'Agents', access: 'any',
      summary: "Replay past conversations with changes to the agent (in the background; nothing is sent to anyone; a model's calls are billed)",
      description:
        'Each answered customer message of the chosen conversations is answered again by the agent with `changes` applied, as a customer would be answered now ' +
        '(real model calls, debited as `replay_usage`; tools that change data are not called). Nothing is sent, and no conversation, lead or analytics figure changes. ' +
        `Follow it with GET /api/agents/{id}/replays/{rid}; publish it when it is done. At most ${MAX_RUNNING_REPLAYS} replays of a company run at once.`,
      params: [AGENT_ID],
      body: { validators: [replayBody], example: { changes: { systemPrompt: 'Answer in full sentences.' }, conversations: { limit: 50 } } },
      responses: { 201: { description: 'The replay, started.', schema: STARTED, example: EXAMPLE_STARTED } },
      errors: {
        NOT_FOUND: 'no such agent',
        VALIDATION_ERROR:
          `a bad field of changes (${BAD_AGENT}; named changes.<field>), changes that change nothing the agent does, ` +
          `conversations with more than ${MAX_REPLAY_CONVERSATIONS} ids or a conversation of another company, from not before to, ids with from or to, or conversations without a customer message the agent answered`,
        CONFLICT: `${MAX_RUNNING_REPLAYS} replays of the company are running`,
      },
      load: loadPathAgent,
      handler: async ({ req, res, loaded: agent, body }) => {
        const tenant = req.tenant!;
        // The changes on a copy of the agent, checked by every rule of a PATCH; the agent itself is not touched.
        const copy: Agent = { ...agent };
        await asChanges(() => applyAgentInput(tenant, copy, body.changes, deps.secrets, deps.config));
        const settings = settingsOf(copy);
        const changeFields = changedFields(settingsOf(agent), settings);
        if (!changeFields.length) {
          throw new AppError('VALIDATION_ERROR', "changes must change the agent's behaviour.", { details: [{ field: 'changes', message: 'must give a field other than name a new value' }] });
        }
        const selection = body.conversations ?? {};
        if (selection.ids) {
          const unknown = await unknownConversationIds(deps.sql, tenant.companyId, [...new Set(selection.ids)]);
          if (unknown.length) throw invalidFields([{ field: 'conversations.ids', message: `no such conversation: ${unknown.join(', ')}` }]);
        }
        const created = await createReplay(deps.sql, {
          companyId: tenant.companyId, agentId: agent.id, changes: keptChanges(body.changes, copy.modelApiKeySealed), settings, changeFields,
          baseVersion: agent.version, createdBy: versionAuthor(req), selection,
        });
        if (created === 'busy') throw busy();
        if (!created) throw invalidFields([{ field: 'conversations', message: 'have no customer message the agent answered' }]);
        res.status(201).json({ replay: { id: created.id, status: 'running', total: created.total, done: 0 } });
      },
    }),
    defineRoute({
      method: 'GET', path: '/:id/replays', operationId: 'listReplays', tag: 'Agents', access: 'any',
      summary: "The agent's replays with their summaries, newest first, paged",
      params: [AGENT_ID],
      query: PAGE_QUERY,
      responses: { 200: { description: 'A page of replays (without their items).', schema: pageOf('replays', REPLAY), example: examplePage('replays', EXAMPLE_REPLAY_LISTED) } },
      errors: { NOT_FOUND: 'no such agent', VALIDATION_ERROR: BAD_PAGE },
      load: loadPathAgent,
      handler: async ({ req, res, loaded: agent, query: page }) => {
        const { replays, total } = await listReplays(deps.sql, req.tenant!.companyId, agent.id, page);
        res.json({ replays, total, ...page });
      },
    }),
    defineRoute({
      method: 'GET', path: '/:id/replays/:rid', operationId: 'getReplay', tag: 'Agents', access: 'any',
      summary: 'One replay: its progress, summary and items (each customer message with its answer then and now)',
      params: [AGENT_ID, REPLAY_ID],
      query: ITEMS_QUERY,
      responses: { 200: { description: 'The replay.', schema: object({ replay: REPLAY }), example: { replay: EXAMPLE_REPLAY } } },
      errors: { NOT_FOUND: 'no such agent, or no such replay of it', VALIDATION_ERROR: 'a bad items' },
      load: loadPathAgent,
      handler: async ({ req, res, loaded: agent, query }) => {
        const replay = await replayWithSummary(deps.sql, req.tenant!.companyId, agent.id, replayIdOf(req), { items: query.items });
        if (!replay) throw notFound('Replay');
        res.json({ replay });
      },
    }),
    defineRoute({
      method: 'POST', path: '/:id/replays/:rid/publish', operationId: 'publishReplay', tag: 'Agents', access: 'any',
      summary: "Apply a finished replay's changes to the agent, as a new version",
      description:
        'The changes are applied to the agent as it is now, with the rules of a PATCH. When the agent already has those settings nothing changes: 200 with its current version ' +
        '(the replay is marked published as that version). A replay is published once.',
      params: [AGENT_ID, REPLAY_ID],
      responses: {
        201: { description: 'The agent as it is now, and the version the publish made (its replayId set).', ...AGENT_AND_VERSION },
        200: { description: 'The agent already had those settings: it and its current version, unchanged.', ...AGENT_AND_VERSION },
      },
      errors: {
        NOT_FOUND: 'no such agent, or no such replay of it',
        VALIDATION_ERROR: "the changes no longer fit the agent (its knowledge base was deleted: changes.knowledgeBaseId; a new model.baseUrl and the agent's key changed since: changes.model.apiKey)",
        CONFLICT: 'the replay is still running, failed, or was published already; or the agent was changed at the same moment',
      },
      load: loadPathAgent,
      handler: async ({ req, res, loaded: agent }) => {
        const tenant = req.tenant!;
        const replayId = replayIdOf(req);
        // The replay's row stays locked until the version is saved: a second publish waits, then finds it published.
        const made = await inTransaction(deps.sql, async (c) => {
          const replay = await lockReplayForPublish(c, tenant.companyId, agent.id, replayId);
          if (!replay) throw notFound('Replay');
          if (replay.publishedVersion !== null) throw new AppError('CONFLICT', `The replay was published already (version ${replay.publishedVersion}).`);
          if (replay.status !== 'done') throw new AppError('CONFLICT', `The replay is ${replay.status}: only a finished replay can be published.`);
          const before = settingsOf(agent);
          await asChanges(() => applyAgentInput(tenant, agent, changesInput(replay.changes, deps.secrets), deps.secrets, deps.config));
          const version = recordVersion(tenant.em, agent, before, { createdBy: versionAuthor(req), replayId });
          await conflictOnUnique(AGENT_CHANGED, () => tenant.em.flush());
          await markPublished(c, tenant.companyId, replayId, agent.version);
          return version;
        });
        if (made) {
          await deps.changes.announce(tenant.companyId);
          res.status(201).json({ agent: agentView(agent), version: versionView(made, agent.version) });
          return;
        }
        const current = await tenant.em.findOneOrFail(AgentVersionSchema, { agentId: agent.id, version: agent.version });
        res.json({ agent: agentView(agent), version: versionView(current, agent.version) });
      },
    }),
  ];
}
