import type { AddressGuard } from '../../address-guard.js';
import { DEFAULT_HELPDESK_TIMEOUT_MS, HelpdeskClient, HelpdeskError } from '../../helpdesk-client.js';
import type { Reconciled, SendFailure, SendingChannel, SendTarget, UncertainSend } from '../types.js';
import { DEFAULT_HISTORY_PAGES, deliveredAs, readHistory } from './history.js';

/**
 * The helpdesk's (Chat2Desk API v1) sending half: a reply is one `POST /v1/messages`
 * carrying our outbox id as `external_id`; an uncertain send is reconciled against the
 * client's history (./history.ts), never sent blind. A handed-off dialog's transfer to the
 * operator group (`transfer`) is the helpdesk's own: no other channel has one. The apiUrl is
 * the integration's (no service-wide base): one without it sends nothing (`lacks`).
 */
export interface HelpdeskSendingOptions {
  timeoutMs?: number;
  /** History pages read per reconciliation at most. */
  historyPages?: number;
  /** Addresses a tenant's apiUrl may reach (lib/address-guard.ts guardForUrl). */
  guardFor: (apiUrl: string) => AddressGuard | null;
}

const MAX_CACHED_CLIENTS = 1000;

export function helpdeskSending(options: HelpdeskSendingOptions): SendingChannel {
  const timeoutMs = options.timeoutMs ?? DEFAULT_HELPDESK_TIMEOUT_MS;
  const historyPages = options.historyPages ?? DEFAULT_HISTORY_PAGES;
  // One client per instance and token: a tenant's edited token is a new key.
  const clients = new Map<string, HelpdeskClient>();
  const clientFor = (target: SendTarget): HelpdeskClient => {
    if (!target.apiUrl) throw new HelpdeskError('the integration has no apiUrl', null, null, { refused: true });
    const key = `${target.apiUrl}\n${target.token}`;
    let client = clients.get(key);
    if (!client) {
      if (clients.size >= MAX_CACHED_CLIENTS) clients.delete(clients.keys().next().value!);
      client = new HelpdeskClient(target.apiUrl, target.token, { timeoutMs, guard: options.guardFor(target.apiUrl) });
      clients.set(key, client);
    }
    return client;
  };

  return {
    type: 'helpdesk',
    // Chat2Desk documents no limit: a reply goes as one message.
    split: (text) => [text],
    async send(target, text, { outboxId }) {
      const res = await clientFor(target).sendMessage({ client_id: target.clientId, text, transport: target.transport, channel_id: target.channelId, type: 'to_client', external_id: outboxId });
      const id = res?.data?.message_id;
      return { externalId: id === undefined || id === null ? null : String(id) };
    },
    classify(err: unknown): SendFailure {
      const e = err instanceof HelpdeskError ? err : new HelpdeskError(`helpdesk POST /v1/messages: ${(err as Error)?.message ?? 'failed'}`, null, null, { cause: err });
      const code = e.refused ? 'refused' : e.status !== null ? `http_${e.status}` : e.code.toLowerCase();
      const retry = e.maybeDelivered ? 'unknown' : e.retryable ? 'later' : 'never';
      return { retry, code, message: e.message, retryAfterMs: e.retryAfterMs, effect: null };
    },
    lacks: (target) => (target.apiUrl ? null : 'the integration has no apiUrl / apiToken'),
    async reconcile(target: SendTarget, send: UncertainSend, recordedIds: () => Promise<ReadonlySet<string>>): Promise<Reconciled> {
      let history;
      try {
        history = await readHistory(clientFor(target), target.clientId, historyPages);
      } catch (err) {
        return { kind: 'unreadable', error: (err as Error).message };
      }
      const remoteId = deliveredAs({ id: send.outboxId, text: send.text, sendingAt: send.sendingAt }, history, await recordedIds());
      return remoteId === null ? { kind: 'not_delivered' } : { kind: 'delivered', externalId: remoteId };
    },
    // Chat2Desk transfer_to_group.
    async transfer(target, messageId, groupId) {
      await clientFor(target).transferToGroup(messageId, groupId);
    },
  };
}
