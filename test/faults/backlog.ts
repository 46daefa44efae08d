import type { Test } from 'tap';
import { startChat2DeskStub, type Chat2DeskStub } from '../support/chat2desk-stub.js';
import { addDocument } from '../support/knowledge.js';
import { signUp, startTestService, TEST_NATS_URL, type TestService } from '../support/service.js';
import { deliver } from '../support/webhooks.js';
import { pool } from './helpers.js';

/**
 * The backlog scenario of the process-fault tests: a company whose built-in agent answers
 * from a knowledge base of TOPICS.length documents, each answer carrying a marker `[kN]`,
 * so the stand-in helpdesk can tell which customer message a reply answers. Conversation c
 * sends messages 0..perConversation-1, message i asking about topic i % TOPICS.length.
 */
export const TOPICS = ['apple', 'banana', 'cherry', 'grape', 'lemon', 'mango', 'orange', 'peach', 'plum', 'melon'];

export interface Backlog {
  svc: TestService;
  stub: Chat2DeskStub;
  integrationId: number;
  secret: string;
  workerEnv: Record<string, string>;
  conversations: number;
  perConversation: number;
  /** Publishes the whole backlog through the signed webhook. */
  publish: () => Promise<void>;
  /** Replies the customers received, per client id, as topic indexes in delivery order. */
  replies: () => Map<string, number[]>;
  total: () => number;
  /** Customer messages answered (a reply repeated right after itself counts once). */
  answered: () => number;
}

export async function setupBacklog(
  t: Test,
  label: string,
  opts: { conversations: number; perConversation: number; partitions: number; natsUrl?: string; env?: Record<string, string> },
): Promise<Backlog> {
  const natsUrl = opts.natsUrl ?? TEST_NATS_URL;
  const svc = await startTestService(t, label, { env: { PARTITIONS: String(opts.partitions), NATS_URL: natsUrl, ...opts.env } });
  const stub = await startChat2DeskStub(t);
  const user = await signUp(svc.api, `${label} Co`);
  const kb = await svc.api('POST', '/api/knowledge-bases', { token: user.token, body: { name: 'Fruit' } });
  if (kb.status !== 201) throw new Error(`kb: ${kb.status}`);
  const kbId = kb.body.knowledgeBase.id as number;
  for (const [k, topic] of TOPICS.entries()) {
    await addDocument(svc.api, user.token, kbId, { title: `About ${topic}`, content: `The ${topic} answer is here [k${k}].` });
  }
  const agent = await svc.api('POST', '/api/agents', { token: user.token, body: { name: 'Fruit bot', knowledgeBaseId: kbId } });
  if (agent.status !== 201) throw new Error(`agent: ${agent.status} ${JSON.stringify(agent.body)}`);
  const integ = await svc.api('POST', '/api/integrations', {
    token: user.token,
    body: { type: 'helpdesk', name: 'Helpdesk', agentId: agent.body.agent.id, apiUrl: stub.url, apiToken: stub.token },
  });
  if (integ.status !== 201) throw new Error(`integration: ${integ.status}`);
  const integrationId = integ.body.integration.id as number;
  const secret = integ.body.integration.webhookSecret as string;

  const payloads: object[] = [];
  for (let i = 0; i < opts.perConversation; i++) {
    for (let c = 0; c < opts.conversations; c++) {
      payloads.push({
        message_id: `${label}-${c}-${i}`,
        type: 'from_client',
        text: `Tell me about ${TOPICS[i % TOPICS.length]}`,
        client_id: `client-${c}`,
        channel_id: 'ch-1',
        transport: 'telegram',
      });
    }
  }

  const publish = async () => {
    // Per conversation in order: message i of every conversation before message i + 1.
    for (let i = 0; i < opts.perConversation; i++) {
      const round = payloads.slice(i * opts.conversations, (i + 1) * opts.conversations);
      await pool(round, 16, async (p) => {
        const res = await deliver(svc.api, integrationId, p, { secret });
        if (res.status !== 200) throw new Error(`webhook answered ${res.status}`);
      });
    }
  };

  // What the customers received: the helpdesk's history (a send that arrived counts, even if its answer was lost).
  const replies = () => {
    const by = new Map<string, number[]>();
    for (const message of stub.history) {
      const m = /\[k(\d)\]/.exec(message.text);
      const list = by.get(String(message.client_id)) ?? [];
      list.push(m ? Number(m[1]) : -1);
      by.set(String(message.client_id), list);
    }
    return by;
  };

  return {
    svc,
    stub,
    integrationId,
    secret,
    workerEnv: { DATABASE_URL: svc.config.databaseUrl, NATS_URL: natsUrl, NATS_PREFIX: svc.config.natsPrefix, PARTITIONS: String(opts.partitions), ...opts.env },
    conversations: opts.conversations,
    perConversation: opts.perConversation,
    publish,
    replies,
    total: () => stub.history.length,
    answered: () => [...replies().values()].reduce((n, got) => n + got.filter((k, i) => i === 0 || k !== got[i - 1]).length, 0),
  };
}

/** Asserts every customer message got exactly one reply, in the order of the messages: none lost, none repeated. */
export function checkExactlyOnceInOrder(t: Test, b: Backlog): void {
  const by = b.replies();
  let lost = 0;
  let outOfOrder = 0;
  let duplicates = 0;
  const examples: string[] = [];
  for (let c = 0; c < b.conversations; c++) {
    const got = by.get(`client-${c}`) ?? [];
    const collapsed = got.filter((k, i) => i === 0 || k !== got[i - 1]);
    duplicates += got.length - collapsed.length;
    const want = Array.from({ length: b.perConversation }, (_, i) => i % TOPICS.length);
    if (collapsed.length < want.length) lost += want.length - collapsed.length;
    if (collapsed.join(',') !== want.join(',')) {
      outOfOrder++;
      if (examples.length < 5) examples.push(`client-${c}: [${got.join(',')}]`);
    } else if (got.length !== collapsed.length && examples.length < 5) examples.push(`client-${c} repeated: [${got.join(',')}]`);
  }
  t.equal(lost, 0, 'no customer message is left unanswered');
  t.equal(outOfOrder, 0, `each conversation's replies arrived once each, in the order of its messages ${examples.join('; ')}`);
  t.equal(duplicates, 0, `no reply was sent twice ${examples.join('; ')}`);
  t.comment(`${b.total()} replies for ${b.conversations * b.perConversation} messages; ${duplicates} repeated`);
}
