import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import t from 'tap';
import { launchBrowser, watchedPage } from '../support/browser.js';
import { TEST_PG_BASE } from '../support/database.js';
import { freePort } from '../support/local-server.js';
import { removeNatsPrefix, TEST_NATS_URL } from '../support/service.js';

/**
 * `npm run demo` as a new user runs it: the service, the Chat2Desk sandbox and the shop page
 * start on this machine; what it prints works as printed. The printed curl (a customer
 * message signed as Chat2Desk signs it) gets the agent's reply into the sandbox within 2 s,
 * the reply is the help centre's answer, and the test page's widget answers in Chromium.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);
const database = `mas_t_demo_${randomBytes(4).toString('hex')}`;
const natsPrefix = `t${randomBytes(4).toString('hex')}`;
const [port, sandboxPort, sitePort, whatsappPort, telegramPort] = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];

t.teardown(async () => {
  await removeNatsPrefix(TEST_NATS_URL, natsPrefix);
  const admin = new pg.Client({ connectionString: `${TEST_PG_BASE}/postgres` });
  await admin.connect();
  await admin.query(`drop database if exists "${database}" with (force)`);
  await admin.end();
});

// `npm run demo` = scripts/run.sh (Node, dependencies and services: done by scripts/test.sh) + this.
const demo = spawn(process.execPath, ['--import', 'tsx', 'scripts/demo/main.ts'], {
  cwd: root,
  env: {
    ...process.env,
    DEMO_DATABASE_URL: `${TEST_PG_BASE}/${database}`,
    DEMO_NATS_PREFIX: natsPrefix,
    NATS_URL: TEST_NATS_URL,
    PORT: String(port),
    DEMO_SANDBOX_PORT: String(sandboxPort),
    DEMO_SITE_PORT: String(sitePort),
    DEMO_WHATSAPP_PORT: String(whatsappPort),
    DEMO_TELEGRAM_PORT: String(telegramPort),
    LOG_LEVEL: 'warn',
  },
  stdio: ['ignore', 'pipe', 'pipe'],
});
let stdout = '';
let stderr = '';
demo.stdout.on('data', (c) => (stdout += c));
demo.stderr.on('data', (c) => (stderr += c));
const exited = new Promise<number | null>((resolve) => demo.once('exit', (code) => resolve(code)));
t.teardown(async () => {
  if (demo.exitCode === null) demo.kill('SIGTERM');
  await exited;
});

/** Resolves with what matched once the demo's output holds `re`. */
async function printed(re: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const m = stdout.match(re);
    if (m) return m;
    if (demo.exitCode !== null) throw new Error(`the demo exited (${demo.exitCode}): ${stderr || stdout}`);
    if (Date.now() > deadline) throw new Error(`not printed within ${timeoutMs} ms: ${re}\n${stdout}\n${stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const ready = await printed(/Ask for "a human"[^\n]*\n/, 90_000);
t.ok(ready, 'the demo printed its instructions');

t.test('it prints the dashboard and its login, the test page, the sandbox and a ready curl', async (t) => {
  t.match(stdout, `Demo ready on Node.js ${process.versions.node}`);
  t.match(stdout, new RegExp(`Dashboard +http://127\\.0\\.0\\.1:${port}/`));
  t.match(stdout, /log in as demo@example\.com \/ demo-[0-9a-f]{12}/);
  t.match(stdout, new RegExp(`Test page +http://127\\.0\\.0\\.1:${sitePort}/`));
  t.match(stdout, new RegExp(`Sandbox +http://127\\.0\\.0\\.1:${sandboxPort}/`));
  t.match(stdout, /sample help centre \(5 of 5 articles indexed\)/);
  t.notMatch(stderr, /error|warn/i, `nothing alarming on stderr: ${stderr}`);

  const [, email, password] = stdout.match(/log in as (\S+) \/ (\S+)/)!;
  const login = await fetch(`http://127.0.0.1:${port}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }) });
  t.equal(login.status, 200, 'the printed login works');
  const { session } = (await login.json()) as { session: { access_token: string } };
  const integrations = (await (await fetch(`http://127.0.0.1:${port}/api/integrations`, { headers: { authorization: `Bearer ${session.access_token}` } })).json()) as { integrations: { type: string; webhookStatus: string | null }[] };
  t.match(
    integrations.integrations.map((i) => ({ type: i.type, webhookStatus: i.webhookStatus })),
    [{ type: 'helpdesk', webhookStatus: 'ok' }, { type: 'webchat' }],
    'a helpdesk integration with its webhook registered, and a webchat one',
  );
});

t.test('the printed curl gets the help centre\'s answer into the sandbox within 2 s', async (t) => {
  const curl = stdout.split('\n').find((l) => l.startsWith('body='))!;
  t.ok(curl, 'a curl line');
  const historyCall = stdout.match(/curl -s '(http:\/\/[^']+\/v1\/messages\?[^']+)' -H 'authorization: ([0-9a-f]+)'/)!;
  t.ok(historyCall, 'how to list the replies with the sandbox API');
  const replies = async () => {
    const res = await fetch(historyCall[1]!, { headers: { authorization: historyCall[2]! } });
    return ((await res.json()) as { data: { text: string }[] }).data;
  };

  const answers = (messages: { text: string }[]) => messages.filter((m) => /Standard delivery takes 2–4 working days/.test(m.text)).length;
  for (const attempt of [1, 2]) {
    const before = await replies();
    const started = Date.now();
    const { stdout: answer } = await run('bash', ['-c', curl], { cwd: root });
    t.same(JSON.parse(answer), { ok: true }, `attempt ${attempt}: the webhook was taken`);
    let got = before;
    while ((got = await replies()).length === before.length && Date.now() - started < 5_000) await new Promise((r) => setTimeout(r, 20));
    const ms = Date.now() - started;
    t.equal(got.length, before.length + 1, `attempt ${attempt}: one reply (a fresh message_id each time: run again, answered again)`);
    t.ok(ms <= 2_000, `attempt ${attempt}: the reply reached the sandbox ${ms} ms after the curl started`);
    t.equal(answers(got), answers(before) + 1, `attempt ${attempt}: the delivery article answers`);
  }
  await printed(/\[sandbox\] reply to client 101: "Orders placed/, 2_000);
  const page = await (await fetch(`http://127.0.0.1:${sandboxPort}/`)).text();
  t.match(page, /Standard delivery takes 2–4 working days/, 'the sandbox page lists the reply');
});

t.test('the printed WhatsApp and Telegram curls are answered through their sandboxes', async (t) => {
  const curls = stdout.split('\n').filter((l) => l.startsWith('body='));
  t.equal(curls.length, 3, 'a curl per channel: Chat2Desk, WhatsApp, Telegram');
  const [, whatsapp, telegram] = curls;
  t.match(whatsapp, /x-hub-signature-256: sha256=/, 'WhatsApp: signed with the app secret');
  t.match(telegram, /x-telegram-bot-api-secret-token: [0-9a-f]{64}/, 'Telegram: the secret token');
  for (const [name, curl, printedReply] of [
    ['WhatsApp', whatsapp!, /\[whatsapp\] reply to 15550001111: "[^\n]*Standard delivery takes 2–4 working days/],
    ['Telegram', telegram!, /\[telegram\] reply to chat 424242: "[^\n]*Standard delivery takes 2–4 working days/],
  ] as const) {
    const { stdout: answer } = await run('bash', ['-c', curl], { cwd: root });
    t.same(JSON.parse(answer), { ok: true }, `${name}: the webhook was taken`);
    t.ok(await printed(printedReply, 5_000), `${name}: the help centre's answer reached the sandbox`);
  }
});

t.test('the test page\'s widget answers from the help centre', async (t) => {
  const browser = await launchBrowser(t);
  const { page, problems } = await watchedPage(t, browser, { width: 1200, height: 800 });
  await page.goto(`http://127.0.0.1:${sitePort}/`);
  await page.getByRole('button', { name: 'Open chat' }).click();
  await page.getByLabel('Message').fill('Which payment methods do you accept?');
  await page.getByRole('button', { name: 'Send' }).click();
  const log = page.getByRole('log', { name: 'Conversation' });
  await log.getByText(/We accept Visa, Mastercard, PayPal/).waitFor({ timeout: 10_000 });
  t.same(problems, [], 'no console or page errors');
});

t.test('Ctrl-C stops the demo cleanly', async (t) => {
  demo.kill('SIGINT');
  t.equal(await exited, 0);
});
