import type { ConversationNotices, ConversationView, LastMessageView } from '../../lib/conversations.js';
import type { Logger } from '../../lib/logger.js';
import type { FeedLookups } from './conversation-hub.js';

/**
 * One inbox event stream (GET /api/conversations/events): turns the notices of the company's
 * conversations into `conversation.updated` events for one viewer.
 *
 * - A publish whose notices carry the conversation's view (the worker's transitions and applied
 *   commands, the API's updates) is sent from it. One that does not (only `message` notices: a
 *   reply's delivery) needs the row: such look-ups wait for the next tick and are asked for all
 *   the conversations pending then at once (gateway/conversations/conversation-hub.ts makes one
 *   statement of what every stream asked meanwhile).
 * - `unread` is the viewer's: the customer messages less what they had seen. What they had
 *   seen, per conversation, is looked up once (asked, like rows, for all the ids not known yet)
 *   and then follows the viewer's reads, which come as `updated` notices naming their reader.
 *   Other users' reads change nothing for this viewer and are not sent.
 * - A view older than one already sent for its conversation (notices of the worker and of the
 *   API cross on the wire) is replaced by the row.
 */
export interface ConversationUpdate {
  id: number;
  status: ConversationView['status'];
  lastMessage: LastMessageView | null;
  assigneeId: string | null;
  unread: number;
  labels: string[];
  needsHuman: boolean;
  channel: ConversationView['channel'];
  transport: string | null;
  clientId: string;
  integrationId: number;
  updatedAt: string;
}

export interface ConversationFeedDeps {
  lookups: FeedLookups;
  logger: Logger;
  companyId: number;
  /** The stream's user; null for a company API token (unread is always 0). */
  viewer: string | null;
  send: (update: ConversationUpdate) => void;
}

/** Conversations a stream remembers (read mark, last time sent); the oldest are forgotten past it, and looked up again if they come back. */
const KNOWN_MAX = 10_000;
/** After a failed look-up, the pending events are tried again this much later. */
const RETRY_MS = 1_000;

interface Known {
  /** Customer messages the viewer had seen (undefined: not looked up yet). */
  read?: number;
  /** updatedAt of the last view sent. */
  sentAt?: string;
}

export class ConversationFeed {
  readonly #deps: ConversationFeedDeps;
  /** Conversations with something to send: their newest view, or null when the row must be read. */
  #pending = new Map<number, ConversationView | null>();
  readonly #known = new Map<number, Known>();
  #timer: NodeJS.Timeout | null = null;
  #flushing = false;
  #closed = false;

  constructor(deps: ConversationFeedDeps) {
    this.#deps = deps;
  }

  /** The notices of one publish (one conversation). */
  take(notices: ConversationNotices): void {
    if (this.#closed) return;
    let id: number | null = null;
    let view: ConversationView | null = null;
    for (const n of notices) {
      if (n.type === 'updated') {
        if (n.reader && n.reader.userId !== this.#deps.viewer) continue;
        if (n.reader) this.#setRead(n.conversationId, n.reader.customerMessagesRead);
        view = n.conversation;
      } else if (n.type === 'transition') view = n.conversation;
      else if (n.type === 'applied' && n.conversation) view = n.conversation;
      else if (n.type !== 'message') continue;
      id = n.conversationId;
    }
    if (id === null) return;
    const sentAt = this.#known.get(id)?.sentAt;
    if (view && sentAt && view.updatedAt < sentAt) view = null;
    const pending = this.#pending.get(id);
    // A view already pending is kept unless this one is newer; a row to read stays to read.
    if (pending === null || (pending && (!view || view.updatedAt < pending.updatedAt))) return;
    this.#pending.set(id, view);
    this.#schedule(0);
  }

  close(): void {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#pending.clear();
  }

  #schedule(ms: number): void {
    if (this.#timer || this.#flushing || this.#closed) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.#flush();
    }, ms);
  }

  async #flush(): Promise<void> {
    const batch = this.#pending;
    if (batch.size === 0 || this.#closed) return;
    this.#pending = new Map();
    this.#flushing = true;
    let retry = false;
    try {
      const { viewer } = this.#deps;
      const rowsFor = [...batch].filter(([, v]) => v === null).map(([id]) => id);
      const marksFor = viewer ? [...batch.keys()].filter((id) => this.#known.get(id)?.read === undefined) : [];
      const { lookups } = this.#deps;
      const [rows, marks] = await Promise.all([lookups.rows(this.#deps.companyId, rowsFor), viewer ? lookups.marks(viewer, marksFor) : new Map<number, number>()]);
      if (this.#closed) return;
      for (const id of marksFor) this.#setRead(id, marks.get(id) ?? 0);
      const read = new Map(rows.map((r) => [r.id, r]));
      for (const [id, v] of batch) {
        const view = v ?? read.get(id);
        if (view) this.#send(view);
      }
    } catch (err) {
      this.#deps.logger.warn({ err, companyId: this.#deps.companyId }, 'conversation events: a look-up failed; retrying');
      // Put back under what came meanwhile (newer views win; a row to read is read then).
      for (const [id, v] of batch) if (!this.#pending.has(id)) this.#pending.set(id, v);
      retry = true;
    } finally {
      this.#flushing = false;
    }
    if (this.#pending.size > 0) this.#schedule(retry ? RETRY_MS : 0);
  }

  #send(view: ConversationView): void {
    const known = this.#remember(view.id);
    if (known.sentAt && view.updatedAt < known.sentAt) return;
    known.sentAt = view.updatedAt;
    const unread = this.#deps.viewer ? Math.max(0, view.customerMessages - (known.read ?? 0)) : 0;
    this.#deps.send({
      id: view.id,
      status: view.status,
      lastMessage: view.lastMessage,
      assigneeId: view.assigneeId,
      unread,
      labels: view.labels,
      needsHuman: view.status === 'paused' && view.lastMessage?.role === 'customer',
      channel: view.channel,
      transport: view.transport,
      clientId: view.clientId,
      integrationId: view.integrationId,
      updatedAt: view.updatedAt,
    });
  }

  #setRead(id: number, read: number): void {
    const known = this.#remember(id);
    known.read = Math.max(known.read ?? 0, read);
  }

  /** The entry of a conversation, made the most recent (Map order: the first is the oldest). */
  #remember(id: number): Known {
    let known = this.#known.get(id);
    if (known) this.#known.delete(id);
    else known = {};
    this.#known.set(id, known);
    if (this.#known.size > KNOWN_MAX) this.#known.delete(this.#known.keys().next().value!);
    return known;
  }
}
