// The Team page and invitations in Chromium (issue #29): an owner invites an operator and
// copies the link, the operator joins in another browser and lands on the inbox with an
// operator's navigation, the owner changes the role (the operator's navigation follows) and
// removes the user (whose next step ends at the login form); the API tokens list says who made
// each, and a teammate's go with them.
import t from 'tap';
import type { Page } from 'playwright-core';
import { goTo, launchBrowser, shot, signedInPage, watchedPage } from '../support/browser.js';
import { startTestService, uniqueEmail } from '../support/service.js';
import { join } from '../support/team.js';

const svc = await startTestService(t, 'web_team');
const { api } = svc;
const browser = await launchBrowser(t);

/** The link as this test's service serves it (PUBLIC_BASE_URL is not the port the test got). */
const here = (link: string) => `${svc.url}/${new URL(link).hash}`;

t.test('invite an operator, who joins, works the inbox, is made admin, then removed', async (t) => {
  const owner = await signedInPage(t, browser, svc, 'Team Co');
  const { page } = owner;
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: svc.url });
  await goTo(page, 'Team');
  const members = page.getByRole('table', { name: 'Team members' });
  t.match(await members.locator('tr', { hasText: owner.email }).textContent(), /You.*Owner/, 'the owner, marked as me');

  const opEmail = uniqueEmail('operator');
  const invite = page.getByRole('form', { name: 'Invite someone' });
  await invite.getByLabel('Email').fill(opEmail);
  await invite.getByLabel('Role').selectOption('operator');
  await invite.getByLabel('Display name').fill('Olga');
  await invite.getByRole('button', { name: 'Create invitation' }).click();
  await invite.getByText(`Invitation for ${opEmail} created.`, { exact: true }).waitFor();
  t.match(await invite.locator('.once').textContent(), /it is shown only once/, 'says the link is shown once');
  const link = await invite.getByLabel('Invitation link').inputValue();
  t.match(link, /\/#\/accept\?token=\S+$/);
  await invite.getByRole('button', { name: 'Copy link' }).click();
  await invite.getByText('Copied', { exact: true }).waitFor();
  t.equal(await page.evaluate(() => navigator.clipboard.readText()), link, 'the link is on the clipboard');
  const open = page.getByRole('table', { name: 'Open invitations' });
  await open.locator('tr', { hasText: opEmail }).waitFor();
  t.match(await open.locator('tr', { hasText: opEmail }).textContent(), /Operator.*Olga/);
  await shot(page, 'team');
  await page.reload();
  await open.locator('tr', { hasText: opEmail }).waitFor();
  t.equal(await page.getByLabel('Invitation link').count(), 0, 'the link is not shown again');

  // Another browser: the invitation's link, a name and a password, and in.
  const { page: op, problems: opProblems } = await watchedPage(t, browser, { width: 1280, height: 900 });
  await op.goto(here(link));
  await op.getByRole('heading', { level: 1, name: 'Join your team' }).waitFor();
  await op.getByLabel('Your name').fill('Olga Operator');
  await shot(op, 'accept');
  await op.getByLabel('Password').fill('operator password');
  await op.getByRole('button', { name: 'Join' }).click();
  const nav = op.getByRole('navigation', { name: 'Main' });
  await nav.waitFor();
  await op.locator('.page[data-page="conversations"]').waitFor();
  t.match(op.url(), /#\/conversations$/, 'landed on the inbox, the token gone from the address');
  t.same(await nav.getByRole('link').allTextContents(), ['Inbox', 'Leads', 'Outcomes', 'Team', 'Settings'], "an operator's navigation");
  await op.locator('.account').getByText('Olga Operator').waitFor();
  t.match(await op.locator('.account').textContent(), /Olga Operator.*Operator.*Team Co/);

  // A setup page reached by its address says why it is not there.
  await op.goto(`${svc.url}/#/agents`);
  await op.getByRole('heading', { level: 1, name: 'Agents' }).waitFor();
  t.match(await op.getByRole('alert').textContent(), /Agents is for the owners and admins of Team Co\. You are signed in as an operator/);
  // Settings without the API tokens and with the spend cap read-only; outcomes of all agents.
  await goTo(op, 'Settings');
  await op.getByText('No daily spend cap.').waitFor();
  t.equal(await op.getByRole('heading', { name: 'API tokens' }).count(), 0, 'no API tokens for an operator');
  t.equal(await op.getByLabel('Spend cap per day (USD)').count(), 0, 'the cap is not theirs to change');
  await goTo(op, 'Outcomes');
  await op.locator('[data-figure]').first().waitFor();
  t.same(await op.getByRole('alert').filter({ hasText: /\S/ }).allTextContents(), [], 'no error for the agents an operator may not list');
  // The team, read-only but for their own name.
  await goTo(op, 'Team');
  const opMembers = op.getByRole('table', { name: 'Team members' });
  await opMembers.locator('tr', { hasText: opEmail }).waitFor();
  t.equal(await op.getByRole('form', { name: 'Invite someone' }).count(), 0, 'no invitations for an operator');
  t.equal(await op.getByRole('combobox').count(), 0, 'no role to change');
  t.equal(await op.getByRole('button', { name: /^Remove / }).count(), 0, 'no one to remove');
  t.equal(await op.getByRole('button', { name: `Rename ${owner.email}` }).count(), 0);
  await op.getByRole('button', { name: `Rename ${opEmail}` }).click();
  await op.getByLabel(`Display name of ${opEmail}`).fill('Olga O.');
  await op.getByRole('button', { name: 'Save', exact: true }).click();
  await op.getByText(`${opEmail} is now shown as “Olga O.”.`).waitFor();
  await op.locator('.account').getByText('Olga O.').waitFor();
  await shot(op, 'team-operator');

  // The owner makes them an admin: their next step shows the setup pages.
  await page.reload();
  const row = members.locator('tr', { hasText: opEmail });
  await row.getByText('Olga O.').waitFor();
  await page.getByLabel(`Role of ${opEmail}`).selectOption('admin');
  await page.getByText('The role of Olga O. is now Admin.').waitFor();
  const users = (await api('GET', '/api/users', { token: owner.token })).body.users;
  t.match(users.find((u: { email: string }) => u.email === opEmail), { role: 'admin', displayName: 'Olga O.' });
  await nav.getByRole('link', { name: 'Inbox' }).click();
  await nav.getByRole('link', { name: 'Integrations' }).waitFor();
  t.match(await op.locator('.account').textContent(), /Admin/);
  // (On a page without a live stream: the inbox's stream ends with the session by itself.)
  await goTo(op, 'Team');

  // Removed: their next step ends at the login form.
  page.once('dialog', (d) => d.accept());
  await row.getByRole('button', { name: `Remove ${opEmail}` }).click();
  await page.getByText('Olga O. was removed from the team.').waitFor();
  t.equal(await members.locator('tr', { hasText: opEmail }).count(), 0);
  await nav.getByRole('link', { name: 'Leads' }).click();
  await op.getByRole('button', { name: 'Log in' }).waitFor();
  await op.getByText('Your session has ended. Please log in again.').waitFor();
  t.same(owner.problems, []);
  t.same(opProblems, []);
});

t.test('a revoked invitation cannot be used; signed in, the link offers to log out first', async (t) => {
  const owner = await signedInPage(t, browser, svc, 'Revoke Co');
  const { page } = owner;
  const email = uniqueEmail('late');
  const made = await api('POST', '/api/users/invitations', { token: owner.token, body: { email, role: 'admin' } });
  t.equal(made.status, 201);
  await goTo(page, 'Team');

  // Signed in here already: the link offers to log out first, and then the form.
  await page.goto(here(made.body.invitation.url));
  await page.getByText('To accept the invitation with a new account, log out first.').waitFor();
  await page.getByRole('button', { name: 'Log out and accept' }).click();
  await page.getByLabel('Password').waitFor();
  t.equal(await page.evaluate(() => localStorage.getItem('mas.session')), null, 'logged out');

  // Meanwhile revoked (in the owner's other tab, here the API): the form says so.
  const { page: other, problems: otherProblems } = await watchedPage(t, browser, { width: 1280, height: 900 });
  await other.goto(`${svc.url}/`);
  await other.getByLabel('Email').fill(owner.email);
  await other.getByLabel('Password').fill(owner.password);
  await other.getByRole('button', { name: 'Log in' }).click();
  await goTo(other, 'Team');
  const open = other.getByRole('table', { name: 'Open invitations' });
  other.once('dialog', (d) => d.accept());
  await open.getByRole('button', { name: `Revoke the invitation for ${email}` }).click();
  await other.getByText(`The invitation for ${email} was revoked.`).waitFor();
  t.equal((await api('GET', '/api/users/invitations', { token: owner.token })).body.total, 0);

  await page.getByLabel('Password').fill('a good password');
  await page.getByRole('button', { name: 'Join' }).click();
  t.match(await page.getByRole('alert').filter({ hasText: /\S/ }).textContent(), /cannot be used any more/);
  t.same(owner.problems, []);
  t.same(otherProblems, []);
});

t.test('the API tokens list says who made each; removing the maker revokes theirs', async (t) => {
  const owner = await signedInPage(t, browser, svc, 'Tokens Co');
  const { page } = owner;
  const ada = await join(api, owner.token, 'admin', 'Ada');
  const adas = (await api('POST', '/api/api-tokens', { token: ada.token, body: { name: 'CRM sync' } })).body.apiToken;
  await goTo(page, 'Settings');
  await page.getByLabel('Token name').fill('Backup');
  await page.getByRole('button', { name: 'Create token' }).click();
  const tokens = page.getByRole('table', { name: 'API tokens' });
  await tokens.getByRole('columnheader', { name: 'Made by' }).waitFor();
  await tokens.locator('tr', { hasText: 'Backup' }).getByRole('cell', { name: 'You', exact: true }).waitFor();
  await tokens.locator('tr', { hasText: 'CRM sync' }).getByRole('cell', { name: 'Ada', exact: true }).waitFor();
  await shot(page, 'api-tokens-made-by');

  await goTo(page, 'Team');
  let question = '';
  page.once('dialog', (d) => {
    question = d.message();
    void d.accept();
  });
  await page.getByRole('button', { name: `Remove ${ada.email}` }).click();
  await page.getByText('Ada was removed from the team.').waitFor();
  t.match(question, /the API tokens they made and the invitations they sent stop working/, 'the question says what goes with them');
  t.equal((await api('GET', '/api/agents', { token: adas.token })).status, 401, 'their token answers 401');

  await goTo(page, 'Settings');
  await tokens.locator('tr', { hasText: 'Backup' }).waitFor();
  t.equal(await tokens.locator('tr', { hasText: 'CRM sync' }).count(), 0, 'their token is no longer listed');
  t.same(owner.problems, []);
});
