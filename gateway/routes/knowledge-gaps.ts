import { query, type SqlPool } from '../../lib/db.js';
import { AppError, notFound, type FieldError } from '../../lib/errors.js';
import { groupNoAnswers, MAX_GAP_CONVERSATIONS, MAX_GAP_QUESTIONS, readNoAnswers, type KnowledgeGap } from '../../lib/knowledge/gaps.js';
import { BAD_PAGE, DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT, PAGE_PARAMS, pageParams, type Page } from '../http/pagination.js';
import { defineRoute, type QueryParams, type Route } from '../http/route.js';
import { arrayOf, BIG_ID, BOOLEAN, COUNT, DATE_OR_TIME, EXAMPLE_TIME, ID, nullable, object, STRING, TIMESTAMP } from '../http/schemas.js';
import { idParam, idPathParam, invalidFields } from '../http/validate.js';
import { DEFAULT_PERIOD_DAYS, parseBound } from './analytics.js';

/**
 * `GET /api/knowledge-bases/:id/gaps?from=&to=` → `{"gaps":[{"question","count","lastAt",
 * "conversationIds","bestMatch"}],"total",…}`: the questions customers asked of the base that
 * ended without an answer, similar ones grouped (lib/knowledge/gaps.ts), most frequent first,
 * paged like every list.
 */
export interface KnowledgeGapRouteDeps {
  /** The API's pool (statement timeout): the no-answers are read with plain SQL through their partial index. */
  sql: SqlPool;
  /** Injectable clock (ms since epoch): the default `to`. */
  now?: () => number;
}

const DAY_MS = 86_400_000;

/**
 * The period asked for: `to` defaults to now, `from` to DEFAULT_PERIOD_DAYS before `to`. An
 * empty period is refused like a reversed one: with dates (`to` included) it can only be a mistake.
 */
function periodOf(q: Record<string, unknown>, now: number): { from: Date; to: Date } {
  const details: FieldError[] = [];
  const from = parseBound(q.from, 'from', details);
  const to = parseBound(q.to, 'to', details);
  if (details.length) throw invalidFields(details);
  const end = to ?? new Date(now);
  const start = from ?? new Date(end.getTime() - DEFAULT_PERIOD_DAYS * DAY_MS);
  if (start.getTime() >= end.getTime()) {
    throw new AppError('VALIDATION_ERROR', 'Invalid from.', { details: [{ field: 'from', message: q.to === undefined ? 'must be in the past' : 'must be before to' }] });
  }
  return { from: start, to: end };
}

const gapView = (g: KnowledgeGap) => ({
  question: g.question,
  count: g.count,
  lastAt: g.lastAt.toISOString(),
  conversationIds: g.conversationIds,
  bestMatch: g.bestMatch,
});

const GAP = object(
  {
    question: { ...STRING, description: "The group's most frequent phrasing (ties: the newest), as a customer wrote it." },
    count: { ...COUNT, description: 'Questions of the group that ended without an answer in the period.' },
    lastAt: { ...TIMESTAMP, description: 'When the newest of them was asked.' },
    conversationIds: { ...arrayOf(ID), description: `The conversations they were asked in: distinct, newest first, at most ${MAX_GAP_CONVERSATIONS}.` },
    bestMatch: {
      ...nullable(
        object(
          {
            documentId: ID,
            chunkId: BIG_ID,
            title: { ...STRING, description: 'The document title when the question was asked.' },
            confidence: { type: 'number', minimum: 0, maximum: 1, description: 'How well the passage answers the question (below the agent\'s threshold, or it would have been answered).' },
          },
          { title: 'KnowledgeGapMatch' },
        ),
      ),
      description: 'The best passage the agent found for the newest question of the group; null when nothing was found.',
    },
  },
  { title: 'KnowledgeGap' },
);

const EXAMPLE_GAP = {
  question: 'Do you ship to Japan?',
  count: 7,
  lastAt: EXAMPLE_TIME,
  conversationIds: [412, 398, 377],
  bestMatch: { documentId: 7, chunkId: 31, title: 'Delivery', confidence: 0.31 },
};

/** The period (as periodOf reads it) and the page of the gaps. */
function gapsQuery(now: () => number): QueryParams<{ from: Date; to: Date } & Page> {
  return {
    params: [
      { name: 'from', in: 'query', description: `A UTC date (2026-03-01) or an ISO 8601 timestamp with its zone; default ${DEFAULT_PERIOD_DAYS} days before \`to\`.`, schema: DATE_OR_TIME, example: '2026-03-01T00:00:00Z' },
      { name: 'to', in: 'query', description: 'A UTC date (its whole day included) or an ISO 8601 timestamp with its zone (excluded); default now.', schema: DATE_OR_TIME, example: '2026-03-31T00:00:00Z' },
      ...PAGE_PARAMS,
    ],
    parse: (q) => ({ ...periodOf(q, now()), ...pageParams(q) }),
  };
}

/** `/api/knowledge-bases/:id/gaps`: mounted with the knowledge bases' routes. */
export function knowledgeGapRoutes({ sql, now = Date.now }: KnowledgeGapRouteDeps): readonly Route[] {
  return [
    defineRoute({
      method: 'GET', path: '/:id/gaps', operationId: 'listKnowledgeGaps', tag: 'Knowledge', access: 'any',
      summary: 'Knowledge gaps: customer questions that ended without an answer, similar ones grouped, most frequent first, paged',
      description:
        `Read from the agents' decisions in the transition log: every customer message an agent using this base could not answer from it (it followed onNoAnswer, or a model reply was withheld or handed over). ` +
        `Questions that differ only in case, punctuation, spacing, word order, filler words or small typos are one gap. ` +
        `The grouping covers the newest ${MAX_GAP_QUESTIONS} such questions of the period: when it held more, \`truncated\` is true and a shorter period shows the older ones. ` +
        `Groups are ordered by count, then by the newest question.`,
      params: [idPathParam('knowledge base')],
      query: gapsQuery(now),
      responses: {
        200: {
          description: 'A page of gaps; `total` is the number of groups.',
          schema: object({
            gaps: arrayOf(GAP),
            total: COUNT,
            limit: { type: 'integer', minimum: 1, maximum: MAX_LIST_LIMIT },
            offset: COUNT,
            from: { ...TIMESTAMP, description: 'The period as applied (defaults filled in).' },
            to: { ...TIMESTAMP, description: 'Excluded.' },
            truncated: { ...BOOLEAN, description: `The period held more than ${MAX_GAP_QUESTIONS} unanswered questions: only the newest ${MAX_GAP_QUESTIONS} are grouped.` },
          }),
          example: { gaps: [EXAMPLE_GAP], total: 1, limit: DEFAULT_LIST_LIMIT, offset: 0, from: '2026-02-01T10:00:00.000Z', to: '2026-03-03T10:00:00.000Z', truncated: false },
        },
      },
      errors: { NOT_FOUND: 'no such knowledge base', VALIDATION_ERROR: `a bad from or to (a date or a timestamp with its zone), from not before to, or ${BAD_PAGE}` },
      load: async (req) => {
        const knowledgeBaseId = idParam(req.params.id, 'Knowledge base');
        const [base] = await query(sql, 'kb_gaps_base', 'select 1 from knowledge_bases where id = $1 and company_id = $2', [knowledgeBaseId, req.tenant!.companyId]);
        if (!base) throw notFound('Knowledge base');
        return knowledgeBaseId;
      },
      handler: async ({ req, res, loaded: knowledgeBaseId, query: { from, to, limit, offset } }) => {
        const { noAnswers, truncated } = await readNoAnswers(sql, { companyId: req.tenant!.companyId, knowledgeBaseId, from, to });
        const gaps = groupNoAnswers(noAnswers);
        res.json({ gaps: gaps.slice(offset, offset + limit).map(gapView), total: gaps.length, limit, offset, from: from.toISOString(), to: to.toISOString(), truncated });
      },
    }),
  ];
}
