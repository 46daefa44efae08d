import { mkdirSync } from 'node:fs';
import type { Test } from 'tap';
import { chromium, type Browser, type Page } from 'playwright-core';
import { uniqueEmail, type ApiClient } from './service.js';

/** Debian's chromium (`apt-get install chromium`), driven by playwright-core. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** A headless Chromium for the test file, closed at its end. */
export async function launchBrowser(t: Test): Promise<Browser> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-quic'],
  });
  t.teardown(() => browser.close());
  return browser;
}

export interface SignedInPage {
  page: Page;
  /** Console errors and page errors seen so far (CSP violations show up here). */
  problems: string[];
  email: string;
  password: string;
  /** A session token of the same user, for API calls beside the browser. */
  token: string;
  companyId: number;
}

/** A page in its own browser context (closed at the test's end), with the console errors and page errors it shows. */
export async function watchedPage(t: Test, browser: Browser, viewport: { width: number; height: number }): Promise<{ page: Page; problems: string[] }> {
  const context = await browser.newContext({ viewport });
  t.teardown(() => context.close());
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  const problems: string[] = [];
  page.on('console', (m) => {
    // The browser logs every 4xx/5xx response as a console error (an expired token's 401, a
    // failing helpdesk's 502): those are expected in tests; anything else is a problem.
    if (m.type() === 'error' && !/^Failed to load resource/.test(m.text())) problems.push(m.text());
  });
  page.on('pageerror', (err) => problems.push(`pageerror: ${err.message}`));
  return { page, problems };
}

/** A company registered through the API, then logged into through the dashboard's form. */
export async function signedInPage(t: Test, browser: Browser, svc: { url: string; api: ApiClient }, companyName: string): Promise<SignedInPage> {
  const email = uniqueEmail('web');
  const password = 'correct horse battery';
  const reg = await svc.api('POST', '/api/auth/register', { body: { email, password, companyName } });
  if (reg.status !== 201) throw new Error(`register: ${reg.status} ${JSON.stringify(reg.body)}`);
  const { page, problems } = await watchedPage(t, browser, { width: 1400, height: 1000 });
  await page.goto(svc.url + '/');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
  const token = (await svc.api('POST', '/api/auth/login', { body: { email, password } })).body.session.access_token as string;
  return { page, problems, email, password, token, companyId: reg.body.company.id as number };
}

/** DASHBOARD_SCREENSHOTS: a directory (e.g. /tmp/dashboard-shots) the dashboard tests save screenshots into; unset, they take none. */
const SHOTS = process.env.DASHBOARD_SCREENSHOTS;

/** A full-page screenshot named `name`, when DASHBOARD_SCREENSHOTS asks for them. */
export async function shot(page: Page, name: string): Promise<void> {
  if (!SHOTS) return;
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: `${SHOTS}/${name}.png`, fullPage: true });
}

/** Follows a link of the main navigation and waits for the page's heading. */
export async function goTo(page: Page, link: string): Promise<void> {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: link, exact: true }).click();
  await page.getByRole('heading', { level: 1, name: link }).waitFor();
}
