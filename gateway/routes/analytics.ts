import type { SqlPool } from '../../lib/db.js';
import { AppError, type FieldError } from '../../lib/errors.js';
import { MAX_PERIOD_DAYS, outcomes, REOPEN_WINDOW_DAYS } from '../analytics/outcomes.js';
import { defineRoute, type QueryParams, type Route } from '../http/route.js';
import { arrayOf, COUNT, DATE_OR_TIME, ID, nullable, object, TIMESTAMP, USD } from '../http/schemas.js';
import { idFilter, invalidFields } from '../http/validate.js';

/**
 * GET /api/analytics?from=&to=&agentId= → {"analytics":{…}}: the outcome figures of the
 * company's agents (gateway/analytics/outcomes.ts has the definitions), in total and per UTC
 * day. `from` and `to` are UTC dates (`2026-11-01`, both days included) or ISO timestamps
 * with a zone (`to` excluded); the period is at most MAX_PERIOD_DAYS days.
 */
export interface AnalyticsRouteDeps {
  sql: SqlPool;
  /** Injectable clock (ms since epoch): the default `to`. */
  now?: () => number;
}

/** Without `from`, the period is this many days up to `to`. */
export const DEFAULT_PERIOD_DAYS = 30;
const DAY_MS = 86_400_000;

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const TIMESTAMP_TEXT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/;

/** A period bound: a UTC date (its midnight, or the next one for an inclusive `to`) or a timestamp with a zone. */
export function parseBound(value: unknown, field: 'from' | 'to', details: FieldError[]): Date | undefined {
  if (value === undefined) return undefined;
  const bad = () => {
    details.push({ field, message: 'must be a date (YYYY-MM-DD, UTC) or an ISO 8601 timestamp with a zone' });
    return undefined;
  };
  if (typeof value !== 'string') return bad();
  if (DATE.test(value)) {
    const midnight = new Date(`${value}T00:00:00.000Z`);
    if (Number.isNaN(midnight.getTime()) || midnight.toISOString().slice(0, 10) !== value) return bad();
    return field === 'to' ? new Date(midnight.getTime() + DAY_MS) : midnight;
  }
  if (!TIMESTAMP_TEXT.test(value)) return bad();
  const at = new Date(value);
  return Number.isNaN(at.getTime()) ? bad() : at;
}

const FIGURES = {
  conversations: { ...COUNT, description: 'Sessions started.' },
  autoResolved: { ...COUNT, description: "Sessions closed that were never handed to a human, in which no operator wrote and that no operator closed: mostly those whose customer stayed silent after the agent's answer for the agent's autoResolveMinutes." },
  handedOff: { ...COUNT, description: 'Sessions handed over (agent handoff or helpdesk transfer), at their first handoff.' },
  reopened: { ...COUNT, description: `Sessions started by a customer whose previous session had closed at most ${REOPEN_WINDOW_DAYS} days before.` },
  replies: { ...COUNT, description: 'Agent replies delivered.' },
  modelCostUsd: USD,
  costPerResolutionUsd: { ...nullable(USD), description: 'modelCostUsd / autoResolved; null when none was resolved.' },
};
const EXAMPLE_FIGURES = { conversations: 12, autoResolved: 9, handedOff: 3, reopened: 1, replies: 30, modelCostUsd: '0.042000', costPerResolutionUsd: '0.004667' };
const ANALYTICS = object(
  {
    from: TIMESTAMP,
    to: { ...TIMESTAMP, description: 'Excluded.' },
    agentId: nullable(ID),
    reopenWindowDays: COUNT,
    ...FIGURES,
    byDay: arrayOf(object({ date: { type: 'string', format: 'date' }, ...FIGURES }, { title: 'DayOutcomes' })),
  },
  { title: 'Analytics' },
);

/** The period and agent asked for: `to` defaults to now, `from` to DEFAULT_PERIOD_DAYS before `to`. */
function periodQuery(now: () => number): QueryParams<{ from: Date; to: Date; agentId: number | null }> {
  return {
    params: [
      { name: 'from', in: 'query', description: `A UTC date (2026-03-01) or an ISO 8601 timestamp with its zone; default ${DEFAULT_PERIOD_DAYS} days before \`to\`.`, schema: DATE_OR_TIME, example: '2026-03-01' },
      { name: 'to', in: 'query', description: 'A UTC date (its whole day included) or an ISO 8601 timestamp with its zone (excluded); default now.', schema: DATE_OR_TIME, example: '2026-03-31' },
      { name: 'agentId', in: 'query', description: "Only this agent's integrations and model calls.", schema: ID },
    ],
    parse: (q) => {
      const details: FieldError[] = [];
      const from = parseBound(q.from, 'from', details);
      const to = parseBound(q.to, 'to', details) ?? (q.to === undefined ? new Date(now()) : undefined);
      const agentId = idFilter(q, 'agentId', details) ?? null;
      if (details.length) throw invalidFields(details);
      const end = to!;
      const start = from ?? new Date(end.getTime() - DEFAULT_PERIOD_DAYS * DAY_MS);
      if (end.getTime() <= start.getTime()) {
        throw new AppError('VALIDATION_ERROR', 'Invalid to.', { details: [{ field: 'to', message: 'must be after from' }] });
      }
      if (end.getTime() - start.getTime() > MAX_PERIOD_DAYS * DAY_MS) {
        throw new AppError('VALIDATION_ERROR', 'Invalid to.', { details: [{ field: 'to', message: `the period from…to must be at most ${MAX_PERIOD_DAYS} days` }] });
      }
      return { from: start, to: end, agentId };
    },
  };
}

export function analyticsRoutes({ sql, now = Date.now }: AnalyticsRouteDeps): readonly Route[] {
  return [
    defineRoute({
      method: 'GET', path: '/analytics', operationId: 'getAnalytics', tag: 'Analytics', access: 'any',
      summary: "Outcomes of the company's agents over a period, in total and per UTC day",
      query: periodQuery(now),
      responses: {
        200: {
          description: `The figures (at most ${MAX_PERIOD_DAYS} days).`,
          schema: object({ analytics: ANALYTICS }),
          example: {
            analytics: {
              from: '2026-03-01T00:00:00.000Z', to: '2026-03-02T00:00:00.000Z', agentId: null, reopenWindowDays: REOPEN_WINDOW_DAYS, ...EXAMPLE_FIGURES,
              byDay: [{ date: '2026-03-01', ...EXAMPLE_FIGURES }],
            },
          },
        },
      },
      errors: { VALIDATION_ERROR: `a bad from, to or agentId, to not after from, or a period over ${MAX_PERIOD_DAYS} days` },
      handler: async ({ req, res, query: { from, to, agentId } }) => {
        res.json({ analytics: await outcomes(sql, { companyId: req.tenant!.companyId, from, to, agentId }) });
      },
    }),
  ];
}
