import type { AnyEventObject } from 'xstate';
import { conversationView, DEFAULT_HANDOFF_TEXT, messageView, type ConversationNotice, type ConversationNotices, type ConversationView } from '../lib/conversations.js';
import { query, type SqlClient } from '../lib/db.js';
import { transfersDialogs } from '../lib/channels/registry.js';
import { moveLeadToStage } from '../lib/leads.js';
import { attachTrace, traceOf, tracing, type Context } from '../lib/tracing.js';
import { isHandedOver, statusOf, stepConversation, type HostAction } from '../machines/conversation.js';
import type { OutboxKind } from '../schema/conversation-entities.js';
import type { AgentReplyParams, ConversationEvent, LeadStageParams, SessionTransferExternalParams } from '../schema/conversation.js';
import { insertTransitions, steppedFields, updateConversations, upsertRefs, type ConversationRow, type NewRef, type NewTransition } from './tables/conversations.js';
import { insertMessages, type MessageRow, type NewMessage } from './tables/messages.js';
import { claimedSends, insertOutbox, sendFromJson, type NewOutboxRow, type OutboxSend } from './tables/outbox.js';
import { deleteReceipts, updateReceipts, type NewReceipt } from './tables/receipts.js';

/**
 * What one transaction writes, planned in memory and written with ONE statement however
 * many conversations it carries (`write`).
 *
 * `step` applies an event to a locked conversation's machine (machines/conversation.ts
 * `stepConversation`) and performs the machine's named actions through the effect table
 * (EFFECTS): agent replies and handoff notices become messages with an outbox row, a lead
 * move and a helpdesk transfer are planned, and every change is logged as a transition. The
 * conversation rows are changed in memory and saved by `write`; the notices for the inspect
 * stream and the webchat are built from what the database returned, one publish per
 * conversation.
 */

/**
 * How a transaction may insert outbox rows already `sending`: under the partition lease's
 * epoch (the fencing token; null when this worker may not send for the partition now), with
 * a claim of claimMs.
 */
export interface DirectSending {
  claimMs: number;
  leases: { epochOf(partition: number): number | null };
}

/** How much of the last message a conversation keeps for the inbox (contract: `lastMessage.text` ≤ 200 characters). */
const LAST_MESSAGE_CHARS = 200;

/** The first LAST_MESSAGE_CHARS UTF-16 units, without a surrogate pair cut in half (an emoji at the cut). */
const previewOf = (text: string): string => text.slice(0, LAST_MESSAGE_CHARS).replace(/[\uD800-\uDBFF]$/, '');

export interface ConversationChanges {
  clearHold?: boolean;
  channelId?: string | null;
  transport?: string | null;
}

interface PlannedMessage {
  conv: ConversationRow;
  row: NewMessage;
  outboxKind: OutboxKind | null;
  stored: MessageRow | null;
}

/** An action as the transition log records it: with what the host did about it. */
interface LoggedAction extends HostAction {
  effect: string;
}

/** Whether the human wins over what the agent says now: an operator asked for a pause / close that is not applied yet. */
interface EffectContext {
  hold: boolean;
  /** The agent closes the conversation in this step: its last words go out although the session is closed by then. */
  closing: boolean;
}

/**
 * The host's side of each named action of the machine: what it plans, and what the
 * transition log says was done. Lead moves and helpdesk transfers need the database: they are
 * done by `write`, which completes their log entry.
 */
const EFFECTS: { [T in 'agent_reply' | 'session_transfer_external' | 'session_close' | 'lead_stage']: (plan: Plan, conv: ConversationRow, logged: LoggedAction, ctx: EffectContext) => string } = {
  agent_reply(plan, conv, logged, { hold, closing }) {
    const p = logged.params as AgentReplyParams;
    // The agent closed the conversation without a last word.
    if (!p.text.trim()) return 'nothing to say';
    plan.addMessage(
      conv,
      {
        role: 'agent', kind: 'reply', text: p.text, reply_to_id: p.messageId, delivery: hold ? 'cancelled' : 'pending', sources: p.sources ?? null, confidence: p.confidence ?? null,
        options: p.options?.length ? p.options : null, agent_version: p.agentVersion ?? null,
      },
      hold ? null : closing ? 'closing_reply' : 'agent_reply',
    );
    return hold ? 'cancelled: an operator took over' : 'queued';
  },
  session_transfer_external(plan, conv, logged) {
    const p = logged.params as SessionTransferExternalParams;
    if (p.origin === 'helpdesk') return 'recorded: a human operator has the dialog';
    plan.addMessage(conv, { role: 'agent', kind: 'handoff_notice', text: p.text ?? DEFAULT_HANDOFF_TEXT, reply_to_id: p.messageId, delivery: 'pending', agent_version: p.agentVersion ?? null }, 'handoff_notice');
    const transfers = transfersDialogs(conv.channel);
    if (transfers && p.messageId) plan.transfers.push({ conv, messageId: p.messageId, reason: p.reason, logged });
    return transfers ? 'handoff notice queued' : 'handoff notice queued; transfer recorded';
  },
  session_close: () => 'recorded',
  lead_stage(plan, conv, logged) {
    plan.leadMoves.push({ conv, stage: (logged.params as LeadStageParams).stage, logged });
    return 'pending';
  },
};

function conversationRowView(c: ConversationRow): ConversationView {
  return conversationView({
    id: c.id, integrationId: c.integration_id, channel: c.channel, transport: c.transport, clientId: c.client_id, status: c.status, state: c.state, snapshot: c.snapshot,
    createdAt: c.created_at, updatedAt: c.updated_at, lastMessageAt: c.last_message_at, closedAt: c.closed_at,
    assigneeId: c.assignee_id, labels: c.labels, lastMessageRole: c.last_message_role, lastMessageText: c.last_message_text, customerMessages: c.customer_messages,
  });
}

export function messageRowView(m: MessageRow) {
  return messageView({
    id: m.id, seq: m.seq, role: m.role, kind: m.kind, text: m.text, externalId: m.external_id, replyToId: m.reply_to_id, delivery: m.delivery,
    deliveryError: m.delivery_error, deliveryStatus: m.delivery_status ?? null, deliveryErrorCode: m.delivery_error_code ?? null, sources: m.sources ?? null, confidence: m.confidence ?? null, options: m.options ?? null, authorId: m.author_id ?? null, agentVersion: m.agent_version ?? null,
    createdAt: m.created_at,
  });
}

/** The event without its type, as the log stores it (JSON; an error becomes its message). */
function payloadOf(event: AnyEventObject): Record<string, unknown> {
  const { type: _type, ...rest } = event as Record<string, unknown>;
  if (rest.error instanceof Error) rest.error = rest.error.message;
  return rest;
}

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
const messageKey = (conversationId: number, seq: number) => `${conversationId}:${seq}`;

type NoticeSource =
  | { kind: 'message'; conv: ConversationRow; message: PlannedMessage }
  | { kind: 'transition'; conv: ConversationRow; t: NewTransition }
  | { kind: 'notice'; companyId: number; notice: (viewOf: (conv: ConversationRow) => ConversationView) => ConversationNotice };

/**
 * The plan's one statement. Receipts to settle or drop (a session opened, a status event for
 * none, a message put back) are rare: the statement without them is planned cheaper, and a
 * prepared statement is planned at every run here (lib/db.ts: plan_cache_mode).
 */
const planWrite = (receipts: boolean) => `
  with m as (${insertMessages('$1')}),
  o as (${insertOutbox('$2', 'm', '$3')}),
  t as (${insertTransitions('$4')}),
  r as (${upsertRefs('$5')}),
  c as (${updateConversations('$6')})${receipts ? `,
  ru as (${updateReceipts('$7')}),
  rd as (${deleteReceipts('$8')})` : ''}
  select (select coalesce(json_agg(json_build_object('id', m.id::text, 'conversation_id', m.conversation_id, 'seq', m.seq, 'created_at', m.created_at)), '[]') from m) as messages,
         (select coalesce(json_agg(t), '[]') from t) as transitions,
         (select coalesce(json_agg(json_build_object('id', c.id, 'updated_at', c.updated_at)), '[]') from c) as conversations,
         (select coalesce(json_agg(s), '[]') from (${claimedSends('o', 'c', 'm')}) s) as claimed`;
const PLAN_WRITE = planWrite(false);
const PLAN_WRITE_WITH_RECEIPTS = planWrite(true);

interface PlanWritten {
  messages: { id: string; conversation_id: number; seq: number; created_at: string }[];
  transitions: { conversation_id: number; seq: number; at: string }[];
  conversations: { id: number; updated_at: string }[];
  claimed: OutboxSend[];
}

export class Plan {
  readonly #messages: PlannedMessage[] = [];
  readonly #transitions: NewTransition[] = [];
  readonly #refs: NewRef[] = [];
  readonly #touched = new Set<ConversationRow>();
  readonly #notices: NoticeSource[] = [];
  readonly #receiptUpdates: Pick<NewReceipt, 'integration_id' | 'idempotency_key' | 'outcome' | 'conversation_id'>[] = [];
  readonly #receiptDeletes: Pick<NewReceipt, 'integration_id' | 'idempotency_key'>[] = [];
  readonly #direct: DirectSending | null;
  /** The agent's lead moves (its set_lead_stage tool), done by `write`. */
  readonly leadMoves: { conv: ConversationRow; stage: string; logged: LoggedAction }[] = [];
  /** Helpdesk dialogs the agent handed off: transferred to the integration's operator group, if it has one (decided by `write`). */
  readonly transfers: { conv: ConversationRow; messageId: string; reason: string; logged: LoggedAction }[] = [];
  /** Sessions this transaction opened (the webchat ones are announced to their visitors after the commit). */
  readonly opened: ConversationRow[] = [];
  /** After `write`: outbox rows inserted claimed, for this worker to send right after the commit. */
  claimed: OutboxSend[] = [];
  /** After `write`: the notices to publish after the commit, by subject (names.conversationEvents): one publish per conversation. */
  notices = new Map<string, ConversationNotices>();

  readonly #subjectOf: (companyId: number, conversationId: number) => string;

  /**
   * `subjectOf`: where a conversation's notices go (StreamNames.conversationEvents); `direct`:
   * outbox rows may be inserted `sending` for this worker to send at once (null: all go
   * through the sender's claim).
   */
  constructor(subjectOf: (companyId: number, conversationId: number) => string, direct: DirectSending | null = null) {
    this.#subjectOf = subjectOf;
    this.#direct = direct;
  }

  /** The traces of the envelopes whose conversations this plan writes (lib/tracing.ts), each once. */
  traces(): Context[] {
    const out = new Set<Context>();
    for (const conv of this.#touched) {
      const ctx = traceOf(conv);
      if (ctx) out.add(ctx);
    }
    return [...out];
  }

  /** Outbox rows that wait for the sender's claim (not sent by this worker directly). */
  get unclaimedOutbox(): boolean {
    return this.#messages.filter((m) => m.outboxKind && m.stored).length > this.claimed.length;
  }

  /** Changes the row in memory; it is saved by `write`. */
  touch(conv: ConversationRow, changes: ConversationChanges = {}): void {
    if (changes.clearHold) conv.hold_requested_at = null;
    if (changes.channelId) conv.channel_id = changes.channelId;
    if (changes.transport) conv.transport = changes.transport;
    this.#touched.add(conv);
  }

  /** Plans a message of the conversation (the next seq), optionally with its outbox row; `id`: one reserved for it. */
  addMessage(
    conv: ConversationRow,
    m: Pick<NewMessage, 'role' | 'text'> & Partial<Pick<NewMessage, 'id' | 'kind' | 'reply_to_id' | 'delivery' | 'sources' | 'confidence' | 'options' | 'external_id' | 'attachments' | 'author_id' | 'agent_version'>>,
    outboxKind: OutboxKind | null = null,
  ): void {
    conv.message_seq += 1;
    if (m.role === 'customer') conv.customer_messages += 1;
    // What the inbox shows: the last message of the customer or of whoever answered them: not a note, a transfer record,
    // a reply an operator's pause cancelled, the bot's handoff notice, nor what the bot answers while the conversation
    // waits for a person (`paused.handedOver`): a customer who asked for a person still "wrote last", it needs one.
    const waitsForPerson = m.role === 'agent' && isHandedOver(conv.state);
    if (m.role !== 'system' && m.kind !== 'note' && m.kind !== 'handoff_notice' && m.delivery !== 'cancelled' && !waitsForPerson) {
      conv.last_message_role = m.role;
      conv.last_message_text = m.text.length > LAST_MESSAGE_CHARS ? previewOf(m.text) : m.text;
      conv.last_message_at = new Date();
    }
    const planned: PlannedMessage = {
      conv,
      row: {
        id: m.id ?? null, company_id: conv.company_id, conversation_id: conv.id, seq: conv.message_seq, role: m.role, kind: m.kind ?? 'message', text: m.text,
        external_id: m.external_id ?? null, reply_to_id: m.reply_to_id ?? null, delivery: m.delivery ?? null, sources: m.sources ?? null, confidence: m.confidence ?? null,
        options: m.options ?? null, attachments: m.attachments ?? [], author_id: m.author_id ?? null, agent_version: m.agent_version ?? null,
      },
      outboxKind,
      stored: null,
    };
    this.#messages.push(planned);
    this.#notices.push({ kind: 'message', conv, message: planned });
    this.touch(conv);
  }

  /** A notice made after the writes; `viewOf` gives a conversation's view, made once per commit. */
  notice(companyId: number, notice: (viewOf: (conv: ConversationRow) => ConversationView) => ConversationNotice): void {
    this.#notices.push({ kind: 'notice', companyId, notice });
  }

  /** A receipt written earlier in the transaction gets its outcome and conversation. */
  settleReceipt(r: Pick<NewReceipt, 'integration_id' | 'idempotency_key' | 'outcome' | 'conversation_id'>): void {
    this.#receiptUpdates.push(r);
  }

  /** A receipt written earlier in the transaction is taken back: its envelope is applied later. */
  dropReceipt(r: Pick<NewReceipt, 'integration_id' | 'idempotency_key'>): void {
    this.#receiptDeletes.push(r);
  }

  /**
   * Records that the session saw these helpdesk ids (status events that carry only them are
   * routed by it). Call it before `step`: an id the session's context already holds has its
   * row already, and is not written again.
   */
  remember(conv: ConversationRow, requestId: number | null | undefined, dialogId: number | null | undefined): void {
    const { requestIds, dialogIds } = conv.snapshot.context;
    for (const [kind, id, known] of [['request', requestId, requestIds], ['dialog', dialogId, dialogIds]] as const) {
      if (typeof id !== 'number' || !Number.isFinite(id) || known?.includes(id)) continue;
      this.#refs.push({ integration_id: conv.integration_id, kind, ref_id: id, conversation_id: conv.id, company_id: conv.company_id });
    }
  }

  /**
   * Applies one event to the conversation's machine and performs its actions. Returns false
   * when the machine ignored it (nothing logged; `changes` are still applied).
   */
  step(conv: ConversationRow, event: AnyEventObject, changes: ConversationChanges = {}): boolean {
    const { next, actions } = stepConversation(conv.snapshot, event as ConversationEvent);
    const changed = actions.length > 0 || !sameJson(next.value, conv.snapshot.value) || !sameJson(next.context, conv.snapshot.context);
    if (!changed) {
      if (changes.channelId || changes.transport || changes.clearHold) this.touch(conv, changes);
      return false;
    }
    const ctx: EffectContext = { hold: conv.hold_requested_at !== null, closing: actions.some((a) => a.type === 'session_close') };
    const recorded: LoggedAction[] = [];
    for (const action of actions) {
      const logged: LoggedAction = { ...action, effect: '' };
      const effect = EFFECTS[action.type as keyof typeof EFFECTS];
      logged.effect = effect ? effect(this, conv, logged, ctx) : 'ignored';
      recorded.push(logged);
    }
    conv.transition_seq += 1;
    const t: NewTransition = {
      company_id: conv.company_id, conversation_id: conv.id, seq: conv.transition_seq, event: event.type, payload: payloadOf(event), from_state: conv.state, to_state: next.value, actions: recorded,
    };
    this.#transitions.push(t);
    conv.snapshot = next;
    conv.state = next.value;
    const status = statusOf(next.value);
    if (status === 'closed' && conv.status !== 'closed') conv.closed_at = new Date();
    conv.status = status;
    this.touch(conv, changes);
    this.#notices.push({ kind: 'transition', conv, t });
    return true;
  }

  /**
   * Logs something that happened to the conversation without changing it (an agent's tool
   * call): a transition row from its state to the same state, with no actions.
   */
  log(conv: ConversationRow, type: string, payload: Record<string, unknown>): void {
    conv.transition_seq += 1;
    const t: NewTransition = { company_id: conv.company_id, conversation_id: conv.id, seq: conv.transition_seq, event: type, payload, from_state: conv.state, to_state: conv.state, actions: [] };
    this.#transitions.push(t);
    this.touch(conv);
    this.#notices.push({ kind: 'transition', conv, t });
  }

  /**
   * The agent's lead moves, in this transaction (lib/leads.ts): a stage the pipeline does not
   * have moves nothing and is told in the transition log, like every move.
   */
  async #moveLeads(client: SqlClient): Promise<void> {
    for (const m of this.leadMoves.splice(0)) {
      const r = await moveLeadToStage(client, { companyId: m.conv.company_id, conversationId: m.conv.id, stage: m.stage });
      if (!r.ok) m.logged.effect = `not moved: ${r.error}`;
      else m.logged.effect = r.moved ? `lead ${r.leadId} moved from ${JSON.stringify(r.from.name)} to ${JSON.stringify(r.to.name)}` : `lead ${r.leadId} already in ${JSON.stringify(r.to.name)}`;
    }
  }

  /**
   * The handed-off helpdesk dialogs of integrations with a `handoffGroupId`: a transfer
   * message (role system, the operators' record) with its outbox row, sent after the handoff
   * notice (rows of a conversation go out in order), once: one transfer per customer message.
   */
  async #planTransfers(client: SqlClient): Promise<void> {
    const transfers = this.transfers.splice(0);
    if (transfers.length === 0) return;
    const groups = new Map(
      (await query<{ id: number; handoff_group_id: number | null }>(client, 'integration_handoff_groups', 'select id, handoff_group_id from integrations where id = any($1::int[])', [[...new Set(transfers.map((t) => t.conv.integration_id))]])).map((r) => [r.id, r.handoff_group_id]),
    );
    for (const t of transfers) {
      const group = groups.get(t.conv.integration_id) ?? null;
      if (group === null) {
        t.logged.effect += '; no helpdesk group configured: no transfer call';
        continue;
      }
      this.addMessage(t.conv, { role: 'system', kind: 'transfer', text: `Transferred to helpdesk operator group ${group} (${t.reason}).`, reply_to_id: t.messageId, delivery: 'pending' }, 'helpdesk_transfer');
      t.logged.effect += `; transfer to helpdesk group ${group} queued`;
    }
  }

  /** The outbox rows; the first of each conversation may be sent directly by this worker. */
  #outboxRows(): NewOutboxRow[] {
    const seen = new Set<number>();
    return this.#messages
      .filter((m) => m.outboxKind)
      .map((m) => {
        // A transfer needs what the claim reads (the group, the customer message's helpdesk id): never sent directly.
        const epoch = this.#direct && !seen.has(m.conv.id) && m.outboxKind !== 'helpdesk_transfer' ? this.#direct.leases.epochOf(m.conv.partition) : null;
        seen.add(m.conv.id);
        return { company_id: m.conv.company_id, conversation_id: m.conv.id, seq: m.row.seq, partition: m.conv.partition, kind: m.outboxKind!, lease_rev: epoch };
      });
  }

  /** Writes the plan inside the caller's transaction; then `claimed` and `notices` are set. */
  async write(client: SqlClient): Promise<void> {
    if (this.leadMoves.length > 0) await this.#moveLeads(client);
    if (this.transfers.length > 0) await this.#planTransfers(client);
    const receipts = this.#receiptUpdates.length > 0 || this.#receiptDeletes.length > 0;
    const nothing = this.#messages.length === 0 && this.#transitions.length === 0 && this.#refs.length === 0 && this.#touched.size === 0 && this.#receiptUpdates.length === 0 && this.#receiptDeletes.length === 0;
    const written: PlanWritten = nothing
      ? { messages: [], transitions: [], conversations: [], claimed: [] }
      : (
          await query<PlanWritten>(client, receipts ? 'plan_write_receipts' : 'plan_write', receipts ? PLAN_WRITE_WITH_RECEIPTS : PLAN_WRITE, [
            // A reply that conflicts (one reply per answered message) is not stored: its outbox row neither.
            JSON.stringify(this.#messages.map((m) => m.row)),
            JSON.stringify(this.#outboxRows()),
            this.#direct?.claimMs ?? 0,
            JSON.stringify(this.#transitions),
            // One row per key: an upsert may not touch the same row twice in one statement.
            JSON.stringify([...new Map(this.#refs.map((r) => [`${r.integration_id}:${r.kind}:${r.ref_id}:${r.conversation_id}`, r])).values()]),
            JSON.stringify([...this.#touched].map(steppedFields)),
            ...(receipts ? [JSON.stringify(this.#receiptUpdates), JSON.stringify(this.#receiptDeletes)] : []),
          ])
        )[0]!;
    const updatedAt = new Map(written.conversations.map((u) => [u.id, new Date(u.updated_at)]));
    for (const conv of this.#touched) conv.updated_at = updatedAt.get(conv.id) ?? conv.updated_at;
    const stored = new Map(written.messages.map((r) => [messageKey(r.conversation_id, r.seq), r]));
    for (const m of this.#messages) {
      const r = stored.get(messageKey(m.row.conversation_id, m.row.seq));
      m.stored = r ? { ...m.row, id: r.id, delivery_error: null, delivery_status: null, delivery_error_code: null, created_at: new Date(r.created_at) } : null;
    }
    this.claimed = written.claimed.map(sendFromJson);
    if (tracing.enabled) {
      // The outbox sender's span of a reply joins the trace of the envelope that caused it.
      const convs = new Map([...this.#touched].map((c) => [c.id, c]));
      for (const send of this.claimed) attachTrace(send, traceOf(convs.get(send.conversation_id)!));
    }
    const at = new Map(written.transitions.map((t) => [messageKey(t.conversation_id, t.seq), t.at]));
    // One view per conversation (after the writes), however many of its transitions this commit logged.
    const views = new Map<ConversationRow, ConversationView>();
    const viewOf = (conv: ConversationRow) => views.get(conv) ?? views.set(conv, conversationRowView(conv)).get(conv)!;
    this.notices = new Map();
    const add = (companyId: number, notice: ConversationNotice) => {
      const subject = this.#subjectOf(companyId, notice.conversationId);
      const list = this.notices.get(subject);
      if (list) list.push(notice);
      else this.notices.set(subject, [notice]);
    };
    for (const n of this.#notices) {
      if (n.kind === 'notice') add(n.companyId, n.notice(viewOf));
      else if (n.kind === 'message') {
        if (n.message.stored) add(n.conv.company_id, { type: 'message', conversationId: n.conv.id, message: messageRowView(n.message.stored) });
      } else {
        const t = n.t;
        const recordedAt = at.get(messageKey(t.conversation_id, t.seq)) ?? new Date();
        add(n.conv.company_id, {
          type: 'transition',
          conversationId: n.conv.id,
          transition: { seq: t.seq, at: new Date(recordedAt).toISOString(), event: t.event, payload: t.payload, from: t.from_state, to: t.to_state, actions: t.actions },
          conversation: viewOf(n.conv),
        });
      }
    }
  }
}
