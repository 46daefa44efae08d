import { guardForUrl } from '../../lib/address-guard.js';
import type { Config } from '../../lib/config.js';
import type { SqlPool } from '../../lib/db.js';
import { AppError } from '../../lib/errors.js';
import { agentProfile } from '../../lib/agents/answer.js';
import { evaluateCase, EXPECT_HANDOFF, type CaseResult, type EvaluationCase } from '../../lib/agents/evaluate.js';
import { savedCases, saveCases } from '../../lib/agents/evaluation-cases.js';
import { McpConnections } from '../../lib/agents/tools/mcp-client.js';
import { loadAgentTools } from '../../lib/agents/tools/toolbox.js';
import { loadBaseInfo } from '../../lib/knowledge/retrieve.js';
import type { VectorIndex } from '../../lib/knowledge/vectors.js';
import type { Logger } from '../../lib/logger.js';
import type { SecretBox } from '../../lib/secrets.js';
import type { AnswerDecision } from '../../schema/conversation.js';
import { AgentEvaluationSchema, type AgentEvaluation } from '../../schema/entities.js';
import { BAD_PAGE, examplePage, PAGE_QUERY, pageOf } from '../http/pagination.js';
import { defineRoute, type Route } from '../http/route.js';
import { arrayOf, BIG_ID, BOOLEAN, COUNT, EXAMPLE_TIME, ID, nullable, object, SOURCE, STRING, TIMESTAMP } from '../http/schemas.js';
import { bodyValidator, type BodyValidator } from '../http/validate.js';
import { AGENT_ID } from './agent-schemas.js';
import { CLARIFY_OPTION } from './conversation-schemas.js';
import { loadPathAgent } from './agents.js';

/**
 * `POST /api/agents/:id/evaluations {cases:[{question, expect:[phrase…] | "handoff"}]}` runs the agent's
 * answer path on each question (lib/agents/evaluate.ts; nothing is sent to anyone, no
 * conversation is touched) and keeps the result; `GET /api/agents/:id/evaluations` pages
 * through them, newest first. A model agent's own tools are offered as to a customer; those
 * that change data are not called (lib/agents/tools/toolbox.ts), and the calls are in the
 * agent's tool-call ledger with no conversation. `GET|PUT /api/agents/:id/evaluation-cases`
 * keep the page's cases per agent (lib/agents/evaluation-cases.ts).
 */
export const MAX_CASES = 50;
/** Cases answered at once (a model agent's calls run in parallel up to this). */
const CONCURRENCY = 4;

const CASE = {
  type: 'object',
  additionalProperties: false,
  required: ['question', 'expect'],
  properties: {
    question: { type: 'string', minLength: 1, maxLength: 2000, pattern: '\\S' },
    // One schema for both forms (array keywords apply only to arrays, `pattern` only to
    // strings) so a bad phrase is named by its index rather than folded into an anyOf.
    expect: {
      type: ['array', 'string'],
      description: 'The phrases the answer must contain, or "handoff": the agent must not answer this question (it hands over, says its fallback text, declines a question not about the business, or asks which article was meant).',
      maxItems: 20,
      items: { type: 'string', minLength: 1, maxLength: 500, pattern: '\\S' },
      pattern: `^${EXPECT_HANDOFF}$`,
    },
  },
};

/** `{cases}` of at least `minItems` cases (a run needs one; a saved list may be emptied). */
const casesBody = (minItems: number) =>
  bodyValidator<{ cases: EvaluationCase[] }>({
    type: 'object',
    additionalProperties: false,
    required: ['cases'],
    properties: { cases: { type: 'array', minItems, maxItems: MAX_CASES, items: CASE } },
  });

const EXPECT_MESSAGE = `must be a list of phrases or "${EXPECT_HANDOFF}"`;

/** The body, with a message for a bad `expect` that says both forms (the schema's would say "must match pattern"). */
const withExpectMessage = (body: BodyValidator<{ cases: EvaluationCase[] }>): BodyValidator<{ cases: EvaluationCase[] }> => Object.assign(
  (raw: unknown): { cases: EvaluationCase[] } => {
    try {
      return body(raw);
    } catch (err) {
      if (!(err instanceof AppError) || !err.details) throw err;
      const cases = (raw as { cases?: unknown } | null | undefined)?.cases;
      const expectOf = (field: string): unknown => (Array.isArray(cases) ? (cases[Number(field.split('.')[1])] as { expect?: unknown } | undefined)?.expect : undefined);
      const details = err.details.map((d) => (/^cases\.\d+\.expect$/.test(d.field) && !Array.isArray(expectOf(d.field)) ? { field: d.field, message: EXPECT_MESSAGE } : d));
      throw new AppError('VALIDATION_ERROR', err.message, { details });
    }
  },
  { schema: body.schema },
);
const evaluationBody = withExpectMessage(casesBody(1));
const savedCasesBody = withExpectMessage(casesBody(0));
const SAVED_CASES = object({ cases: arrayOf(object({ question: STRING, expect: { anyOf: [arrayOf(STRING), { type: 'string', enum: [EXPECT_HANDOFF] }] } }, { title: 'EvaluationCase' })) });
const EXAMPLE_CASES = { cases: [{ question: 'When do you open?', expect: ['nine'] }, { question: 'Who won the match last night?', expect: 'handoff' }] };

/** A case as kept: results kept before expectations and decisions were recorded show those fields null. */
const caseView = (c: Partial<CaseResult>): CaseResult => ({ expect: null, confidence: null, decision: null, bestMatch: null, ...c }) as CaseResult;

export const evaluationView = (e: AgentEvaluation) => ({
  id: e.id,
  agentId: e.agentId,
  passed: e.passed,
  failed: e.failed,
  cases: (e.cases as Partial<CaseResult>[]).map(caseView),
  createdAt: e.createdAt.toISOString(),
});

export interface EvaluationRouteDeps {
  config: Config;
  sql: SqlPool;
  secrets: SecretBox;
  vectors: VectorIndex;
  logger: Logger;
}

/** `/api/agents/:id/evaluations`: mounted with the agents' routes. */
export function evaluationRoutes(deps: EvaluationRouteDeps): readonly Route[] {
  return [
    defineRoute({
      method: 'POST', path: '/:id/evaluations', operationId: 'evaluateAgent', tag: 'Agents', access: 'any',
      summary: "Test an agent: its answer path on each question (nothing is sent to anyone; a model's calls are billed)",
      params: [AGENT_ID],
      body: { validators: [evaluationBody], example: { cases: [{ question: 'When do you open?', expect: ['nine'] }, { question: 'Who won the match last night?', expect: 'handoff' }] } },
      responses: { 201: { description: 'The kept result.', schema: object({ evaluation: EVALUATION }), example: { evaluation: EXAMPLE_EVALUATION } } },
      errors: { NOT_FOUND: 'no such agent', VALIDATION_ERROR: `no cases, more than ${MAX_CASES}, or a bad case (an empty question; an \`expect\` that is neither a list of phrases nor "handoff")` },
      load: loadPathAgent,
      handler: async ({ req, res, loaded: agent, body: { cases } }) => {
        const tenant = req.tenant!;
        const profile = agentProfile(agent);
        const base = agent.knowledgeBaseId === null ? null : await loadBaseInfo(deps.sql, deps.secrets, deps.config, tenant.companyId, agent.knowledgeBaseId);
        const answerDeps = { sql: deps.sql, vectors: deps.vectors, secrets: deps.secrets, urls: deps.config, logger: deps.logger.child({ agentId: agent.id, evaluation: true }) };
        const tools = profile.provider === 'openai' ? await loadAgentTools(deps.sql, tenant.companyId, agent.id) : null;
        // This evaluation's own MCP clients (the gateway keeps none), closed with it.
        const mcp = tools?.size ? new McpConnections({ guardFor: (url) => guardForUrl(deps.config, url) }) : null;
        const results: CaseResult[] = new Array(cases.length);
        let next = 0;
        try {
          await Promise.all(
            Array.from({ length: Math.min(CONCURRENCY, cases.length) }, async () => {
              while (next < cases.length) {
                const i = next++;
                results[i] = await evaluateCase(answerDeps, profile, base, cases[i]!, tools ? { tools, mcp, conversationId: null } : undefined);
              }
            }),
          );
        } finally {
          await mcp?.close();
        }
        const passed = results.filter((r) => r.pass).length;
        const evaluation = tenant.em.create(AgentEvaluationSchema, { companyId: tenant.companyId, agentId: agent.id, passed, failed: results.length - passed, cases: results, createdAt: new Date() });
        await tenant.em.flush();
        res.status(201).json({ evaluation: evaluationView(evaluation) });
      },
    }),
    defineRoute({
      method: 'GET', path: '/:id/evaluation-cases', operationId: 'getEvaluationCases', tag: 'Agents', access: 'any',
      summary: "The agent's saved Test agent cases (none saved: an empty list)",
      params: [AGENT_ID],
      responses: { 200: { description: 'The cases as last saved, in order.', schema: SAVED_CASES, example: EXAMPLE_CASES } },
      errors: { NOT_FOUND: 'no such agent' },
      load: loadPathAgent,
      handler: async ({ req, res, loaded: agent }) => {
        res.json({ cases: await savedCases(deps.sql, req.tenant!.companyId, agent.id) });
      },
    }),
    defineRoute({
      method: 'PUT', path: '/:id/evaluation-cases', operationId: 'saveEvaluationCases', tag: 'Agents', access: 'any',
      summary: "Replace the agent's saved Test agent cases (the same cases POST /api/agents/{id}/evaluations runs)",
      params: [AGENT_ID],
      body: { validators: [savedCasesBody], example: EXAMPLE_CASES },
      responses: { 200: { description: 'The cases as saved now.', schema: SAVED_CASES, example: EXAMPLE_CASES } },
      errors: { NOT_FOUND: 'no such agent', VALIDATION_ERROR: `more than ${MAX_CASES} cases, or a bad case (an empty question; an \`expect\` that is neither a list of phrases nor "handoff")` },
      load: loadPathAgent,
      handler: async ({ req, res, loaded: agent, body: { cases } }) => {
        res.json({ cases: await saveCases(deps.sql, req.tenant!.companyId, agent.id, cases) });
      },
    }),
    defineRoute({
      method: 'GET', path: '/:id/evaluations', operationId: 'listEvaluations', tag: 'Agents', access: 'any',
      summary: "The agent's evaluations, newest first, paged",
      params: [AGENT_ID],
      query: PAGE_QUERY,
      responses: { 200: { description: 'A page of evaluations.', schema: pageOf('evaluations', EVALUATION), example: examplePage('evaluations', EXAMPLE_EVALUATION) } },
      errors: { NOT_FOUND: 'no such agent', VALIDATION_ERROR: BAD_PAGE },
      load: loadPathAgent,
      handler: async ({ req, res, loaded: agent, query: page }) => {
        const [rows, total] = await req.tenant!.em.findAndCount(AgentEvaluationSchema, { agentId: agent.id }, { orderBy: { id: 'desc' }, ...page });
        res.json({ evaluations: rows.map(evaluationView), total, ...page });
      },
    }),
  ];
}

/** The kinds of AnswerDecision (schema/conversation.ts), as the API documents them. */
export const DECISION_KINDS = ['greeting', 'thanks', 'answer', 'clarify', 'out_of_scope', 'no_answer', 'asked_for_human'] as const satisfies readonly AnswerDecision['kind'][];
/** A passage a decision weighed (schema/conversation.ts DecisionPassage): its confidence, and the evidence it was built from. */
export const DECISION_PASSAGE = object(
  {
    documentId: ID,
    chunkId: BIG_ID,
    title: STRING,
    confidence: { type: 'number', minimum: 0, maximum: 1, description: 'How well the passage answers the question, 0–1, from the lexical and the semantic evidence together.' },
    lexical: { type: 'number', minimum: 0, maximum: 1, description: "The lexical evidence: how much of the question's words the passage covers, 0–1." },
    semantic: { type: 'number', description: 'The semantic evidence: the cosine similarity of the question and the passage, −1 to 1 (absent: no vectors).' },
  },
  { title: 'DecisionPassage', optional: ['lexical', 'semantic'] },
);

const EVALUATION = object(
  {
    id: ID,
    agentId: ID,
    passed: COUNT,
    failed: COUNT,
    cases: arrayOf(
      object({
        question: STRING,
        expect: {
          anyOf: [arrayOf(STRING), { type: 'string', enum: [EXPECT_HANDOFF] }, { type: 'null' }],
          description: 'What the case expected: phrases, or "handoff" (null: a result kept before expectations were recorded).',
        },
        answer: { type: 'string', description: 'What the customer would read: the reply, or the notice of a handoff.' },
        outcome: { type: 'string', enum: ['reply', 'handoff', 'close'] },
        reason: { ...nullable(STRING), description: 'Why the agent handed over (handoff only).' },
        sources: arrayOf(SOURCE),
        confidence: { type: ['number', 'null'], minimum: 0, maximum: 1, description: 'How sure the agent was that its sources answer the question, 0–1 (grounded replies only; else null).' },
        decision: {
          type: ['string', 'null'],
          enum: [...DECISION_KINDS, null],
          description:
            'What the agent decided: a greeting or thanks, an answer from the knowledge, a question back when two or three articles are close (`clarify`: which one, `options`), ' +
            'a polite decline of a question not about this business (`out_of_scope`, no handoff), no answer (it handed over or said its fallback text), or the customer asked for a person. ' +
            'null: the answer path decided nothing (a handoff for want of credit or a working model).',
        },
        bestMatch: {
          ...nullable(DECISION_PASSAGE),
          description: 'The best passage the agent found, with how well it answers the question (also when it did not answer).',
        },
        options: { ...arrayOf(CLARIFY_OPTION), description: 'A `clarify` decision only: the articles the customer was asked to choose from, in the order offered.' },
        pass: BOOLEAN,
        missing: { ...arrayOf(STRING), description: 'The expected phrases the answer lacks.' },
      }, { optional: ['options'] }),
    ),
    createdAt: TIMESTAMP,
  },
  { title: 'Evaluation' },
);
const EXAMPLE_EVALUATION = {
  id: 1,
  agentId: 1,
  passed: 2,
  failed: 0,
  cases: [
    {
      question: 'When do you open?', expect: ['nine'], answer: 'We open at nine.', outcome: 'reply', reason: null, sources: [{ documentId: 7, chunkId: 31, title: 'Opening hours' }],
      confidence: 0.82, decision: 'answer', bestMatch: { documentId: 7, chunkId: 31, title: 'Opening hours', confidence: 0.82 }, pass: true, missing: [],
    },
    {
      question: 'Who won the match last night?', expect: 'handoff', answer: "Sorry, I don't have an answer to that. A human colleague will take over shortly.", outcome: 'handoff', reason: 'no_answer', sources: [],
      confidence: null, decision: 'no_answer', bestMatch: { documentId: 7, chunkId: 31, title: 'Opening hours', confidence: 0.08 }, pass: true, missing: [],
    },
  ],
  createdAt: EXAMPLE_TIME,
};
