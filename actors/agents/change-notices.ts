import type { Logger } from '../../lib/logger.js';
import type { NatsConnection } from '../../lib/nats.js';
import type { StreamNames } from '../../lib/streams.js';
import type { AgentCaches } from './runner.js';

/**
 * The worker's side of change notices: the gateway announces, after its commit and before
 * it answers, every change to a company's agents, knowledge, actions and MCP servers on
 * `agentChanges` (`{"companyId":N}`, gateway/lib/agent-changes.ts) and every change to an
 * integration on `integrationChanges` (`{"integrationId":N}`, gateway/webhook/integration-cache.ts).
 * Every worker drops the affected cached entries, so the next customer message is answered
 * with what the API call saved. A notice it cannot read, and a reconnect to NATS (a notice
 * may have gone by meanwhile), drop everything. Nothing here runs per customer message.
 * Returns what stops listening.
 */
export function listenForChanges(nc: NatsConnection, names: Pick<StreamNames, 'agentChanges' | 'integrationChanges'>, caches: AgentCaches, logger: Logger): () => void {
  const numberIn = (data: Uint8Array, field: string): number | null => {
    try {
      const value = (JSON.parse(new TextDecoder().decode(data)) as Record<string, unknown>)[field];
      return typeof value === 'number' && Number.isInteger(value) ? value : null;
    } catch {
      return null;
    }
  };
  const onNotice = (field: string, forget: (id: number) => void) => (err: Error | null, msg: { data: Uint8Array }) => {
    if (err) return;
    const id = numberIn(msg.data, field);
    if (id === null) {
      logger.warn({ field }, 'worker: unreadable change notice; dropping every cached agent config');
      caches.forgetAll();
    } else forget(id);
  };
  const subs = [
    nc.subscribe(names.agentChanges, { callback: onNotice('companyId', caches.forgetCompany) }),
    nc.subscribe(names.integrationChanges, { callback: onNotice('integrationId', caches.forgetIntegration) }),
  ];
  const status = nc.status() as AsyncIterable<{ type: string }> & { stop?: () => void };
  void (async () => {
    for await (const s of status) if (s.type === 'reconnect') caches.forgetAll();
  })().catch(() => {});
  return () => {
    if (!nc.isClosed()) for (const sub of subs) sub.unsubscribe();
    status.stop?.();
  };
}
