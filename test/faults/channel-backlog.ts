import type { Test } from 'tap';
import { startTelegramSandbox, type TelegramSandbox } from '../../scripts/sandbox/telegram.js';
import { startWhatsAppSandbox, type WhatsAppSandbox } from '../../scripts/sandbox/whatsapp.js';
import { insertChannelIntegration, tgCustomerWrites, waCustomerWrites, type ChannelIntegration } from '../support/channel-integrations.js';
import { startOpenAiStub } from '../support/openai-stub.js';
import { signUp, startTestService, TEST_NATS_URL, type TestService } from '../support/service.js';
import { TEST_BOT_TOKEN } from '../support/telegram-stub.js';
import { sql, untilIdle } from '../support/worker.js';
import { pool, sleep, startWorkerProcess, waitUntil, type WorkerProcess } from './helpers.js';

/**
 * The backlog scenario of the process-fault tests for the direct channels (WhatsApp Cloud API,
 * Telegram): `customers` customers each write `perCustomer` messages (`c<c> m<i>`, in rounds:
 * message i of everyone before message i + 1), answered by a model agent whose stand-in model
 * repeats the question (`echo: c<c> m<i>`), so the sandbox can tell which message every
 * delivered reply answers. The platform is the channel's sandbox at Meta's / Telegram's
 * latency (100–300 ms), which delivers a send when its request arrives.
 */
export type DirectChannel = 'whatsapp' | 'telegram';

export interface ChannelBacklog {
  svc: TestService;
  channel: DirectChannel;
  integration: ChannelIntegration;
  workerEnv: Record<string, string>;
  customers: number;
  perCustomer: number;
  /** Send requests received and not yet answered, at the sandbox. */
  inFlight: () => number;
  /** Called with every send request the sandbox receives (after it counted it in flight). */
  onSend: (fn: (() => void) | null) => void;
  /** Send requests received in all. */
  sendRequests: () => { at: number }[];
  /** Replies delivered to the customers (at the sandbox), per customer id, in delivery order. */
  replies: () => Map<string, string[]>;
  /** Every reply delivered, in delivery order, with when it arrived. */
  sentLog: () => { to: string; text: string; at: number }[];
  delivered: () => number;
  /** Publishes one round (message `round` of every customer) through the signed webhook. */
  publishRound: (round: number) => Promise<void>;
  clientIds: string[];
}

export async function setupChannelBacklog(t: Test, label: string, channel: DirectChannel, opts: { customers: number; perCustomer: number; partitions: number }): Promise<ChannelBacklog> {
  let hook: (() => void) | null = null;
  let wa: WhatsAppSandbox | null = null;
  let tg: TelegramSandbox | null = null;
  if (channel === 'whatsapp') {
    wa = await startWhatsAppSandbox({ token: 'wa-fault-token', latencyMs: [100, 300] });
    t.teardown(wa.close);
    wa.handle((r) => {
      if (r.method === 'POST' && /\/messages$/.test(r.path)) hook?.();
      return undefined;
    });
  } else {
    tg = await startTelegramSandbox({ tokens: [TEST_BOT_TOKEN], latencyMs: [100, 300] });
    t.teardown(tg.close);
    tg.answer((r) => {
      if (r.method === 'sendMessage') hook?.();
      return undefined;
    });
  }
  const channelEnv: Record<string, string> = wa ? { WHATSAPP_GRAPH_URL: wa.url, WHATSAPP_GRAPH_VERSION: 'v21.0' } : { TELEGRAM_API_URL: tg!.url };
  const svc = await startTestService(t, label, { env: { PARTITIONS: String(opts.partitions), ...channelEnv } });
  const llm = await startOpenAiStub(t);
  llm.respond((req) => ({ content: `echo: ${llm.lastUserText(req)}`, chunkDelayMs: 0 }));
  const user = await signUp(svc.api, `${label} Co`);
  const agent = await svc.api('POST', '/api/agents', { token: user.token, body: { name: 'Echo', model: { provider: 'openai', name: 'repeater-1', baseUrl: llm.baseUrl, apiKey: 'sk-echo' } } });
  if (agent.status !== 201) throw new Error(`agent: ${agent.status} ${JSON.stringify(agent.body)}`);
  const integration = await insertChannelIntegration(svc, {
    companyId: user.companyId,
    agentId: agent.body.agent.id,
    type: channel,
    apiToken: wa ? wa.token : TEST_BOT_TOKEN,
    ...(wa ? { phoneNumberId: wa.account.phoneNumberId } : {}),
  });
  // Meta posts a status of every message it takes, naming our outbox id: how a send a crash left uncertain is settled.
  wa?.connect(`${svc.url}/api/webhook/whatsapp/${integration.id}`, integration.webhookSecret);
  const clientIds = Array.from({ length: opts.customers }, (_, c) => (wa ? `4479${String(1_000_000 + c)}` : String(600_000_000 + c)));
  const nameOf = new Map(clientIds.map((id, c) => [id, `c${c}`]));

  const sentLog = () => (wa ? wa.sent.map((m) => ({ to: m.to, text: m.body, at: m.at })) : tg!.sent.map((m) => ({ to: String(m.chat_id), text: m.text, at: m.at })));
  const replies = () => {
    const by = new Map<string, string[]>();
    const list = sentLog();
    for (const m of list) {
      const got = by.get(m.to) ?? [];
      got.push(m.text);
      by.set(m.to, got);
    }
    return by;
  };
  const publishRound = (round: number) =>
    pool(clientIds, 16, async (id) => {
      const text = `${nameOf.get(id)} m${round}`;
      if (wa) await waCustomerWrites(svc.api, integration, id, text, { name: `Customer ${nameOf.get(id)}` });
      else await tgCustomerWrites(svc.api, integration, Number(id), text, { firstName: 'Customer', lastName: nameOf.get(id) });
    });

  return {
    svc,
    channel,
    integration,
    workerEnv: { DATABASE_URL: svc.config.databaseUrl, NATS_URL: svc.config.natsUrl ?? TEST_NATS_URL, NATS_PREFIX: svc.config.natsPrefix, PARTITIONS: String(opts.partitions), ...channelEnv },
    customers: opts.customers,
    perCustomer: opts.perCustomer,
    inFlight: () => (wa ? wa.inFlight() : tg!.inFlight()),
    onSend: (fn) => {
      hook = fn;
    },
    sendRequests: () => (wa ? wa.requests.filter((r) => r.method === 'POST' && /\/messages$/.test(r.path)) : tg!.requests.filter((r) => r.method === 'sendMessage')),
    replies,
    sentLog,
    delivered: () => (wa ? wa.sent.length : tg!.sent.length),
    publishRound,
    clientIds,
  };
}

export interface SigkillFigures {
  inFlightAtKill: number;
  delivered: number;
  lost: number;
  doubled: number;
  outOfOrder: number;
  firstSendAfterKillMs: number;
  allAnsweredAfterKillMs: number;
  /** The last of the second worker's first replies to each customer it answered, after the kill (-1: none). */
  takeOverMs: number;
  customersTakenOver: number;
  /** Outbox rows left `sending` by the killed worker. */
  sendingAtKill: number;
  /** Of those, rows already delivered at the sandbox whose written_parts was still 0. */
  unmarkedDelivered: number;
}

/** How long a claim of the killed worker may last (the outbox sender's default claimMs): counted only after it. */
export const CLAIM_MS = 30_000;

/**
 * The issue's measure for a direct channel: the only worker SIGKILLed at the moment the
 * sandbox holds `killAt` sends in flight (once `afterDelivered` replies have gone out, so the
 * backlog is in full flow), a second worker started right after; counted at the sandbox once
 * any claim of the killed worker could have expired and the service is idle.
 */
export async function runSigkillBacklog(t: Test, b: ChannelBacklog, opts: { killAt: number; afterDelivered: number }): Promise<SigkillFigures> {
  const first: WorkerProcess = startWorkerProcess(t, b.workerEnv);
  let killedAt = 0;
  let inFlightAtKill = 0;
  let armed = false;
  // A crash strikes at no moment of the worker's choosing: once the sandbox holds `killAt` sends, the kill comes
  // 0–50 ms later (the sends stay in flight 100–300 ms), not in the same instant as the send that was counted,
  // when the worker is still writing that very burst of requests. If that many are no longer in flight by then
  // (a loaded machine answered a burst at once: a CI run killed with 30), the next send that brings them back arms it again.
  b.onSend(() => {
    if (armed || killedAt > 0 || b.delivered() < opts.afterDelivered || b.inFlight() < opts.killAt) return;
    armed = true;
    setTimeout(() => {
      armed = false;
      if (b.inFlight() < opts.killAt) return;
      inFlightAtKill = b.inFlight();
      first.signal('SIGKILL');
      killedAt = Date.now();
    }, Math.floor(Math.random() * 50));
  });
  const started = Date.now();
  for (let round = 0; round < b.perCustomer; round++) await b.publishRound(round);
  t.comment(`${b.customers * b.perCustomer} messages published in ${Date.now() - started} ms`);
  try {
    await waitUntil(() => killedAt > 0, 60_000, `${opts.killAt} sends in flight (now ${b.inFlight()}, ${b.delivered()} delivered)`);
  } catch (err) {
    t.comment(first.output().slice(-3000));
    throw err;
  }
  b.onSend(null);
  await first.exited;
  // What the killed worker left: rows still `sending`, and of them those whose reply the sandbox had already
  // delivered while `written_parts` says no request had left (the second worker will send them again).
  const left = await sql<{ id: string; written_parts: number; text: string; client_id: string }>(
    b.svc.orm,
    `select o.id::text as id, o.written_parts, m.text, c.client_id from outbox o join conversation_messages m on m.id = o.message_id join conversations c on c.id = o.conversation_id where o.status = 'sending'`,
  );
  const deliveredAtKill = new Set(b.sentLog().map((m) => `${m.to}\u0000${m.text}`));
  const sendingAtKill = left.length;
  const unmarkedDelivered = left.filter((r) => r.written_parts === 0 && deliveredAtKill.has(`${r.client_id}\u0000${r.text}`)).length;
  t.comment(`after the kill: ${sendingAtKill} rows sending (${left.filter((r) => r.written_parts > 0).length} marked written); ${unmarkedDelivered} of them already delivered at the sandbox with written_parts 0`);
  const secondAt = Date.now();
  const second = startWorkerProcess(t, b.workerEnv);
  const want = b.perCustomer;
  try {
    await waitUntil(() => b.clientIds.every((c) => (b.replies().get(c)?.length ?? 0) >= want), 90_000, 'every customer message answered');
  } catch (err) {
    const short = b.clientIds.filter((c) => (b.replies().get(c)?.length ?? 0) < want);
    t.comment(`${b.delivered()} delivered; ${short.length} customers short of ${want} replies: ${short.slice(0, 5).join(', ')}`);
    t.comment(`outbox: ${JSON.stringify(await sql(b.svc.orm, `select status, written_parts, count(*)::int as n, min(last_error) as error from outbox group by 1, 2 order by 1, 2`))}`);
    const to = (r: { body?: any }) => String(r.body?.to ?? r.body?.chat_id);
    t.comment(`requests the sandbox read for ${short[0]}: ${JSON.stringify((b.sendRequests() as { body?: any; at: number }[]).filter((r) => to(r) === short[0]).map((r) => [r.body?.text?.body ?? r.body?.text, r.at - killedAt]))}; delivered: ${JSON.stringify(b.sentLog().filter((m) => m.to === short[0]).map((m) => [m.text, m.at - killedAt]))}`);
    t.comment(`their conversations: ${JSON.stringify(await sql(b.svc.orm, `select client_id, status, state, message_seq from conversations where client_id in (${short.map(() => '?').join(', ') || 'null'}) limit 5`, short))}`);
    t.comment(second.output().slice(-3000));
    throw err;
  }
  const allAnsweredAfterKillMs = Date.now() - killedAt;
  // Take-over: each customer who had replies still to come at the kill, answered again by the second worker (its first reply to them).
  const firstReplyAfter = new Map<string, number>();
  for (const m of b.sentLog()) if (m.at > secondAt && !firstReplyAfter.has(m.to)) firstReplyAfter.set(m.to, m.at);
  const takeOverMs = firstReplyAfter.size ? Math.max(...firstReplyAfter.values()) - killedAt : -1;
  // The second worker's first send (requests the killed one had written may still be read by the sandbox just after the kill).
  const firstAfter = b.sendRequests().find((r) => r.at > secondAt);
  // Counted after any claim of the killed worker could have expired, and once nothing is left to do.
  await sleep(Math.max(0, killedAt + CLAIM_MS + 2000 - Date.now()));
  await untilIdle(b.svc, 30_000);

  const by = b.replies();
  let lost = 0;
  let doubled = 0;
  let outOfOrder = 0;
  const examples: string[] = [];
  for (const [c, id] of b.clientIds.entries()) {
    const got = by.get(id) ?? [];
    const want = Array.from({ length: b.perCustomer }, (_, i) => `echo: c${c} m${i}`);
    const counts = new Map<string, number>();
    for (const text of got) counts.set(text, (counts.get(text) ?? 0) + 1);
    const missing = want.filter((w) => !counts.has(w));
    const extra = [...counts.values()].reduce((n, k) => n + Math.max(0, k - 1), 0);
    const unknown = got.filter((g) => !want.includes(g)).length;
    lost += missing.length;
    doubled += extra + unknown;
    const firsts = got.filter((g, i) => got.indexOf(g) === i);
    if (firsts.join('|') !== want.filter((w) => counts.has(w)).join('|')) outOfOrder++;
    if ((missing.length || extra || unknown) && examples.length < 5) {
      const twice = [...counts].filter(([, k]) => k > 1).map(([text]) => text);
      const when = b.sentLog().filter((m) => m.to === id && twice.includes(m.text)).map((m) => `${m.text} at ${m.at - killedAt} ms`);
      examples.push(`${id}: [${got.join(', ')}] delivered twice: ${when.join(', ')} (relative to the kill)`);
    }
  }
  const rows = await sql(b.svc.orm, `select status, count(*)::int as n from outbox group by status order by status`);
  t.comment(`outbox rows: ${JSON.stringify(rows)}`);
  if (examples.length) t.comment(`examples: ${examples.join('; ')}`);
  return {
    inFlightAtKill,
    delivered: b.delivered(),
    lost,
    doubled,
    outOfOrder,
    firstSendAfterKillMs: firstAfter ? firstAfter.at - killedAt : -1,
    allAnsweredAfterKillMs,
    takeOverMs,
    sendingAtKill,
    unmarkedDelivered,
    customersTakenOver: firstReplyAfter.size,
  };
}

/** The issue's measure on a channel's backlog: the kill, then every promise checked (and the figures told). */
export function sigkillTest(t: Test, b: ChannelBacklog): void {
  const total = b.customers * b.perCustomer;
  t.test(`${b.channel}: SIGKILL with 40 sends in flight: nothing lost, nothing doubled`, async (t) => {
    const f = await runSigkillBacklog(t, b, { killAt: 40, afterDelivered: 200 });
    t.comment(
      `${b.channel}: ${f.inFlightAtKill} sends in flight at the kill; ${f.delivered} delivered for ${total} messages; lost ${f.lost}; doubled ${f.doubled}; out of order ${f.outOfOrder} chats; first send of the second worker +${f.firstSendAfterKillMs} ms after the kill; ${f.customersTakenOver} customers answered again, the last of them first answered +${f.takeOverMs} ms after the kill; every message answered ${f.allAnsweredAfterKillMs} ms after the kill`,
    );
    t.ok(f.inFlightAtKill >= 40, `killed with ${f.inFlightAtKill} sends in flight`);
    t.equal(f.lost, 0, 'no customer message left unanswered');
    t.equal(f.doubled, 0, 'no reply delivered twice');
    t.equal(f.outOfOrder, 0, "each chat's replies in the order of its messages");
    t.equal(f.delivered, total, 'exactly one reply per message at the sandbox');
    t.ok(f.takeOverMs >= 0 && f.takeOverMs <= 15_000, `every conversation of the killed worker answered again within 15 s of the kill (${f.takeOverMs} ms)`);
  });
}
