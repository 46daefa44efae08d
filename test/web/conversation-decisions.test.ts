// The conversation view says what the agent decided for each customer message, in words
// ("answered from Returns, 82 %", "asked which one: Returns / Exchanges", "out of scope",
// "no answer (best: Returns, 21 %)", "greeting", "asked for a person", and "(while waiting for a
// person)" after a handoff), and lists the options a clarify reply offered. The conversation's
// own routes answer a fixed conversation (page.route) with every kind of decision, in the shapes
// the API gives (gateway/routes/conversation-schemas.ts); the dashboard, its sign-in and the
// state machine are the real service's. Titles come from the company's documents: markup in
// them stays text.
import t from 'tap';
import type { Page, Route } from 'playwright-core';
import { EXAMPLE_CONVERSATION_ITEM, EXAMPLE_MESSAGE } from '../../gateway/routes/conversation-schemas.js';
import { launchBrowser, shot, signedInPage } from '../support/browser.js';
import { startTestService } from '../support/service.js';

const svc = await startTestService(t, 'web_conversation_decisions');
const browser = await launchBrowser(t);

const ID = 424242;
const AT = '2026-03-02T10:00:00.000Z';
const HOSTILE = 'Returns <img src=x onerror="window.pwned=1">';
const returns = { documentId: 7, chunkId: 31, title: 'Returns', confidence: 0.82, lexical: 0.9, semantic: 0.7 };
const exchanges = { documentId: 8, chunkId: 40, title: 'Exchanges', confidence: 0.61 };
const decision = (kind: string, extra: Record<string, unknown> = {}) => ({ kind, knowledgeBaseId: 3, question: 'q', threshold: 0.35, best: null, ...extra });

/** Agent answers (the output of the agent actor, as the transition log records it), oldest first. */
const DECISIONS = [
  decision('greeting'),
  decision('answer', { best: returns, passages: [returns, exchanges] }),
  decision('clarify', { best: returns, passages: [returns, exchanges], options: [{ documentId: 7, chunkId: 31, title: 'Returns' }, { documentId: 8, chunkId: 40, title: 'Exchanges' }] }),
  decision('out_of_scope'),
  decision('no_answer', { best: { ...returns, confidence: 0.21 } }),
  decision('no_answer'),
  decision('asked_for_human'),
  decision('answer', { best: returns, handedOver: true }),
  decision('clarify', { options: [{ documentId: 9, chunkId: 50, title: HOSTILE }, { documentId: 8, chunkId: 40, title: 'Exchanges' }] }),
];
const EXPECTED = [
  'greeting',
  'answered from Returns, 82 %',
  'asked which one: Returns / Exchanges',
  'out of scope',
  'no answer (best: Returns, 21 %)',
  'no answer',
  'asked for a person',
  'answered from Returns, 82 % (while waiting for a person)',
  `asked which one: ${HOSTILE} / Exchanges`,
];

const transitions = DECISIONS.map((d, i) => ({
  seq: i + 1,
  at: AT,
  event: 'xstate.done.actor.agent',
  payload: { output: { kind: d.kind === 'asked_for_human' ? 'handoff' : 'reply', ...(d.kind === 'asked_for_human' ? { reason: 'asked_for_human' } : { text: 'x' }), decision: d } },
  from: { active: 'answering' },
  to: { active: 'idle' },
  actions: [],
}));
transitions.push({ seq: transitions.length + 1, at: AT, event: 'customer.message', payload: { text: 'hi' } as never, from: { active: 'idle' }, to: { active: 'answering' }, actions: [] });

const message = (seq: number, fields: Record<string, unknown>) => ({ ...EXAMPLE_MESSAGE, id: seq, seq, replyToId: null, externalId: null, sources: null, confidence: null, options: null, createdAt: AT, ...fields });
const messages = [
  message(1, { role: 'customer', kind: 'message', text: 'Can I send it back?', delivery: null }),
  message(2, { role: 'agent', kind: 'reply', text: 'Do you mean: 1. Returns 2. Exchanges?', options: [{ documentId: 7, chunkId: 31, title: 'Returns' }, { documentId: 8, chunkId: 40, title: 'Exchanges' }] }),
  message(3, { role: 'customer', kind: 'message', text: 'Which one?', delivery: null }),
  message(4, { role: 'agent', kind: 'reply', text: 'Do you mean: 1. … 2. Exchanges?', options: [HOSTILE, 'Exchanges'] }),
  message(5, { role: 'agent', kind: 'reply', text: 'Returns are accepted within 30 days.', sources: [{ documentId: 7, chunkId: 31, title: 'Returns' }], confidence: 0.82 }),
];

const page = (items: unknown[], key: string) => ({ [key]: items, total: items.length, limit: 200, offset: 0 });
async function serveConversation(p: Page): Promise<void> {
  const json = (route: Route, body: unknown) => route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(body) });
  await p.route(new RegExp(`/api/conversations/${ID}(\\?.*)?$`), (route) => json(route, { conversation: { ...EXAMPLE_CONVERSATION_ITEM, id: ID, unread: 0 } }));
  await p.route(new RegExp(`/api/conversations/${ID}/messages(\\?.*)?$`), (route) => json(route, page(messages, 'messages')));
  await p.route(new RegExp(`/api/conversations/${ID}/transitions(\\?.*)?$`), (route) => json(route, page(transitions, 'transitions')));
  await p.route(new RegExp(`/api/conversations/${ID}/read$`), (route) => route.fulfill({ status: 204 }));
  // The live stream: open, with nothing to say.
  await p.route(new RegExp(`/api/conversations/${ID}/inspect$`), (route) => route.fulfill({ status: 200, contentType: 'text/event-stream', body: ': nothing yet\n\n' }));
}

t.test('each decision of the log in words; a clarify reply lists its options; titles stay text', async (t) => {
  const { page: p, problems } = await signedInPage(t, browser, svc, 'Decisions Co');
  await serveConversation(p);
  await p.goto(`${svc.url}/#/conversations/${ID}`);
  const log = p.getByRole('table', { name: 'What happened' });
  await log.locator('.decision').first().waitFor();
  // The log shows the newest first.
  const shown = await log.locator('.decision').allTextContents();
  t.same(shown, EXPECTED.map((text) => `Decision: ${text}`).reverse(), 'every decision, in words');
  const answered = log.locator('tr', { has: p.locator('.decision', { hasText: /^Decision: answered from Returns, 82 %$/ }) });
  t.equal(await answered.locator('.decision').getAttribute('title'), 'Passages weighed: Returns, 82 % · Exchanges, 61 %', 'the passages weighed, on hover');
  t.match(await answered.textContent(), /Agent answered/, 'beside what happened');
  t.equal(await log.locator('tr', { hasText: 'Customer wrote' }).locator('.decision').count(), 0, 'nothing beside other events');

  const agent = p.locator('.msg.from-agent');
  await agent.nth(2).waitFor();
  const options = (i: number) => agent.nth(i).getByRole('list', { name: 'Options offered' }).getByRole('listitem').allTextContents();
  t.same(await options(0), ['Returns', 'Exchanges'], 'a clarify reply: its options, numbered in order');
  t.equal(await agent.nth(0).locator('ol.msg-options').count(), 1, 'as a numbered list');
  t.same(await options(1), [HOSTILE, 'Exchanges'], 'options given as titles are listed too');
  t.equal(await agent.nth(2).getByRole('list', { name: 'Options offered' }).count(), 0, 'no options beside an answer');

  t.equal(await p.evaluate(() => (window as unknown as { pwned?: number }).pwned), undefined, 'no markup of a title ran');
  t.equal(await p.locator('.decision img, .msg-options img').count(), 0, 'no markup of a title became an element');
  await shot(p, 'conversation-decisions');
  t.same(problems, []);
});
