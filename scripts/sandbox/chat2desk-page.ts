import type { HistoryMessage, RecordedRequest, RegisteredWebhook } from './chat2desk.js';
import { escapeHtml } from './http.js';

/** What the sandbox's page shows: its state, as the sandbox keeps it. */
export interface SandboxState {
  webhooks: readonly RegisteredWebhook[];
  history: readonly HistoryMessage[];
  requests: readonly RecordedRequest[];
}

function table(caption: string, head: string[], rows: string[][], empty: string): string {
  if (!rows.length) return `<h2>${caption}</h2><p class="muted">${empty}</p>`;
  const th = head.map((h) => `<th>${h}</th>`).join('');
  const tr = rows.map((r) => `<tr>${r.map((c) => `<td>${escapeHtml(c)}</td>`).join('')}</tr>`).join('\n');
  return `<h2>${caption}</h2><table><thead><tr>${th}</tr></thead><tbody>${tr}</tbody></table>`;
}

/** What the service asked of the helpdesk besides sending: transfers to operators and closed dialogs. */
function helpdeskActions(requests: readonly RecordedRequest[]): string[][] {
  const rows: string[][] = [];
  for (const r of requests) {
    const at = new Date(r.at).toISOString().slice(11, 19);
    const transfer = /^\/v1\/messages\/([^/]+)\/transfer(_to_group)?$/.exec(r.path);
    if (r.method === 'GET' && transfer) {
      const to = transfer[2] ? `group ${r.query.get('group_id') ?? '?'}` : `operator ${r.query.get('operator_id') ?? '(any)'}`;
      rows.push([at, `dialog of message ${transfer[1]} transferred to ${to}`]);
    }
    const dialog = /^\/v1\/dialogs\/(\d+)$/.exec(r.path);
    if (r.method === 'PUT' && dialog) rows.push([at, `dialog ${dialog[1]} set to ${JSON.stringify(r.body?.state ?? r.body)}`]);
  }
  return rows.reverse();
}

/**
 * The sandbox's own page: what a Chat2Desk account would show of the service's work (the
 * replies its customers received, newest first), refreshed every 2 s.
 */
export function sandboxPage(state: SandboxState): string {
  const delivered = [...state.history].reverse().map((m) => [m.created, String(m.client_id), m.text]);
  const hooks = state.webhooks.map((w) => [String(w.id), w.url, (w.events ?? []).join(', '), w.status ?? '']);
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="2">
<title>Chat2Desk sandbox</title>
<style>body{font-family:sans-serif;margin:2rem;max-width:60rem}table{border-collapse:collapse;width:100%}td,th{border:1px solid #ccc;padding:.3rem .5rem;text-align:left;vertical-align:top}.muted{color:#666}</style>
</head><body><h1>Chat2Desk sandbox</h1>
<p class="muted">A local stand-in for the Chat2Desk API v1 (<code>GET /v1/messages?client_id=…</code> lists the same messages with the API token). This page refreshes every 2 s.</p>
${table('Messages delivered to customers', ['created', 'client_id', 'text'], delivered, 'None yet: send a customer message to the service.')}
${table('Transfers and dialogs', ['at', 'what'], helpdeskActions(state.requests), 'None yet.')}
${table('Webhooks registered', ['id', 'url', 'events', 'status'], hooks, 'None: the service registers its webhook with POST /api/integrations/:id/register-webhook.')}
</body></html>`;
}
