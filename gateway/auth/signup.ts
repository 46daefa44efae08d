import { randomUUID } from 'node:crypto';
import type { Orm } from '../../lib/db.js';
import { CompanySchema, LedgerEntrySchema, PipelineSchema, PipelineStageSchema, UserSchema, type Company, type User } from '../../schema/entities.js';

export const SIGNUP_BONUS_USD = '5.00';

/** The default pipeline every company starts with (contract.md § Auth). */
export const DEFAULT_PIPELINE = {
  name: 'Sales',
  stages: [
    { name: 'New lead', isWon: false, isLost: false },
    { name: 'Contacted', isWon: false, isLost: false },
    { name: 'Qualified', isWon: false, isLost: false },
    { name: 'Proposal', isWon: false, isLost: false },
    { name: 'Won', isWon: true, isLost: false },
    { name: 'Lost', isWon: false, isLost: true },
  ],
} as const;

/**
 * A company and its first user, the signup bonus and the default pipeline, in one
 * transaction: a failure leaves nothing half-made.
 */
export async function createAccount(orm: Orm, input: { email: string; passwordHash: string; companyName: string }): Promise<{ user: User; company: Company }> {
  return orm.em.fork().transactional(async (em) => {
    const company = em.create(CompanySchema, { publicId: randomUUID(), name: input.companyName, balanceUsd: SIGNUP_BONUS_USD, createdAt: new Date() } as never);
    await em.flush();
    const user = em.create(UserSchema, { id: randomUUID(), email: input.email, passwordHash: input.passwordHash, companyId: company.id, role: 'owner', displayName: null, isSuperadmin: false, createdAt: new Date() });
    em.create(LedgerEntrySchema, {
      companyId: company.id, kind: 'signup_bonus', amountUsd: SIGNUP_BONUS_USD, balanceAfterUsd: SIGNUP_BONUS_USD,
      inputTokens: null, outputTokens: null, model: null, conversationId: null, at: new Date(),
    } as never);
    const pipeline = em.create(PipelineSchema, { companyId: company.id, name: DEFAULT_PIPELINE.name, isDefault: true, createdAt: new Date() } as never);
    await em.flush();
    DEFAULT_PIPELINE.stages.forEach((stage, position) => {
      em.create(PipelineStageSchema, { companyId: company.id, pipelineId: pipeline.id, position, ...stage } as never);
    });
    await em.flush();
    return { user, company };
  });
}
