import { Router } from 'express';
import { formatUsd } from '../../lib/money.js';
import { CompanySchema, LedgerEntrySchema, PipelineSchema, PipelineStageSchema, type LedgerEntry } from '../../schema/entities.js';
import type { Authenticator } from '../auth/authenticate.js';

const ledgerView = (e: LedgerEntry) => ({
  id: Number(e.id),
  kind: e.kind,
  amountUsd: formatUsd(e.amountUsd),
  balanceAfterUsd: formatUsd(e.balanceAfterUsd),
  inputTokens: e.inputTokens,
  outputTokens: e.outputTokens,
  model: e.model,
  conversationId: e.conversationId,
  at: e.at.toISOString(),
});

/** Ledger entries shown by GET /api/billing, newest first. */
const LEDGER_PAGE = 200;

export function billingRoutes(auth: Authenticator): Router {
  const router = Router();
  router.get('/billing', auth.any, async (req, res) => {
    const { em, companyId } = req.tenant!;
    const company = await em.findOneOrFail(CompanySchema, { id: companyId });
    const ledger = await em.find(LedgerEntrySchema, {}, { orderBy: { id: 'desc' }, limit: LEDGER_PAGE });
    res.json({ billing: { balanceUsd: formatUsd(company.balanceUsd), ledger: ledger.map(ledgerView) } });
  });

  router.get('/pipelines', auth.any, async (req, res) => {
    const { em } = req.tenant!;
    const pipelines = await em.find(PipelineSchema, {}, { orderBy: { id: 'asc' } });
    const stages = await em.find(PipelineStageSchema, { pipelineId: { $in: pipelines.map((p) => p.id) } }, { orderBy: { position: 'asc' } });
    res.json({
      pipelines: pipelines.map((p) => ({
        id: p.id,
        name: p.name,
        isDefault: p.isDefault,
        stages: stages.filter((s) => s.pipelineId === p.id).map((s) => ({ id: s.id, name: s.name, position: s.position, isWon: s.isWon, isLost: s.isLost })),
      })),
    });
  });
  return router;
}
