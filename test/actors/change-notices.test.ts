import t from 'tap';
import { BUILT_IN_TOOLS } from '../../lib/agents/openai-model.js';
import { partitionOf } from '../../lib/streams.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { addDocument } from '../support/knowledge.js';
import { startMcpStub } from '../support/mcp-stub.js';
import { type ModelRequest, startOpenAiStub } from '../support/openai-stub.js';
import { signUp, startTestService } from '../support/service.js';
import { createHelpdeskIntegration, eventually, messageEnvelope, publishEnvelope, sql, startTestWorker } from '../support/worker.js';

/**
 * A change saved through the API is used from the next customer message on, by every worker
 * (contract.md § The first hour): the gateway announces it over NATS before it answers, and
 * each worker drops its cached config. Two workers, one partition each; after every change (the
 * agent, its versions and replays, documents, synonyms, the integration's agent, actions and MCP
 * servers) a customer writes 100 ms after the API's answer on each partition, within the
 * workers' cache lifetime (without the notice both would answer with what they cached).
 */
const svc = await startTestService(t, 'change_notices', { env: { PARTITIONS: '2' }, knowledge: { sweepMs: 200 } });
const stub = await startChat2DeskStub(t);
const user = await signUp(svc.api, 'Changing Co');
const kbId = (await svc.api('POST', '/api/knowledge-bases', { token: user.token, body: { name: 'FAQ', language: 'english' } })).body.knowledgeBase.id as number;
await addDocument(svc.api, user.token, kbId, { title: 'Shop', content: '# Shop\n\n## Opening hours\n\nOur shop is open from 9 am to 6 pm, Monday to Saturday.' });
const agent = (await svc.api('POST', '/api/agents', { token: user.token, body: { name: 'FAQ bot', knowledgeBaseId: kbId } })).body.agent;
const integration = await createHelpdeskIntegration(svc, user, stub, 'Helpdesk', agent.id);
const options = { replay: { pollMs: 100 } };
const workers = [await startTestWorker(t, svc, { workerId: 'notices-a', options }), await startTestWorker(t, svc, { workerId: 'notices-b', options })];
await eventually(async () => workers.every((w) => w.ownedPartitions().length === 1), 20_000, 'one partition per worker');

// About the shop, but its help centre does not say (yet): handed over with the fallback message.
const ORDER = 'Where is my order?';
const DEFAULT_FALLBACK = /^Sorry, I don't have an answer to that\./;
const NEW_FALLBACK = 'Our team will look into your order, one moment.';

let clients = 0;
/** A new customer whose conversation lives on `partition`. */
function clientOn(partition: number): string {
  for (;;) {
    const client = `cn-${clients++}`;
    if (partitionOf(integration.id, client, 2) === partition) return client;
  }
}

/** A new customer's question on `partition` (so: on the worker owning it) and the agent's answer. */
async function ask(partition: number, text: string): Promise<{ kind: string; text: string; agentVersion: number | null }> {
  const client = clientOn(partition);
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, client, text));
  const conv = await eventually(async () => (await sql(svc.orm, 'select id from conversations where client_id = ?', [client]))[0], 10_000, `${client}'s conversation`);
  return eventually(async () => {
    const res = await svc.api('GET', `/api/conversations/${conv.id}/messages`, { token: user.token });
    return res.body.messages[1];
  }, 10_000, `the answer to ${client}`);
}

/** Both partitions' answers to `text`, asked 100 ms after a change's answer. */
async function askBoth(text: string) {
  await new Promise((r) => setTimeout(r, 100));
  return Promise.all([ask(0, text), ask(1, text)]);
}

t.test('both workers answer, and cache, the agent as it is', async (t) => {
  t.ok(workers[0]!.ownedPartitions()[0] !== workers[1]!.ownedPartitions()[0], 'the two partitions on two workers');
  for (const answer of await Promise.all([ask(0, ORDER), ask(1, ORDER)])) t.match(answer, { kind: 'handoff_notice', text: DEFAULT_FALLBACK, agentVersion: 1 });
});

t.test('a PATCH of the agent is answered with by the next message, on both workers', async (t) => {
  const changed = await svc.api('PATCH', `/api/agents/${agent.id}`, { token: user.token, body: { fallbackMessage: NEW_FALLBACK } });
  t.equal(changed.status, 200);
  for (const answer of await askBoth(ORDER)) t.match(answer, { kind: 'handoff_notice', text: new RegExp(`^${NEW_FALLBACK}`), agentVersion: 2 });
});

t.test('restoring an earlier version is answered with by the next message, on both workers', async (t) => {
  const restored = await svc.api('POST', `/api/agents/${agent.id}/versions/1/restore`, { token: user.token });
  t.equal(restored.status, 201);
  t.equal(restored.body.agent.version, 3);
  for (const answer of await askBoth(ORDER)) t.match(answer, { kind: 'handoff_notice', text: DEFAULT_FALLBACK, agentVersion: 3 });
});

t.test("publishing a replay's changes is answered with by the next message, on both workers", async (t) => {
  const REPLAYED = 'A colleague will check your order, thank you for waiting.';
  const started = await svc.api('POST', `/api/agents/${agent.id}/replays`, { token: user.token, body: { changes: { fallbackMessage: REPLAYED } } });
  t.equal(started.status, 201);
  const path = `/api/agents/${agent.id}/replays/${started.body.replay.id}`;
  await eventually(async () => (await svc.api('GET', path, { token: user.token })).body.replay?.status === 'done', 20_000, 'the replay done');
  const published = await svc.api('POST', `${path}/publish`, { token: user.token });
  t.equal(published.status, 201);
  for (const answer of await askBoth(ORDER)) t.match(answer, { kind: 'handoff_notice', text: new RegExp(`^${REPLAYED}`), agentVersion: published.body.agent.version });
});

t.test('a document added (and ready) answers the next message, on both workers', async (t) => {
  await addDocument(svc.api, user.token, kbId, { title: 'Orders', content: '# Orders\n\n## Where is my order\n\nTrack your order at shop.example.com/track with the number in your confirmation e-mail.' });
  for (const answer of await askBoth(ORDER)) t.match(answer, { kind: 'reply', text: /shop\.example\.com\/track/ });
});

t.test("a knowledge base's new synonyms are used by the next message, on both workers", async (t) => {
  // A word of the company's own that nothing in the base says (yet): both workers take the
  // question for something else (out of scope) and remember that evidence.
  const OWN_WORD = 'Where is my zorblax?';
  for (const answer of await Promise.all([ask(0, OWN_WORD), ask(1, OWN_WORD)])) t.notMatch(answer.text, /shop\.example\.com\/track/, 'not the orders passage before the synonyms');
  const patched = await svc.api('PATCH', `/api/knowledge-bases/${kbId}`, { token: user.token, body: { synonyms: [['zorblax', 'order']] } });
  t.equal(patched.status, 200);
  for (const answer of await askBoth(OWN_WORD)) t.match(answer, { kind: 'reply', text: /shop\.example\.com\/track/ });
});

t.test('moving the integration to another agent is answered with by the next message, on both workers', async (t) => {
  const other = (await svc.api('POST', '/api/agents', { token: user.token, body: { name: 'Bare bot', fallbackMessage: 'The bare bot cannot say.' } })).body.agent;
  const moved = await svc.api('PATCH', `/api/integrations/${integration.id}`, { token: user.token, body: { agentId: other.id } });
  t.equal(moved.status, 200);
  for (const answer of await askBoth(ORDER)) t.match(answer, { kind: 'handoff_notice', text: /^The bare bot cannot say\./ });
});

t.test("a model agent's new system prompt is used by the next message, on both workers (stand-in model, ~1 s)", async (t) => {
  const llm = await startOpenAiStub(t);
  // The stand-in says which of the company's prompts it was given (the service wraps it in its own), at a model's pace.
  const promptIn = (req: { body: { messages: { role: string; content: unknown }[] } }) => /You are the \w+ prompt\./.exec(String(req.body.messages.find((m) => m.role === 'system')?.content ?? ''))?.[0] ?? 'no company prompt';
  llm.respond((req) => ({ content: `Prompted: ${promptIn(req)}`, delayMs: 900 }));
  const model = { provider: 'openai', name: 'gpt-4o', baseUrl: llm.baseUrl, apiKey: 'sk-notices' };
  const bot = (await svc.api('POST', '/api/agents', { token: user.token, body: { name: 'Model bot', systemPrompt: 'You are the first prompt.', model } })).body.agent;
  t.equal((await svc.api('PATCH', `/api/integrations/${integration.id}`, { token: user.token, body: { agentId: bot.id } })).status, 200);
  for (const answer of await askBoth('Hello, is anyone there?')) t.match(answer, { kind: 'reply', text: /^Prompted: You are the first prompt\./ });

  const changed = await svc.api('PATCH', `/api/agents/${bot.id}`, { token: user.token, body: { systemPrompt: 'You are the second prompt.' } });
  t.equal(changed.status, 200);
  for (const answer of await askBoth('Hello again, anyone?')) t.match(answer, { kind: 'reply', text: /^Prompted: You are the second prompt\./, agentVersion: changed.body.agent.version });
});

t.test("an agent's actions and MCP servers, added, changed and removed, are offered from the next message, on both workers (stand-in model, ~1 s)", async (t) => {
  const llm = await startOpenAiStub(t);
  const mcp = await startMcpStub(t);
  // The stand-in says which of the company's tools it was offered (the built-in ones left out), at a model's pace.
  const offered = (req: ModelRequest) =>
    ((req.body.tools ?? []) as { function: { name: string; description?: string } }[])
      .map((d) => d.function)
      .filter((f) => !BUILT_IN_TOOLS.has(f.name))
      .map((f) => `${f.name} (${f.description ?? ''})`)
      .join(', ') || 'none';
  llm.respond((req) => ({ content: `Tools: ${offered(req)}`, delayMs: 900 }));
  const model = { provider: 'openai', name: 'gpt-4o', baseUrl: llm.baseUrl, apiKey: 'sk-tools' };
  const bot = (await svc.api('POST', '/api/agents', { token: user.token, body: { name: 'Tool bot', model } })).body.agent;
  t.equal((await svc.api('PATCH', `/api/integrations/${integration.id}`, { token: user.token, body: { agentId: bot.id } })).status, 200);
  const QUESTION = 'Which tools do you have?';
  for (const answer of await askBoth(QUESTION)) t.match(answer, { kind: 'reply', text: 'Tools: none' });

  // The company's HTTP API is never called here: only what the model is offered is asked.
  const action = await svc.api('POST', `/api/agents/${bot.id}/actions`, {
    token: user.token,
    body: { name: 'get_order', description: 'Order lookup, first wording', parameters: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] }, request: { method: 'GET', url: 'http://127.0.0.1:9/orders/{orderId}' } },
  });
  t.equal(action.status, 201);
  for (const answer of await askBoth(QUESTION)) t.match(answer, { kind: 'reply', text: 'Tools: get_order (Order lookup, first wording)' });

  const path = `/api/agents/${bot.id}/actions/${action.body.action.id}`;
  t.equal((await svc.api('PATCH', path, { token: user.token, body: { description: 'Order lookup, second wording' } })).status, 200);
  for (const answer of await askBoth(QUESTION)) t.match(answer, { kind: 'reply', text: 'Tools: get_order (Order lookup, second wording)' });

  const server = await svc.api('POST', `/api/agents/${bot.id}/mcp-servers`, { token: user.token, body: { name: 'crm', url: mcp.url } });
  t.equal(server.status, 201);
  for (const answer of await askBoth(QUESTION)) t.match(answer, { kind: 'reply', text: /^Tools: get_order \(Order lookup, second wording\), .*crm__order_status \(The shipping status of an order\)/ });

  t.equal((await svc.api('DELETE', path, { token: user.token })).status, 204);
  for (const answer of await askBoth(QUESTION)) t.match(answer, { kind: 'reply', text: /^Tools: crm__/ });
  t.equal((await svc.api('DELETE', `/api/agents/${bot.id}/mcp-servers/${server.body.mcpServer.id}`, { token: user.token })).status, 204);
  for (const answer of await askBoth(QUESTION)) t.match(answer, { kind: 'reply', text: 'Tools: none' });
});
