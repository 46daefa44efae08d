// An agent's own tools in the dashboard (#/agents/<id>, contract.md § Agent actions), in
// Chromium against the real service: an action made through its form (what the API refuses
// said at its field), tried against a stand-in of the company's API, edited with its stored
// header kept, deleted; MCP servers added against a stand-in MCP server, connected with their
// tools or failed with why; and the calls the agent made, in words, in a conversation's log
// and on the agent's Tool calls list.
import t, { type Test } from 'tap';
import type { Locator, Page } from 'playwright-core';
import { startActionApiStub } from '../support/action-api-stub.js';
import { launchBrowser, shot, signedInPage } from '../support/browser.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { startMcpStub } from '../support/mcp-stub.js';
import { startRepeatingModel } from '../support/repeating-model.js';
import { startTestService } from '../support/service.js';
import { customerWrites } from '../support/webhooks.js';
import { createHelpdeskIntegration, eventually, sql, startTestWorker, untilIdle } from '../support/worker.js';

const svc = await startTestService(t, 'web_actions');
const { api } = svc;
const shopApi = await startActionApiStub(t);
const MCP_KEY = 'Bearer mcp-key-7f3a';
const mcp = await startMcpStub(t, { requiredHeaders: { authorization: MCP_KEY } });
const browser = await launchBrowser(t);

/** The message shown under a control for the API's complaint about it. */
async function fieldError(control: Locator): Promise<string> {
  await control.and(control.page().locator('[aria-invalid="true"]')).waitFor();
  const ids = (await control.getAttribute('aria-describedby'))!.split(' ');
  return (await control.page().locator(`#${ids.at(-1)}`).textContent()) ?? '';
}

const said = (scope: Page | Locator, text: string) => scope.getByRole('status').getByText(text, { exact: true }).waitFor();

/** A company signed in on its agent's page (reached from the Agents list). */
async function agentPage(t: Test, company: string) {
  const signed = await signedInPage(t, browser, svc, company);
  const created = await api('POST', '/api/agents', { token: signed.token, body: { name: 'Shop bot' } });
  t.equal(created.status, 201);
  const agentId = created.body.agent.id as number;
  await signed.page.goto(`${svc.url}/#/agents`);
  await signed.page.getByRole('link', { name: 'Actions and tools of Shop bot' }).click();
  await signed.page.getByRole('heading', { level: 1, name: 'Actions and tools of Shop bot' }).waitFor();
  return { ...signed, agentId };
}

t.test('an action: made through the form, refused at its field, tried, edited with its header kept, deleted', async (t) => {
  const { page, problems, token, agentId } = await agentPage(t, 'Actions Co');
  const section = page.getByRole('region', { name: 'Actions', exact: true });
  await section.getByText('No actions yet.', { exact: false }).waitFor();
  const form = section.getByRole('form', { name: 'New action' });
  t.equal(await form.getByLabel('Safe to repeat (idempotent)').isChecked(), true, 'GET: safe to repeat by default');
  t.equal(await form.getByLabel('Body').inputValue(), 'none', 'GET: no body by default');

  await form.getByLabel('Name', { exact: true }).fill('get_order');
  await form.getByLabel('Description').fill('Looks up an order by its number: status and delivery date.');
  await form.getByLabel('URL').fill(`${shopApi.url}/orders/{order}`);
  await form.getByLabel('Parameters (JSON Schema)').fill('{\n  "type": "object",\n  "properties": {\n    "orderId": {"type": "string"},\n  }\n}');
  t.match(await form.getByText(/^It is not valid JSON/).textContent(), /line 5, column 3/, 'the parse error says where, as it is typed');
  await form.getByRole('button', { name: 'Add header' }).click();
  await form.getByLabel('Header 1 name').fill('Authorization');
  await form.getByLabel('Header 1 value').fill('Bearer shop-key-1');
  await form.getByRole('button', { name: 'Create action' }).click();
  t.match(await fieldError(form.getByLabel('Parameters (JSON Schema)')), /^Is not valid JSON at line 5, column 3/, 'bad JSON stops at its field, before the API');

  const schema = { type: 'object', required: ['orderId'], properties: { orderId: { type: 'string', description: 'The order number' } } };
  await form.getByLabel('Parameters (JSON Schema)').fill(JSON.stringify(schema, null, 2));
  t.equal(await form.getByText('Parameters: orderId (string, required).').count(), 1, 'the parameters in words');
  await form.getByRole('button', { name: 'Create action' }).click();
  t.equal(
    await fieldError(form.getByLabel('URL')),
    'Has the placeholder {order}, which is not one of the parameters nor one the service fills ({customer.id}, {customer.channel}, {conversation.id}, {customer.email}).',
    "the API's 400 at the URL field",
  );
  t.match(await form.getByRole('alert').textContent(), /^Please check URL: /, 'the summary names the field by its label');
  await shot(page, 'agent-actions-errors');

  await form.getByLabel('URL').fill(`${shopApi.url}/orders/{orderId}`);
  await form.getByRole('button', { name: 'Create action' }).click();
  await said(form, 'Action “get_order” created.');
  t.equal(await form.getByLabel('URL').getAttribute('aria-invalid'), null, 'the complaint is gone');
  let [action] = (await api('GET', `/api/agents/${agentId}/actions`, { token })).body.actions;
  t.match(action, { name: 'get_order', parameters: schema, request: { method: 'GET', url: `${shopApi.url}/orders/{orderId}`, headers: { Authorization: '********' }, body: 'none', idempotent: true }, timeoutMs: 10000 });
  const row = section.getByRole('row').filter({ hasText: 'get_order' });
  t.match(await row.textContent(), /GET http:\/\/127\.0\.0\.1:\d+\/orders\/\{orderId\}.*Safe to repeat.*10000 ms/);

  // Try it: sample arguments from the schema, then what the model would get.
  shopApi.answer('GET', '/orders/A-1001', { status: 200, body: { orderId: 'A-1001', status: 'shipped', eta: '2026-03-02' } });
  await section.getByRole('button', { name: 'Try it: get_order' }).click();
  const tryForm = section.getByRole('form', { name: 'Try get_order' });
  const args = tryForm.getByLabel('Arguments (JSON)');
  t.same(JSON.parse(await args.inputValue()), { orderId: '' }, 'prefilled from the schema');
  const before = shopApi.requests.length;
  await args.fill('{"orderId": 1001}');
  await tryForm.getByRole('button', { name: 'Call the API' }).click();
  t.equal(await fieldError(args), 'The argument “orderId” must be string.', 'a 400 names the argument, at the arguments');
  t.equal(shopApi.requests.length, before, 'no request made with bad arguments');
  await args.fill('{"orderId": "A-1001"}');
  await tryForm.getByRole('button', { name: 'Call the API' }).click();
  const outcome = tryForm.locator('.try-outcome');
  await outcome.getByText('OK', { exact: true }).waitFor();
  t.match(await outcome.textContent(), /^OK200 OK\d+ ms$/, 'the status word, the HTTP status and the time');
  t.same(JSON.parse((await tryForm.getByLabel('What the model would get').textContent())!), { status: 200, body: { orderId: 'A-1001', status: 'shipped', eta: '2026-03-02' } });
  t.match(shopApi.requests.at(-1), { method: 'GET', path: '/orders/A-1001', headers: { authorization: 'Bearer shop-key-1' } }, 'the stored header sent');
  await shot(page, 'agent-actions-try');

  shopApi.answer('GET', '/orders/A-404', { status: 404, body: { error: 'no such order' } });
  await args.fill('{"orderId": "A-404"}');
  await tryForm.getByRole('button', { name: 'Call the API' }).click();
  await outcome.getByText('404 Not Found').waitFor();
  t.equal(await outcome.locator('.badge').textContent(), 'Failed');
  t.same(JSON.parse((await tryForm.getByLabel('What the model would get').textContent())!), { status: 404, body: { error: 'no such order' } });
  await tryForm.getByRole('button', { name: 'Close' }).click();
  t.equal(await tryForm.count(), 0);

  // Edit: the stored header shows masked and is kept; the timeout changes.
  await section.getByRole('button', { name: 'Edit get_order' }).click();
  const edit = section.getByRole('form', { name: 'Edit action “get_order”' });
  t.equal(await edit.getByLabel('Header 1 value').inputValue(), '********', 'the stored value, masked');
  t.equal(await edit.getByLabel('Header 1 name').inputValue(), 'Authorization');
  await edit.getByLabel('Timeout (milliseconds)').fill('5000');
  await edit.getByLabel('Description').fill('Looks up an order: status and delivery date.');
  await edit.getByRole('button', { name: 'Save action' }).click();
  await said(section, 'Action “get_order” saved.');
  [action] = (await api('GET', `/api/agents/${agentId}/actions`, { token })).body.actions;
  t.match(action, { timeoutMs: 5000, description: 'Looks up an order: status and delivery date.', request: { headers: { Authorization: '********' } } });
  await section.getByRole('button', { name: 'Try it: get_order' }).click();
  await tryForm.getByLabel('Arguments (JSON)').fill('{"orderId": "A-1001"}');
  await tryForm.getByRole('button', { name: 'Call the API' }).click();
  await outcome.getByText('200 OK').waitFor();
  t.equal(shopApi.requests.at(-1)!.headers.authorization, 'Bearer shop-key-1', 'the header kept through the edit');

  // POST: a JSON body and "may change data" unless told otherwise.
  const next = section.getByRole('form', { name: 'New action' });
  await next.getByLabel('Method').selectOption('POST');
  t.equal(await next.getByLabel('Body').inputValue(), 'json', 'the body follows the method');
  t.equal(await next.getByLabel('Safe to repeat (idempotent)').isChecked(), false, 'POST is not safe to repeat by default');
  await next.getByLabel('Name', { exact: true }).fill('create_ticket');
  await next.getByLabel('Description').fill('Opens a support ticket.');
  await next.getByLabel('URL').fill(`${shopApi.url}/tickets`);
  await next.getByLabel('Parameters (JSON Schema)').fill('{"type": "object", "properties": {"subject": {"type": "string"}}}');
  await next.getByRole('button', { name: 'Create action' }).click();
  await said(next, 'Action “create_ticket” created.');
  t.match(await section.getByRole('row').filter({ hasText: 'create_ticket' }).textContent(), /POST .*May change data/);
  await next.getByLabel('Name', { exact: true }).fill('get_order');
  await next.getByLabel('Description').fill('Another one.');
  await next.getByLabel('URL').fill(`${shopApi.url}/x`);
  await next.getByRole('button', { name: 'Create action' }).click();
  t.equal(await fieldError(next.getByLabel('Name', { exact: true })), 'Is taken by another action of this agent.', 'the 409 at the Name field');
  await shot(page, 'agent-actions');

  page.once('dialog', (d) => void d.accept());
  await section.getByRole('button', { name: 'Delete get_order' }).click();
  await said(section, 'Action “get_order” deleted.');
  t.same((await api('GET', `/api/agents/${agentId}/actions`, { token })).body.actions.map((a: { name: string }) => a.name), ['create_ticket']);
  t.same(problems, []);
});

t.test('a body template with who is asking: written in the form, refused at its field, tried as a given customer', async (t) => {
  const { page, problems, token, agentId } = await agentPage(t, 'Template Co');
  const section = page.getByRole('region', { name: 'Actions', exact: true });
  const form = section.getByRole('form', { name: 'New action' });
  t.equal(await form.getByLabel('Template (JSON)').isVisible(), false, 'no template field until a template is chosen');
  await form.getByLabel('Method').selectOption('POST');
  await form.getByLabel('Body').selectOption('template');
  const template = form.getByLabel('Template (JSON)');
  await form.getByLabel('Name', { exact: true }).fill('add_note');
  await form.getByLabel('Description').fill('Adds a note about the customer who asks.');
  await form.getByLabel('URL').fill(`${shopApi.url}/notes?conversation={conversation.id}`);
  await form.getByLabel('Parameters (JSON Schema)').fill('{"type": "object", "properties": {"text": {"type": "string"}}}');
  await template.fill('{"customer": "{customer.id}", "note": "{txt}"}');
  await form.getByRole('button', { name: 'Create action' }).click();
  t.match(await fieldError(template), /^Has the placeholder \{txt\}, which is not one of the parameters/, "the API's 400 at the template");
  await template.fill('{"customer": "{customer.id}", "via": "{customer.channel}", "note": "{text}"}');
  await form.getByRole('button', { name: 'Create action' }).click();
  await said(form, 'Action “add_note” created.');
  const [action] = (await api('GET', `/api/agents/${agentId}/actions`, { token })).body.actions;
  t.same(action.request.body, { customer: '{customer.id}', via: '{customer.channel}', note: '{text}' }, 'stored as written');

  await section.getByRole('button', { name: 'Try it: add_note' }).click();
  const tryForm = section.getByRole('form', { name: 'Try add_note' });
  await tryForm.getByLabel('Arguments (JSON)').fill('{"text": "called back"}');
  await tryForm.getByText('Who is asking').click();
  await tryForm.getByLabel('Customer id').fill('c-17');
  await tryForm.getByLabel('Channel').fill('telegram');
  await tryForm.getByLabel('Conversation id').fill('42');
  await tryForm.getByRole('button', { name: 'Call the API' }).click();
  await tryForm.locator('.try-outcome').getByText('200 OK').waitFor();
  const sent = shopApi.requests.at(-1)!;
  t.equal(sent.path, '/notes?conversation=42');
  t.same(JSON.parse(sent.body), { customer: 'c-17', via: 'telegram', note: 'called back' }, 'filled as that customer');

  await section.getByRole('button', { name: 'Edit add_note' }).click();
  const edit = section.getByRole('form', { name: 'Edit action “add_note”' });
  t.equal(await edit.getByLabel('Body').inputValue(), 'template');
  t.same(JSON.parse(await edit.getByLabel('Template (JSON)').inputValue()), action.request.body, 'the template back in its field');
  await shot(page, 'agent-actions-template');
  t.same(problems, []);
});

t.test('MCP servers: one connects and shows its tools; one fails and says why, then is mended; refreshed; deleted', async (t) => {
  const { page, problems, token, agentId } = await agentPage(t, 'MCP Co');
  const section = page.getByRole('region', { name: 'MCP servers' });
  const form = section.getByRole('form', { name: 'New MCP server' });
  await form.getByLabel('Name', { exact: true }).fill('crm');
  await form.getByLabel('URL').fill(mcp.url);
  await form.getByRole('button', { name: 'Add header' }).click();
  await form.getByLabel('Header 1 name').fill('Authorization');
  await form.getByLabel('Header 1 value').fill(MCP_KEY);
  await form.getByRole('button', { name: 'Add and connect' }).click();
  await said(form, 'MCP server “crm” added: connected, 3 tools.');
  const crm = section.getByRole('article', { name: 'crm', exact: true });
  t.equal(await crm.locator('.badge').textContent(), 'Connected');
  const tools = crm.getByRole('table', { name: 'Tools of crm' });
  const toolRow = (name: string) => tools.getByRole('row').filter({ has: page.getByText(name, { exact: true }) });
  t.match(await toolRow('order_status').textContent(), /order_status.*crm__order_status.*Safe to repeat/);
  t.match(await toolRow('create_ticket').textContent(), /create_ticket.*crm__create_ticket.*May change data/, 'a tool without hints may change data');
  t.equal(await tools.getByRole('row').count(), 4, 'a header row and its three tools');
  t.match(await crm.textContent(), /Headers\s*Authorization \(values hidden\)/);
  t.notMatch(await page.content(), /mcp-key-7f3a/, 'the header value is nowhere on the page');

  // Without the header the server refuses: stored, failed, with why.
  await form.getByLabel('Name', { exact: true }).fill('crm_backup');
  await form.getByLabel('URL').fill(mcp.url);
  await form.getByRole('button', { name: 'Add and connect' }).click();
  const backup = section.getByRole('article', { name: 'crm_backup', exact: true });
  await backup.waitFor();
  const stored = (await api('GET', `/api/agents/${agentId}/mcp-servers`, { token })).body.mcpServers.find((s: { name: string }) => s.name === 'crm_backup');
  t.match(stored, { status: 'failed', lastError: /\S/ });
  t.equal(await backup.locator('.badge').textContent(), 'Failed');
  t.equal(await backup.locator('.mcp-error').textContent(), `Could not be used: ${stored.lastError}`, 'the error as the check found it');
  t.match(await form.getByRole('alert').textContent(), /^MCP server “crm_backup” added, but it could not be used: /, 'said as a problem');
  t.equal(await backup.getByRole('table').count(), 0, 'no tools listed');
  await shot(page, 'agent-mcp-servers');

  // Mended: the header added, saved, checked again.
  await backup.getByRole('button', { name: 'Edit crm_backup' }).click();
  const edit = section.getByRole('form', { name: 'Edit MCP server “crm_backup”' });
  t.equal(await edit.getByLabel('URL').inputValue(), mcp.url);
  await edit.getByRole('button', { name: 'Add header' }).click();
  await edit.getByLabel('Header 1 name').fill('Authorization');
  await edit.getByLabel('Header 1 value').fill(MCP_KEY);
  await edit.getByRole('button', { name: 'Save and reconnect' }).click();
  await said(section, 'MCP server “crm_backup” saved: connected, 3 tools.');
  t.equal(await backup.locator('.badge').textContent(), 'Connected');
  t.equal(await backup.locator('.mcp-error').count(), 0);

  const checkedBefore = (await api('GET', `/api/agents/${agentId}/mcp-servers`, { token })).body.mcpServers[0].checkedAt as string;
  await crm.getByRole('button', { name: 'Refresh crm' }).click();
  await said(crm, 'MCP server “crm” refreshed: connected, 3 tools.');
  const checkedAfter = (await api('GET', `/api/agents/${agentId}/mcp-servers`, { token })).body.mcpServers[0].checkedAt as string;
  t.ok(checkedAfter > checkedBefore, 'checked again');

  page.once('dialog', (d) => void d.accept());
  await backup.getByRole('button', { name: 'Delete crm_backup' }).click();
  await said(section, 'MCP server “crm_backup” deleted.');
  t.equal(await backup.count(), 0);
  t.same((await api('GET', `/api/agents/${agentId}/mcp-servers`, { token })).body.mcpServers.map((s: { name: string }) => s.name), ['crm']);
  t.same(problems, []);
});

t.test("tool calls: in a conversation's log in words with their arguments; on the agent's list, newest first, a page at a time", async (t) => {
  const helpdesk = await startChat2DeskStub(t);
  await startTestWorker(t, svc);
  const model = await startRepeatingModel(t);
  const { page, problems, token, companyId } = await signedInPage(t, browser, svc, 'Calls Co');
  const agentId = await model.createAgent(api, token);
  const integration = await createHelpdeskIntegration(svc, { token, companyId }, helpdesk, 'Desk', agentId);
  await customerWrites(api, integration, 'mia', 'Where is my order A-1001?');
  await untilIdle(svc);
  const conversationId = await eventually(async () => (await api('GET', '/api/conversations?clientId=mia', { token })).body.conversations?.[0]?.id as number | undefined, 20_000, 'the conversation');
  const [conv] = await sql(svc.orm, 'select state, transition_seq from conversations where id = ?', [conversationId]);

  // As the worker logs them (actors/steps.ts applyAnswer): the answer's calls, from and to the current state.
  const calls = [
    { name: 'get_order', source: 'action', args: { orderId: 'A-1001', apiKey: '[redacted]' }, status: 'ok', httpStatus: 200, ms: 112 },
    { name: 'get_order', source: 'action', args: { orderId: 1001 }, status: 'invalid_arguments', ms: 0, error: 'arguments.orderId must be string' },
    { name: 'slow_report', source: 'action', args: {}, status: 'timeout', ms: 10000, error: 'no answer within 10000 ms' },
    { name: 'internal_api', source: 'action', args: { q: 'x' }, status: 'blocked', ms: 2, error: 'the address 10.0.0.5 is not public' },
    { name: 'create_ticket', source: 'action', args: { subject: 'Late parcel' }, status: 'uncertain', ms: 0, error: 'an earlier attempt was interrupted' },
    { name: 'crm__order_status', source: 'mcp', args: { orderId: 'A-1001' }, status: 'ok', ms: 80 },
    { name: 'create_ticket', source: 'action', args: { subject: 'Late parcel' }, status: 'ok', httpStatus: 201, ms: 95, reused: true },
    { name: 'get_order', source: 'action', args: { orderId: 'A-1002' }, status: 'not_called', ms: 0, error: 'tool call limit reached' },
  ];
  for (const [i, payload] of calls.entries()) {
    await sql(
      svc.orm,
      `insert into conversation_transitions (company_id, conversation_id, seq, event, payload, from_state, to_state, actions) values (?, ?, ?, 'tool.called', ?::jsonb, ?::jsonb, ?::jsonb, '[]')`,
      [companyId, conversationId, conv.transition_seq + 1 + i, JSON.stringify(payload), JSON.stringify(conv.state), JSON.stringify(conv.state)],
    );
  }
  await sql(svc.orm, 'update conversations set transition_seq = transition_seq + ? where id = ?', [calls.length, conversationId]);

  await page.goto(`${svc.url}/#/conversations/${conversationId}`);
  const log = page.getByRole('region', { name: 'What happened' });
  await log.getByText('Called get_order — 200 OK, 112 ms').waitFor();
  const lines = async () => (await log.locator('.tool-call > span').allTextContents()).reverse();
  t.same(await lines(), [
    'Called get_order — 200 OK, 112 ms',
    'get_order was not called: invalid arguments (orderId must be string)',
    'Called slow_report — timed out after 10000 ms',
    'internal_api was blocked: address not allowed',
    'create_ticket uncertain: not repeated (an earlier attempt was interrupted and may have taken effect)',
    'Called crm__order_status — OK, 80 ms',
    'create_ticket was not called again: it had already been called for this message (201 Created)',
    'get_order was not called: tool call limit reached',
  ]);
  t.same((await log.locator('.tool-args code').allTextContents()).reverse(), ['apiKey: "[redacted]", orderId: "A-1001"', 'orderId: 1001', 'none', 'q: "x"', 'subject: "Late parcel"', 'orderId: "A-1001"', 'subject: "Late parcel"', 'orderId: "A-1002"'], 'the arguments, as the server redacted them');
  await shot(page, 'conversation-tool-calls');

  // The ledger, as lib/agents/tools/tool-calls.ts writes it: 22 calls, one a minute, the newest a test's.
  for (let i = 0; i < 22; i++) {
    const newest = i === 21;
    await sql(
      svc.orm,
      `insert into agent_tool_calls (company_id, agent_id, conversation_id, message_id, seq, source, name, args, idempotent, status, http_status, ms, error, result, called_at, finished_at)
       values (?, ?, ?, null, 1, 'action', ?, ?::jsonb, true, ?, ?, ?, ?, ?::jsonb, now() - (? * interval '1 minute'), now() - (? * interval '1 minute'))`,
      [
        companyId, agentId, newest ? null : conversationId, newest ? 'get_order' : `lookup_${i}`, JSON.stringify({ orderId: `A-${i}` }),
        newest ? 'error' : 'ok', newest ? 404 : 200, 100 + i, null, JSON.stringify({ status: newest ? 404 : 200, body: { n: i } }), 21 - i, 21 - i,
      ],
    );
  }
  await page.goto(`${svc.url}/#/agents/${agentId}`);
  const list = page.getByRole('region', { name: 'Tool calls' });
  const rows = list.locator('tbody tr');
  await rows.first().waitFor();
  t.equal(await rows.count(), 20, 'a page of 20');
  t.equal(await list.getByRole('status').filter({ hasText: 'of 22' }).textContent(), '1–20 of 22');
  t.match(await rows.nth(0).textContent(), /get_order.*Failed404 Not Found121 msA test$/s, 'the newest first: a test, without a conversation');
  t.match(await rows.nth(1).textContent(), /lookup_20.*OK200 OK120 msConversation \d+$/s);
  await rows.nth(1).getByText('Arguments and result').click();
  t.equal(await rows.nth(1).locator('.call-details code').textContent(), 'orderId: "A-20"');
  await shot(page, 'agent-tool-calls');
  await list.getByRole('button', { name: 'Next' }).click();
  await list.getByRole('status').filter({ hasText: '21–22 of 22' }).waitFor();
  t.match(await rows.nth(1).textContent(), /lookup_0Action/, 'the oldest last');
  await rows.nth(1).getByRole('link', { name: `Conversation ${conversationId}` }).click();
  await page.getByRole('region', { name: 'What happened' }).getByText('Called get_order — 200 OK, 112 ms').waitFor();
  t.same(problems, []);
});
