import type { Request } from 'express';
import { BUILT_IN_TOOLS } from '../../lib/agents/openai-model.js';
import { callAction, DEFAULT_TOOL_TIMEOUT_MS, secretArguments, type ActionCall } from '../../lib/agents/tools/action-request.js';
import { checkActionUrl, checkBodyTemplate, checkParameterNames } from '../../lib/agents/tools/placeholders.js';
import { checkArguments } from '../../lib/agents/tools/arguments-check.js';
import { toolSchemaProblem } from '../../lib/agents/tools/tool-schema.js';
import { guardForUrl } from '../../lib/address-guard.js';
import type { Config } from '../../lib/config.js';
import { AppError, notFound, type FieldError } from '../../lib/errors.js';
import { withinQuota } from '../../lib/quotas.js';
import type { SecretBox } from '../../lib/secrets.js';
import { AgentActionSchema, type AgentAction } from '../../schema/action-entities.js';
import { deleteById } from '../http/delete-by-id.js';
import { BAD_PAGE, examplePage, PAGE_QUERY, pageOf } from '../http/pagination.js';
import { conflictOnUnique } from '../http/errors.js';
import type { AgentChanges } from '../lib/agent-changes.js';
import { defineRoute, type Route } from '../http/route.js';
import { nullable, object, STRING } from '../http/schemas.js';
import { assertTenantUrl, idParam, invalidFields } from '../http/validate.js';
import {
  ACTION_ID, ACTION_SCHEMA, actionView, assertHeadersFollow, BAD_ACTION, createActionBody, EXAMPLE_ACTION, EXAMPLE_ACTION_INPUT, headerProblems, MASKED, ONE_ACTION, openHeaders, patchActionBody, sealHeaders, tryActionBody, callerOfContext, type ActionRequestInput,
} from './action-schemas.js';
import { AGENT_ID } from './agent-schemas.js';
import { loadPathAgent } from './agents.js';

/**
 * `/api/agents/:id/actions`: the company's own HTTP tools its agent may call (contract.md §
 * Agent actions). Header values are sealed at rest and never shown again; `try` makes one
 * call as the model would, so a company sees what its agent would get.
 */

/** Methods whose arguments go in a JSON body unless told otherwise. */
const BODY_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH']);
const TAKEN = 'the agent already has an action with this name';

type ActionConfig = Pick<Config, 'allowPrivateUrls' | 'helpdeskGlobalUrl' | 'helpdeskEuropeUrl' | 'quotas'>;

const storing = <T>(write: () => Promise<T>): Promise<T> => conflictOnUnique('The agent has an action with this name already.', write);

/** The action the path names (`:actionId` of the agent `:id`), with its sealed headers; 404 when the company has none such. */
async function loadPathAction(req: Request): Promise<AgentAction> {
  const agentId = idParam(req.params.id, 'Action');
  const action = await req.tenant!.em.findOne(AgentActionSchema, { id: idParam(req.params.actionId, 'Action'), agentId }, { populate: ['headersSealed'] });
  if (!action) throw notFound('Action');
  return action;
}

const parameterNames = (parameters: Record<string, unknown>): string[] => {
  const properties = parameters.properties;
  return properties !== null && typeof properties === 'object' && !Array.isArray(properties) ? Object.keys(properties) : [];
};

/** A request body as stored: a template sends JSON; a mode, what it says. */
const bodyOf = (body: NonNullable<ActionRequestInput['body']>) =>
  typeof body === 'string' ? { body, bodyTemplate: null } : { body: 'json' as const, bodyTemplate: body };

/**
 * What the schema cannot say of an action as it will be stored: a built-in tool's name, a
 * parameters object the schema policy refuses or with a property named as a caller
 * placeholder, a URL or body template whose placeholders are not in its path or query or are
 * neither parameters nor caller placeholders, bad headers.
 */
function actionProblems(
  a: { name: string; parameters: Record<string, unknown>; url: string; bodyTemplate: Record<string, unknown> | null },
  headers: Readonly<Record<string, string>> | undefined,
): FieldError[] {
  const details: FieldError[] = [];
  if (BUILT_IN_TOOLS.has(a.name)) details.push({ field: 'name', message: 'is the name of a built-in tool' });
  const names = parameterNames(a.parameters);
  const badSchema = toolSchemaProblem(a.parameters) ?? checkParameterNames(names);
  if (badSchema !== null) details.push({ field: 'parameters', message: badSchema });
  else {
    const badUrl = checkActionUrl(a.url, names);
    if (badUrl !== null) details.push({ field: 'request.url', message: badUrl });
    const badTemplate = a.bodyTemplate && checkBodyTemplate(a.bodyTemplate, names);
    if (badTemplate) details.push({ field: 'request.body', message: badTemplate });
  }
  if (headers) details.push(...headerProblems(headers, 'request.headers'));
  return details;
}

/** 400 naming the argument the parameters refuse (`arguments.orderId`), from checkArguments' words (`arguments.orderId is required`). */
function invalidArguments(failed: { field: string; error: string }): AppError {
  const message = failed.error.startsWith(`${failed.field} `) ? failed.error.slice(failed.field.length + 1) : failed.error;
  return invalidFields([{ field: failed.field, message }]);
}

/** How the call is made, its header values opened. */
const actionCallOf = (secrets: SecretBox, a: AgentAction): ActionCall => ({
  name: a.name, method: a.method, url: a.url, headers: openHeaders(secrets, a.headersSealed), body: a.body, bodyTemplate: a.bodyTemplate, timeoutMs: a.timeoutMs,
});

const OUTCOME = object(
  {
    status: { type: 'string', enum: ['ok', 'error', 'timeout', 'blocked', 'invalid_arguments'], description: 'ok: a 2xx answer; error: another status or no connection; timeout; blocked: an address the rules refuse.' },
    httpStatus: nullable({ type: 'integer', minimum: 100, maximum: 599 }),
    ms: { type: 'integer', minimum: 0 },
    error: { ...nullable(STRING), description: 'What went wrong, in our words.' },
  },
  { title: 'ActionOutcome' },
);

/** An agent's actions; every change is announced to the workers before the answer (the next customer message may call it). */
export function actionRoutes(secrets: SecretBox, config: ActionConfig, changes: AgentChanges): readonly Route[] {
  return [
    defineRoute({
      method: 'GET', path: '/:id/actions', operationId: 'listActions', tag: 'Agents', access: 'any',
      summary: "The agent's actions, oldest first, paged",
      params: [AGENT_ID],
      query: PAGE_QUERY,
      responses: { 200: { description: 'A page of actions (header values shown as "********").', schema: pageOf('actions', ACTION_SCHEMA), example: examplePage('actions', EXAMPLE_ACTION) } },
      errors: { NOT_FOUND: 'no such agent', VALIDATION_ERROR: BAD_PAGE },
      load: loadPathAgent,
      handler: async ({ req, res, loaded: agent, query: page }) => {
        const [rows, total] = await req.tenant!.em.findAndCount(AgentActionSchema, { agentId: agent.id }, { orderBy: { id: 'asc' }, populate: ['headersSealed'], ...page });
        res.json({ actions: rows.map(actionView), total, ...page });
      },
    }),
    defineRoute({
      method: 'POST', path: '/:id/actions', operationId: 'createAction', tag: 'Agents', access: 'any',
      summary: "Give the agent an action: an HTTP call of the company's own API the model may make",
      params: [AGENT_ID],
      body: { validators: [createActionBody], example: EXAMPLE_ACTION_INPUT },
      responses: { 201: { description: 'The action (header values are write-only).', ...ONE_ACTION } },
      errors: { NOT_FOUND: 'no such agent', VALIDATION_ERROR: BAD_ACTION, CONFLICT: TAKEN, QUOTA_EXCEEDED: 'the agent has QUOTA_ACTIONS_PER_AGENT actions (50 by default)' },
      load: loadPathAgent,
      handler: async ({ req, res, loaded: agent, body }) => {
        const { em, companyId } = req.tenant!;
        const { method, url } = body.request;
        const sent = bodyOf(body.request.body ?? (BODY_METHODS.has(method) ? 'json' : 'none'));
        const problems = actionProblems({ name: body.name, parameters: body.parameters, url, bodyTemplate: sent.bodyTemplate }, body.request.headers);
        if (problems.length) throw invalidFields(problems);
        await assertTenantUrl(config, 'request.url', url);
        const now = new Date();
        const action = em.create(AgentActionSchema, {
          companyId, agentId: agent.id, name: body.name, description: body.description.trim(), parameters: body.parameters, method, url,
          headersSealed: sealHeaders(secrets, body.request.headers ?? {}, {}, 'request.headers'),
          ...sent, idempotent: body.request.idempotent ?? method === 'GET',
          timeoutMs: body.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS, createdAt: now, updatedAt: now,
        } as never);
        const quota = { companyId, field: 'actions', limit: config.quotas.actionsPerAgent, entity: AgentActionSchema, where: { agentId: agent.id } };
        await storing(() => withinQuota(em, quota, () => em.flush()));
        await changes.announce(companyId);
        res.status(201).json({ action: actionView(action) });
      },
    }),
    defineRoute({
      method: 'GET', path: '/:id/actions/:actionId', operationId: 'getAction', tag: 'Agents', access: 'any',
      summary: 'One action',
      params: [AGENT_ID, ACTION_ID],
      responses: { 200: { description: 'The action.', ...ONE_ACTION } },
      errors: { NOT_FOUND: 'no such agent or action' },
      load: loadPathAction,
      handler: ({ res, loaded: action }) => {
        res.json({ action: actionView(action) });
      },
    }),
    defineRoute({
      method: 'PATCH', path: '/:id/actions/:actionId', operationId: 'updateAction', tag: 'Agents', access: 'any',
      summary: 'Change an action (only the fields sent; `request` fields merge, `request.headers` replaces the map, a value "********" keeps the stored one)',
      params: [AGENT_ID, ACTION_ID],
      body: { validators: [patchActionBody], example: { request: { url: 'https://shop.example.com/api/v2/orders/{orderId}', headers: { Authorization: MASKED, 'X-Shop': 'berlin' } } } },
      responses: { 200: { description: 'The action as it is now.', ...ONE_ACTION } },
      errors: { NOT_FOUND: 'no such agent or action', VALIDATION_ERROR: `${BAD_ACTION}, or a URL at a new origin without every header value sent again`, CONFLICT: TAKEN },
      load: loadPathAction,
      handler: async ({ req, res, loaded: action, body }) => {
        const request = body.request ?? {};
        const sent = request.body === undefined ? { body: action.body, bodyTemplate: action.bodyTemplate } : bodyOf(request.body);
        const next = { name: body.name ?? action.name, parameters: body.parameters ?? action.parameters, url: request.url ?? action.url, bodyTemplate: sent.bodyTemplate };
        const problems = actionProblems(next, request.headers);
        if (problems.length) throw invalidFields(problems);
        if (request.url !== undefined && request.url !== action.url) {
          assertHeadersFollow(action.headersSealed, request.headers, action.url, request.url, 'request.headers');
          await assertTenantUrl(config, 'request.url', request.url);
        }
        if (request.headers !== undefined) action.headersSealed = sealHeaders(secrets, request.headers, action.headersSealed, 'request.headers');
        if (body.name !== undefined) action.name = body.name;
        if (body.description !== undefined) action.description = body.description.trim();
        if (body.parameters !== undefined) action.parameters = body.parameters;
        if (request.method !== undefined) action.method = request.method;
        if (request.url !== undefined) action.url = request.url;
        if (request.body !== undefined) Object.assign(action, sent);
        if (request.idempotent !== undefined) action.idempotent = request.idempotent;
        if (body.timeoutMs !== undefined) action.timeoutMs = body.timeoutMs;
        action.updatedAt = new Date();
        await storing(() => req.tenant!.em.flush());
        await changes.announce(req.tenant!.companyId);
        res.json({ action: actionView(action) });
      },
    }),
    defineRoute({
      method: 'DELETE', path: '/:id/actions/:actionId', operationId: 'deleteAction', tag: 'Agents', access: 'any',
      summary: 'Delete an action (the record of its calls stays)',
      params: [AGENT_ID, ACTION_ID],
      responses: { 204: { description: 'Deleted.' } },
      errors: { NOT_FOUND: 'no such agent or action' },
      handler: async ({ req, res }) => {
        await deleteById(req.tenant!, AgentActionSchema, req.params.actionId, 'Action', { agentId: idParam(req.params.id, 'Action') });
        await changes.announce(req.tenant!.companyId);
        res.status(204).end();
      },
    }),
    defineRoute({
      method: 'POST', path: '/:id/actions/:actionId/try', operationId: 'tryAction', tag: 'Agents', access: 'any',
      summary: 'Call an action once as the model would, and see what the model would get (not recorded among the tool calls)',
      params: [AGENT_ID, ACTION_ID],
      body: { validators: [tryActionBody], example: { arguments: { orderId: 'A-1001' } } },
      responses: {
        200: {
          description: 'How the call went, and what the model would be given: `{"status","body"}` of an HTTP answer (any status) or `{"error"}`, at most 8 KiB (a longer body is cut, with `"truncated": true`), header values redacted.',
          schema: object({ outcome: OUTCOME, result: { type: 'object', description: 'What the model would get.' } }),
          example: { outcome: { status: 'ok', httpStatus: 200, ms: 182, error: null }, result: { status: 200, body: { orderId: 'A-1001', status: 'shipped' } } },
        },
      },
      errors: { NOT_FOUND: 'no such agent or action', VALIDATION_ERROR: 'arguments that do not match the action\'s parameters (no request is made), an unknown field' },
      load: loadPathAction,
      handler: async ({ req, res, loaded: action, body }) => {
        const checked = checkArguments(action.parameters, body.arguments ?? {});
        if (!checked.ok) throw invalidArguments(checked);
        // A caller who leaves stops the call.
        const gone = new AbortController();
        res.on('close', () => gone.abort());
        const outcome = await callAction(actionCallOf(secrets, action), checked.args, {
          guard: guardForUrl(config, action.url), caller: callerOfContext(body.context), signal: gone.signal, masked: secretArguments(checked.args, action.parameters),
        });
        res.json({ outcome: { status: outcome.status, httpStatus: outcome.httpStatus, ms: outcome.ms, error: outcome.error }, result: outcome.result });
      },
    }),
  ];
}
