import t from 'tap';
import { startTelegramSandbox, type TelegramSandbox } from '../../scripts/sandbox/telegram.js';
import { startWhatsAppSandbox, type WhatsAppSandbox } from '../../scripts/sandbox/whatsapp.js';
import { insertChannelIntegration, tgCustomerWrites, waCustomerWrites } from '../support/channel-integrations.js';
import { startOpenAiStub } from '../support/openai-stub.js';
import { signUp, startTestService, TEST_NATS_URL } from '../support/service.js';
import { TEST_BOT_TOKEN } from '../support/telegram-stub.js';
import { sql } from '../support/worker.js';
import { startWorkerProcess, waitUntil, type WorkerProcess } from './helpers.js';

/**
 * A reply longer than the platform's largest text goes out as parts (4096 characters each, in
 * order). The worker is SIGKILLed while one part's request has reached the platform and its
 * answer has not come back: the platform delivered that part, the worker never learnt it. The
 * next worker must go on after the parts whose requests had left (outbox.written_parts): the
 * customer gets every part once, in order, whether the kill struck on the first part or the
 * last. Neither Bot API nor Graph keeps a history we could read instead.
 */
const LONG = Array.from({ length: 1000 }, (_, i) => `w${i}`).join(' '); // 4889 characters: two parts
const tg: TelegramSandbox = await startTelegramSandbox({ tokens: [TEST_BOT_TOKEN], latencyMs: [100, 300] });
t.teardown(tg.close);
const wa: WhatsAppSandbox = await startWhatsAppSandbox({ token: 'wa-multipart-token', latencyMs: [100, 300] });
t.teardown(wa.close);
const channelEnv = { TELEGRAM_API_URL: tg.url, WHATSAPP_GRAPH_URL: wa.url, WHATSAPP_GRAPH_VERSION: 'v21.0' };
const svc = await startTestService(t, 'multipart_sigkill', { env: { PARTITIONS: '2', ...channelEnv } });
const llm = await startOpenAiStub(t);
llm.respond((req) => ({ content: llm.lastUserText(req).startsWith('LONG') ? LONG : `echo: ${llm.lastUserText(req)}`, chunkDelayMs: 0 }));
const user = await signUp(svc.api, 'Multipart Co');
const agent = await svc.api('POST', '/api/agents', { token: user.token, body: { name: 'Long', model: { provider: 'openai', name: 'repeater-1', baseUrl: llm.baseUrl, apiKey: 'sk-long' } } });
const telegram = await insertChannelIntegration(svc, { companyId: user.companyId, agentId: agent.body.agent.id, type: 'telegram', apiToken: TEST_BOT_TOKEN });
const whatsapp = await insertChannelIntegration(svc, { companyId: user.companyId, agentId: agent.body.agent.id, type: 'whatsapp', apiToken: wa.token, phoneNumberId: wa.account.phoneNumberId });
wa.connect(`${svc.url}/api/webhook/whatsapp/${whatsapp.id}`, whatsapp.webhookSecret);
const workerEnv = { DATABASE_URL: svc.config.databaseUrl, NATS_URL: svc.config.natsUrl ?? TEST_NATS_URL, NATS_PREFIX: svc.config.natsPrefix, PARTITIONS: '2', ...channelEnv };

/** The outbox row of the customer's reply (undefined: none yet). */
async function replyRow(clientId: string): Promise<{ status: string; written_parts: number } | undefined> {
  const [row] = await sql<{ status: string; written_parts: number }>(
    svc.orm,
    `select o.status, o.written_parts from outbox o join conversations c on c.id = o.conversation_id where c.client_id = ? and o.kind = 'agent_reply'`,
    [clientId],
  );
  return row;
}

// One worker at a time; each case kills it and the next one takes over (its partitions once the killed one's lease expired).
const root = t;
let worker: WorkerProcess = startWorkerProcess(root, workerEnv);
let chatNo = 0;
for (const channel of ['telegram', 'whatsapp'] as const) {
  for (const killedOn of [1, 2]) {
    t.test(`${channel}: killed while part ${killedOn} of 2 is at the platform unanswered: each part once, in order`, async (t) => {
      const client = channel === 'telegram' ? String(700_000_000 + Date.now() % 1_000_000 * 10 + ++chatNo) : `4478${String(Date.now()).slice(-6)}${++chatNo}`;
      const parts = () => (channel === 'telegram' ? tg.delivered(client).map((m) => m.text) : wa.sent.filter((m) => m.to === client).map((m) => m.body));
      let held = 0;
      // The part the kill strikes on is delivered when its request arrives, and never answered.
      const hold = (isOurs: boolean) => (isOurs && ++held === killedOn ? { status: 200, deliver: true, delayMs: 15_000 } : undefined);
      tg.answer((r) => hold(r.method === 'sendMessage' && String(r.body?.chat_id) === client));
      wa.handle((r) => hold(r.method === 'POST' && r.body?.to === client));
      t.teardown(() => {
        tg.answer(null);
        wa.handle(null);
      });
      if (channel === 'telegram') await tgCustomerWrites(svc.api, telegram, Number(client), 'LONG please');
      else await waCustomerWrites(svc.api, whatsapp, client, 'LONG please');
      await waitUntil(() => parts().length === killedOn, 60_000, `part ${killedOn} delivered`);
      // Its mark is written as the request leaves (on its own connection): the kill comes after it.
      await waitUntil(async () => (await replyRow(client))?.written_parts === killedOn, 10_000, `written_parts = ${killedOn}`);
      worker.signal('SIGKILL');
      t.match(await worker.exited, { signal: 'SIGKILL' });
      worker = startWorkerProcess(root, workerEnv);
      await waitUntil(async () => (await replyRow(client))?.status === 'sent', 90_000, 'the reply finished by the next worker');
      const got = parts();
      t.equal(got.length, 2, `two parts delivered, none twice (${got.map((p) => p.length).join(' + ')} characters)`);
      t.equal(got.map((p) => p.trim()).join(' '), LONG, 'in order, the whole reply');
      t.ok(got.every((p) => p.length <= 4096), 'each within the platform’s largest text');
    });
  }
}
