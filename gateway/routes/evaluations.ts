import { Router, type Request } from 'express';
import type { Config } from '../../lib/config.js';
import type { SqlPool } from '../../lib/db.js';
import { notFound } from '../../lib/errors.js';
import { agentProfile } from '../../lib/agents/answer.js';
import { evaluateCase, type CaseResult, type EvaluationCase } from '../../lib/agents/evaluate.js';
import { loadBaseInfo } from '../../lib/knowledge/retrieve.js';
import type { VectorIndex } from '../../lib/knowledge/vectors.js';
import type { Logger } from '../../lib/logger.js';
import type { SecretBox } from '../../lib/secrets.js';
import { AgentEvaluationSchema, AgentSchema, type AgentEvaluation } from '../../schema/entities.js';
import type { Authenticator } from '../auth/authenticate.js';
import { BAD_PAGE, examplePage, PAGE_PARAMS, pageOf, pageParams } from '../http/pagination.js';
import type { RouteDoc } from '../http/route-docs.js';
import { arrayOf, BOOLEAN, COUNT, EXAMPLE_TIME, ID, nullable, object, SOURCE, STRING, TIMESTAMP } from '../http/schemas.js';
import { bodyValidator, idParam, idPathParam } from '../http/validate.js';

/**
 * `POST /api/agents/:id/evaluations {cases:[{question, expect:[phrase…]}]}` runs the agent's
 * answer path on each question (lib/agents/evaluate.ts; nothing is sent to anyone, no
 * conversation is touched) and keeps the result; `GET /api/agents/:id/evaluations` pages
 * through them, newest first.
 */
export const MAX_CASES = 50;
/** Cases answered at once (a model agent's calls run in parallel up to this). */
const CONCURRENCY = 4;

const body = bodyValidator<{ cases: EvaluationCase[] }>({
  type: 'object',
  additionalProperties: false,
  required: ['cases'],
  properties: {
    cases: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_CASES,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['question', 'expect'],
        properties: {
          question: { type: 'string', minLength: 1, maxLength: 2000, pattern: '\\S' },
          expect: { type: 'array', maxItems: 20, items: { type: 'string', minLength: 1, maxLength: 500, pattern: '\\S' } },
        },
      },
    },
  },
});

export const evaluationView = (e: AgentEvaluation) => ({
  id: e.id,
  agentId: e.agentId,
  passed: e.passed,
  failed: e.failed,
  cases: e.cases as CaseResult[],
  createdAt: e.createdAt.toISOString(),
});

export interface EvaluationRouteDeps {
  auth: Authenticator;
  config: Config;
  sql: SqlPool;
  secrets: SecretBox;
  vectors: VectorIndex;
  logger: Logger;
}

export function evaluationRoutes(deps: EvaluationRouteDeps): Router {
  const router = Router();
  router.use(deps.auth.any);

  const loadAgent = async (req: Request, rawId: unknown) => {
    const agent = await req.tenant!.em.findOne(AgentSchema, { id: idParam(rawId, 'Agent') }, { populate: ['modelApiKeySealed'] });
    if (!agent) throw notFound('Agent');
    return agent;
  };

  router.post('/:id/evaluations', async (req, res) => {
    const tenant = req.tenant!;
    const agent = await loadAgent(req, req.params.id);
    const { cases } = body(req.body);
    const profile = agentProfile(agent);
    const base = agent.knowledgeBaseId === null ? null : await loadBaseInfo(deps.sql, deps.secrets, deps.config, tenant.companyId, agent.knowledgeBaseId);
    const answerDeps = { sql: deps.sql, vectors: deps.vectors, secrets: deps.secrets, urls: deps.config, logger: deps.logger.child({ agentId: agent.id, evaluation: true }) };
    const results: CaseResult[] = new Array(cases.length);
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(CONCURRENCY, cases.length) }, async () => {
        while (next < cases.length) {
          const i = next++;
          results[i] = await evaluateCase(answerDeps, profile, base, cases[i]!);
        }
      }),
    );
    const passed = results.filter((r) => r.pass).length;
    const evaluation = tenant.em.create(AgentEvaluationSchema, { companyId: tenant.companyId, agentId: agent.id, passed, failed: results.length - passed, cases: results, createdAt: new Date() });
    await tenant.em.flush();
    res.status(201).json({ evaluation: evaluationView(evaluation) });
  });

  router.get('/:id/evaluations', async (req, res) => {
    const tenant = req.tenant!;
    const agent = await loadAgent(req, req.params.id);
    const page = pageParams(req.query as Record<string, unknown>);
    const [rows, total] = await tenant.em.findAndCount(AgentEvaluationSchema, { agentId: agent.id }, { orderBy: { id: 'desc' }, ...page });
    res.json({ evaluations: rows.map(evaluationView), total, ...page });
  });

  return router;
}

const EVALUATION = object(
  {
    id: ID,
    agentId: ID,
    passed: COUNT,
    failed: COUNT,
    cases: arrayOf(
      object({
        question: STRING,
        answer: { type: 'string', description: 'What the customer would read: the reply, or the notice of a handoff.' },
        outcome: { type: 'string', enum: ['reply', 'handoff', 'close'] },
        reason: { ...nullable(STRING), description: 'Why the agent handed over (handoff only).' },
        sources: arrayOf(SOURCE),
        pass: BOOLEAN,
        missing: { ...arrayOf(STRING), description: 'The expected phrases the answer lacks.' },
      }),
    ),
    createdAt: TIMESTAMP,
  },
  { title: 'Evaluation' },
);
const EXAMPLE_EVALUATION = {
  id: 1,
  agentId: 1,
  passed: 1,
  failed: 0,
  cases: [{ question: 'When do you open?', answer: 'We open at nine.', outcome: 'reply', reason: null, sources: [{ documentId: 7, chunkId: 31, title: 'Opening hours' }], pass: true, missing: [] }],
  createdAt: EXAMPLE_TIME,
};
const AGENT_ID = idPathParam('agent');

export const evaluationRouteDocs: readonly RouteDoc[] = [
  {
    method: 'POST', path: '/:id/evaluations', operationId: 'evaluateAgent', tag: 'Agents', access: 'any',
    summary: "Test an agent: its answer path on each question (nothing is sent to anyone; a model's calls are billed)",
    params: [AGENT_ID],
    body: { validators: [body], example: { cases: [{ question: 'When do you open?', expect: ['nine'] }] } },
    responses: { 201: { description: 'The kept result.', schema: object({ evaluation: EVALUATION }), example: { evaluation: EXAMPLE_EVALUATION } } },
    errors: { NOT_FOUND: 'no such agent', VALIDATION_ERROR: `no cases, more than ${MAX_CASES}, or a bad case` },
  },
  {
    method: 'GET', path: '/:id/evaluations', operationId: 'listEvaluations', tag: 'Agents', access: 'any',
    summary: "The agent's evaluations, newest first, paged",
    params: [AGENT_ID, ...PAGE_PARAMS],
    responses: { 200: { description: 'A page of evaluations.', schema: pageOf('evaluations', EVALUATION), example: examplePage('evaluations', EXAMPLE_EVALUATION) } },
    errors: { NOT_FOUND: 'no such agent', VALIDATION_ERROR: BAD_PAGE },
  },
];
