import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { startRuntime } from '../../lib/runtime.js';
import { startGateway } from '../../gateway/server.js';
import { startWorker } from '../../actors/worker.js';
import { startChat2DeskSandbox, type RecordedRequest } from '../sandbox/chat2desk.js';
import { startTelegramSandbox } from '../sandbox/telegram.js';
import { startWhatsAppSandbox } from '../sandbox/whatsapp.js';
import { telegramCurl, whatsappCurl } from './channel-curls.js';
import { startShopSite } from '../sandbox/shop-site.js';
import { removeNatsPrefix } from '../nats-prefix.js';
import { createDemoCompany, type DemoCompany } from './setup.js';

/**
 * `npm run demo`: the service (gateway and worker in one process) beside a Chat2Desk sandbox,
 * WhatsApp Cloud API and Telegram Bot API sandboxes and a shop page with the widget, all on this machine, and a demo company to try them with.
 * Nothing calls out: the agent is the built-in one and the help centre has no embedding model.
 * The demo starts afresh each time: its own database and NATS prefix are dropped and made again.
 */
const DEFAULT_DEMO_DATABASE_URL = 'postgresql://root@127.0.0.1:5432/mas_demo';
const DEFAULT_DEMO_NATS_PREFIX = 'demo';
const DEFAULT_SANDBOX_PORT = 3100;
const DEFAULT_SITE_PORT = 3200;
const DEFAULT_WHATSAPP_PORT = 3101;
const DEFAULT_TELEGRAM_PORT = 3102;
const SAMPLE_QUESTION = 'How long does delivery take?';
const SAMPLE_CLIENT_ID = 101;

const env = process.env;
const databaseUrl = env.DEMO_DATABASE_URL ?? DEFAULT_DEMO_DATABASE_URL;
const natsPrefix = env.DEMO_NATS_PREFIX ?? DEFAULT_DEMO_NATS_PREFIX;
const host = env.HOST ?? '127.0.0.1';
const port = Number(env.PORT ?? 3000);
const sandboxPort = Number(env.DEMO_SANDBOX_PORT ?? DEFAULT_SANDBOX_PORT);
const sitePort = Number(env.DEMO_SITE_PORT ?? DEFAULT_SITE_PORT);
const whatsappPort = Number(env.DEMO_WHATSAPP_PORT ?? DEFAULT_WHATSAPP_PORT);
const telegramPort = Number(env.DEMO_TELEGRAM_PORT ?? DEFAULT_TELEGRAM_PORT);

function fail(message: string): never {
  process.stderr.write(`demo: ${message}\n`);
  process.exit(1);
}

/** Drops the demo's database (it is created and migrated again at start). */
async function dropDemoDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1));
  if (!name) fail(`DEMO_DATABASE_URL names no database: ${target.origin}`);
  target.pathname = '/postgres';
  const admin = new pg.Client({ connectionString: target.toString() });
  try {
    await admin.connect();
  } catch (err) {
    fail(`PostgreSQL does not answer at ${target.host} (${(err as Error).message}): run \`npm run demo\`, which starts it when it is installed, or set DEMO_DATABASE_URL`);
  }
  await admin.query(`drop database if exists "${name.replace(/"/g, '""')}" with (force)`);
  await admin.end();
}

/** A port the demo needs is taken: say which and how to choose another. */
async function listening<T>(what: string, variable: string, start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') fail(`${what}: the port is in use; set ${variable} to a free one`);
    throw err;
  }
}

/** The reply the service sent, or the transfer it asked for, as the sandbox received it. */
function describeHelpdeskCall(req: RecordedRequest): string | null {
  if (req.method === 'POST' && req.path === '/v1/messages') return `reply to client ${req.body?.client_id}: ${JSON.stringify(req.body?.text ?? '')}`;
  if (req.method === 'GET' && /\/transfer(_to_group)?$/.test(req.path)) return 'the dialog was transferred to a human operator';
  if (req.method === 'PUT' && req.path.startsWith('/v1/dialogs/')) return `dialog ${req.path.split('/').at(-1)} closed`;
  return null;
}

/** A shell line that sends one customer message, signed as Chat2Desk signs it; a fresh message_id each time. */
function signedCurl(webhookUrl: string, secret: string): string {
  const payload = `{"message_id":'$(date +%s)$RANDOM',"type":"from_client","text":"${SAMPLE_QUESTION}","client_id":${SAMPLE_CLIENT_ID},"channel_id":1,"transport":"telegram","request_id":1,"dialog_id":1}`;
  return (
    `body='${payload}'; ` +
    `curl -s ${webhookUrl} -H 'content-type: application/json' ` +
    `-H "x-webhook-signature: sha256=$(printf %s "$body" | openssl dgst -sha256 -hmac '${secret}' | sed 's/^.* //')" -d "$body"`
  );
}

function banner(o: { gatewayUrl: string; sandbox: { url: string; token: string }; siteUrl: string; company: DemoCompany; webhookUrl: string; whatsappUrl: string; telegramUrl: string }): string {
  const { company } = o;
  const whatsappWebhook = `${o.gatewayUrl}/api/webhook/whatsapp/${company.whatsapp.integrationId}`;
  const telegramWebhook = `${o.gatewayUrl}/api/webhook/telegram/${company.telegram.integrationId}`;
  const ready = company.documents.filter((d) => d.status === 'ready').length;
  return [
    '',
    `Demo ready on Node.js ${process.versions.node}: the service, Chat2Desk, WhatsApp and Telegram sandboxes and a shop page, all on this machine.`,
    '',
    `  Dashboard   ${o.gatewayUrl}/`,
    `              log in as ${company.email} / ${company.password}`,
    `  Test page   ${o.siteUrl}/   a shop page with the chat widget: ask "${SAMPLE_QUESTION}"`,
    `  Sandbox     ${o.sandbox.url}/   the Chat2Desk sandbox: the replies its customers got`,
    `  WhatsApp    ${o.whatsappUrl}   the Graph API sandbox; Telegram ${o.telegramUrl}, the Bot API sandbox (APIs only: their replies are printed below)`,
    '',
    `The demo company has a sample help centre (${ready} of ${company.documents.length} articles indexed), a built-in agent`,
    `answering from it, a helpdesk integration on the sandbox (webhook registered), WhatsApp and Telegram integrations`,
    `on theirs (Telegram's webhook set with setWebhook) and a webchat integration.`,
    '',
    'Send a customer message as Chat2Desk would, signed with the webhook secret:',
    '',
    signedCurl(o.webhookUrl, company.webhookSecret),
    '',
    `The agent's reply goes to the sandbox (POST /v1/messages): it is printed below, listed on the sandbox page, and by its API:`,
    `  curl -s '${o.sandbox.url}/v1/messages?client_id=${SAMPLE_CLIENT_ID}&type=to_client' -H 'authorization: ${o.sandbox.token}'`,
    '',
    `WhatsApp (Cloud API sandbox at ${o.whatsappUrl}): a customer message as Meta posts it, signed with the app secret:`,
    '',
    whatsappCurl(whatsappWebhook, company.whatsapp.appSecret, company.whatsapp.phoneNumberId, SAMPLE_QUESTION),
    '',
    `Telegram (Bot API sandbox at ${o.telegramUrl}): an update as Telegram posts it, with the secret token:`,
    '',
    telegramCurl(telegramWebhook, company.telegram.secretToken, SAMPLE_QUESTION),
    '',
    `Their replies are printed below as the sandboxes receive them (WhatsApp's delivery statuses come back to the service).`,
    `Ask for "a human" to see a handoff. Ctrl-C stops the demo; the next start begins afresh.`,
    '',
  ].join('\n');
}

await dropDemoDatabase(databaseUrl);
Object.assign(env, {
  NODE_ENV: 'development',
  DATABASE_URL: databaseUrl,
  NATS_PREFIX: natsPrefix,
  HOST: host,
  PORT: String(port),
  PUBLIC_BASE_URL: `http://${host}:${port}`,
  // The sandbox listens on loopback: integrations may point at private addresses here.
  ALLOW_PRIVATE_URLS: 'true',
  // Fresh each start, like the database: nothing sealed with them outlives the demo.
  JWT_SECRET: randomBytes(32).toString('hex'),
  SECRETS_KEY: randomBytes(32).toString('hex'),
  LOG_LEVEL: env.LOG_LEVEL ?? 'warn',
  // The direct channels' sandboxes, on this machine.
  WHATSAPP_GRAPH_URL: `http://${host}:${whatsappPort}`,
  TELEGRAM_API_URL: `http://${host}:${telegramPort}`,
});
await removeNatsPrefix(env.NATS_URL ?? 'nats://127.0.0.1:4222', natsPrefix);

const rt = await startRuntime('demo');
const worker = await startWorker(rt);
rt.onShutdown(() => worker.close());
const gateway = await listening(`the service on ${host}:${port}`, 'PORT', () => startGateway(rt, { port, host }));
rt.onShutdown(() => gateway.close());

const sandbox = await listening(`the Chat2Desk sandbox on ${host}:${sandboxPort}`, 'DEMO_SANDBOX_PORT', () => startChat2DeskSandbox({ port: sandboxPort, host }));
rt.onShutdown(() => sandbox.close());
sandbox.handle((req) => {
  const said = describeHelpdeskCall(req);
  if (said) process.stdout.write(`[sandbox] ${said}\n`);
  return undefined;
});

const whatsapp = await listening(`the WhatsApp sandbox on ${host}:${whatsappPort}`, 'DEMO_WHATSAPP_PORT', () => startWhatsAppSandbox({ port: whatsappPort, host }));
rt.onShutdown(() => whatsapp.close());
whatsapp.handle((req) => {
  if (req.method === 'POST' && typeof req.body?.text?.body === 'string') process.stdout.write(`[whatsapp] reply to ${req.body.to}: ${JSON.stringify(req.body.text.body)}\n`);
  return undefined;
});
const telegram = await listening(`the Telegram sandbox on ${host}:${telegramPort}`, 'DEMO_TELEGRAM_PORT', () => startTelegramSandbox({ port: telegramPort, host }));
rt.onShutdown(() => telegram.close());
telegram.answer((req) => {
  if (req.method === 'sendMessage') process.stdout.write(`[telegram] reply to chat ${req.body?.chat_id}: ${JSON.stringify(req.body?.text ?? '')}\n`);
  return undefined;
});

let webchatIntegrationId = 0;
const site = await listening(`the shop page on ${host}:${sitePort}`, 'DEMO_SITE_PORT', () =>
  startShopSite({
    gatewayUrl: gateway.url,
    integrationId: () => webchatIntegrationId,
    port: sitePort,
    host,
    lines: [`This page embeds the demo's chat widget. Try: "${SAMPLE_QUESTION}", "Which payment methods do you accept?", "I want to talk to a human".`],
  }),
);
rt.onShutdown(() => site.close());

let company: DemoCompany;
try {
  company = await createDemoCompany({
    gatewayUrl: gateway.url, sandbox, siteOrigin: site.url,
    whatsapp: { token: whatsapp.token, phoneNumberId: whatsapp.account.phoneNumberId }, telegram: { token: telegram.token },
  });
} catch (err) {
  rt.logger.error({ err }, 'demo setup failed');
  fail(`setting up the demo company failed: ${(err as Error).message}`);
}
webchatIntegrationId = company.webchatIntegrationId;
const webhookUrl = `${gateway.url}/api/webhook/helpdesk/${company.helpdeskIntegrationId}`;
// Meta posts delivery statuses of every reply back to the webhook: the sandbox does too.
whatsapp.connect(`${gateway.url}/api/webhook/whatsapp/${company.whatsapp.integrationId}`, company.whatsapp.appSecret, { read: true });
process.stdout.write(banner({ gatewayUrl: gateway.url, sandbox, siteUrl: site.url, company, webhookUrl, whatsappUrl: whatsapp.url, telegramUrl: telegram.url }) + '\n');
