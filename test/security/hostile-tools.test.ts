import t from 'tap';
import { startActionApiStub } from '../support/action-api-stub.js';
import { startMcpStub } from '../support/mcp-stub.js';
import { startOpenAiStub } from '../support/openai-stub.js';
import { signUp, startTestService } from '../support/service.js';
import { sql } from '../support/worker.js';

/**
 * A hostile tenant's tools against the gateway (contract.md § Tools that cannot be turned
 * against us), as the review that found them tried them: each request that held the gateway's
 * event loop for seconds, now answered while /healthz keeps answering within 50 ms. Run alone
 * (.taprc serial): the 50 ms are the gateway's, not the other test files'.
 */
const svc = await startTestService(t, 'hostile_tools_api');
const owner = await signUp(svc.api, 'Hostile Co');
const { token } = owner;
const shop = await startActionApiStub(t);
const llm = await startOpenAiStub(t);
const mcp = await startMcpStub(t, { hostileSchemas: true });
const agent = (await svc.api('POST', '/api/agents', { token, body: { name: 'Tools', model: { provider: 'openai', name: 'gpt-4o', baseUrl: llm.baseUrl, apiKey: 'sk-test' } } })).body.agent;
const actions = `/api/agents/${agent.id}/actions`;
const HEALTHZ_MS = 50;

async function addAction(body: Record<string, unknown>) {
  const res = await svc.api('POST', actions, { token, body });
  if (res.status !== 201) throw new Error(`action: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.action;
}

/**
 * The slowest /healthz answer while `work` runs, asked every 10 ms, and the work's result.
 * Each answer is timed from when its request was due: the gateway runs in this process, so a
 * held event loop delays the asking too, and would otherwise go unseen.
 */
async function healthzWhile<T>(work: Promise<T>): Promise<{ slowestMs: number; result: T }> {
  let done = false;
  let slowestMs = 0;
  const polling = (async () => {
    let due = performance.now();
    while (!done) {
      await fetch(`${svc.url}/healthz`).then((r) => r.arrayBuffer());
      slowestMs = Math.max(slowestMs, performance.now() - due);
      due = performance.now() + 10;
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  let result: T;
  try {
    result = await work;
  } finally {
    done = true;
    // The poll that was waiting when the work ended counts too.
    await polling;
  }
  return { slowestMs, result };
}

t.test('uniqueItems over 16,000 objects (181 KB): refused at once as too large, /healthz unhurt', async (t) => {
  const tags = await addAction({
    name: 'tag_order', description: 'Tags an order',
    parameters: { type: 'object', properties: { tags: { type: 'array', uniqueItems: true, items: { type: 'object' } } } },
    request: { method: 'GET', url: `${shop.url}/tags` },
  });
  const huge = { arguments: { tags: Array.from({ length: 16_000 }, (_, i) => ({ t: i })) } };
  const { slowestMs, result } = await healthzWhile(svc.api('POST', `${actions}/${tags.id}/try`, { token, body: huge }));
  t.match(result, { status: 400, body: { error: { code: 'VALIDATION_ERROR', details: [{ field: 'arguments', message: /at most 16 KiB/ }] } } });
  t.ok(slowestMs < HEALTHZ_MS, `/healthz answered within ${slowestMs.toFixed(1)} ms (21.4 s before)`);
  t.equal(shop.requests.length, 0, 'nothing was sent');
});

t.test('the costliest schemas and arguments we could build, checked by two requests at once for 3 s: /healthz within 50 ms', async (t) => {
  // Each within the policy, near its bounds; arguments of up to 16 KiB that pass every check but the last.
  const P = '^(a|aa)+$';
  const runs = (i: number) => 'a'.repeat(1 + (i % 30));
  const worst = [
    {
      parameters: { type: 'object', properties: { list: { type: 'array', uniqueItems: true, items: { anyOf: [{ type: 'object', properties: { k: { type: 'string', pattern: P }, i: { type: 'integer' } } }, { type: 'integer' }, { type: 'string' }] } } } },
      args: { list: [...Array.from({ length: 480 }, (_, i) => ({ k: runs(i), i })), true] },
    },
    {
      parameters: { type: 'object', properties: { text: { type: 'string', pattern: '^([a-z]+ ?)*$', maxLength: 100000 } }, patternProperties: { '^x(a|aa)+[0-9]*$': { type: 'integer' } } },
      args: { text: 'abc '.repeat(200), ...Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`x${runs(i)}${i}`, i])), xa: 'not a number' },
    },
    {
      parameters: { type: 'object', properties: { rows: { type: 'array', maxItems: 500, items: { type: 'array', maxItems: 4, uniqueItems: true, items: { enum: Array.from({ length: 3 }, (_, i) => ({ v: [i, i] })) } } } } },
      args: { rows: Array.from({ length: 400 }, () => [{ v: [2, 2] }, { v: [1, 1] }, { v: [0, 0] }]).concat([[{ v: [1, 1] }, { v: [3, 3] }]]) },
    },
  ];
  const made: { id: number; args: unknown }[] = [];
  for (const [i, w] of worst.entries()) {
    made.push({ id: (await addAction({ name: `worst_${i}`, description: 'x', parameters: w.parameters, request: { method: 'GET', url: `${shop.url}/w` } })).id, args: w.args });
    t.ok(JSON.stringify(w.args).length <= 16 * 1024, `arguments ${i} are ${JSON.stringify(w.args).length} bytes`);
  }
  const statuses = new Map<number, number>();
  const until = Date.now() + 3000;
  const loops = Array.from({ length: 2 }, async (_, i) => {
    for (let n = i; Date.now() < until; n++) {
      const { id, args } = made[n % made.length]!;
      const res = await svc.api('POST', `${actions}/${id}/try`, { token, body: { arguments: args } });
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    }
  });
  const { slowestMs } = await healthzWhile(Promise.all(loops));
  t.same([...statuses.keys()], [400], `every request answered 400: its last argument is wrong (${statuses.get(400)} requests)`);
  t.ok(slowestMs < HEALTHZ_MS, `/healthz answered within ${slowestMs.toFixed(1)} ms`);
  t.equal(shop.requests.length, 0, 'nothing was sent');
});

t.test("an MCP tool whose pattern backtracks, called in an evaluation with 28 a's and a \"!\": the gateway is not held", async (t) => {
  const server = await svc.api('POST', `/api/agents/${agent.id}/mcp-servers`, { token, body: { name: 'records', url: mcp.url } });
  t.equal(server.status, 201, JSON.stringify(server.body));
  llm.respond((req) => {
    const called = (req.body.messages as { role: string }[]).some((m) => m.role === 'tool');
    return { delayMs: 200, ...(called ? { content: 'No record.' } : { toolCalls: [{ name: 'records__find_code', arguments: JSON.stringify({ code: `${'a'.repeat(28)}!` }) }] }) };
  });
  // Once first: what is measured is the check, not the first use of the MCP client in this process.
  t.equal((await svc.api('POST', `/api/agents/${agent.id}/evaluations`, { token, body: { cases: [{ question: 'Find record a', expect: [] }] } })).status, 201);
  const evaluation = svc.api('POST', `/api/agents/${agent.id}/evaluations`, { token, body: { cases: [{ question: 'Find record aaaa', expect: [] }, { question: 'Find record aaab', expect: [] }] } });
  const { slowestMs, result } = await healthzWhile(evaluation);
  t.equal(result.status, 201, JSON.stringify(result.body).slice(0, 300));
  const told = llm.requests.flatMap((r) => (r.body.messages as { role: string; content: string }[]).filter((m) => m.role === 'tool').map((m) => m.content));
  t.match(told, Array(3).fill(/invalid arguments: arguments\.code must match pattern/), 'the model was told its arguments do not match');
  t.ok(slowestMs < HEALTHZ_MS, `/healthz answered within ${slowestMs.toFixed(1)} ms (4.6 s before)`);
  t.equal(mcp.calls.length, 0, 'the MCP server got no call');

  // A tool listed before the policy, with a schema it refuses: shown as refused until the server is checked again.
  const old = [{ name: 'legacy', description: 'x', idempotent: true, inputSchema: { type: 'object', properties: { code: { type: 'string', pattern: '(?=x)' } } } }];
  await sql(svc.orm, 'update agent_mcp_servers set tools = ? where id = ?', [JSON.stringify(old), server.body.mcpServer.id]);
  const shown = await svc.api('GET', `/api/agents/${agent.id}/mcp-servers/${server.body.mcpServer.id}`, { token });
  t.match(shown.body.mcpServer.tools, [{ name: 'legacy', refused: /^"pattern" at \/properties\/code .*lookahead/ }]);
});

t.test('a plain pattern is accepted; a header value HTTP cannot carry is refused at once', async (t) => {
  const digits = await svc.api('POST', actions, {
    token, body: { name: 'by_number', description: 'x', parameters: { type: 'object', properties: { orderId: { type: 'string', pattern: '^[0-9]+$' } } }, request: { method: 'GET', url: `${shop.url}/o/{orderId}` } },
  });
  t.equal(digits.status, 201, `pattern "^[0-9]+$" is accepted (it was refused with 400): ${JSON.stringify(digits.body)}`);
  for (const [value, what] of [['a\u2028b', 'U+2028'], ['snow☃man', 'U+2603'], ['smile \u{1F600}', 'U+1F600']]) {
    const res = await svc.api('PATCH', `${actions}/${digits.body.action.id}`, { token, body: { request: { headers: { 'X-Key': value } } } });
    t.match(res, { status: 400, body: { error: { details: [{ field: 'request.headers.X-Key', message: /character HTTP does not allow/ }] } } }, `a value with ${what}`);
  }
  const server = await svc.api('POST', `/api/agents/${agent.id}/mcp-servers`, { token, body: { name: 'other', url: mcp.url, headers: { Authorization: 'Bearer \u2028x' } } });
  t.match(server, { status: 400, body: { error: { details: [{ field: 'headers.Authorization', message: /character HTTP does not allow/ }] } } }, 'an MCP server\'s headers too');
  t.equal((await svc.api('PATCH', `${actions}/${digits.body.action.id}`, { token, body: { request: { headers: { 'X-Key': 'plain ascii, tab\tand Latin-1 é' } } } })).status, 200, 'what a header can carry is accepted');
});

t.test('a secret argument the API echoes is masked in what a try shows', async (t) => {
  shop.answer('POST', '/verify', (r) => ({ body: { ok: true, echo: JSON.parse(r.body) } }));
  const verify = await addAction({
    name: 'verify_pin', description: 'x', parameters: { type: 'object', properties: { pin: { type: 'string', writeOnly: true }, note: { type: 'string' } } }, request: { method: 'POST', url: `${shop.url}/verify` },
  });
  const res = await svc.api('POST', `${actions}/${verify.id}/try`, { token, body: { arguments: { pin: '55-0912-77', note: 'pin 55-0912-77' } } });
  t.equal(res.status, 200);
  t.same(res.body.result, { status: 200, body: { ok: true, echo: { pin: '[redacted]', note: 'pin [redacted]' } } });
});
