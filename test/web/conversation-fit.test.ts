// The conversation view fits the screen (the issue measured the reply box below the fold at
// 1280×800 and the top bar on two rows at 1366): at 1280×720 and 1366×768 a long conversation
// opens with its header, its newest message and the reply box in view and no page scroll; a
// reply sent stays in view at both sizes; the Inbox list is beside it, and another row opens in
// place with the list's search kept; the top bar is one row. Real gateway, worker, PostgreSQL and NATS;
// the helpdesk and the model are the local stand-ins.
import t, { type Test } from 'tap';
import type { Locator, Page } from 'playwright-core';
import { launchBrowser, shot, signedInPage } from '../support/browser.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { startRepeatingModel } from '../support/repeating-model.js';
import { startTestService } from '../support/service.js';
import { customerWrites } from '../support/webhooks.js';
import { createHelpdeskIntegration, eventually, listedConversationId, startTestWorker, untilIdle } from '../support/worker.js';

const svc = await startTestService(t, 'web_conversation_fit');
const { api } = svc;
const helpdesk = await startChat2DeskStub(t);
await startTestWorker(t, svc);
const model = await startRepeatingModel(t);
const browser = await launchBrowser(t);

const conversationOf = (token: string, clientId: string) => listedConversationId(api, token, clientId);

/**
 * A company (a long name: the account line must not push the top bar onto two rows) whose
 * customer lena wrote 20 times and was answered each time (40 messages), and two customers
 * with a message each: mark (about a parcel, as lena) and nina (about something else).
 */
async function company(t: Test, name: string) {
  const signed = await signedInPage(t, browser, svc, name);
  const integration = await createHelpdeskIntegration(svc, { token: signed.token, companyId: signed.companyId }, helpdesk, 'Desk', await model.createAgent(api, signed.token));
  await customerWrites(api, integration, 'nina', 'Can I change the colour of my sofa?');
  await customerWrites(api, integration, 'mark', 'My parcel came damaged.');
  await untilIdle(svc);
  for (let i = 1; i <= 20; i++) {
    await customerWrites(api, integration, 'lena', `Question number ${i}: the parcel I ordered last week has not arrived and the tracking page shows nothing at all.`);
    await untilIdle(svc);
  }
  const lena = await conversationOf(signed.token, 'lena');
  t.equal((await api('GET', `/api/conversations/${lena}/messages?limit=200`, { token: signed.token })).body.total, 40, 'a 40-message conversation');
  return { ...signed, integration, lena, mark: await conversationOf(signed.token, 'mark') };
}

type Box = { x: number; y: number; width: number; height: number };
const boxOf = async (l: Locator): Promise<Box> => {
  const b = await l.boundingBox();
  if (!b) throw new Error(`${l}: not shown`);
  return b;
};
/** Whether the whole of an element is on the screen (no scrolling needed to see it). */
async function inView(page: Page, l: Locator): Promise<boolean> {
  const b = await boxOf(l);
  const v = page.viewportSize()!;
  return b.x >= 0 && b.y >= 0 && b.x + b.width <= v.width + 0.5 && b.y + b.height <= v.height + 0.5;
}
/** Whether the page itself scrolls (it must not: only the panes do). */
const pageScrolls = (page: Page) =>
  page.evaluate(() => ({ height: document.scrollingElement!.scrollHeight, width: document.scrollingElement!.scrollWidth, viewport: [innerWidth, innerHeight] }));

/** The newest message is drawn whole inside the messages pane, and the pane inside the screen. */
async function newestInView(page: Page, text: string, what: string): Promise<void> {
  const newest = page.locator('.chat .msg').last();
  await eventually(async () => ((await newest.textContent())?.includes(text) ? true : undefined), 5000, `${what}: the newest message`);
  // The pane follows the newest message: it may still be scrolling there.
  await eventually(async () => {
    const [m, chat] = [await boxOf(newest), await boxOf(page.getByRole('log', { name: 'Messages' }))];
    return m.y >= chat.y - 0.5 && m.y + m.height <= chat.y + chat.height + 0.5 && (await inView(page, newest)) ? true : undefined;
  }, 3000, `${what}: the newest message in view`);
}

/**
 * The top bar on one row with the navigation's ten pages ("Get started" comes first: added
 * here when the shell does not have it yet, so the row is measured as full as it will be).
 */
async function oneRowTopBar(t: Test, page: Page): Promise<void> {
  await page.evaluate(() => {
    const ul = document.querySelector('.topbar nav ul')!;
    if (Array.from(ul.querySelectorAll('a')).some((a) => a.textContent === 'Get started')) return;
    const li = ul.firstElementChild!.cloneNode(true) as HTMLElement;
    li.querySelector('a')!.textContent = 'Get started';
    li.querySelector('a')!.removeAttribute('aria-current');
    ul.prepend(li);
  });
  const nav = page.getByRole('navigation', { name: 'Main' });
  const link = await boxOf(nav.getByRole('link', { name: 'Inbox', exact: true }));
  const navBox = await boxOf(nav);
  const width = page.viewportSize()!.width;
  t.ok(navBox.height < 1.5 * link.height, `at ${width} px the navigation is one row (${navBox.height}px for ${link.height}px links)`);
  const bar = await boxOf(page.locator('header.topbar'));
  t.ok(bar.height < 2 * link.height, `at ${width} px the top bar is one row (${bar.height}px)`);
  const logout = await boxOf(page.getByRole('button', { name: 'Log out' }));
  t.ok(logout.y < link.y + link.height && logout.x + logout.width <= width, 'Log out on the same row, on the screen');
}

async function fits(t: Test, page: Page, customer: string, newestText: string, what: string): Promise<void> {
  await newestInView(page, newestText, what);
  const size = await pageScrolls(page);
  t.ok(size.height <= size.viewport[1] && size.width <= size.viewport[0], `${what}: the page does not scroll`, size);
  t.ok(await inView(page, page.getByRole('heading', { level: 1, name: `Conversation with ${customer}` })), `${what}: the header in view`);
  t.ok(await inView(page, page.getByRole('group', { name: 'Operator actions' })), `${what}: Pause, Resume, Close in view`);
  t.ok(await inView(page, page.getByLabel('Reply', { exact: true })), `${what}: the reply box in view`);
  t.ok(await inView(page, page.getByRole('button', { name: 'Send reply' })), `${what}: Send reply in view`);
}

t.test('1280×720: a 40-message conversation opens with the header, the newest message and the reply box in view; a reply stays in view', async (t) => {
  const { page, problems, lena } = await company(t, 'Northwind Traders International Customer Care Ltd');
  await page.setViewportSize({ width: 1280, height: 720 });
  await page.goto(`${svc.url}/#/conversations/${lena}`);
  await page.getByText(/^echo: Question number 20:/).waitFor();
  await fits(t, page, 'lena', 'echo: Question number 20:', 'opened');
  t.ok(await inView(page, page.getByRole('complementary', { name: 'Inbox list' })), 'the Inbox list is beside it at 1280 px');
  await oneRowTopBar(t, page);
  await shot(page, 'conversation-fit-1280');

  await page.getByLabel('Reply', { exact: true }).fill('Let me look into it right away.');
  await page.getByRole('button', { name: 'Send reply' }).click();
  await page.getByText('Let me look into it right away.', { exact: true }).waitFor();
  await fits(t, page, 'lena', 'Let me look into it right away.', 'after Send reply');
  await helpdesk.waitFor(() => helpdesk.sent().some((b) => b.text === 'Let me look into it right away.'));

  // Narrow: the page scrolls as a whole, the list steps aside, nothing is cut off.
  await page.setViewportSize({ width: 1000, height: 720 });
  t.equal(await page.getByRole('complementary', { name: 'Inbox list' }).isVisible(), false, 'no list under 1200 px');
  t.equal(await page.evaluate(() => document.scrollingElement!.scrollWidth <= innerWidth), true, 'no sideways scroll under 1200 px');
  t.same(problems, []);
});

t.test('1366×768: the Inbox list beside the conversation; another row opens in place, the search kept; live on both sides', async (t) => {
  const { page, problems, lena, mark, integration } = await company(t, 'Fit Co');
  await page.setViewportSize({ width: 1366, height: 768 });
  await oneRowTopBar(t, page);
  // The list searched first, in the Inbox, then a conversation opened from it.
  await page.goto(`${svc.url}/#/conversations?view=all`);
  const rows = async () => (await page.locator('.inbox-row .row-link').allTextContents()).sort().join();
  await eventually(async () => ((await rows()) === 'lena,mark,nina' ? true : undefined), 10_000, 'the three');
  await page.getByLabel('Search').fill('parcel');
  await eventually(async () => ((await rows()) === 'lena,mark' ? true : undefined), 10_000, 'the search');
  await page.getByRole('link', { name: 'lena', exact: true }).click();
  await page.getByRole('heading', { level: 1, name: 'Conversation with lena' }).waitFor();
  await fits(t, page, 'lena', 'echo: Question number 20:', 'at 1366');

  const list = page.getByRole('complementary', { name: 'Inbox list' });
  const conversation = page.locator('.split-conversation');
  t.ok(await inView(page, list), 'the list in view');
  t.ok(await inView(page, conversation), 'the conversation in view');
  const [l, c] = [await boxOf(list), await boxOf(conversation)];
  t.ok(l.x + l.width <= c.x && Math.abs(l.y - c.y) < 40, 'side by side: the list left, the conversation right');
  t.equal(await list.getByRole('link', { name: 'lena', exact: true }).getAttribute('aria-current'), 'page', 'the open one is marked in the list');
  await shot(page, 'conversation-fit-1366');

  // The list beside is the Inbox as it was left: searched. Another row: the conversation changes, the list stays.
  const search = list.getByLabel('Search');
  t.equal(await search.inputValue(), 'parcel', 'the search of the Inbox carried beside');
  await eventually(async () => ((await list.locator('.inbox-row .row-link').allTextContents()).sort().join() === 'lena,mark' ? true : undefined), 10_000, 'the search beside');
  await list.evaluate((el) => ((el as HTMLElement & { marked?: boolean }).marked = true));
  await list.getByRole('link', { name: 'mark', exact: true }).click();
  await page.getByRole('heading', { level: 1, name: 'Conversation with mark' }).waitFor();
  t.match(page.url(), new RegExp(`#/conversations/${mark}$`), 'the address names the open conversation');
  t.equal(await list.evaluate((el) => (el as HTMLElement & { marked?: boolean }).marked === true), true, 'the same list, not drawn anew');
  t.equal(await search.inputValue(), 'parcel', 'the search kept');
  t.same((await list.locator('.inbox-row .row-link').allTextContents()).sort(), ['lena', 'mark'], 'the filtered rows kept');
  t.equal(await list.getByRole('link', { name: 'mark', exact: true }).getAttribute('aria-current'), 'page', 'mark marked open');
  t.equal(await list.getByRole('link', { name: 'lena', exact: true }).getAttribute('aria-current'), null, 'lena no longer');
  await fits(t, page, 'mark', 'echo: My parcel came damaged.', 'mark opened');

  // Live on both sides: mark writes; his conversation and his row show it.
  await customerWrites(api, integration, 'mark', 'The box was crushed and the parcel wet.');
  await fits(t, page, 'mark', 'The box was crushed and the parcel wet.', 'a new message');
  await eventually(async () => ((await list.locator('.inbox-row .row-text').first().textContent())?.includes('parcel wet') ? true : undefined), 10_000, "mark's row updated");
  t.equal(await list.locator('.inbox-row .row-link').first().textContent(), 'mark', 'his row on top');

  // A reply at 1366 too: sent from beside the list, shown, the view still fitting.
  const reply = 'Sorry to hear it: a new one goes out today.';
  await page.getByLabel('Reply', { exact: true }).fill(reply);
  await page.getByRole('button', { name: 'Send reply' }).click();
  await fits(t, page, 'mark', reply, 'after Send reply at 1366');
  t.ok(await inView(page, list), 'the list still beside it after the reply');
  await helpdesk.waitFor(() => helpdesk.sent().some((b) => b.text === reply));

  // Back: the address before, lena's conversation.
  await page.goBack();
  await page.getByRole('heading', { level: 1, name: 'Conversation with lena' }).waitFor();
  t.match(page.url(), new RegExp(`#/conversations/${lena}$`));
  t.same(problems, []);
});
