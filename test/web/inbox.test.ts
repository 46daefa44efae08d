// The Inbox in Chromium against the real service: customers write through signed helpdesk
// webhooks (and the webchat socket), a worker answers with a model that repeats the question,
// teammates join by invitation. The views, the search and the label filter; what a row shows;
// a customer waiting for a person standing out; unread counts; and the list living on the
// conversation events stream: new messages move rows to the top without a reload or a poll.
import t from 'tap';
import type { Page } from 'playwright-core';
import { goTo, launchBrowser, shot, signedInPage } from '../support/browser.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { startRepeatingModel } from '../support/repeating-model.js';
import { startTestService } from '../support/service.js';
import { join } from '../support/team.js';
import { createWebchatIntegration, openChat } from '../support/webchat.js';
import { customerWrites } from '../support/webhooks.js';
import { createHelpdeskIntegration, eventually, startTestWorker, untilIdle } from '../support/worker.js';

const svc = await startTestService(t, 'web_inbox');
const { api } = svc;
const helpdesk = await startChat2DeskStub(t);
await startTestWorker(t, svc);
const model = await startRepeatingModel(t);
const browser = await launchBrowser(t);

/** Conversation ids by customer id, once every named customer has one. */
async function conversationsOf(token: string, clientIds: string[]): Promise<Record<string, number>> {
  return eventually(async () => {
    const list = (await api('GET', '/api/conversations?limit=200', { token })).body.conversations as { id: number; clientId: string }[];
    const ids = Object.fromEntries(list.map((c) => [c.clientId, c.id]));
    return clientIds.every((c) => ids[c]) ? ids : null;
  }, 20_000, `conversations of ${clientIds.join(', ')}`);
}

const rowNames = (page: Page) => page.locator('.inbox-row .row-link').allTextContents();
const row = (page: Page, name: string) => page.locator('.inbox-row').filter({ has: page.getByRole('link', { name, exact: true }) });

/** Polls the page until `check` holds (the list follows events, a search waits for typing to stop). */
async function until<T>(what: string, read: () => Promise<T>, check: (v: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T;
  for (;;) {
    last = await read();
    if (check(last)) return last;
    if (Date.now() > deadline) throw new Error(`${what}: not reached; last ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
const sameSet = (want: string[]) => (got: string[]) => got.length === want.length && want.every((w) => got.includes(w));

t.test('views, search and labels filter; rows say who, what, when, where, whose; a waiting customer stands out; unread', async (t) => {
  const { page, problems, token, companyId } = await signedInPage(t, browser, svc, 'Inbox Co');
  const me = (await api('GET', '/api/auth/me', { token })).body.user;
  const dana = await join(api, token, 'operator', 'Dana Operator');
  const integration = await createHelpdeskIntegration(svc, { token, companyId }, helpdesk, 'Desk', await model.createAgent(api, token));
  await customerWrites(api, integration, 'anna', 'Where is my parcel?');
  await customerWrites(api, integration, 'boris', 'I want to talk to a human');
  await customerWrites(api, integration, 'carla', 'A question about my refund');
  await customerWrites(api, integration, 'dmitri', 'Do you ship to Norway?');
  await untilIdle(svc);
  // Boris was handed to a person (he asked for one) and writes again: he waits for a person.
  await customerWrites(api, integration, 'boris', 'Hello? Is anybody there?');
  await untilIdle(svc);
  const ids = await conversationsOf(token, ['anna', 'boris', 'carla', 'dmitri']);
  t.equal((await api('PATCH', `/api/conversations/${ids.carla}`, { token, body: { assigneeId: me.id } })).status, 200);
  t.equal((await api('PATCH', `/api/conversations/${ids.dmitri}`, { token, body: { assigneeId: dana.id } })).status, 200);
  t.equal((await api('PUT', `/api/conversations/${ids.anna}/labels`, { token, body: { labels: ['vip', 'shipping'] } })).status, 200);
  const lead = (await api('GET', '/api/leads', { token })).body.leads.find((l: { clientId: string }) => l.clientId === 'anna');
  t.equal((await api('PATCH', `/api/leads/${lead.id}`, { token, body: { name: 'Anna Schmidt' } })).status, 200);

  await goTo(page, 'Inbox');
  const tab = (name: string | RegExp) => page.getByRole('tab', { name });
  t.equal(await tab('All').getAttribute('aria-selected'), 'true', 'All at first');
  await until('all four', () => rowNames(page), sameSet(['Anna Schmidt', 'boris', 'carla', 'dmitri']));

  // What a row shows.
  const anna = row(page, 'Anna Schmidt');
  t.match(await anna.textContent(), /Anna Schmidt.*Bot on.*Agent: echo: Where is my parcel\?.*Helpdesk.*Unassigned.*vip.*shipping/, 'the name from the lead, the last message, channel, assignee, labels');
  t.match(await anna.locator('time').textContent(), /^(now|\d+ min)$/, 'a short time');
  t.match(await row(page, 'carla').textContent(), /Assigned to you/);
  t.match(await row(page, 'dmitri').textContent(), /Assigned to Dana Operator/, "a teammate's display name");
  t.equal(await anna.locator('.unread').textContent(), 'Unread: 1', 'one message from Anna not read');
  t.equal(await row(page, 'boris').locator('.unread').textContent(), 'Unread: 2');
  const boris = row(page, 'boris');
  t.match(await boris.getAttribute('class'), /\bneeds-human\b/, 'Boris stands out');
  t.match(await boris.textContent(), /Needs a person.*Paused.*Customer: Hello\? Is anybody there\?/);
  t.equal(await page.locator('.inbox-row.needs-human').count(), 1, 'only Boris waits for a person');
  const borderOf = (name: string) => row(page, name).evaluate((el) => getComputedStyle(el).borderLeftColor);
  t.not(await borderOf('boris'), await borderOf('carla'), 'a coloured edge marks him');
  t.match(await tab(/Needs a person/).textContent(), /Needs a person\s*1$/, 'the tab counts who waits');
  await shot(page, 'inbox-all');

  // The views.
  await tab('Mine').click();
  await until('mine', () => rowNames(page), sameSet(['carla']));
  t.match(page.url(), /#\/conversations\?view=mine$/, 'the address names the view');
  await tab('Unassigned').click();
  await until('unassigned', () => rowNames(page), sameSet(['Anna Schmidt', 'boris']));
  await tab(/Needs a person/).click();
  await until('needs a person', () => rowNames(page), sameSet(['boris']));
  await shot(page, 'inbox-needs-a-person');
  await tab('All').click();
  await until('all again', () => rowNames(page), sameSet(['Anna Schmidt', 'boris', 'carla', 'dmitri']));

  // Search: the words of the messages, the agent's replies and the customers' alike.
  const search = page.getByLabel('Search');
  await search.fill('parcel');
  await until('search parcel', () => rowNames(page), sameSet(['Anna Schmidt']));
  await search.fill('refund');
  await until('search refund', () => rowNames(page), sameSet(['carla']));
  await search.fill('anybody');
  await until('search anybody', () => rowNames(page), sameSet(['boris']));
  await search.fill('zeppelin');
  await page.getByText('No conversations mention “zeppelin”.').waitFor();
  t.same(await rowNames(page), []);
  await search.fill('');
  await until('no search', () => rowNames(page), (n) => n.length === 4);

  // Labels.
  await page.getByLabel('Label').fill('vip');
  await until('label vip', () => rowNames(page), sameSet(['Anna Schmidt']));
  await page.getByLabel('Label').fill('');
  await until('no label', () => rowNames(page), (n) => n.length === 4);

  // Opening a conversation reads it: back in the inbox, Anna's row has nothing unread.
  await anna.getByRole('link', { name: 'Anna Schmidt' }).click();
  await page.getByRole('heading', { level: 1, name: 'Conversation with Anna Schmidt' }).waitFor();
  await page.getByText('echo: Where is my parcel?', { exact: true }).waitFor();
  await eventually(async () => (await api('GET', `/api/conversations/${ids.anna}`, { token })).body.conversation.unread === 0, 5000, 'read');
  await page.getByRole('link', { name: '← Inbox' }).click();
  await page.getByRole('heading', { level: 1, name: 'Inbox' }).waitFor();
  await until('all', () => rowNames(page), (n) => n.length === 4);
  t.equal(await row(page, 'Anna Schmidt').locator('.unread').count(), 0, 'read');
  t.equal(await row(page, 'boris').locator('.unread').textContent(), 'Unread: 2', 'the others still unread');
  t.same(problems, []);
});

t.test('the list is live: a new message moves its row to the top, a new customer appears, without a reload or polling', async (t) => {
  const { page, problems, token, companyId } = await signedInPage(t, browser, svc, 'Live Inbox Co');
  const erik = await join(api, token, 'admin', 'Erik Admin');
  const agentId = await model.createAgent(api, token);
  const integration = await createHelpdeskIntegration(svc, { token, companyId }, helpdesk, 'Desk', agentId);
  await customerWrites(api, integration, 'olga', 'My first question');
  await untilIdle(svc);
  await customerWrites(api, integration, 'pavel', 'Another question');
  await untilIdle(svc);
  const ids = await conversationsOf(token, ['olga', 'pavel']);

  await goTo(page, 'Inbox');
  await page.getByText('Live', { exact: true }).waitFor();
  await until('newest first', () => rowNames(page), (n) => n.join() === 'pavel,olga');
  const marker = await page.evaluate(() => ((window as unknown as { __noReload: number }).__noReload = Math.random()));
  await new Promise((r) => setTimeout(r, 500)); // the catch-up read that follows the stream's opening
  const listReads: string[] = [];
  page.on('request', (r) => {
    if (/\/api\/conversations\?/.test(r.url())) listReads.push(r.url());
  });

  // Nothing happens: nothing is asked (the old page polled every 3 s).
  await new Promise((r) => setTimeout(r, 3500));
  t.same(listReads, [], 'no polling');

  // Olga writes: her row goes to the top with her words and the answer.
  await customerWrites(api, integration, 'olga', 'Any news about my order?');
  await until('olga on top', () => rowNames(page), (n) => n.join() === 'olga,pavel');
  await until('the last message', () => row(page, 'olga').locator('.row-text').textContent(), (s) => /order\?$/.test(s ?? ''));
  await until('two unread', () => row(page, 'olga').locator('.unread').textContent(), (s) => s === 'Unread: 2');

  // A teammate takes Pavel: the row says so at once.
  t.equal((await api('PATCH', `/api/conversations/${ids.pavel}`, { token, body: { assigneeId: erik.id } })).status, 200);
  await until('assigned', () => row(page, 'pavel').textContent(), (s) => /Assigned to Erik Admin/.test(s ?? ''));

  // A new customer on the helpdesk, and a webchat visitor (a random id: shown short). The
  // keyboard is on Pavel's row meanwhile: the list drawn again keeps it there.
  await row(page, 'pavel').getByRole('link').focus();
  await customerWrites(api, integration, 'quentin', 'Hello, new here');
  await until('quentin on top', () => rowNames(page), (n) => n[0] === 'quentin' && n.length === 3);
  t.equal(await page.evaluate(() => document.activeElement?.textContent), 'pavel', 'the focus stays on its row');
  const chat = await createWebchatIntegration(api, token, { agentId });
  const visitor = await openChat(t, svc.url, chat.id);
  const welcome = await visitor.hello();
  visitor.send({ type: 'message', clientMessageId: 'w-1', text: 'Hi from the website' });
  await visitor.next('ack');
  const short = `Visitor ${String(welcome.visitorId).slice(0, 4)}…`;
  await until('the visitor on top', () => rowNames(page), (n) => n[0] === short && n.length === 4);
  t.notMatch(await page.locator('.inbox').textContent(), new RegExp(welcome.visitorId), 'no raw visitor id in the list');
  t.match(await row(page, short).textContent(), /Webchat/);
  await shot(page, 'inbox-live');

  // In "Mine" (nothing of mine), a conversation given to me arrives live; taken away, it leaves.
  const me = (await api('GET', '/api/auth/me', { token })).body.user;
  await page.getByRole('tab', { name: 'Mine' }).click();
  await page.getByText('Nothing is assigned to you.', { exact: false }).waitFor();
  t.equal((await api('PATCH', `/api/conversations/${ids.olga}`, { token: erik.token, body: { assigneeId: me.id } })).status, 200);
  await until('olga is mine', () => rowNames(page), (n) => n.join() === 'olga');
  t.equal((await api('PATCH', `/api/conversations/${ids.olga}`, { token: erik.token, body: { assigneeId: null } })).status, 200);
  await until('olga is not mine', () => rowNames(page), (n) => n.length === 0);

  // Open conversations (the default status): one closed meanwhile leaves the list; "Any status" shows it closed.
  await page.getByRole('tab', { name: 'All' }).click();
  await until('all four', () => rowNames(page), (n) => n.length === 4);
  t.equal(await page.getByLabel('Status').inputValue(), 'open', 'open ones at first');
  t.equal((await api('POST', `/api/conversations/${ids.pavel}/close`, { token: erik.token })).status, 200);
  await until('pavel closed, gone', () => rowNames(page), (n) => n.length === 3 && !n.includes('pavel'));
  await page.getByLabel('Status').selectOption({ label: 'Any status' });
  await until('pavel, closed', () => row(page, 'pavel').textContent(), (s) => /Closed/.test(s ?? ''));

  t.equal(await page.evaluate(() => (window as unknown as { __noReload: number }).__noReload), marker, 'the page never reloaded');
  t.same(problems, []);
});
