// Canned replies are managed in the dashboard (Settings → Canned replies), not only through the
// API: an admin adds, edits in place and deletes them, and what the API refuses is said at its
// field; the conversation's `/` list offers what was saved; an operator reads them only; many
// of them come a page at a time, with a filter.
import t from 'tap';
import type { Locator, Page } from 'playwright-core';
import { goTo, launchBrowser, shot, signedInPage, watchedPage } from '../support/browser.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { startRepeatingModel } from '../support/repeating-model.js';
import { startTestService } from '../support/service.js';
import { join } from '../support/team.js';
import { customerWrites } from '../support/webhooks.js';
import { createHelpdeskIntegration, eventually, startTestWorker, untilIdle } from '../support/worker.js';

const svc = await startTestService(t, 'web_canned_replies');
const { api } = svc;
const helpdesk = await startChat2DeskStub(t);
await startTestWorker(t, svc);
const model = await startRepeatingModel(t);
const browser = await launchBrowser(t);

/** The message shown under a control for the API's complaint about it. */
async function fieldError(control: Locator): Promise<string> {
  await control.and(control.page().locator('[aria-invalid="true"]')).waitFor();
  const ids = (await control.getAttribute('aria-describedby'))!.split(' ');
  return (await control.page().locator(`#${ids.at(-1)}`).textContent()) ?? '';
}

const said = (page: Page, text: string) => page.getByRole('status').getByText(text, { exact: true }).waitFor();
const section = (page: Page) => page.getByRole('region', { name: 'Canned replies' });
const shortcuts = async (page: Page) => section(page).locator('tbody code').allTextContents();

t.test('an admin adds, edits and deletes; refusals at their fields; "/" in a conversation offers the edited one; an operator reads only', async (t) => {
  const { page, problems, token, companyId } = await signedInPage(t, browser, svc, 'Canned Co');
  await goTo(page, 'Settings');
  const panel = section(page);
  await panel.getByText('No canned replies yet. Add the first one below.').waitFor();

  const add = panel.getByRole('form', { name: 'New canned reply' });
  for (const [shortcut, text] of [
    ['hours', 'We are open from 9 to 18, Monday to Friday.'],
    ['/refund', 'Refunds reach your account within 5 working days.'],
  ]) {
    await add.getByLabel('Shortcut').fill(shortcut);
    await add.getByLabel('Text').fill(text);
    await add.getByRole('button', { name: 'Add canned reply' }).click();
    await said(page, `Canned reply ${shortcut.replace(/^\/?/, '/')} added.`);
  }
  t.equal(await add.getByLabel('Shortcut').inputValue(), '', 'the form empties after an add');
  t.same(await shortcuts(page), ['/hours', '/refund'], 'both listed, by shortcut; a typed leading / is not part of it');

  // A taken shortcut (409) and one with a space (400), each at the Shortcut field.
  await add.getByLabel('Shortcut').fill('hours');
  await add.getByLabel('Text').fill('Another text for hours.');
  await add.getByRole('button', { name: 'Add canned reply' }).click();
  t.equal(await fieldError(add.getByLabel('Shortcut')), 'Is taken by another canned reply.', 'the 409 at the Shortcut field');
  t.equal(await add.getByRole('alert').textContent(), 'Please check Shortcut: is taken by another canned reply.');
  await add.getByLabel('Shortcut').fill('opening hours');
  await add.getByRole('button', { name: 'Add canned reply' }).click();
  t.equal(await fieldError(add.getByLabel('Shortcut')), 'Must be letters, digits, _ or - only (no spaces).', 'the 400 at the Shortcut field, in words');
  t.equal(await add.getByLabel('Text').getAttribute('aria-invalid'), null, 'the text was fine');
  await shot(page, 'canned-replies-errors');

  // Edit in place: a taken shortcut there too; Cancel keeps the stored one; Save changes it.
  await panel.getByRole('button', { name: 'Edit /hours' }).click();
  const edit = panel.getByRole('form', { name: 'Edit /hours' });
  t.equal(await edit.getByLabel('Text').inputValue(), 'We are open from 9 to 18, Monday to Friday.');
  await edit.getByLabel('Shortcut').fill('refund');
  await edit.getByRole('button', { name: 'Save' }).click();
  t.equal(await fieldError(edit.getByLabel('Shortcut')), 'Is taken by another canned reply.');
  await edit.getByRole('button', { name: 'Cancel' }).click();
  t.same(await shortcuts(page), ['/hours', '/refund'], 'Cancel changed nothing');
  await panel.getByRole('button', { name: 'Edit /hours' }).click();
  await edit.getByLabel('Shortcut').fill('open-hours');
  await edit.getByLabel('Text').fill('We are open from 8 to 20, Monday to Saturday.');
  await shot(page, 'canned-replies-edit');
  await edit.getByRole('button', { name: 'Save' }).click();
  await said(page, 'Canned reply /open-hours saved.');
  t.equal(await edit.count(), 0, 'the row is a row again');
  t.same(await shortcuts(page), ['/open-hours', '/refund']);

  // Delete, after a confirm.
  let question = '';
  page.once('dialog', (d) => {
    question = d.message();
    void d.accept();
  });
  await panel.getByRole('button', { name: 'Delete /refund' }).click();
  await said(page, 'Canned reply /refund deleted.');
  t.match(question, 'Delete the canned reply /refund?');
  t.same(await shortcuts(page), ['/open-hours']);
  await shot(page, 'canned-replies');

  const stored = (await api('GET', '/api/canned-replies', { token })).body;
  t.equal(stored.total, 1);
  t.match(stored.cannedReplies[0], { shortcut: 'open-hours', text: 'We are open from 8 to 20, Monday to Saturday.' }, 'the API has what the page said');

  // In a conversation, "/" offers the edited one.
  const integration = await createHelpdeskIntegration(svc, { token, companyId }, helpdesk, 'Desk', await model.createAgent(api, token));
  await customerWrites(api, integration, 'ines', 'When are you open?');
  await untilIdle(svc);
  const id = await eventually(async () => (await api('GET', '/api/conversations?clientId=ines', { token })).body.conversations?.[0]?.id as number | undefined, 20_000, 'the conversation');
  await page.goto(`${svc.url}/#/conversations/${id}`);
  await page.getByText('echo: When are you open?', { exact: true }).waitFor();
  const box = page.getByLabel('Reply', { exact: true });
  await box.pressSequentially('/open');
  const option = page.getByRole('listbox', { name: 'Canned replies' }).getByRole('option');
  await option.getByText('/open-hours', { exact: true }).waitFor();
  t.same(await option.allTextContents(), ['/open-hoursWe are open from 8 to 20, Monday to Saturday.']);
  await box.press('Enter');
  t.equal(await box.inputValue(), 'We are open from 8 to 20, Monday to Saturday.', 'the edited text goes in the reply box');
  t.same(problems, []);

  // An operator sees the list, without a form or a button to change it.
  const dana = await join(api, token, 'operator', 'Dana Operator');
  const operator = await watchedPage(t, browser, { width: 1400, height: 900 });
  await operator.page.goto(svc.url + '/');
  await operator.page.getByLabel('Email').fill(dana.email);
  await operator.page.getByLabel('Password').fill(dana.password);
  await operator.page.getByRole('button', { name: 'Log in' }).click();
  await operator.page.getByRole('navigation', { name: 'Main' }).waitFor();
  await goTo(operator.page, 'Settings');
  const readOnly = section(operator.page);
  await readOnly.getByText('/open-hours', { exact: true }).waitFor();
  t.match(await readOnly.textContent(), 'Owners and admins of the company add and change them.', 'a note says who manages them');
  t.match(await readOnly.getByRole('row').nth(1).textContent(), 'We are open from 8 to 20, Monday to Saturday.');
  t.equal(await readOnly.getByRole('form').count(), 0, 'no form');
  t.equal(await readOnly.getByRole('button').count(), 0, 'no Edit or Delete');
  t.equal(await readOnly.getByRole('columnheader', { name: 'Actions' }).count(), 0);
  await shot(operator.page, 'canned-replies-operator');
  t.same(operator.problems, []);
});

t.test('many: a page at a time, and a filter that asks the API', async (t) => {
  const { page, problems, token } = await signedInPage(t, browser, svc, 'Many Co');
  const statuses = [];
  for (let i = 1; i <= 23; i++) {
    const body = { shortcut: `reply-${String(i).padStart(2, '0')}`, text: i === 17 ? 'Your parcel ships tomorrow.' : `Stock answer number ${i}.` };
    statuses.push((await api('POST', '/api/canned-replies', { token, body })).status);
  }
  t.same(new Set(statuses), new Set([201]), '23 canned replies');
  await goTo(page, 'Settings');
  const panel = section(page);
  await panel.getByText('1–20 of 23').waitFor();
  t.equal((await shortcuts(page)).length, 20);
  await panel.getByRole('button', { name: 'Next' }).click();
  await panel.getByText('21–23 of 23').waitFor();
  t.same(await shortcuts(page), ['/reply-21', '/reply-22', '/reply-23']);
  await panel.getByLabel('Filter canned replies').fill('parcel');
  await panel.getByText('/reply-17', { exact: true }).waitFor();
  t.same(await shortcuts(page), ['/reply-17'], 'found by its text, from the first page');
  await panel.getByLabel('Filter canned replies').fill('nothing like this');
  await panel.getByText('No canned reply matches “nothing like this”.').waitFor();
  await shot(page, 'canned-replies-filter');
  t.same(problems, []);
});
