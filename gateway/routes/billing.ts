import { formatUsd } from '../../lib/money.js';
import type { TenantScope } from '../../lib/tenancy.js';
import { BAD_PAGE, DEFAULT_LIST_LIMIT, examplePage, PAGE_QUERY, pageOf } from '../http/pagination.js';
import { defineRoute, type Route } from '../http/route.js';
import { arrayOf, BIG_ID, BOOLEAN, COUNT, EXAMPLE_TIME, ID, nullable, object, STRING, TIMESTAMP, USD } from '../http/schemas.js';
import { bodyValidator, USD_AMOUNT } from '../http/validate.js';
import { CompanySchema, LedgerEntrySchema, PipelineSchema, PipelineStageSchema, type LedgerEntry } from '../../schema/entities.js';

const ledgerView = (e: LedgerEntry) => ({
  id: Number(e.id),
  kind: e.kind,
  amountUsd: formatUsd(e.amountUsd),
  balanceAfterUsd: formatUsd(e.balanceAfterUsd),
  inputTokens: e.inputTokens,
  outputTokens: e.outputTokens,
  model: e.model,
  conversationId: e.conversationId,
  agentId: e.agentId,
  at: e.at.toISOString(),
});

const patchBody = bodyValidator<{ spendCapUsdPerDay: string | null }>({
  type: 'object',
  additionalProperties: false,
  required: ['spendCapUsdPerDay'],
  properties: { spendCapUsdPerDay: { type: ['string', 'null'], pattern: USD_AMOUNT } },
});

const LEDGER_ENTRY = object(
  {
    id: BIG_ID,
    kind: { type: 'string', enum: ['signup_bonus', 'model_usage', 'replay_usage', 'top_up', 'adjustment'], description: '`replay_usage`: the model calls of a replay of past conversations (POST /api/agents/{id}/replays); daily spend caps count `model_usage` only.' },
    amountUsd: USD,
    balanceAfterUsd: USD,
    inputTokens: nullable(COUNT),
    outputTokens: nullable(COUNT),
    model: nullable(STRING),
    conversationId: nullable(ID),
    agentId: nullable(ID),
    at: TIMESTAMP,
  },
  { title: 'LedgerEntry' },
);
const BILLING = object(
  {
    balanceUsd: USD,
    reservedUsd: { ...USD, description: 'Held by model calls in flight (their estimated cost) until each settles.' },
    spendCapUsdPerDay: nullable(USD),
    spentTodayUsd: { ...USD, description: 'Model spend of the current UTC day.' },
    ledger: { ...arrayOf(LEDGER_ENTRY), description: `The newest ${DEFAULT_LIST_LIMIT} entries.` },
    ledgerTotal: COUNT,
  },
  { title: 'Billing' },
);
const EXAMPLE_ENTRY = { id: 1, kind: 'signup_bonus', amountUsd: '5.00', balanceAfterUsd: '5.00', inputTokens: null, outputTokens: null, model: null, conversationId: null, agentId: null, at: EXAMPLE_TIME };
const ONE_BILLING = {
  schema: object({ billing: BILLING }),
  example: { billing: { balanceUsd: '5.00', reservedUsd: '0.00', spendCapUsdPerDay: null, spentTodayUsd: '0.00', ledger: [EXAMPLE_ENTRY], ledgerTotal: 1 } },
};

/** Credit, the daily spend cap and the ledger (`/api/billing`), and the pipelines (`/api/pipelines`). */
export function billingRoutes(): readonly Route[] {
  const billing = async ({ em, companyId }: TenantScope) => {
    const company = await em.findOneOrFail(CompanySchema, { id: companyId });
    // The newest page; GET /api/billing/ledger pages through all of it.
    const [ledger, ledgerTotal] = await em.findAndCount(LedgerEntrySchema, {}, { orderBy: { id: 'desc' }, limit: DEFAULT_LIST_LIMIT });
    const [spent] = (await em.getConnection().execute(
      `select coalesce(-sum(amount_usd), 0)::text as spent from credit_ledger
       where company_id = ? and kind = 'model_usage' and at >= date_trunc('day', now() at time zone 'utc') at time zone 'utc'`,
      [companyId],
    )) as { spent: string }[];
    return {
      balanceUsd: formatUsd(company.balanceUsd),
      // Held by model calls in flight (their estimated cost), until each settles.
      reservedUsd: formatUsd(company.reservedUsd),
      spendCapUsdPerDay: company.spendCapUsdPerDay === null ? null : formatUsd(company.spendCapUsdPerDay),
      spentTodayUsd: formatUsd(spent!.spent),
      ledger: ledger.map(ledgerView),
      ledgerTotal,
    };
  };

  return [
    defineRoute({
      method: 'GET', path: '/billing', operationId: 'getBilling', tag: 'Billing', access: 'any',
      summary: 'Credit balance, daily spend cap, spend today and the newest ledger entries',
      responses: { 200: { description: 'The billing summary.', ...ONE_BILLING } },
      handler: async ({ req, res }) => {
        res.json({ billing: await billing(req.tenant!) });
      },
    }),
    defineRoute({
      method: 'GET', path: '/billing/ledger', operationId: 'listLedger', tag: 'Billing', access: 'any',
      summary: 'The whole credit ledger, newest first, paged',
      query: PAGE_QUERY,
      responses: { 200: { description: 'A page of the ledger.', schema: pageOf('ledger', LEDGER_ENTRY), example: examplePage('ledger', EXAMPLE_ENTRY) } },
      errors: { VALIDATION_ERROR: BAD_PAGE },
      handler: async ({ req, res, query: page }) => {
        const [entries, total] = await req.tenant!.em.findAndCount(LedgerEntrySchema, {}, { orderBy: { id: 'desc' }, ...page });
        res.json({ ledger: entries.map(ledgerView), total, ...page });
      },
    }),
    defineRoute({
      method: 'PATCH', path: '/billing', operationId: 'setSpendCap', tag: 'Billing', access: 'any', role: 'admin',
      summary: "Set the company's daily (UTC) model spend cap; null removes it",
      body: { validators: [patchBody], example: { spendCapUsdPerDay: '10.00' } },
      responses: { 200: { description: 'The billing summary with the new cap.', ...ONE_BILLING } },
      errors: { VALIDATION_ERROR: 'spendCapUsdPerDay missing or not a decimal string' },
      // Past the cap, conversations go to a human.
      handler: async ({ req, res, body }) => {
        const { em, companyId } = req.tenant!;
        await em.nativeUpdate(CompanySchema, { id: companyId }, { spendCapUsdPerDay: body.spendCapUsdPerDay });
        res.json({ billing: await billing(req.tenant!) });
      },
    }),
    defineRoute({
      method: 'GET', path: '/pipelines', operationId: 'listPipelines', tag: 'Pipelines', access: 'any',
      summary: "The company's sales pipelines and their stages, oldest first, paged",
      query: PAGE_QUERY,
      responses: {
        200: {
          description: 'A page of pipelines, each with its stages in order.',
          schema: pageOf(
            'pipelines',
            object(
              { id: ID, name: STRING, isDefault: BOOLEAN, stages: arrayOf(object({ id: ID, name: STRING, position: COUNT, isWon: BOOLEAN, isLost: BOOLEAN })) },
              { title: 'Pipeline' },
            ),
          ),
          example: examplePage('pipelines', { id: 1, name: 'Sales', isDefault: true, stages: [{ id: 1, name: 'New lead', position: 0, isWon: false, isLost: false }] }),
        },
      },
      errors: { VALIDATION_ERROR: BAD_PAGE },
      handler: async ({ req, res, query: page }) => {
        const { em } = req.tenant!;
        const [pipelines, total] = await em.findAndCount(PipelineSchema, {}, { orderBy: { id: 'asc' }, ...page });
        const stages = await em.find(PipelineStageSchema, { pipelineId: { $in: pipelines.map((p) => p.id) } }, { orderBy: { position: 'asc' } });
        res.json({
          pipelines: pipelines.map((p) => ({
            id: p.id,
            name: p.name,
            isDefault: p.isDefault,
            stages: stages.filter((s) => s.pipelineId === p.id).map((s) => ({ id: s.id, name: s.name, position: s.position, isWon: s.isWon, isLost: s.isLost })),
          })),
          total,
          ...page,
        });
      },
    }),
  ];
}
