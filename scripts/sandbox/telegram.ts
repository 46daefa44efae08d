import { randomBytes, randomInt } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { TELEGRAM_SECRET_RE } from '../../lib/channels/telegram/bot-api.js';
import { listen, readBody, waitForRequests, type SandboxAnswer } from './http.js';

/** A request the stand-in received (the token is in `token`, the method in `method`). */
export interface TelegramRecordedRequest {
  httpMethod: string;
  path: string;
  /** The bot token of the path (`/bot<token>/<method>`), null when the path has none. */
  token: string | null;
  /** The Bot API method (`sendMessage`, `setWebhook`, `getMe` ...). */
  method: string | null;
  headers: IncomingMessage['headers'];
  body: any;
  at: number;
}

/** A message the stand-in delivered (recorded when the request arrived, before its answer). */
export interface TelegramSentMessage {
  token: string;
  chat_id: number | string;
  text: string;
  message_id: number;
  at: number;
}

/** One setWebhook call that was accepted. */
export interface TelegramWebhookCall {
  token: string;
  url: string;
  secret_token: string | null;
  allowed_updates: unknown;
  at: number;
}

export type TelegramSandboxAnswer = SandboxAnswer;

export type TelegramSandboxHandler = (req: TelegramRecordedRequest) => TelegramSandboxAnswer | undefined;

export interface TelegramSandboxOptions {
  /** The bot tokens it knows (any other answers 401 Unauthorized); one random `<id>:<secret>` unless given. */
  tokens?: string[];
  /** Each answer is written a random time in [min, max] ms after the request (Telegram: 100–300 ms). */
  latencyMs?: [number, number];
  port?: number;
  host?: string;
}

/**
 * A local Telegram Bot API stand-in, for `npm run demo` and the tests, answering as
 * api.telegram.org does where it matters to us:
 * - `POST /bot<token>/<method>` with a JSON body; an unknown token → 401
 *   `{"ok":false,"error_code":401,"description":"Unauthorized"}`, an unknown method → 404.
 * - `sendMessage {chat_id, text}`: text of 1–4096 UTF-16 units (else 400 "Bad Request: text is
 *   empty" / "message is too long"); delivered (in `sent`, `message_id` increasing per chat)
 *   when the request arrives, answered later (`latencyMs`): a client that dies while waiting
 *   still delivered it. `inFlight()` counts sends received whose answer is not written yet.
 * - `setWebhook {url, secret_token, allowed_updates}`: recorded in `webhooks`; a secret_token
 *   outside TELEGRAM_SECRET_RE → 400. `getMe` describes the bot.
 * Faults: `answer(handler)` decides any request (like the Chat2Desk sandbox's `handle`);
 * `blockChat(id)` → 403 "Forbidden: bot was blocked by the user"; `floodOnce(s)` → the next
 * sendMessage gets 429 with `parameters.retry_after`; `failNext(n, 500|502)`. None of them
 * delivers (unless a handler says `deliver`).
 * Inbound: `update({...})` builds an Update, `deliverUpdate(url, secret, body)` posts it with
 * `X-Telegram-Bot-Api-Secret-Token` as Telegram does.
 */
export interface TelegramSandbox {
  url: string;
  /** The first known token (the one to configure). */
  token: string;
  tokens: Set<string>;
  requests: TelegramRecordedRequest[];
  sent: TelegramSentMessage[];
  webhooks: TelegramWebhookCall[];
  /** Messages delivered to one chat, in order. */
  delivered: (chatId: number | string) => TelegramSentMessage[];
  /** sendMessage requests received whose answer is not written yet. */
  inFlight: () => number;
  waitForInFlight: (count: number, timeoutMs?: number) => Promise<void>;
  waitFor: (predicate: (requests: TelegramRecordedRequest[]) => boolean, timeoutMs?: number) => Promise<void>;
  answer: (handler: TelegramSandboxHandler | null) => void;
  blockChat: (chatId: number | string) => void;
  unblockChat: (chatId: number | string) => void;
  floodOnce: (retryAfterSeconds: number) => void;
  failNext: (count: number, status?: 500 | 502) => void;
  setLatency: (latencyMs: [number, number]) => void;
  update: (u: UpdateFields) => TelegramUpdate;
  deliverUpdate: (webhookUrl: string, secret: string | null, body: unknown) => Promise<{ status: number; body: any }>;
  close: () => Promise<void>;
}

export interface UpdateFields {
  updateId: number;
  chatId: number;
  text?: string;
  firstName?: string;
  lastName?: string;
  username?: string;
  chatType?: 'private' | 'group' | 'supergroup' | 'channel';
  messageId?: number;
  /** Unix seconds (default now). */
  date?: number;
}

export type TelegramUpdate = { update_id: number; message: Record<string, unknown> };

const apiError = (status: number, description: string, parameters?: Record<string, unknown>) => ({
  status,
  body: { ok: false, error_code: status, description, ...(parameters ? { parameters } : {}) },
});

const BOT_PATH = /^\/bot([^/]+)\/([A-Za-z]+)$/;

export async function startTelegramSandbox(options: TelegramSandboxOptions = {}): Promise<TelegramSandbox> {
  const tokens = new Set(options.tokens?.length ? options.tokens : [`${randomInt(1e8, 1e9)}:${randomBytes(24).toString('base64url')}`]);
  let [minMs, maxMs] = options.latencyMs ?? [100, 300];
  const requests: TelegramRecordedRequest[] = [];
  const sent: TelegramSentMessage[] = [];
  const webhooks: TelegramWebhookCall[] = [];
  const lastMessageId = new Map<string, number>();
  const blocked = new Set<string>();
  let handler: TelegramSandboxHandler | null = null;
  let flood: number | null = null;
  let failures: { count: number; status: number } = { count: 0, status: 500 };
  let inFlight = 0;
  let nextMessageId = 1;

  const botOf = (token: string) => ({ id: Number(token.split(':')[0]) || 1, is_bot: true, first_name: 'Sandbox Bot', username: 'sandbox_bot' });
  const deliver = (token: string, body: any): TelegramSentMessage => {
    const key = String(body?.chat_id);
    const messageId = (lastMessageId.get(key) ?? 0) + 1;
    lastMessageId.set(key, messageId);
    const message = { token, chat_id: body?.chat_id, text: String(body?.text ?? ''), message_id: messageId, at: Date.now() };
    sent.push(message);
    return message;
  };
  const latency = () => minMs + Math.random() * Math.max(0, maxMs - minMs);
  const write = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    if (res.destroyed || res.writableEnded) return;
    try {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    } catch {
      // the client went away: nothing to answer
    }
  };

  /** The stand-in's own answer to one API request (sendMessage delivered here, when it arrives). */
  function route(rec: TelegramRecordedRequest): { status: number; body: unknown } {
    const token = rec.token!;
    if (!tokens.has(token)) return apiError(401, 'Unauthorized');
    const body = rec.body !== null && typeof rec.body === 'object' ? rec.body : {};
    switch (rec.method) {
      case 'getMe':
        return { status: 200, body: { ok: true, result: { ...botOf(token), can_join_groups: true, can_read_all_group_messages: false, supports_inline_queries: false } } };
      case 'setWebhook': {
        if (typeof body.url !== 'string') return apiError(400, 'Bad Request: bad webhook: URL must be provided');
        if (body.secret_token !== undefined && (typeof body.secret_token !== 'string' || !TELEGRAM_SECRET_RE.test(body.secret_token))) {
          return apiError(400, 'Bad Request: secret token contains unallowed characters');
        }
        webhooks.push({ token, url: body.url, secret_token: body.secret_token ?? null, allowed_updates: body.allowed_updates ?? null, at: Date.now() });
        return { status: 200, body: { ok: true, result: true, description: body.url ? 'Webhook was set' : 'Webhook was deleted' } };
      }
      case 'getWebhookInfo': {
        const last = webhooks.filter((w) => w.token === token).at(-1);
        return { status: 200, body: { ok: true, result: { url: last?.url ?? '', has_custom_certificate: false, pending_update_count: 0, allowed_updates: last?.allowed_updates ?? undefined } } };
      }
      case 'sendMessage': {
        if (body.chat_id === undefined || body.chat_id === null || body.chat_id === '') return apiError(400, 'Bad Request: chat_id is empty');
        if (blocked.has(String(body.chat_id))) return apiError(403, 'Forbidden: bot was blocked by the user');
        if (flood !== null) {
          const seconds = flood;
          flood = null;
          return apiError(429, `Too Many Requests: retry after ${seconds}`, { retry_after: seconds });
        }
        if (failures.count > 0) {
          failures.count--;
          return failures.status === 502 ? apiError(502, 'Bad Gateway') : apiError(500, 'Internal Server Error');
        }
        if (typeof body.text !== 'string' || body.text.trim() === '') return apiError(400, 'Bad Request: text is empty');
        if (body.text.length > 4096) return apiError(400, 'Bad Request: message is too long');
        const m = deliver(token, body);
        const chat = typeof m.chat_id === 'number' ? { id: m.chat_id, type: m.chat_id < 0 ? 'group' : 'private' } : { id: m.chat_id, type: 'channel' };
        return { status: 200, body: { ok: true, result: { message_id: m.message_id, from: botOf(token), chat, date: Math.floor(m.at / 1000), text: m.text } } };
      }
      default:
        return apiError(404, 'Not Found');
    }
  }

  const server = createServer((req, res) => {
    // A client that goes away mid-request is no failure of the stand-in.
    handle(req, res).catch(() => res.destroy());
  });
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const u = new URL(req.url ?? '/', 'http://stub');
    const m = BOT_PATH.exec(u.pathname);
    const rec: TelegramRecordedRequest = { httpMethod: req.method ?? 'GET', path: u.pathname, token: m ? decodeURIComponent(m[1]) : null, method: m ? m[2] : null, headers: req.headers, body, at: Date.now() };
    requests.push(rec);
    const isSend = rec.method === 'sendMessage';
    if (isSend) inFlight++;
    try {
      if (!m) return write(res, 404, { ok: false, error_code: 404, description: 'Not Found' });
      const custom = handler?.(rec);
      if (custom?.deliver && isSend && rec.token && tokens.has(rec.token)) deliver(rec.token, body);
      const answer = custom ?? route(rec);
      await new Promise((r) => setTimeout(r, custom?.delayMs ?? latency()));
      if (custom?.raw) return custom.raw(res);
      write(res, answer.status, answer.body ?? {}, custom?.headers);
    } finally {
      if (isSend) inFlight--;
    }
  }
  const { url, close } = await listen(server, options.port, options.host);

  let nextUpdateMessageId = 1;
  const update = (f: UpdateFields): TelegramUpdate => {
    const type = f.chatType ?? 'private';
    const person = { first_name: f.firstName, last_name: f.lastName, username: f.username };
    const chat = type === 'private' ? { id: f.chatId, type, ...person } : { id: f.chatId, type, title: 'Sandbox group' };
    const from = type === 'channel' ? undefined : { id: type === 'private' ? f.chatId : 1000 + f.updateId, is_bot: false, ...person, language_code: 'en' };
    const message = JSON.parse(JSON.stringify({ message_id: f.messageId ?? nextUpdateMessageId++, from, chat, date: f.date ?? Math.floor(Date.now() / 1000), text: f.text }));
    return { update_id: f.updateId, message };
  };

  async function deliverUpdate(webhookUrl: string, secret: string | null, body: unknown): Promise<{ status: number; body: any }> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (secret !== null) headers['x-telegram-bot-api-secret-token'] = secret;
    const res = await fetch(webhookUrl, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
    const text = await res.text();
    try {
      return { status: res.status, body: JSON.parse(text) };
    } catch {
      return { status: res.status, body: text };
    }
  }

  return {
    url,
    token: [...tokens][0],
    tokens,
    requests,
    sent,
    webhooks,
    delivered: (chatId) => sent.filter((s) => String(s.chat_id) === String(chatId)),
    inFlight: () => inFlight,
    waitForInFlight: async (count, timeoutMs = 10_000) => {
      const deadline = Date.now() + timeoutMs;
      while (inFlight < count) {
        if (Date.now() > deadline) throw new Error(`telegram sandbox: ${inFlight} sends in flight, not ${count}, within ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    waitFor: (predicate, timeoutMs = 10_000) => waitForRequests('telegram sandbox', requests, predicate, timeoutMs),
    answer: (h) => {
      handler = h;
    },
    blockChat: (chatId) => void blocked.add(String(chatId)),
    unblockChat: (chatId) => void blocked.delete(String(chatId)),
    floodOnce: (seconds) => {
      flood = seconds;
    },
    failNext: (count, status = 500) => {
      failures = { count, status };
    },
    setLatency: (l) => {
      [minMs, maxMs] = l;
    },
    update,
    deliverUpdate,
    close,
  };
}
