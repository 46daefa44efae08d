import { readFileSync } from 'node:fs';
import type { Page, WebSocketRoute } from 'playwright-core';
import t, { type Test } from 'tap';
import { launchBrowser, shot } from '../support/browser.js';

/**
 * A clarify reply in the widget (contract.md § Answers that find what the help centre says):
 * an agent `message` frame with `options` shows them as numbered buttons under the message; a
 * click sends an ordinary `message` frame whose text is the option's number; the buttons are
 * disabled once one is chosen, or when a newer message (the agent's, an operator's, the
 * visitor's own) comes. The widget is the real web/widget/widget.js in Chromium; its socket is
 * a stand-in (page.routeWebSocket) speaking the frames of gateway/webchat/frames.ts.
 */
const browser = await launchBrowser(t);
const WIDGET = readFileSync(new URL('../../web/widget/widget.js', import.meta.url), 'utf8');
const SITE = 'http://shop.test/';
const HOSTILE = 'Exchanges <img src=x onerror="window.pwned=1">';

interface Socket {
  /** The frames the widget sent, parsed. */
  sent: any[];
  send(frame: Record<string, unknown>): void;
  /** A message of the session (the agent's, or an operator's with `name`), with the next seq. */
  says(text: string, extra?: Record<string, unknown>): number;
  /** A seq left out for now (a message that comes late). */
  skip(): number;
}

/** A page with the widget, its socket answered by a stand-in that welcomes, acks and says what the test tells it. */
async function openWidget(t: Test): Promise<{ page: Page; socket: Socket; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 900, height: 700 } });
  t.teardown(() => context.close());
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.route(SITE, (route) =>
    route.fulfill({ contentType: 'text/html', body: '<!doctype html><title>Shop</title><h1>Shop</h1><script src="http://gateway.test/widget.js" data-integration-id="7" async></script>' }),
  );
  await page.route('http://gateway.test/widget.js', (route) => route.fulfill({ contentType: 'application/javascript', body: WIDGET }));
  let ws: WebSocketRoute | null = null;
  let seq = 0;
  const socket: Socket = {
    sent: [],
    send: (frame) => ws!.send(JSON.stringify(frame)),
    says(text, extra = {}) {
      seq += 1;
      socket.send({ type: 'message', seq, role: 'agent', text, at: new Date().toISOString(), name: null, ...extra });
      return seq;
    },
    skip: () => ++seq,
  };
  await page.routeWebSocket(/\/api\/webchat\/7\/ws$/, (route) => {
    ws = route;
    route.onMessage((data) => {
      const frame = JSON.parse(String(data));
      socket.sent.push(frame);
      if (frame.type === 'hello') socket.send({ type: 'welcome', visitorId: 'v-1', visitorToken: 'token-1', conversationId: 5, greeting: 'Hi! How can we help you today?' });
      if (frame.type === 'message') {
        seq += 1;
        socket.send({ type: 'ack', clientMessageId: frame.clientMessageId, seq, conversationId: 5 });
      }
    });
  });
  await page.goto(SITE);
  await page.getByRole('button', { name: 'Open chat' }).click();
  await page.getByRole('dialog', { name: 'Chat with us' }).waitFor();
  return { page, socket, errors };
}

const choices = (page: Page) => page.getByRole('group', { name: 'Options' });
/** Every option button shown: its text and whether it may still be clicked. */
const buttons = (page: Page) =>
  page.locator('[data-mas-webchat] .choice').evaluateAll((bs) => bs.map((b) => [b.textContent, !(b as HTMLButtonElement).disabled, b.classList.contains('chosen')]));
const sentTexts = (socket: Socket) => socket.sent.filter((f) => f.type === 'message').map((f) => f.text);

t.test('numbered buttons under the message; a click sends the number; then they are spent', async (t) => {
  const { page, socket, errors } = await openWidget(t);
  const input = page.getByLabel('Message');
  await input.fill('Can I send it back?');
  await input.press('Enter');
  await page.waitForFunction(() => !document.querySelector('[data-mas-webchat]')!.shadowRoot!.querySelector('.sending'));
  socket.says('Do you mean: 1. Returns 2. Exchanges?', { options: ['Returns', HOSTILE] });

  const offered = page.getByRole('log', { name: 'Conversation' }).locator('li.msg.agent', { hasText: 'Do you mean' });
  await offered.getByRole('group', { name: 'Options' }).waitFor();
  t.same(await buttons(page), [['1. Returns', true, false], [`2. ${HOSTILE}`, true, false]], 'numbered, in order, as text');
  t.equal(await offered.locator('img').count(), 0, 'a title with markup stays text');
  const bubbleText = await offered.evaluate((li) => Array.from(li.childNodes, (n) => (n.nodeType === Node.TEXT_NODE ? n.textContent : '')).join(''));
  t.equal(bubbleText, 'Do you mean: 1. Returns 2. Exchanges?', 'under the message text');

  await shot(page, 'widget-options');
  await offered.getByRole('button', { name: /^2\. / }).click();
  await page.waitForFunction(() => !document.querySelector('[data-mas-webchat]')!.shadowRoot!.querySelector('.sending'));
  t.same(sentTexts(socket), ['Can I send it back?', '2'], 'an ordinary message whose text is the number');
  t.match(socket.sent.at(-1), { type: 'message', clientMessageId: String, text: '2' });
  t.same(await buttons(page), [['1. Returns', false, false], [`2. ${HOSTILE}`, false, true]], 'spent once one is chosen; the chosen one marked');
  t.equal(await page.getByRole('log', { name: 'Conversation' }).locator('li.msg.customer').last().textContent().then((x) => x?.trim().endsWith('2')), true, "the visitor's choice shows as their message");
  t.equal(await page.evaluate(() => document.activeElement?.getAttribute('data-mas-webchat')), '7', 'focus stays in the widget (the input) after the click');

  await offered.getByRole('button', { name: /^1\. / }).click({ force: true }).catch(() => {});
  t.same(sentTexts(socket), ['Can I send it back?', '2'], 'a spent button sends nothing');
  t.equal(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned), undefined, 'no markup ran');
  t.same(errors, []);
});

t.test('a newer message spends them: the agent’s, an operator’s, the visitor’s own', async (t) => {
  const { page, socket, errors } = await openWidget(t);
  socket.says('Which one? 1. Returns 2. Exchanges', { options: ['Returns', 'Exchanges'] });
  await choices(page).waitFor();
  t.same((await buttons(page)).map(([, enabled]) => enabled), [true, true]);
  socket.says('Or just ask a colleague.');
  await page.getByText('Or just ask a colleague.').waitFor();
  t.same((await buttons(page)).map(([, enabled]) => enabled), [false, false], 'a newer agent message');

  const late = socket.skip();
  socket.says('Do you mean: 1. Delivery 2. Pickup 3. Returns?', { options: [{ title: 'Delivery' }, { title: 'Pickup' }, { title: 'Returns' }] });
  await page.getByRole('button', { name: '3. Returns' }).waitFor();
  t.same((await buttons(page)).slice(2), [['1. Delivery', true, false], ['2. Pickup', true, false], ['3. Returns', true, false]], 'only the latest offer may be chosen; {title} options too');
  socket.says('Maria here, I can help.', { role: 'operator', name: 'Maria' });
  await page.getByText('Maria here, I can help.').waitFor();
  t.same((await buttons(page)).map(([, enabled]) => enabled), [false, false, false, false, false], "an operator's message");

  socket.says('Do you mean: 1. Sizes 2. Colours?', { options: ['Sizes', 'Colours'] });
  await page.getByRole('button', { name: '2. Colours' }).waitFor();
  await page.getByLabel('Message').fill('Actually, where is my order?');
  await page.getByLabel('Message').press('Enter');
  t.same((await buttons(page)).slice(-2).map(([, enabled]) => enabled), [false, false], 'the visitor wrote instead');
  t.same(sentTexts(socket), ['Actually, where is my order?']);

  // An offer older than what is shown (a replay arriving late) is spent from the start.
  socket.send({ type: 'message', seq: late, role: 'agent', text: 'An old offer', at: new Date().toISOString(), name: null, options: ['Old'] });
  await page.getByRole('button', { name: '1. Old' }).waitFor();
  t.equal(await page.getByRole('button', { name: '1. Old' }).isDisabled(), true, 'an older message’s options cannot be chosen');
  t.same(errors, []);
});
