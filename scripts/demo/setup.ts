import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The demo company, made through the public API as a new user would make it: an account, a
 * sample help centre (its documents in web/dashboard/sample-help-centre), a built-in agent answering from it, a
 * helpdesk integration on the Chat2Desk sandbox with its webhook registered and the
 * sandbox's signing secret, a webchat integration for the shop page, and WhatsApp and Telegram
 * integrations on their sandboxes (the Telegram webhook registered with setWebhook at creation).
 */
export interface DemoCompany {
  email: string;
  password: string;
  agentId: number;
  knowledgeBaseId: number;
  helpdeskIntegrationId: number;
  webchatIntegrationId: number;
  /** The secret the sandbox signs its webhooks with, now the integration's. */
  webhookSecret: string;
  whatsapp: { integrationId: number; appSecret: string; phoneNumberId: string };
  telegram: { integrationId: number; secretToken: string };
  documents: { title: string; status: string }[];
}

export interface DemoSetupOptions {
  gatewayUrl: string;
  sandbox: { url: string; token: string; signingSecret: string };
  /** The Graph API sandbox's access token and business number (the service sends there: WHATSAPP_GRAPH_URL). */
  whatsapp: { token: string; phoneNumberId: string };
  /** The Bot API sandbox's bot token (TELEGRAM_API_URL). */
  telegram: { token: string };
  /** The origin of the page that embeds the widget (its only allowed origin). */
  siteOrigin: string;
}

// The dashboard's sample help centre ("Get started" offers the same articles in one click).
const HELP_CENTRE_DIR = fileURLToPath(new URL('../../web/dashboard/sample-help-centre/', import.meta.url));

class DemoSetupError extends Error {
  override name = 'DemoSetupError';
}

function apiCaller(baseUrl: string) {
  let token: string | undefined;
  const call = async <T = any>(method: string, path: string, body?: unknown): Promise<T> => {
    const headers: Record<string, string> = {};
    if (token) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(baseUrl + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    if (!res.ok) throw new DemoSetupError(`${method} ${path} answered ${res.status}: ${text.slice(0, 500)}`);
    return (text ? JSON.parse(text) : {}) as T;
  };
  return Object.assign(call, { signIn: (t: string) => void (token = t) });
}

/** The sample help centre's documents: title from the first `# ` heading, markdown as written. */
async function helpCentreDocuments(): Promise<{ title: string; content: string }[]> {
  const files = (await readdir(HELP_CENTRE_DIR)).filter((f) => f.endsWith('.md')).sort();
  return Promise.all(
    files.map(async (f) => {
      const content = await readFile(join(HELP_CENTRE_DIR, f), 'utf8');
      return { title: /^# (.+)$/m.exec(content)?.[1]?.trim() ?? basename(f, '.md'), content };
    }),
  );
}

export async function createDemoCompany(options: DemoSetupOptions): Promise<DemoCompany> {
  const api = apiCaller(options.gatewayUrl);
  const email = 'demo@example.com';
  const password = `demo-${randomBytes(6).toString('hex')}`;
  await api('POST', '/api/auth/register', { email, password, companyName: 'Northwind Kitchen (demo)' });
  const login = await api<{ session: { access_token: string } }>('POST', '/api/auth/login', { email, password });
  api.signIn(login.session.access_token);

  // No embedding model: the help centre is searched by its words alone, with no outside call.
  const { knowledgeBase } = await api('POST', '/api/knowledge-bases', { name: 'Sample help centre', language: 'english' });
  const posted: number[] = [];
  for (const doc of await helpCentreDocuments()) {
    const { document } = await api('POST', `/api/knowledge-bases/${knowledgeBase.id}/documents`, { title: doc.title, content: doc.content, format: 'markdown' });
    posted.push(document.id);
  }
  // Documents are read in the background: the demo waits for them, so its agent answers from the first message.
  const documents: DemoCompany['documents'] = [];
  for (const id of posted) {
    for (const until = Date.now() + 60_000; ; await new Promise((r) => setTimeout(r, 100))) {
      const { document } = await api('GET', `/api/knowledge-bases/${knowledgeBase.id}/documents/${id}`);
      if (document.status !== 'processing' || Date.now() > until) {
        documents.push({ title: document.title, status: document.status });
        break;
      }
    }
  }

  // The built-in agent answers with the help centre's passage that fits (no model, no cost)
  // and hands the conversation to a colleague when none does.
  const { agent } = await api('POST', '/api/agents', { name: 'Shop assistant', model: { provider: 'builtin' }, knowledgeBaseId: knowledgeBase.id });

  const { integration: helpdesk } = await api('POST', '/api/integrations', {
    type: 'helpdesk',
    name: 'Chat2Desk sandbox',
    agentId: agent.id,
    apiUrl: options.sandbox.url,
    apiToken: options.sandbox.token,
    // A handed-off dialog goes to this operator group: the sandbox page shows the transfer.
    handoffGroupId: 1,
  });
  await api('POST', `/api/integrations/${helpdesk.id}/register-webhook`);
  // Chat2Desk signs webhooks with a secret it issues; the service is given it (step 6 of the README's guide).
  await api('PATCH', `/api/integrations/${helpdesk.id}`, { webhookSecret: options.sandbox.signingSecret });

  const { integration: webchat } = await api('POST', '/api/integrations', {
    type: 'webchat',
    name: 'Shop website',
    agentId: agent.id,
    allowedOrigins: [options.siteOrigin],
  });

  // The app secret is Meta's in real life (App settings → Basic); here the demo makes one up and signs with it.
  const appSecret = randomBytes(16).toString('hex');
  const { integration: whatsapp } = await api('POST', '/api/integrations', {
    type: 'whatsapp', name: 'WhatsApp sandbox', agentId: agent.id, phoneNumberId: options.whatsapp.phoneNumberId, accessToken: options.whatsapp.token, appSecret,
  });
  const { integration: telegram } = await api('POST', '/api/integrations', { type: 'telegram', name: 'Telegram sandbox', agentId: agent.id, botToken: options.telegram.token });

  return {
    email,
    password,
    whatsapp: { integrationId: whatsapp.id, appSecret, phoneNumberId: options.whatsapp.phoneNumberId },
    telegram: { integrationId: telegram.id, secretToken: telegram.webhookSecret },
    agentId: agent.id,
    knowledgeBaseId: knowledgeBase.id,
    helpdeskIntegrationId: helpdesk.id,
    webchatIntegrationId: webchat.id,
    webhookSecret: options.sandbox.signingSecret,
    documents,
  };
}
