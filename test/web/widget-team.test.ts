import { mkdirSync } from 'node:fs';
import type { Page, WebSocketRoute } from 'playwright-core';
import t, { type Test } from 'tap';
import { launchBrowser } from '../support/browser.js';
import { startRepeatingModel } from '../support/repeating-model.js';
import { signUp, startTestService } from '../support/service.js';
import { startSite } from '../support/site.js';
import { join } from '../support/team.js';
import { dropNatsPrefixAtEnd } from '../support/webhooks.js';
import { eventually, sql, startTestWorker, waitForPartitions } from '../support/worker.js';
import { createWebchatIntegration } from '../support/webchat.js';

/**
 * The widget as a visitor sees a team at work (issue #29): a greeting when the chat opens, the
 * time of every message, an operator by their name, and the waiting notice gone once a person
 * replied, also after a reload.
 */
const svc = await startTestService(t, 'widget_team', { env: { PARTITIONS: '2' } });
dropNatsPrefixAtEnd(t, svc);
const worker = await startTestWorker(t, svc, { workerId: 'widget-team', options: { agentRunner: { cacheTtlMs: 0 } } });
await waitForPartitions([worker], 2);
const owner = await signUp(svc.api, 'Team Shop');
const model = await startRepeatingModel(t);
const agentId = await model.createAgent(svc.api, owner.token);
const GREETING = 'Welcome to Team Shop! Ask us anything about your order.';
const patched = await svc.api('PATCH', `/api/agents/${agentId}`, { token: owner.token, body: { greeting: GREETING } });
if (patched.status !== 200) throw new Error(`PATCH agent: ${patched.status} ${JSON.stringify(patched.body)}`);
let integrationId = 0;
const siteUrl = await startSite(t, svc.url, () => integrationId);
integrationId = (await createWebchatIntegration(svc.api, owner.token, { allowedOrigins: [siteUrl], agentId })).id;
const maria = await join(svc.api, owner.token, 'operator', 'Maria Lopez');
const browser = await launchBrowser(t);

const SHOTS = '/work/main/.scratch/shots';
mkdirSync(SHOTS, { recursive: true });
const WAITING = 'A colleague will answer you here shortly.';
// Not the machine's zone: the times must be the visitor's clock.
const TIME_ZONE = 'Asia/Kolkata';
const hhmm = (at: Date | string | number) => new Intl.DateTimeFormat('en-GB', { timeZone: TIME_ZONE, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(new Date(at));

interface Bubble {
  who: string;
  time: string | null;
  text: string;
  greeting: boolean;
}

/** The log as the visitor reads it, bubble by bubble. */
const bubbles = (page: Page): Promise<Bubble[]> =>
  page.getByRole('log', { name: 'Conversation' }).locator('li').evaluateAll((lis) =>
    lis.map((li) => ({
      who: li.querySelector('.who')?.textContent ?? '',
      time: li.querySelector('time')?.textContent ?? null,
      text: li.lastChild?.textContent ?? '',
      greeting: li.classList.contains('greeting'),
    })),
  );

async function openPage(t: Test, routeSocket?: (ws: WebSocketRoute) => void) {
  const context = await browser.newContext({ timezoneId: TIME_ZONE, viewport: { width: 900, height: 700 } });
  t.teardown(() => context.close());
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  const frames: any[] = [];
  page.on('websocket', (ws) => ws.on('framereceived', (f) => frames.push(JSON.parse(String(f.payload)))));
  if (routeSocket) await page.routeWebSocket(/\/api\/webchat\/\d+\/ws$/, routeSocket);
  await page.goto(siteUrl);
  return { page, errors, frames };
}

const storedVisitor = async (page: Page) =>
  JSON.parse((await page.evaluate(() => Object.entries(localStorage).find(([k]) => k.startsWith('mas-webchat:'))?.[1] ?? 'null'))!) as { visitorToken: string; conversationId: number | null } | null;

t.test('first open: the greeting, before the server answered too, once', async (t) => {
  // A socket the server never answers: the panel is not empty all the same.
  const held = await openPage(t, () => {});
  await held.page.getByRole('button', { name: 'Open chat' }).click();
  await held.page.getByRole('dialog', { name: 'Chat with us' }).waitFor();
  t.same(await bubbles(held.page), [{ who: 'Assistant', time: null, text: 'Hi! How can we help you today?', greeting: true }], 'the default greeting while hello is unanswered');
  await held.page.screenshot({ path: `${SHOTS}/widget-greeting-connecting.png` });

  const routes: WebSocketRoute[] = [];
  const { page, errors, frames } = await openPage(t, (ws) => {
    routes.push(ws);
    ws.connectToServer();
  });
  await page.getByRole('button', { name: 'Open chat' }).click();
  const log = page.getByRole('log', { name: 'Conversation' });
  await log.getByText(GREETING).waitFor();
  t.same(await bubbles(page), [{ who: 'Assistant', time: null, text: GREETING, greeting: true }], "the agent's greeting, alone");
  await page.screenshot({ path: `${SHOTS}/widget-greeting.png` });

  const input = page.getByLabel('Message');
  await input.fill('Do you ship to Norway?');
  await input.press('Enter');
  await log.getByText('echo: Do you ship to Norway?').waitFor();

  // The socket drops; the widget reconnects and resumes.
  await routes[0]!.close();
  await eventually(async () => frames.filter((f) => f.type === 'welcome').length >= 3 || null, 10_000, 'welcomed again on a new socket');
  await page.waitForTimeout(300);
  const after = await bubbles(page);
  t.same(after.map((b) => [b.who, b.text]), [['Assistant', GREETING], ['You', 'Do you ship to Norway?'], ['Assistant', 'echo: Do you ship to Norway?']], 'a reconnect: one greeting, no message twice');

  await page.reload();
  await page.getByRole('button', { name: 'Open chat' }).click();
  await eventually(async () => (await bubbles(page)).length === 3 || null, 10_000, 'history restored');
  t.same((await bubbles(page)).map((b) => [b.who, b.text]), after.map((b) => [b.who, b.text]), 'a reload: the same, the greeting first and once');
  const conversationId = (await storedVisitor(page))!.conversationId;
  t.equal((await sql(svc.orm, 'select count(*)::int as n from conversation_messages where conversation_id = ?', [conversationId]))[0].n, 2, 'the greeting was never sent or stored');
  t.same(errors, [], 'no page errors');
});

t.test('times on messages; an operator by name; the waiting notice goes once a person replied, also after a reload', async (t) => {
  const { page, errors, frames } = await openPage(t);
  await page.getByRole('button', { name: 'Open chat' }).click();
  const log = page.getByRole('log', { name: 'Conversation' });
  const input = page.getByLabel('Message');
  const waiting = page.getByRole('status').getByText(WAITING);

  const sentAt = Date.now();
  await input.fill('Where is my parcel?');
  await input.press('Enter');
  // Found as the visitor's (the repeating model's echo may already be below it).
  const own = (await bubbles(page)).find((b) => b.who === 'You')!;
  t.equal(own.text, 'Where is my parcel?');
  t.ok([hhmm(sentAt), hhmm(Date.now())].includes(own.time!), `the visitor's own message shows when it was sent (${own.time})`);
  await log.getByText('echo: Where is my parcel?').waitFor();
  const conversationId = (await storedVisitor(page))!.conversationId;

  await input.fill('Can I talk to a human, please?');
  await input.press('Enter');
  await waiting.waitFor();
  t.ok(await waiting.isVisible(), 'handed off: the visitor is told a colleague will answer');
  await page.screenshot({ path: `${SHOTS}/widget-waiting.png` });

  const reply = await svc.api('POST', `/api/conversations/${conversationId}/messages`, { token: maria.token, body: { text: 'Hi, Maria here. Your parcel left our warehouse today.' } });
  t.equal(reply.status, 200);
  await log.getByText('Hi, Maria here. Your parcel left our warehouse today.').waitFor();
  t.match((await bubbles(page)).at(-1), { who: 'Maria Lopez', text: 'Hi, Maria here. Your parcel left our warehouse today.' }, "the operator's display name");
  await waiting.waitFor({ state: 'detached' });
  t.equal(await page.getByText(WAITING).count(), 0, 'the waiting notice is gone');
  await page.screenshot({ path: `${SHOTS}/widget-operator.png` });

  // Every message shows its time: the stored one, on the visitor's clock.
  const rows = await sql(svc.orm, `select text, created_at from conversation_messages where conversation_id = ? and kind <> 'note' order by seq`, [conversationId]);
  const messages = (await bubbles(page)).filter((b) => !b.greeting);
  t.equal(messages.length, rows.length);
  for (const [i, b] of messages.entries()) {
    t.match(b.time, /^\d\d:\d\d$/, `${b.who} at ${b.time}`);
    if (b.who !== 'You') t.equal(b.time, hhmm(rows[i].created_at), `"${b.text.slice(0, 20)}": the time it was written`);
  }

  // The visitor writes again: still no notice (a person has it).
  await input.fill('Thanks! When will it arrive?');
  await input.press('Enter');
  await eventually(async () => frames.some((f) => f.type === 'ack' && f.seq === 6) || null, 10_000, 'stored');
  await page.waitForTimeout(300);
  t.equal(await page.getByText(WAITING).count(), 0, 'no notice after the visitor wrote again');

  // A reload replays the session, then says it is paused: the notice stays away.
  frames.length = 0;
  await page.reload();
  await page.getByRole('button', { name: 'Open chat' }).click();
  await eventually(async () => frames.some((f) => f.type === 'status' && f.status === 'paused') || null, 10_000, 'the paused status after the replay');
  await page.waitForTimeout(200);
  const replayed = (await bubbles(page)).filter((b) => !b.greeting);
  t.same(replayed.map((b) => [b.who, b.text]), [
    ['You', 'Where is my parcel?'],
    ['Assistant', 'echo: Where is my parcel?'],
    ['You', 'Can I talk to a human, please?'],
    ['Assistant', 'A human colleague will take over shortly.'],
    ['Maria Lopez', 'Hi, Maria here. Your parcel left our warehouse today.'],
    ['You', 'Thanks! When will it arrive?'],
  ], 'the history, the operator by name');
  t.same(replayed.map((b) => b.time), (await sql(svc.orm, `select created_at from conversation_messages where conversation_id = ? order by seq`, [conversationId])).map((r) => hhmm(r.created_at)), 'after a reload, every time is the stored one');
  t.equal(await page.getByText(WAITING).count(), 0, 'after a reload: no waiting notice');
  await page.screenshot({ path: `${SHOTS}/widget-operator-reloaded.png` });

  // The bot is back, the visitor asks for a person again: the notice is back until someone answers.
  t.equal((await svc.api('POST', `/api/conversations/${conversationId}/resume`, { token: maria.token })).status, 200);
  await input.fill('Actually, a human again please');
  await input.press('Enter');
  await waiting.waitFor();
  t.pass('handed off again: the notice shows');
  t.equal((await svc.api('POST', `/api/conversations/${conversationId}/messages`, { token: owner.token, body: { text: 'The owner here, I will help.' } })).status, 200);
  await log.getByText('The owner here, I will help.').waitFor();
  t.match((await bubbles(page)).at(-1), { who: 'Support', text: 'The owner here, I will help.' }, 'an operator without a display name: "Support"');
  await waiting.waitFor({ state: 'detached' });
  t.same(errors, [], 'no page errors');
});
