import { withinDeadline } from '../../lib/deadline.js';
import type { Logger } from '../../lib/logger.js';
import type { NatsConnection } from '../../lib/nats.js';

/**
 * Tells every worker that a company's agents changed (their settings, knowledge, actions or
 * MCP servers), on the core NATS subject `agentChanges` (`{"companyId":N}`); the workers drop
 * the company's cached configs (actors/agents/change-notices.ts). Called after the commit and
 * awaited before the answer: the flush puts the notice at the server before the client sees
 * its 200, so the next customer message it sends is answered with the change.
 */
export interface AgentChanges {
  /** Never throws: the change is saved; without NATS the workers' cache TTL is the fallback. */
  announce: (companyId: number) => Promise<void>;
}

/** How long an answer waits for the server to have the notice (NATS away: the change is still saved). */
const FLUSH_TIMEOUT_MS = 1_000;

export function agentChanges(nc: NatsConnection, subject: string, logger: Logger): AgentChanges {
  return {
    announce: async (companyId) => {
      try {
        nc.publish(subject, JSON.stringify({ companyId }));
        await withinDeadline(nc.flush(), FLUSH_TIMEOUT_MS);
      } catch (err) {
        logger.warn({ err, companyId }, 'could not announce an agent change (workers keep their cached config until its TTL)');
      }
    },
  };
}
