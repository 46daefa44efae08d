import t from 'tap';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { startOpenAiStub } from '../support/openai-stub.js';
import { signUp, startTestService } from '../support/service.js';
import { createHelpdeskIntegration, eventually, messageEnvelope, publishEnvelope, sql, startTestWorker, waitForPartitions } from '../support/worker.js';

// Agent behaviour through a real worker (contract.md § Behaviour customers expect from an
// agent): debounce, the model's tools, the helpdesk transfer. The model is an
// OpenAI-compatible stand-in answering in about a second.
const MODEL_MS = 1000;
const svc = await startTestService(t, 'agent_behaviour', { env: { PARTITIONS: '2' } });
const helpdesk = await startChat2DeskStub(t);
const llm = await startOpenAiStub(t);
const worker = await startTestWorker(t, svc, { agent: 'builtin', workerId: 'behaviour', options: { agentRunner: { cacheTtlMs: 0 } } });
await waitForPartitions([worker], 2);

llm.respond((req) => {
  const text = llm.lastUserText(req);
  const tool = /^TOOL (\w+)(?: (\{.*\}))?/.exec(text);
  if (tool) return { delayMs: MODEL_MS, content: tool[1] === 'close_conversation' ? 'Glad I could help, bye!' : null, toolCalls: [{ name: tool[1]!, arguments: tool[2] ?? '{}' }] };
  return { delayMs: MODEL_MS, content: `Model says: ${text.replace(/\n/g, ' | ')}` };
});

const sentTo = (clientId: string) => helpdesk.sent().filter((b) => b.client_id === clientId);
const modelAskedBy = (fragment: string) => llm.requests.filter((r) => llm.lastUserText(r).includes(fragment));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function setup(name: string, agent: Record<string, unknown> = {}) {
  const user = await signUp(svc.api, name);
  const created = await svc.api('POST', '/api/agents', {
    token: user.token,
    body: { name: 'LLM', model: { provider: 'openai', name: 'gpt-4o', baseUrl: llm.baseUrl, apiKey: 'sk-test-key' }, ...agent },
  });
  if (created.status !== 201) throw new Error(`agent: ${created.status} ${JSON.stringify(created.body)}`);
  const integration = await createHelpdeskIntegration(svc, user, helpdesk, name, created.body.agent.id);
  return { user, agent: created.body.agent, integration };
}

t.test('debounce: three messages inside the window get one answer, to all three', async (t) => {
  const DEBOUNCE = 1500;
  const { integration } = await setup('Debounce Co', { debounceMs: DEBOUNCE });
  const texts = ['Hi', 'I ordered a lamp', 'where is it?'];
  let lastSent = 0;
  for (const text of texts) {
    lastSent = Date.now();
    await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'dana', text, { sentAt: new Date(lastSent).toISOString() }));
    await sleep(300);
  }
  await helpdesk.waitFor(() => sentTo('dana').length >= 1, 15_000);
  await sleep(MODEL_MS + 1000); // room for a second (wrong) answer
  t.equal(sentTo('dana').length, 1, 'one answer');
  t.equal(sentTo('dana')[0]!.text, 'Model says: Hi | I ordered a lamp | where is it?', 'answering every message, in order');
  const asked = modelAskedBy('I ordered a lamp');
  t.equal(asked.length, 1, 'one model call');
  t.equal(llm.lastUserText(asked[0]!), texts.join('\n'));
  const added = asked[0]!.at - lastSent - DEBOUNCE;
  t.ok(added >= 0, 'not asked before the window ended');
  t.ok(added < 500, `the model is asked right when the window ends (${added} ms late)`);
  t.comment(`debounce latency added (model asked − last message − debounceMs): ${added} ms; reply ${helpdesk.requests.find((r) => r.method === 'POST' && r.body?.client_id === 'dana')!.at - lastSent} ms after the last message`);

  // Without debounce, each message is answered by itself.
  const plain = await setup('Plain Co');
  for (const text of ['one', 'two']) {
    await publishEnvelope(svc.nc, svc.config, messageEnvelope(plain.integration, 'eve', text));
    await helpdesk.waitFor(() => sentTo('eve').some((m) => m.text === `Model says: ${text}`), 15_000);
  }
  t.equal(sentTo('eve').length, 2, 'debounceMs 0: one answer per message');
});
