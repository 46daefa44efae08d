import { transition, type AnyEventObject } from 'xstate';
import type { SqlClient } from '../lib/db.js';
import { conversationView, messageView, DEFAULT_HANDOFF_TEXT, type ConversationNotice, type ConversationView } from '../lib/conversations.js';
import { attachTrace, traceOf, type Context } from '../lib/tracing.js';
import { conversationMachine, statusOf } from '../machines/conversation.js';
import { moveLeadToStage } from '../lib/leads.js';
import { query } from '../lib/db.js';
import type { OutboxKind } from '../schema/conversation-entities.js';
import type { AgentReplyParams, ConversationEvent, LeadStageParams, SessionTransferExternalParams } from '../schema/conversation.js';
import {
  messageKey,
  storedMessage,
  writePlanRows,
  type ConversationRow,
  type MessageRow,
  type NewMessage,
  type NewTransition,
  type OutboxSend,
  type Ref,
} from './store.js';

/**
 * What one transaction writes, planned in memory and then written with one bulk statement
 * per table (`write`), however many conversations the transaction carries.
 *
 * `step` applies an event to a locked conversation's machine with xstate's pure
 * `transition()` and plans the host's side of the machine's named actions: agent replies
 * and handoff notices become messages with an outbox row (the dispatcher sends them), and
 * every change is logged as a transition. The conversation rows are changed in memory and
 * saved at the end; notices for the inspect stream and the webchat are built after the
 * writes, from what the database returned.
 */
export interface CompanyNotice {
  companyId: number;
  notice: ConversationNotice;
}

/**
 * How a transaction may insert outbox rows already `sending`: under the partition lease's
 * epoch (the fencing token; null when this worker may not send for the partition now), with
 * a claim of claimMs.
 */
export interface DirectSending {
  claimMs: number;
  epochOf: (partition: number) => number | null;
}

export interface ConversationChanges {
  lastMessageAt?: Date;
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

/** A lead the agent moved (its set_lead_stage tool): done by `write`, its outcome written into the action's log entry. */
interface PlannedLeadMove {
  conv: ConversationRow;
  stage: string;
  logged: { effect: string };
}

/** A helpdesk dialog the agent handed off: transferred to the integration's operator group, if it has one (decided by `write`). */
interface PlannedTransfer {
  conv: ConversationRow;
  /** The customer message the transfer is keyed to (Chat2Desk transfers by message id). */
  messageId: string;
  reason: string;
  logged: { effect: string };
}

type NoticeSource =
  | { kind: 'message'; conv: ConversationRow; message: PlannedMessage | MessageRow }
  | { kind: 'transition'; conv: ConversationRow; t: NewTransition }
  | { kind: 'notice'; companyId: number; notice: () => ConversationNotice };

export function rowToView(c: ConversationRow): ConversationView {
  return conversationView({
    id: c.id,
    integrationId: c.integration_id,
    channel: c.channel,
    clientId: c.client_id,
    status: c.status,
    state: c.state,
    snapshot: c.snapshot,
    createdAt: c.created_at,
    updatedAt: c.updated_at,
    lastMessageAt: c.last_message_at,
    closedAt: c.closed_at,
  });
}

export function messageRowView(m: MessageRow) {
  return messageView({
    id: m.id, seq: m.seq, role: m.role, kind: m.kind, text: m.text, externalId: m.external_id,
    replyToId: m.reply_to_id, delivery: m.delivery, sources: m.sources ?? null, confidence: m.confidence ?? null, createdAt: m.created_at,
  });
}

/** The event without its type, JSON-safe (errors become their message). */
function payloadOf(event: AnyEventObject): Record<string, unknown> {
  const { type: _type, ...rest } = event as Record<string, unknown>;
  if (rest.error instanceof Error) rest.error = rest.error.message;
  return JSON.parse(JSON.stringify(rest)) as Record<string, unknown>;
}

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

export class TxPlan {
  readonly #messages: PlannedMessage[] = [];
  readonly #transitions: NewTransition[] = [];
  readonly #refs: Ref[] = [];
  readonly #leadMoves: PlannedLeadMove[] = [];
  readonly #transfers: PlannedTransfer[] = [];
  readonly #touched = new Set<ConversationRow>();
  readonly #notices: NoticeSource[] = [];
  /** Sessions this transaction created (the host announces webchat ones to their visitors after the commit). */
  readonly opened: ConversationRow[] = [];
  /** After `write`: outbox rows inserted claimed, to be sent by this worker right after the commit. */
  claimed: OutboxSend[] = [];
  readonly #direct: DirectSending | null;

  /** `direct`: outbox rows may be inserted `sending` for this worker to send at once (null: all go through the sender's claim). */
  constructor(direct: DirectSending | null = null) {
    this.#direct = direct;
  }

  /** The traces of the envelopes whose conversations this plan writes (lib/tracing.ts), each once. */
  traces(): Context[] {
    const out = new Set<Context>();
    for (const conv of [...this.#touched, ...this.#messages.map((m) => m.conv)]) {
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
    if (changes.lastMessageAt) conv.last_message_at = changes.lastMessageAt;
    if (changes.clearHold) conv.hold_requested_at = null;
    if (changes.channelId) conv.channel_id = changes.channelId;
    if (changes.transport) conv.transport = changes.transport;
    this.#touched.add(conv);
  }

  /** Plans a message of the conversation (the next seq), optionally with its outbox row. */
  addMessage(
    conv: ConversationRow,
    m: Pick<NewMessage, 'role' | 'text'> & Partial<Pick<NewMessage, 'kind' | 'replyToId' | 'delivery' | 'sources' | 'confidence'>>,
    outboxKind: PlannedMessage['outboxKind'] = null,
  ): void {
    conv.message_seq += 1;
    const planned: PlannedMessage = {
      conv,
      row: {
        companyId: conv.company_id, conversationId: conv.id, seq: conv.message_seq, role: m.role, kind: m.kind ?? 'message', text: m.text,
        externalId: null, replyToId: m.replyToId ?? null, delivery: m.delivery ?? null, attachments: [], sources: m.sources ?? null, confidence: m.confidence ?? null,
      },
      outboxKind,
      stored: null,
    };
    this.#messages.push(planned);
    this.#notices.push({ kind: 'message', conv, message: planned });
    this.touch(conv);
  }

  /** A message stored earlier in this transaction (the customer's), for the notices. */
  noticeStored(conv: ConversationRow, row: MessageRow): void {
    this.#notices.push({ kind: 'message', conv, message: row });
  }

  notice(companyId: number, notice: () => ConversationNotice): void {
    this.#notices.push({ kind: 'notice', companyId, notice });
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
      this.#refs.push({ integrationId: conv.integration_id, kind, refId: id, conversationId: conv.id, companyId: conv.company_id });
    }
  }

  /**
   * Applies one event to the conversation's machine. Returns false when the machine ignored
   * it (nothing logged; `changes` are still applied).
   */
  step(conv: ConversationRow, event: AnyEventObject, changes: ConversationChanges = {}): boolean {
    const current = conversationMachine.resolveState({ value: conv.snapshot.value, context: conv.snapshot.context });
    const [next, actions] = transition(conversationMachine, current, event as ConversationEvent);
    const persisted = JSON.parse(JSON.stringify(conversationMachine.getPersistedSnapshot(next))) as ConversationRow['snapshot'];
    const named = actions.filter((a) => !a.type.startsWith('xstate.')).map((a) => ({ type: a.type, params: a.params as unknown }));
    const changed = named.length > 0 || !sameJson(persisted.value, conv.snapshot.value) || !sameJson(persisted.context, conv.snapshot.context);
    if (!changed) {
      if (changes.lastMessageAt || changes.channelId || changes.transport || changes.clearHold) this.touch(conv, changes);
      return false;
    }
    // An operator asked for a pause / close that is not applied yet: the human wins.
    const hold = conv.hold_requested_at !== null;
    // The agent's close_conversation: its last words go out although the session is closed by then.
    const closing = named.some((a) => a.type === 'session_close');
    const recorded = named.map((a) => ({ ...a, effect: this.#perform(conv, a, hold, closing) }));
    for (const logged of recorded) {
      if (logged.type === 'lead_stage') this.#leadMoves.push({ conv, stage: (logged.params as LeadStageParams).stage, logged });
      const p = logged.params as SessionTransferExternalParams;
      if (logged.type === 'session_transfer_external' && p.origin === 'agent' && conv.channel === 'helpdesk' && p.messageId) this.#transfers.push({ conv, messageId: p.messageId, reason: p.reason, logged });
    }
    const from = conv.state;
    conv.transition_seq += 1;
    const t: NewTransition = { companyId: conv.company_id, conversationId: conv.id, seq: conv.transition_seq, event: event.type, payload: payloadOf(event), fromState: from, toState: persisted.value, actions: recorded };
    this.#transitions.push(t);
    conv.snapshot = persisted;
    conv.state = persisted.value;
    const status = statusOf(persisted.value);
    if (status === 'closed' && conv.status !== 'closed') conv.closed_at = new Date();
    conv.status = status;
    this.touch(conv, changes);
    this.#notices.push({ kind: 'transition', conv, t });
    return true;
  }

  /** The host side of the machine's named actions. Returns what was done, for the log. */
  #perform(conv: ConversationRow, action: { type: string; params: unknown }, hold: boolean, closing: boolean): string {
    switch (action.type) {
      case 'agent_reply': {
        const p = action.params as AgentReplyParams;
        // The agent closed the conversation without a last word.
        if (!p.text.trim()) return 'nothing to say';
        this.addMessage(conv, { role: 'agent', kind: 'reply', text: p.text, replyToId: p.messageId, delivery: hold ? 'cancelled' : 'pending', sources: p.sources ?? null, confidence: p.confidence ?? null }, hold ? null : closing ? 'closing_reply' : 'agent_reply');
        return hold ? 'cancelled: an operator took over' : 'queued';
      }
      case 'session_transfer_external': {
        const p = action.params as SessionTransferExternalParams;
        if (p.origin === 'helpdesk') return 'recorded: a human operator has the dialog';
        this.addMessage(conv, { role: 'agent', kind: 'handoff_notice', text: p.text ?? DEFAULT_HANDOFF_TEXT, replyToId: p.messageId, delivery: 'pending' }, 'handoff_notice');
        return conv.channel === 'helpdesk' ? 'handoff notice queued' : 'handoff notice queued; transfer recorded';
      }
      case 'session_close':
        return 'recorded';
      case 'lead_stage':
        return 'pending';
      default:
        return 'ignored';
    }
  }

  /**
   * The agent's lead moves, in this transaction (lib/leads.ts): a stage the pipeline does not
   * have moves nothing and is told in the transition log, like every move.
   */
  async #moveLeads(client: SqlClient): Promise<void> {
    for (const m of this.#leadMoves.splice(0)) {
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
    const transfers = this.#transfers.splice(0);
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
      this.addMessage(t.conv, { role: 'system', kind: 'transfer', text: `Transferred to helpdesk operator group ${group} (${t.reason}).`, replyToId: t.messageId, delivery: 'pending' }, 'helpdesk_transfer');
      t.logged.effect += `; transfer to helpdesk group ${group} queued`;
    }
  }

  /** The outbox rows; the first of each conversation may be sent directly by this worker. */
  #outboxRows() {
    const seen = new Set<number>();
    return this.#messages
      .filter((m) => m.outboxKind)
      .map((m) => {
        // A transfer needs what the claim reads (the group, the customer message's helpdesk id): never sent directly.
        const epoch = this.#direct && !seen.has(m.conv.id) && m.outboxKind !== 'helpdesk_transfer' ? this.#direct.epochOf(m.conv.partition) : null;
        seen.add(m.conv.id);
        return { companyId: m.conv.company_id, conversationId: m.conv.id, seq: m.row.seq, partition: m.conv.partition, kind: m.outboxKind!, leaseRev: epoch };
      });
  }

  /** Writes the plan (inside the caller's transaction) and returns the notices to publish after the commit. */
  async write(client: SqlClient): Promise<CompanyNotice[]> {
    await this.#moveLeads(client);
    await this.#planTransfers(client);
    const nothing = this.#messages.length === 0 && this.#transitions.length === 0 && this.#refs.length === 0 && this.#touched.size === 0;
    const written = nothing ? { messages: [], transitions: [], claimed: [] } : await writePlanRows(client, {
      messages: this.#messages.map((m) => m.row),
      // A reply that conflicts (one reply per answered message) is not stored: its outbox row neither.
      outbox: this.#outboxRows(),
      claimMs: this.#direct?.claimMs ?? 0,
      transitions: this.#transitions,
      refs: this.#refs,
      conversations: [...this.#touched],
    });
    const stored = new Map(written.messages.map((r) => [messageKey(r.conversation_id, r.seq), r]));
    const planned = new Map(this.#messages.map((m) => [messageKey(m.row.conversationId, m.row.seq), m]));
    for (const m of this.#messages) {
      const r = stored.get(messageKey(m.row.conversationId, m.row.seq));
      m.stored = r ? storedMessage(m.row, r) : null;
    }
    this.claimed = (nothing ? [] : written.claimed).map((c) => {
      const m = planned.get(messageKey(c.conversation_id, c.seq))!;
      const row: OutboxSend = {
        ...c, has_next: false, uncertain: false, reconcile_attempts: 0, last_error: null, sending_at: new Date(c.sending_at), conversation_status: m.conv.status, hold_requested_at: m.conv.hold_requested_at, channel: m.conv.channel, client_id: m.conv.client_id,
        channel_id: m.conv.channel_id, transport: m.conv.transport, integration_id: m.conv.integration_id, role: m.row.role, text: m.row.text, created_at: m.stored!.created_at,
      };
      // The outbox sender's span of this reply joins the trace of the envelope that caused it.
      attachTrace(row, traceOf(m.conv));
      return row;
    });
    const at = new Map(written.transitions.map((t) => [`${t.conversation_id}:${t.seq}`, t.at]));
    const out: CompanyNotice[] = [];
    for (const n of this.#notices) {
      if (n.kind === 'notice') {
        out.push({ companyId: n.companyId, notice: n.notice() });
      } else if (n.kind === 'message') {
        const row = 'row' in n.message ? n.message.stored : n.message;
        if (row) out.push({ companyId: n.conv.company_id, notice: { type: 'message', conversationId: n.conv.id, message: messageRowView(row) } });
      } else {
        const t = n.t;
        const recordedAt = at.get(`${t.conversationId}:${t.seq}`) ?? new Date();
        out.push({
          companyId: n.conv.company_id,
          notice: {
            type: 'transition',
            conversationId: n.conv.id,
            transition: { seq: t.seq, at: new Date(recordedAt).toISOString(), event: t.event, payload: t.payload, from: t.fromState, to: t.toState, actions: t.actions },
            conversation: rowToView(n.conv),
          },
        });
      }
    }
    return out;
  }
}
