// One conversation in Chromium against the real service, worked the way a teammate works it:
// it opens at the newest message and follows new ones (the issue measured it stuck at the
// top); a private note looks like one and never reaches the customer; `/` brings the canned
// replies; it is assigned and labelled; and what happened reads as words, not identifiers.
// Customers write through signed helpdesk webhooks; a worker answers with a model that
// repeats the question.
import t, { type Test } from 'tap';
import type { Page } from 'playwright-core';
import { launchBrowser, shot, signedInPage } from '../support/browser.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { startRepeatingModel } from '../support/repeating-model.js';
import { startTestService } from '../support/service.js';
import { join } from '../support/team.js';
import { customerWrites } from '../support/webhooks.js';
import { createHelpdeskIntegration, eventually, listedConversationId, startTestWorker, untilIdle } from '../support/worker.js';

const svc = await startTestService(t, 'web_conversation_view');
const { api } = svc;
const helpdesk = await startChat2DeskStub(t);
await startTestWorker(t, svc);
const model = await startRepeatingModel(t);
const browser = await launchBrowser(t);

const conversationOf = (token: string, clientId: string) => listedConversationId(api, token, clientId);

/** A company whose owner is signed in (named, as a team sees them), with a helpdesk answered by the repeating model. */
async function company(t: Test, name: string, owner: string) {
  const signed = await signedInPage(t, browser, svc, name);
  const me = (await api('GET', '/api/auth/me', { token: signed.token })).body.user;
  const named = await api('PATCH', `/api/users/${me.id}`, { token: signed.token, body: { displayName: owner } });
  if (named.status !== 200) throw new Error(`PATCH user: ${named.status} ${JSON.stringify(named.body)}`);
  const integration = await createHelpdeskIntegration(svc, { token: signed.token, companyId: signed.companyId }, helpdesk, 'Desk', await model.createAgent(api, signed.token));
  return { ...signed, me, integration };
}

/** How far the messages pane is from showing its newest message (0: at the bottom). */
const pane = (page: Page) => page.getByRole('log', { name: 'Messages' });
const gapBelow = (page: Page) => pane(page).evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight);
async function atNewest(page: Page, what: string): Promise<void> {
  const deadline = Date.now() + 3000;
  let gap = await gapBelow(page);
  while (Math.abs(gap) > 2 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    gap = await gapBelow(page);
  }
  if (Math.abs(gap) > 2) throw new Error(`${what}: the pane is ${gap}px above its newest message`);
}

t.test('opens at the newest message, stays there after a reply and as messages arrive; scrolled up, "New messages ↓"', async (t) => {
  const { page, problems, token, integration } = await company(t, 'Scroll Co', 'Sam Support');
  for (let i = 1; i <= 10; i++) {
    await customerWrites(api, integration, 'lena', `Question number ${i}: the parcel I ordered last week has not arrived and the tracking page shows nothing at all.`);
    await untilIdle(svc);
  }
  const id = await conversationOf(token, 'lena');

  await page.goto(`${svc.url}/#/conversations/${id}`);
  await page.getByText(/^echo: Question number 10:/).waitFor();
  const size = await pane(page).evaluate((el) => ({ scrollHeight: el.scrollHeight, clientHeight: el.clientHeight }));
  t.ok(size.scrollHeight > size.clientHeight * 2, `a long conversation (${size.scrollHeight}px in ${size.clientHeight}px)`);
  await atNewest(page, 'opened');
  t.pass('it opens at the newest message');
  t.equal(await page.getByText('Replying takes over from the bot: it stays silent until you resume it.').count(), 1, 'replying to an active conversation says it pauses the bot');

  await page.getByLabel('Reply', { exact: true }).fill('Let me look into it right away.');
  await page.getByRole('button', { name: 'Send reply' }).click();
  await page.getByText('Let me look into it right away.', { exact: true }).waitFor();
  await atNewest(page, 'after Send reply');
  t.pass('it stays at the newest message after Send reply');
  await helpdesk.waitFor(() => helpdesk.sent().some((b) => b.text === 'Let me look into it right away.'));
  await page.getByRole('cell', { name: 'Paused by you' }).first().waitFor();
  t.match(await page.locator('.msg.from-operator').last().locator('.msg-role').textContent(), 'Sam Support', 'a reply shows who wrote it');

  await customerWrites(api, integration, 'lena', 'Thank you, I will wait here.');
  await page.getByText('Thank you, I will wait here.', { exact: true }).waitFor();
  await atNewest(page, 'after a customer message');
  t.pass('it follows a message that arrives');
  t.equal(await page.getByRole('button', { name: 'New messages ↓' }).isVisible(), false);

  // Reading older messages: a new one does not pull the pane down; a button offers it.
  await pane(page).evaluate((el) => (el.scrollTop = 0));
  await new Promise((r) => setTimeout(r, 150));
  await customerWrites(api, integration, 'lena', 'Still there?');
  await page.getByRole('button', { name: 'New messages ↓' }).waitFor();
  t.ok((await pane(page).evaluate((el) => el.scrollTop)) < 5, 'the reader stays where they were');
  await shot(page, 'conversation-scrolled-up');
  await page.getByRole('button', { name: 'New messages ↓' }).click();
  await atNewest(page, 'after New messages');
  t.equal(await page.getByRole('button', { name: 'New messages ↓' }).isVisible(), false, 'the button goes once read');
  t.equal(await page.getByText('Still there?', { exact: true }).isVisible(), true);

  // A scroll is reported with the next frame, and a busy page draws late: a message drawn in
  // between must not pull the reader back down. The page here never hears of the scroll.
  await pane(page).evaluate((el) => {
    el.addEventListener('scroll', (e) => e.stopImmediatePropagation(), { capture: true });
    el.scrollTop = 0;
  });
  await customerWrites(api, integration, 'lena', 'Are you there?');
  await page.getByText('Are you there?', { exact: true }).waitFor();
  t.ok((await pane(page).evaluate((el) => el.scrollTop)) < 5, 'a reader who scrolled up just before a message stays where they were');
  t.equal(await page.getByRole('button', { name: 'New messages ↓' }).isVisible(), true, 'and is offered the new message');
  await shot(page, 'conversation-view');
  t.same(problems, []);
});

t.test('a note looks different and is never sent; "/" opens the canned replies, keys or a click insert one', async (t) => {
  const { page, problems, token, integration } = await company(t, 'Notes Co', 'Nora Lead');
  for (const body of [
    { shortcut: 'hours', text: 'We are open from 9 to 18, Monday to Friday.' },
    { shortcut: 'refund', text: 'Refunds reach your account within 5 working days.' },
  ])
    t.equal((await api('POST', '/api/canned-replies', { token, body })).status, 201);
  await customerWrites(api, integration, 'mia', 'Do you sell gift cards?');
  await untilIdle(svc);
  const id = await conversationOf(token, 'mia');
  await page.goto(`${svc.url}/#/conversations/${id}`);
  await page.getByText('echo: Do you sell gift cards?', { exact: true }).waitFor();

  // A note.
  await page.getByRole('button', { name: 'Note', exact: true }).click();
  t.equal(await page.getByText('Only your team sees notes: they are never sent to the customer.').count(), 1);
  await page.getByLabel('Note', { exact: true }).fill('Mia is a returning customer: offer the loyalty discount.');
  await page.getByRole('button', { name: 'Add note' }).click();
  const note = page.locator('.msg.note');
  await note.waitFor();
  t.match(await note.textContent(), /Note · Nora Lead.*Mia is a returning customer: offer the loyalty discount\..*Only your team sees this/);
  t.equal(await note.locator('svg.lock-icon').count(), 1, 'a padlock');
  await untilIdle(svc);
  t.notOk(helpdesk.sent().some((b) => String(b.text).includes('loyalty discount')), 'the note never went to the customer');
  t.equal((await api('GET', `/api/conversations/${id}`, { token })).body.conversation.status, 'active', 'a note does not take over from the bot');

  // Canned replies: "/" lists them; arrows and Enter pick one.
  await page.getByRole('button', { name: 'Reply', exact: true }).click();
  const box = page.getByLabel('Reply', { exact: true });
  const list = page.getByRole('listbox', { name: 'Canned replies' });
  await box.pressSequentially('/');
  await list.waitFor();
  await until(async () => (await list.getByRole('option').allTextContents()).join('|'), (s) => /^\/hours.*\|\/refund.*$/.test(s), 'both canned replies');
  await box.press('ArrowDown');
  t.equal(await list.getByRole('option', { selected: true }).textContent(), '/refundRefunds reach your account within 5 working days.');
  await box.press('Enter');
  t.equal(await box.inputValue(), 'Refunds reach your account within 5 working days.', 'Enter inserts the chosen one');
  t.equal(await list.isVisible(), false);
  // Filtered as one types; a click inserts too.
  await box.fill('');
  await box.pressSequentially('/hou');
  await until(async () => (await list.getByRole('option').allTextContents()).join('|'), (s) => s === '/hoursWe are open from 9 to 18, Monday to Friday.', 'filtered to hours');
  await shot(page, 'conversation-canned');
  await list.getByRole('option', { name: /hours/ }).click();
  t.equal(await box.inputValue(), 'We are open from 9 to 18, Monday to Friday.', 'a click inserts it');
  await page.getByRole('button', { name: 'Send reply' }).click();
  await helpdesk.waitFor(() => helpdesk.sent().some((b) => b.text === 'We are open from 9 to 18, Monday to Friday.'));
  const reply = page.locator('.msg.from-operator:not(.note)');
  await reply.waitFor();
  const background = (l: ReturnType<Page['locator']>) => l.evaluate((el) => getComputedStyle(el).backgroundColor);
  t.not(await background(note), await background(reply), 'a note and a reply do not look alike');
  t.equal(await reply.locator('.note-hint').count(), 0);
  await shot(page, 'conversation-note');
  t.same(problems, []);
});

t.test('assign to a teammate or to me; labels; what happened in words, never identifiers', async (t) => {
  const { page, problems, token, me, integration } = await company(t, 'Words Co', 'Wanda Owner');
  const dana = await join(api, token, 'operator', 'Dana Operator');
  await customerWrites(api, integration, 'nico', 'I want to talk to a human');
  await untilIdle(svc);
  const id = await conversationOf(token, 'nico');
  await page.goto(`${svc.url}/#/conversations/${id}`);
  await page.getByRole('heading', { level: 1, name: 'Conversation with nico' }).waitFor();
  await page.getByRole('cell', { name: 'Agent handed over: Customer asked for a person' }).waitFor();
  // Handed over, no person acted yet (the agent still answers what it can): not yet "a person has it".
  t.match(await page.locator('.status-line').textContent(), 'Handed over — waiting for a person · Customer asked for a person');
  t.equal(await page.getByRole('cell', { name: /^Handed to a person/ }).count(), 1, 'the handoff in words');
  t.equal(await page.getByRole('cell', { name: 'Customer wrote' }).count(), 1);
  const text = (await page.locator('main').textContent()) ?? '';
  for (const id of ['xstate.', 'session_transfer_external', 'asked_for_human', 'agent_reply', 'customer.message', 'operator.', 'paused.operator', 'handedOver'])
    t.notOk(text.includes(id), `no “${id}” on the page`);

  // Assign.
  await page.getByLabel('Assigned to').selectOption({ label: 'Dana Operator' });
  await page.getByText('Assigned to Dana Operator.').waitFor();
  t.equal((await api('GET', `/api/conversations/${id}`, { token })).body.conversation.assigneeId, dana.id);
  await page.getByRole('button', { name: 'Assign to me' }).click();
  await page.getByText('Assigned to you.').waitFor();
  t.equal((await api('GET', `/api/conversations/${id}`, { token })).body.conversation.assigneeId, me.id);
  t.equal(await page.getByRole('button', { name: 'Assign to me' }).isVisible(), false, 'nothing to take any more');
  await page.getByLabel('Assigned to').selectOption({ label: 'Unassigned' });
  await page.getByText('Unassigned.', { exact: true }).waitFor();
  t.equal((await api('GET', `/api/conversations/${id}`, { token })).body.conversation.assigneeId, null);

  // Labels.
  await page.getByLabel('Add a label').fill('billing');
  await page.getByRole('button', { name: 'Add', exact: true }).click();
  await page.getByRole('list', { name: 'Labels' }).getByText('billing').waitFor();
  t.same((await api('GET', `/api/conversations/${id}`, { token })).body.conversation.labels, ['billing']);
  // A message arrives while the keyboard is on a label's Remove button: the page updates, the focus stays.
  await page.getByRole('button', { name: 'Remove label billing' }).focus();
  await customerWrites(api, integration, 'nico', 'Are you still there?');
  await page.getByText('Are you still there?', { exact: true }).waitFor();
  await untilIdle(svc);
  await new Promise((r) => setTimeout(r, 300)); // the reads that follow the stream's events
  t.equal(await page.evaluate(() => document.activeElement?.getAttribute('aria-label')), 'Remove label billing', 'the focus stays on it');
  await page.getByLabel('Add a label').fill('a,b');
  await page.getByRole('button', { name: 'Add', exact: true }).click();
  await page.getByText('A label cannot contain a comma.').waitFor();
  await shot(page, 'conversation-words');
  await page.getByRole('button', { name: 'Remove label billing' }).click();
  await page.getByText('No labels.').waitFor();
  t.same((await api('GET', `/api/conversations/${id}`, { token })).body.conversation.labels, []);
  t.same(problems, []);
});

async function until<T>(read: () => Promise<T>, check: (v: T) => boolean, what: string, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (check(v)) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not reached; last ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
