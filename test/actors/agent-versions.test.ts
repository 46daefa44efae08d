import t from 'tap';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { addDocument } from '../support/knowledge.js';
import { signUp, startTestService } from '../support/service.js';
import { createHelpdeskIntegration, eventually, messageEnvelope, publishEnvelope, sql, startTestWorker, waitForPartitions } from '../support/worker.js';

/**
 * Each answer records the version of the agent that gave it (contract.md § Replay before
 * publishing): an agent reply's and a handoff notice's `agentVersion` is the version of the
 * settings the worker answered with (its agent configs are cached for cacheTtlMs: an edit
 * is answered with once the cache has it, and then with its version). Other messages have none.
 */
const CACHE_TTL_MS = 1500;
const svc = await startTestService(t, 'agent_versions_worker', { env: { PARTITIONS: '2' } });
const stub = await startChat2DeskStub(t);
const user = await signUp(svc.api, 'Versioned Co');
const kbId = (await svc.api('POST', '/api/knowledge-bases', { token: user.token, body: { name: 'FAQ', language: 'english' } })).body.knowledgeBase.id as number;
await addDocument(svc.api, user.token, kbId, { title: 'Shop', content: '# Shop\n\n## Opening hours\n\nOur shop is open from 9 am to 6 pm, Monday to Saturday.' });
const agent = (await svc.api('POST', '/api/agents', { token: user.token, body: { name: 'FAQ bot', knowledgeBaseId: kbId } })).body.agent;
const integration = await createHelpdeskIntegration(svc, user, stub, 'Helpdesk', agent.id);
const worker = await startTestWorker(t, svc, { workerId: 'versions', options: { agentRunner: { cacheTtlMs: CACHE_TTL_MS } } });
await waitForPartitions([worker], 2);

const OPEN = 'When are you open?';
// About the shop (an order), but its help centre does not say: a no-answer, handed over (an off-topic question would get the out-of-scope line).
const UNKNOWN = 'Where is my order?';
const NEW_FALLBACK = 'We only know about our shop, sorry.';

/** The customer's message and the agent's answer to it, as GET /api/conversations/:id/messages shows them. */
async function ask(client: string, text: string): Promise<{ conversationId: number; question: any; answer: any }> {
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, client, text));
  const conv = await eventually(async () => (await sql(svc.orm, 'select id from conversations where client_id = ?', [client]))[0], 10_000, `${client}'s conversation`);
  return eventually(async () => {
    const res = await svc.api('GET', `/api/conversations/${conv.id}/messages`, { token: user.token });
    const [question, answer] = res.body.messages;
    return answer && { conversationId: conv.id as number, question, answer };
  }, 10_000, `the answer to ${client}`);
}

t.test('agent answers carry the version that gave them; other messages none', async (t) => {
  const first = await ask('v-1', OPEN);
  t.match(first.answer, { role: 'agent', kind: 'reply', text: /9 am to 6 pm/, agentVersion: 1 });
  t.equal(first.question.agentVersion, null, "a customer's message has no version");
  const handedOff = await ask('v-2', UNKNOWN);
  t.match(handedOff.answer, { role: 'agent', kind: 'handoff_notice', text: /^Sorry, I don't have an answer to that\./, agentVersion: 1 });

  const note = await svc.api('POST', `/api/conversations/${handedOff.conversationId}/notes`, { token: user.token, body: { text: 'Checking with the warehouse.' } });
  t.equal(note.status, 201);
  t.equal(note.body.message.agentVersion, null, 'a note has no version');
  const rows = await sql(svc.orm, 'select kind, agent_version from conversation_messages where conversation_id = ? order by seq', [handedOff.conversationId]);
  t.same(rows.map((r) => [r.kind, r.agent_version]), [['message', null], ['handoff_notice', 1], ['note', null]], 'as stored');
});

t.test('after a change, answers carry the new version once the worker answers with it', async (t) => {
  const changed = await svc.api('PATCH', `/api/agents/${agent.id}`, { token: user.token, body: { fallbackMessage: NEW_FALLBACK } });
  t.equal(changed.body.agent.version, 2);
  // Asked at once: the worker may still hold version 1 (cached): whichever it answers with, the answer says which.
  const meanwhile = await ask('v-3', UNKNOWN);
  const byNew = meanwhile.answer.text.startsWith(NEW_FALLBACK);
  t.equal(meanwhile.answer.agentVersion, byNew ? 2 : 1, `answered by version ${byNew ? 2 : 1}'s settings, and says so`);

  await new Promise((r) => setTimeout(r, CACHE_TTL_MS + 300)); // the worker's agent cache
  const after = await ask('v-4', UNKNOWN);
  t.match(after.answer, { kind: 'handoff_notice', text: new RegExp(`^${NEW_FALLBACK}`), agentVersion: 2 });
  const reply = await ask('v-5', OPEN);
  t.match(reply.answer, { kind: 'reply', text: /9 am to 6 pm/, agentVersion: 2 });
  const versions = (await svc.api('GET', `/api/agents/${agent.id}/versions`, { token: user.token })).body.versions;
  t.match(versions[0], { version: 2, changes: ['fallbackMessage'], current: true }, 'the version the answers name');
});
