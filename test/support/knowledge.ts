import type { ApiClient } from './service.js';

/** Polls a document until it is no longer `processing`; returns it (ready or failed). */
export async function waitForDocument(api: ApiClient, token: string, kbId: number, docId: number, timeoutMs = 20_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await api('GET', `/api/knowledge-bases/${kbId}/documents/${docId}`, { token });
    if (res.status !== 200) throw new Error(`document ${docId}: HTTP ${res.status} ${JSON.stringify(res.body)}`);
    if (res.body.document.status !== 'processing') return res.body.document;
    if (Date.now() > deadline) throw new Error(`document ${docId} still processing after ${timeoutMs} ms (progress ${res.body.document.progress})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Adds a document (JSON `{title, content, format?}` or `{url}`) and waits until it has been
 * read: every document is read in the background (the answer is always `processing`).
 * Returns the document once `ready`; throws when it is refused or ends `failed`.
 */
export async function addDocument(api: ApiClient, token: string, kbId: number, body: Record<string, unknown>, timeoutMs = 20_000): Promise<any> {
  const res = await api('POST', `/api/knowledge-bases/${kbId}/documents`, { token, body });
  return readyDocument(api, token, kbId, res, timeoutMs);
}

/** Uploads a file as a document and waits until it is `ready` (as addDocument). */
export async function addUpload(api: ApiClient, token: string, kbId: number, file: { name: string; type?: string; bytes: Buffer | string }, fields: Record<string, string> = {}): Promise<any> {
  return readyDocument(api, token, kbId, await upload(api, token, kbId, file, fields));
}

async function readyDocument(api: ApiClient, token: string, kbId: number, res: { status: number; body: any }, timeoutMs = 20_000): Promise<any> {
  if (res.status !== 201) throw new Error(`add document: HTTP ${res.status} ${JSON.stringify(res.body)}`);
  const doc = await waitForDocument(api, token, kbId, res.body.document.id, timeoutMs);
  if (doc.status !== 'ready') throw new Error(`document ${doc.id} ${doc.status}: ${doc.error}`);
  return doc;
}

/** A multipart/form-data body with one file (and optional fields). */
export function multipart(file: { name: string; type?: string; bytes: Buffer | string }, fields: Record<string, string> = {}): { body: Buffer; contentType: string } {
  const boundary = `----mas${Math.random().toString(16).slice(2)}`;
  const parts: Buffer[] = [];
  for (const [k, v] of Object.entries(fields)) parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`));
  parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${file.name}"\r\nContent-Type: ${file.type ?? 'application/octet-stream'}\r\n\r\n`));
  parts.push(Buffer.isBuffer(file.bytes) ? file.bytes : Buffer.from(file.bytes));
  parts.push(Buffer.from(`\r\n--${boundary}--\r\n`));
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}

/** Uploads a file as a document. */
export function upload(api: ApiClient, token: string, kbId: number, file: { name: string; type?: string; bytes: Buffer | string }, fields: Record<string, string> = {}) {
  const { body, contentType } = multipart(file, fields);
  return api('POST', `/api/knowledge-bases/${kbId}/documents`, { token, rawBody: body, headers: { 'content-type': contentType } });
}
