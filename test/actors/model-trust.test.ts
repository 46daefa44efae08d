import t from 'tap';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { addDocument } from '../support/knowledge.js';
import { startOpenAiStub, type ModelAnswer } from '../support/openai-stub.js';
import { signUp, startTestService } from '../support/service.js';
import { createWebchatIntegration, openChat, type ChatClient, type Frame } from '../support/webchat.js';
import { createHelpdeskIntegration, eventually, messageEnvelope, publishEnvelope, sql, startTestWorker, waitForPartitions, type TestIntegration } from '../support/worker.js';

// contract.md § Answers a company can trust, for model agents: only passages that answer the
// question reach the model, the service's rules follow the company's prompt, and a reply that
// promises what no tool did ("I'll transfer you", "с вами свяжется менеджер") is not sent: the
// conversation goes to a human (`no_answer`) and the reply stays in the transition log only.
const svc = await startTestService(t, 'model_trust', { env: { PARTITIONS: '2' } });
const helpdesk = await startChat2DeskStub(t);
const llm = await startOpenAiStub(t);
const worker = await startTestWorker(t, svc, {
  workerId: 'trust',
  options: { agentRunner: { cacheTtlMs: 0, model: { timeoutMs: 3000, maxRetries: 1, totalTimeoutMs: 8000 } } },
});
await waitForPartitions([worker], 2);

const NOTICE = 'A human colleague will take over shortly.';
const COMPANY_PROMPT = 'You are the assistant of Acme Outdoor. Always be cheerful.';

/** What the stand-in model answers to each customer message (a model that does not follow its rules, mostly). */
const ANSWERS: Record<string, ModelAnswer> = {
  'Will the courier call me before delivery?': { content: 'Yes: our courier will call you about an hour before delivery.' },
  'Who won the football match last night?': { content: null, toolCalls: [{ name: 'handoff_to_human', arguments: '{"reason":"not in the knowledge base"}' }] },
  'Can you sort out my order today?': { content: "Of course! A colleague will call you back within the hour. Have a nice day!" },
  'Можно вернуть палатку?': { content: 'Я передам ваш вопрос менеджеру, он скоро с вами свяжется.' },
  'Who won the cup final?': { content: 'Great question! I will check with the team and get back to you.' },
  'Please mark me as qualified': { content: "Done, I'm transferring you to our sales team now.", toolCalls: [{ name: 'set_lead_stage', arguments: '{"stage":"Qualified"}' }] },
  "That's all, bye": { content: 'A manager will call you tomorrow to finish the order. Goodbye!', toolCalls: [{ name: 'close_conversation', arguments: '{}' }] },
  'Where is my refund?': { content: "I've refunded your payment, it will arrive in 3 days." },
  'Is there a person I could talk to later?': { content: 'Would you like me to hand you over to a colleague?' },
  'Where is my parcel?': { content: "I'm transferring you to a colleague who can track parcels. One moment, please." },
};
llm.respond((req) => ANSWERS[llm.lastUserText(req)] ?? { content: 'I can only help with questions about Acme Outdoor.' });

const requestFor = (text: string) => llm.requests.find((r) => llm.lastUserText(r) === text);
const systemOf = (text: string) => requestFor(text)!.body.messages[0].content as string;
const sentTo = (clientId: string) => helpdesk.sent().filter((b) => b.client_id === clientId);
const conversationOf = async (integration: TestIntegration, clientId: string) =>
  (await sql(svc.orm, 'select * from conversations where integration_id = ? and client_id = ? order by id desc', [integration.id, clientId]))[0];
const transitionsOf = async (conversationId: number) => (await sql(svc.orm, 'select * from conversation_transitions where conversation_id = ? order by seq', [conversationId]));
/** The agent's answer as the transition log holds it (the `xstate.done.actor.agent` transition). */
const agentOutputOf = async (conversationId: number) => (await transitionsOf(conversationId)).filter((r) => r.event === 'xstate.done.actor.agent').at(-1)?.payload.output;

const user = await signUp(svc.api, 'Acme Outdoor');
const kb = await svc.api('POST', '/api/knowledge-bases', { token: user.token, body: { name: 'Help centre' } });
const kbId = kb.body.knowledgeBase.id as number;
for (const doc of [
  { title: 'Delivery', content: 'Standard delivery takes 2–4 working days. Our courier calls you about an hour before delivery to agree on the time.' },
  { title: 'Opening hours', content: 'Our shop is open from 9 am to 6 pm, Monday to Saturday.' },
  { title: 'Tent repairs', content: 'Our workshop repairs torn tent fabric and broken poles within 10 days.' },
]) {
  await addDocument(svc.api, user.token, kbId, doc);
}

/** A model agent on the help centre, on a helpdesk integration of its own. */
async function modelAgent(name: string, extra: Record<string, unknown> = {}) {
  const created = await svc.api('POST', '/api/agents', {
    token: user.token,
    body: { name, systemPrompt: COMPANY_PROMPT, knowledgeBaseId: kbId, model: { provider: 'openai', name: 'gpt-4o', baseUrl: llm.baseUrl, apiKey: 'sk-trust' }, ...extra },
  });
  if (created.status !== 201) throw new Error(`agent: ${created.status} ${JSON.stringify(created.body)}`);
  return { agent: created.body.agent, integration: await createHelpdeskIntegration(svc, user, helpdesk, name, created.body.agent.id) };
}

const main = await modelAgent('Trusted');

/** Sends a customer message and waits until the helpdesk got `n` messages for that customer. */
async function ask(integration: TestIntegration, clientId: string, text: string, n = 1) {
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, clientId, text));
  await helpdesk.waitFor(() => sentTo(clientId).length >= n, 15_000);
  return conversationOf(integration, clientId);
}

t.test("the prompt: the company's instructions, then the service's rules, then the passages that answer", async (t) => {
  const conv = await ask(main.integration, 'courier', 'Will the courier call me before delivery?');
  const system = systemOf('Will the courier call me before delivery?');
  const company = system.indexOf(COMPANY_PROMPT);
  const rules = system.indexOf('Service rules');
  const passage = system.indexOf('[1] Delivery');
  t.ok(company > 0 && system.slice(0, company).includes("The company's instructions"), "the company's prompt, framed as its instructions");
  t.ok(rules > company, "the service's rules after the company's prompt (they cannot be lifted by it)");
  t.ok(passage > rules, 'the passage that answers, after the rules');
  t.match(system.slice(rules), /Answer only from the numbered knowledge base passages[\s\S]*handoff_to_human[\s\S]*Never promise an action/);
  t.notMatch(system, /Tent repairs|Opening hours/, 'passages that do not answer the question stay out');

  // Grounded: the passage says the courier calls, so the reply says a fact, not a promise.
  t.same(sentTo('courier').map((m) => m.text), ['Yes: our courier will call you about an hour before delivery.'], 'the grounded reply is sent');
  t.same(conv.state, { active: 'idle' });
  const messages = (await svc.api('GET', `/api/conversations/${conv.id}/messages`, { token: user.token })).body.messages;
  t.match(messages.at(-1), { role: 'agent', sources: [{ title: 'Delivery' }] });
});

t.test('a question no passage answers: the model gets no passages, and is told to hand over', async (t) => {
  const conv = await ask(main.integration, 'football', 'Who won the football match last night?');
  const system = systemOf('Who won the football match last night?');
  t.notMatch(system, /\[1\]/, 'no passage in the prompt');
  t.notMatch(system, /Tent repairs|Delivery|Opening hours/, 'not even the nearest one');
  t.match(system, /nothing relevant to this message[\s\S]*handoff_to_human/);
  t.same(sentTo('football').map((m) => m.text), [NOTICE], 'the model handed over: the notice only');
  t.equal(conv.snapshot.context.handoffReason, 'no_answer');
});

t.test('a reply that promises what no tool did is not sent: handoff no_answer, the reply kept in the log, its tokens charged', async (t) => {
  for (const [clientId, question, phrase] of [
    ['callback', 'Can you sort out my order today?', /colleague will call/],
    ['ru-return', 'Можно вернуть палатку?', /передам/],
    ['refunded', 'Where is my refund?', /i've refunded/],
  ] as const) {
    const conv = await ask(main.integration, clientId, question);
    const withheld = ANSWERS[question]!.content!;
    t.same(sentTo(clientId).map((m) => m.text), [NOTICE], `${question}: the customer got the handoff notice, nothing else`);
    t.same(conv.state, { paused: { handedOver: 'idle' } }, 'handed over: it waits for a person');
    t.equal(conv.snapshot.context.handoffReason, 'no_answer');
    const output = await agentOutputOf(conv.id);
    t.match(output, { kind: 'handoff', reason: 'no_answer', withheld, detail: phrase, usage: { model: 'gpt-4o', inputTokens: 1234, outputTokens: 567 } }, 'the withheld reply and why, in the transition log');
    t.match(output.decision, { kind: 'no_answer' }, 'recorded as a no-answer (a knowledge gap)');

    // Operators see it in the transition log; nothing a customer reads holds it.
    const transitions = (await svc.api('GET', `/api/conversations/${conv.id}/transitions`, { token: user.token })).body.transitions;
    t.ok(transitions.some((tr: any) => tr.payload?.output?.withheld === withheld), 'GET …/transitions shows the withheld reply');
    const messages = (await svc.api('GET', `/api/conversations/${conv.id}/messages`, { token: user.token })).body.messages;
    t.same(messages.map((m: any) => [m.role, m.text]), [['customer', question], ['agent', NOTICE]], 'the conversation holds no withheld text');
    t.notOk(JSON.stringify(messages).includes('withheld'), 'no withheld field on messages');
    const ledger = (await svc.api('GET', '/api/billing', { token: user.token })).body.billing.ledger;
    t.match(ledger.filter((e: any) => e.kind === 'model_usage' && e.conversationId === conv.id), [{ inputTokens: 1234, outputTokens: 567, amountUsd: '-0.008755' }], 'the tokens were spent: charged');
  }
});

t.test('a customer who asks to be called back is handed to a person at once, before any model call (issue #42)', async (t) => {
  const question = 'Can someone call me about my order?';
  const conv = await ask(main.integration, 'call-back', question);
  t.same(sentTo('call-back').map((m) => m.text), [NOTICE], 'the handoff notice only');
  t.same(conv.state, { paused: { handedOver: 'idle' } });
  t.equal(conv.snapshot.context.handoffReason, 'asked_for_human');
  t.notOk(requestFor(question), 'the model was not asked');
});

t.test('a promise in a reply to a question no passage answers is withheld too', async (t) => {
  const conv = await ask(main.integration, 'cup', 'Who won the cup final?');
  t.notMatch(systemOf('Who won the cup final?'), /\[1\]/);
  t.same(sentTo('cup').map((m) => m.text), [NOTICE]);
  t.match(await agentOutputOf(conv.id), { kind: 'handoff', reason: 'no_answer', withheld: ANSWERS['Who won the cup final?']!.content, detail: /check with the team and get back/ });
});

t.test('set_lead_stage is no transfer: the promise is withheld, the lead still moves', async (t) => {
  const conv = await ask(main.integration, 'lead', 'Please mark me as qualified');
  t.same(sentTo('lead').map((m) => m.text), [NOTICE]);
  t.equal(conv.snapshot.context.handoffReason, 'no_answer');
  t.match(await agentOutputOf(conv.id), { kind: 'handoff', withheld: /transferring you/, leadStage: 'Qualified' });
  const [qualified] = await sql(svc.orm, `select id from pipeline_stages where company_id = ? and name = 'Qualified'`, [user.companyId]);
  const leads = (await svc.api('GET', `/api/leads?stageId=${qualified.id}`, { token: user.token })).body.leads;
  t.match(leads, [{ clientId: 'lead', stageId: qualified.id }], 'the tool that was called did its part');
});

t.test('last words that promise: the conversation is handed over, not closed', async (t) => {
  const conv = await ask(main.integration, 'bye', "That's all, bye");
  t.same(sentTo('bye').map((m) => m.text), [NOTICE]);
  t.same(conv.state, { paused: { handedOver: 'idle' } }, 'not closed: the customer was promised a call');
  t.match(await agentOutputOf(conv.id), { kind: 'handoff', reason: 'no_answer', withheld: /manager will call you tomorrow/ });
});

t.test('a question back to the customer promises nothing: it is sent', async (t) => {
  const conv = await ask(main.integration, 'offer', 'Is there a person I could talk to later?');
  t.same(sentTo('offer').map((m) => m.text), ['Would you like me to hand you over to a colleague?']);
  t.same(conv.state, { active: 'idle' });
});

t.test('onNoAnswer "fallback": the fallback text instead of the promise, the bot stays on', async (t) => {
  const fallback = await modelAgent('Fallback', { onNoAnswer: 'fallback', fallbackMessage: 'Sorry, I cannot help with that here.' });
  const conv = await ask(fallback.integration, 'fb', 'Can you sort out my order today?');
  t.same(sentTo('fb').map((m) => m.text), ['Sorry, I cannot help with that here.']);
  t.same(conv.state, { active: 'idle' }, 'not handed over');
  const output = await agentOutputOf(conv.id);
  t.match(output, { kind: 'reply', text: 'Sorry, I cannot help with that here.', withheld: ANSWERS['Can you sort out my order today?']!.content, sources: [], usage: { inputTokens: 1234 } });
  t.match(output.decision, { kind: 'no_answer' });
  const messages = (await svc.api('GET', `/api/conversations/${conv.id}/messages`, { token: user.token })).body.messages;
  t.same(messages.map((m: any) => m.text), ['Can you sort out my order today?', 'Sorry, I cannot help with that here.']);
});

t.test('webchat: a streamed promise is replaced by the handoff notice, and never comes back', async (t) => {
  const created = await svc.api('POST', '/api/agents', {
    token: user.token,
    body: { name: 'Web', systemPrompt: COMPANY_PROMPT, knowledgeBaseId: kbId, model: { provider: 'openai', name: 'gpt-4o', baseUrl: llm.baseUrl, apiKey: 'sk-trust' } },
  });
  const chat = await createWebchatIntegration(svc.api, user.token, { agentId: created.body.agent.id });
  const c = await openChat(t, svc.url, chat.id);
  const welcome = await c.hello();
  const question = 'Where is my parcel?';
  const promise = ANSWERS[question]!.content!;
  c.send({ type: 'message', clientMessageId: 'w-1', text: question });
  const frames = await untilAgentMessage(c);
  frames.push(...(await c.drain(800)));
  const conversationId = frames.find((f) => f.type === 'ack')!.conversationId as number;

  const deltas = frames.filter((f) => f.type === 'delta');
  t.ok(deltas.length > 0, 'the reply was previewed as the model wrote it');
  t.equal(deltas.map((d) => d.text).join(''), promise, '…the promise, piece by piece');
  const notice = frames.filter((f) => f.type === 'message' && f.role !== 'customer');
  t.same(notice.map((f) => f.text), [NOTICE], 'then the handoff notice, which replaces the preview (frames.ts: a message replaces the deltas)');
  t.ok(frames.indexOf(deltas.at(-1)!) < frames.indexOf(notice[0]!), 'every delta before it');
  t.ok(frames.some((f) => f.type === 'status' && f.status === 'paused'), 'the visitor is told a human has it');
  await eventually(async () => (await sql(svc.orm, 'select status from conversations where id = ?', [conversationId]))[0].status === 'paused');
  t.match(await agentOutputOf(conversationId), { kind: 'handoff', reason: 'no_answer', withheld: promise });

  // Back later (a reload): the history holds the notice, never the promise.
  const again = await openChat(t, svc.url, chat.id);
  await again.hello({ visitorToken: welcome.visitorToken });
  const replay = await again.drain(800);
  t.same(replay.filter((f) => f.type === 'message').map((f) => f.text), [question, NOTICE], 'the replay: the question and the notice');
  t.notOk(replay.some((f) => f.type === 'delta'), 'previews are never replayed');
  const stored = await sql(svc.orm, 'select text from conversation_messages where conversation_id = ?', [conversationId]);
  t.notOk(stored.some((m: any) => m.text.includes('transferring')), 'the promise is stored nowhere a visitor reads');
});

/** Frames up to and including the agent's next `message`. */
async function untilAgentMessage(c: ChatClient): Promise<Frame[]> {
  const start = c.frames.length;
  for (;;) {
    const f = await c.next(undefined, 15_000);
    if (f.type === 'message' && f.role === 'agent') return c.frames.slice(start);
  }
}
