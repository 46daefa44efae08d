import { HelpdeskError, HISTORY_PAGE_SIZE, type HelpdeskClient, type HistoryMessage } from '../../helpdesk-client.js';
import { helpdeskTimeMs } from '../../../schema/helpdesk-payloads.js';

/**
 * Reconciliation of an uncertain send (contract.md § Delivery): a reply found in `sending` by
 * anyone but its live sender may or may not have reached the helpdesk. Before it is sent
 * again, the client's history is read (`GET /v1/messages?client_id=…&type=to_client`, all
 * pages: their order is not documented) and the reply counts as delivered when the history
 * holds a message that
 * - carries our `external_id` (the outbox row id, sent with every reply), or, since the
 *   helpdesk may not return it,
 * - has the same text, was created no earlier than 5 s before the send began (clocks
 *   differ), and is not a message already recorded for another of our rows (the same
 *   customer often gets identical texts: "A human colleague will take over shortly."),
 *   the earliest such one.
 * A history that cannot be read is no answer: the caller tries again later, never sends blind.
 */
export const CLOCK_TOLERANCE_MS = 5_000;
/** Pages of history read at most (HISTORY_PAGE_SIZE each); a longer history counts as unreadable. */
export const DEFAULT_HISTORY_PAGES = 25;

export interface UncertainSend {
  /** The outbox row id: our external_id. */
  id: string;
  text: string;
  /** When the (last) send began. */
  sendingAt: Date;
}

/** The helpdesk's id of the message that delivered `row`, or null when the history shows none. */
export function deliveredAs(row: UncertainSend, history: HistoryMessage[], recordedIds: ReadonlySet<string>, toleranceMs = CLOCK_TOLERANCE_MS): string | null {
  const outgoing = history.filter((m) => m.type === undefined || m.type === 'to_client');
  const tagged = outgoing.find((m) => m.external_id !== undefined && m.external_id !== null && String(m.external_id) === row.id);
  if (tagged) return String(tagged.id);
  const text = row.text.trim();
  const earliest = row.sendingAt.getTime() - toleranceMs;
  const candidates = outgoing
    .filter((m) => (m.external_id === undefined || m.external_id === null || m.external_id === '') && !recordedIds.has(String(m.id)))
    .filter((m) => typeof m.text === 'string' && m.text.trim() === text)
    .map((m) => ({ id: String(m.id), at: helpdeskTimeMs(m.created) }))
    .filter((m): m is { id: string; at: number } => m.at !== null && m.at >= earliest)
    .sort((a, b) => a.at - b.at || compareIds(a.id, b.id));
  return candidates[0]?.id ?? null;
}

function compareIds(a: string, b: string): number {
  const x = Number(a);
  const y = Number(b);
  return Number.isFinite(x) && Number.isFinite(y) ? x - y : a.localeCompare(b);
}

/** Every message sent to the client, all pages; throws HelpdeskError when it cannot be read whole. */
export async function readHistory(client: HelpdeskClient, clientId: string, maxPages = DEFAULT_HISTORY_PAGES): Promise<HistoryMessage[]> {
  const all: HistoryMessage[] = [];
  for (let page = 0; page < maxPages; page++) {
    const got = await client.listMessages({ clientId, type: 'to_client', limit: HISTORY_PAGE_SIZE, offset: page * HISTORY_PAGE_SIZE });
    all.push(...got);
    if (got.length < HISTORY_PAGE_SIZE) return all;
  }
  throw new HelpdeskError(`the client's history is longer than ${maxPages * HISTORY_PAGE_SIZE} messages`, null, null);
}
