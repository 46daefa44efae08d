import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A listening sandbox server: its base URL, and a close that ends open connections too. */
export interface ListeningServer {
  url: string;
  close: () => Promise<void>;
}

/** Listens on `port` (0: any free one) of `host` (loopback unless told). */
export async function listen(server: Server, port = 0, host = '127.0.0.1'): Promise<ListeningServer> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${(server.address() as AddressInfo).port}`;
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return { url, close };
}

/** A request body: parsed JSON, the raw text when it is not JSON, null when empty. */
export async function readBody(req: IncomingMessage): Promise<any> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const raw = Buffer.concat(chunks).toString('utf8');
  try {
    return raw ? JSON.parse(raw) : null;
  } catch {
    return raw;
  }
}

/** Text made safe inside HTML (element content and quoted attributes). */
export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * Resolves once `predicate` holds for the requests a stand-in recorded, checked every 25 ms;
 * after `timeoutMs` rejects with the stand-in's `name` and how many requests it saw.
 */
export async function waitForRequests<R>(name: string, requests: R[], predicate: (requests: R[]) => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate(requests)) {
    if (Date.now() > deadline) throw new Error(`${name}: condition not met within ${timeoutMs} ms (${requests.length} requests recorded)`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** An answer a test chooses for one request of a sandbox instead of the sandbox's own (Chat2Desk, WhatsApp, Telegram). */
export interface SandboxAnswer {
  status: number;
  body?: unknown;
  /** Extra response headers, e.g. `Retry-After` with a 429. */
  headers?: Record<string, string>;
  delayMs?: number;
  /** Writes the answer itself (e.g. cuts the connection). */
  raw?: (res: ServerResponse) => void;
  /** The send is carried out (the message delivered) although the answer says what it says: the platform did its job, only the answer goes wrong. */
  deliver?: boolean;
}
