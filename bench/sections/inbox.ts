import { request, type IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import { hashPassword } from '../../gateway/auth/passwords.js';
import { partitionOf } from '../../lib/streams.js';
import { initialConversationSnapshot } from '../../machines/conversation.js';
import { newScenario, pgClient, RUN_ID, type Scenario } from '../lib/env.js';
import { inboxBody, QUESTIONS, signBody } from '../lib/payloads.js';
import { note, progress } from '../lib/progress.js';
import { createTenant, httpRequest, startGatewayChild, startWorkerChild, type Tenant } from '../lib/setup.js';
import { fmt, round, summarise, type LatencySummary } from '../lib/stats.js';
import type { BenchContext, Row, SectionResult } from './types.js';

/**
 * Inbox (issue #29): the team's conversation list on a big company, and the live inbox.
 *
 * 1. One company gets `--inbox-conversations` (100,000) conversations and ten times as many
 *    messages (1,000,000), seeded with plain SQL (generate_series): 70 %
 *    closed, 20 % active, 10 % paused (half of those waiting for a person), 60 % assigned
 *    among 50 operators, some labelled, 6–14 messages each written from a small shop-chat
 *    vocabulary (phrases, 60 products, 50 cities, order numbers), a lead per customer (two
 *    in three named), the measuring operator's reads of two conversations in three. Then
 *    `vacuum analyze` (what autovacuum does for such a table).
 * 2. GET /api/conversations through the real HTTP API (`npm run gateway`), as that operator:
 *    `--inbox-requests` (200) requests one after another per filter, each with its total
 *    (the page and the total are one statement), p50 / p99 against a p99 target of 100 ms.
 * 3. `--inbox-streams` (50) operators hold GET /api/conversations/events while a worker
 *    (`npm run worker`, the built-in agent) takes `--inbox-rate` (100) customer messages/s
 *    for `--inbox-duration` (20) s, sent as signed webhooks over 500 customers: for each
 *    message and each stream, the delay from the bench starting the webhook's POST to the
 *    stream's first `conversation.updated` counting that message (the stream user's
 *    `unread` of that conversation reaches it: they never read these). Target: every one
 *    within 1 s.
 */
const PHRASES = [
  'hello I have a question about my order',
  'where is my parcel it has not arrived yet',
  'can I return the item and get a refund',
  'the delivery is late again',
  'thank you for the quick answer',
  'how long does shipping take',
  'I want to change my delivery address',
  'the package arrived damaged',
  'do you have this in another colour',
  'can I pay by invoice',
  'my discount code does not work',
  'please cancel my order',
  'is it still under warranty',
  'when will it be back in stock',
  'I was charged twice',
  'we will send a replacement today',
  'your refund has been issued',
  'the courier will call you before delivery',
  'you can track it with the link in your email',
  'sorry for the trouble',
];
const PRODUCTS = [
  'kettle', 'toaster', 'blender', 'grinder', 'espresso', 'frother', 'scale', 'thermos', 'teapot', 'mug', 'jug', 'filter', 'cartridge', 'descaler',
  'tamper', 'portafilter', 'carafe', 'dripper', 'percolator', 'moka', 'capsules', 'beans', 'decanter', 'pitcher', 'spoon', 'saucer', 'tray', 'brush',
  'cleaner', 'gasket', 'valve', 'boiler', 'heater', 'lid', 'handle', 'plug', 'cable', 'adapter', 'timer', 'display', 'button', 'switch', 'pump',
  'nozzle', 'wand', 'basket', 'hopper', 'burr', 'motor', 'fan', 'sensor', 'battery', 'charger', 'stand', 'cover', 'bag', 'box', 'manual', 'voucher', 'gift',
];
const CITIES = [
  'london', 'leeds', 'york', 'bristol', 'cardiff', 'glasgow', 'dublin', 'paris', 'lyon', 'berlin', 'hamburg', 'munich', 'vienna', 'zurich', 'geneva',
  'milan', 'rome', 'turin', 'madrid', 'seville', 'lisbon', 'porto', 'amsterdam', 'utrecht', 'brussels', 'ghent', 'prague', 'warsaw', 'krakow', 'riga',
  'tallinn', 'vilnius', 'oslo', 'bergen', 'stockholm', 'malmo', 'helsinki', 'copenhagen', 'aarhus', 'athens', 'sofia', 'bucharest', 'zagreb', 'ljubljana',
  'budapest', 'bratislava', 'valletta', 'nicosia', 'reykjavik', 'luxembourg',
];

/** The list's filters measured (`{me}` / `{other}`: the measuring operator's and another operator's ids). */
const LIST_QUERIES: { name: string; query: string }[] = [
  { name: 'no filter', query: '' },
  { name: 'status=active', query: 'status=active' },
  { name: 'status=paused', query: 'status=paused' },
  { name: 'assignee=me', query: 'assignee=me' },
  { name: 'assignee=none', query: 'assignee=none' },
  { name: 'assignee=<id>', query: 'assignee={other}' },
  { name: 'needsHuman=true', query: 'needsHuman=true' },
  { name: 'label=vip', query: 'label=vip' },
  { name: 'assignee=me&status=active', query: 'assignee=me&status=active' },
  { name: 'q=kettle (a product)', query: 'q=kettle' },
  { name: 'q=leeds (a city)', query: 'q=leeds' },
  { name: 'q=kettle leeds (both in one message)', query: 'q=kettle%20leeds' },
  { name: 'q=refund&assignee=none (a common word)', query: 'q=refund&assignee=none' },
  { name: 'q=delivery (a common word)', query: 'q=delivery' },
];

const OPERATORS = 50;
const LIVE_CUSTOMERS = 500;
const LIST_TARGET_MS = 100;
const EVENT_TARGET_MS = 1_000;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

interface Seeded {
  operators: { id: string; email: string }[];
  password: string;
  conversations: number;
  messages: number;
  seconds: number;
}

/** The company's data, in bulk; the message search index is built after the messages, as a restore would. */
async function seed(s: Scenario, tenant: Tenant, conversations: number, partitions: number): Promise<Seeded> {
  const t0 = performance.now();
  const db = await pgClient(s.databaseUrl);
  const password = `bench operator ${RUN_ID}`;
  const hash = await hashPassword(password);
  const emails = Array.from({ length: OPERATORS }, (_, i) => `inbox-op${i}-${RUN_ID}@example.com`);
  const { rows: operators } = await db.query<{ id: string; email: string }>(
    `insert into users (id, email, password_hash, company_id, role, display_name)
     select gen_random_uuid(), e, $2, $1, 'operator', 'Operator ' || n from unnest($3::text[]) with ordinality as t(e, n)
     returning id, email`,
    [tenant.companyId, hash, emails],
  );
  operators.sort((a, b) => emails.indexOf(a.email) - emails.indexOf(b.email));
  progress('inbox', `seeding ${fmt(conversations)} conversations`);
  const parts = Array.from({ length: conversations }, (_, g) => partitionOf(tenant.integrationId, `i${g + 1}`, partitions));
  await db.query(
    `insert into conversations (company_id, integration_id, channel, client_id, partition, status, state, snapshot, channel_id, transport, message_seq, transition_seq,
       assignee_id, labels, last_message_role, last_message_text, customer_messages, created_at, updated_at, last_message_at, closed_at)
     select $1, $2, 'helpdesk', 'i' || g, p, x.status, x.state, jsonb_set($3::jsonb, '{value}', x.state), '17', 'telegram', x.n, x.n,
       case when g % 5 < 2 then null else ($4::uuid[])[1 + ((g / 10) % ${OPERATORS})::int] end,
       case when g % 7 = 0 then '{vip}'::text[] when g % 11 = 0 then '{delivery,refund}'::text[] else '{}'::text[] end,
       case when x.status = 'paused' and g % 20 = 9 then 'customer' else 'agent' end,
       ($5::text[])[1 + (g % ${PHRASES.length})::int], x.n / 2, x.at - interval '30 minutes', x.at, x.at, case when x.status = 'closed' then x.at end
     from unnest($6::int[]) with ordinality as t(p, g),
     lateral (select now() - g * interval '1 minute' as at, 6 + 2 * (g % 5)::int as n,
                     case when g % 10 < 7 then 'closed' when g % 10 < 9 then 'active' else 'paused' end as status,
                     case when g % 10 < 7 then '"closed"'::jsonb when g % 10 < 9 then '{"active":"idle"}'::jsonb else '{"paused":"operator"}'::jsonb end as state) x`,
    [tenant.companyId, tenant.integrationId, JSON.stringify(initialConversationSnapshot()), operators.map((o) => o.id), PHRASES, parts],
  );
  // Built afterwards, in one pass (as a restore does): 1M inserts into a GIN index one by one take minutes.
  await db.query('drop index conversation_messages_search_idx');
  let inserted = 0;
  for (let seq = 1; seq <= 14; seq++) {
    // Messages in the order of time: every conversation's seq 1, then every seq 2, …
    const r = await db.query(
      `insert into conversation_messages (company_id, conversation_id, seq, role, kind, text, delivery, created_at)
       select $1, c.id, $2::int, case when $2::int % 2 = 1 then 'customer' else 'agent' end, case when $2::int % 2 = 1 then 'message' else 'reply' end,
         ($3::text[])[1 + floor(random() * ${PHRASES.length})::int]
           || case when random() < 0.5 then ' ' || ($4::text[])[1 + floor(random() * ${PRODUCTS.length})::int] else '' end
           || case when random() < 0.3 then ' in ' || ($5::text[])[1 + floor(random() * ${CITIES.length})::int] else '' end
           || case when random() < 0.1 then ' order ' || (100000 + floor(random() * 900000)::int) else '' end,
         case when $2::int % 2 = 0 then 'sent' end, c.created_at + $2::int * interval '1 minute'
       from conversations c where c.company_id = $1 and c.message_seq >= $2::int order by c.id`,
      [tenant.companyId, seq, PHRASES, PRODUCTS, CITIES],
    );
    inserted += r.rowCount ?? 0;
    progress('inbox', `seeded ${fmt(inserted)} messages (seq ${seq} of at most 14)`);
  }
  progress('inbox', 'building the message search index');
  await db.query(`create index conversation_messages_search_idx on conversation_messages using gin (to_tsvector('simple', text))`);
  const [stage] = (
    await db.query<{ pipeline_id: number; stage_id: number }>(
      'select p.id as pipeline_id, s.id as stage_id from pipelines p join pipeline_stages s on s.pipeline_id = p.id where p.company_id = $1 order by p.is_default desc, s.position limit 1',
      [tenant.companyId],
    )
  ).rows;
  await db.query(
    `insert into leads (company_id, integration_id, client_id, pipeline_id, stage_id, name, created_at, stage_changed_at)
     select c.company_id, c.integration_id, c.client_id, $2, $3, case when c.id % 3 = 0 then null else 'Customer ' || c.id end, c.created_at, c.created_at
     from conversations c where c.company_id = $1`,
    [tenant.companyId, stage!.pipeline_id, stage!.stage_id],
  );
  await db.query(
    `insert into conversation_reads (conversation_id, user_id, company_id, customer_messages_read)
     select c.id, $2, c.company_id, c.customer_messages - (c.id % 2) from conversations c where c.company_id = $1 and c.id % 3 <> 0`,
    [tenant.companyId, operators[0]!.id],
  );
  progress('inbox', 'vacuum analyze');
  for (const table of ['conversations', 'conversation_messages', 'leads', 'conversation_reads', 'users']) await db.query(`vacuum analyze ${table}`);
  await db.end();
  return { operators, password, conversations, messages: inserted, seconds: (performance.now() - t0) / 1000 };
}

async function login(base: string, email: string, password: string): Promise<string> {
  const res = await httpRequest(`${base}/api/auth/login`, 'POST', JSON.stringify({ email, password }), { 'content-type': 'application/json' });
  if (res.status !== 200) throw new Error(`login ${email}: HTTP ${res.status} ${res.body}`);
  return (JSON.parse(res.body) as { session: { access_token: string } }).session.access_token;
}

interface ListFigure {
  name: string;
  query: string;
  total: number;
  ms: LatencySummary;
}

async function measureList(base: string, token: string, other: string, requests: number): Promise<ListFigure[]> {
  const out: ListFigure[] = [];
  const headers = { authorization: `Bearer ${token}` };
  for (const { name, query } of LIST_QUERIES) {
    const url = `${base}/api/conversations?${query.replace('{other}', other)}`;
    // Warm: the first answers of a filter read its pages from disk.
    for (let i = 0; i < 5; i++) await httpRequest(url, 'GET', undefined, headers);
    const times: number[] = [];
    let total = 0;
    for (let i = 0; i < requests; i++) {
      const t0 = performance.now();
      const res = await httpRequest(url, 'GET', undefined, headers);
      times.push(performance.now() - t0);
      if (res.status !== 200) throw new Error(`GET ${url}: HTTP ${res.status} ${res.body.slice(0, 300)}`);
      if (i === 0) total = (JSON.parse(res.body) as { total: number }).total;
    }
    const ms = summarise(times);
    out.push({ name, query, total, ms });
    progress('inbox', `list ${name}: p50 ${ms.p50.toFixed(1)} ms, p99 ${ms.p99.toFixed(1)} ms (${fmt(total)} match)`);
  }
  return out;
}

/** One GET /api/conversations/events held open: calls `onUpdate` with each conversation.updated (at its arrival). */
function openStream(base: string, token: string, onUpdate: (data: { clientId: string; unread: number }, at: number) => void): Promise<{ close: () => void }> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}/api/conversations/events`, { headers: { authorization: `Bearer ${token}` }, agent: false }, (res: IncomingMessage) => {
      if (res.statusCode !== 200) {
        reject(new Error(`events stream: HTTP ${res.statusCode}`));
        res.resume();
        return;
      }
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const at = performance.now();
        buffer += chunk;
        let cut;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          if (!block.startsWith('event: conversation.updated\n')) continue;
          onUpdate(JSON.parse(block.slice(block.indexOf('data: ') + 6)) as { clientId: string; unread: number }, at);
        }
      });
      res.on('error', () => {});
      resolve({ close: () => req.destroy() });
    });
    req.on('error', reject);
    req.end();
  });
}

interface EventFigures {
  streams: number;
  messages: number;
  expected: number;
  received: number;
  delayMs: LatencySummary;
  webhookFailures: number;
}

async function measureEvents(base: string, tenant: Tenant, tokens: string[], rate: number, seconds: number): Promise<EventFigures> {
  /** Send times of each live customer's messages, in order (their 1st, 2nd, … customer message). */
  const sent = new Map<string, number[]>();
  const delays: number[] = [];
  const streams = await Promise.all(
    tokens.map(async (token) => {
      // Per stream: how many of each customer's messages it has seen counted (its user never reads them).
      const counted = new Map<string, number>();
      return openStream(base, token, (data, at) => {
        const times = sent.get(data.clientId);
        if (!times) return;
        const before = counted.get(data.clientId) ?? 0;
        const upTo = Math.min(data.unread, times.length);
        for (let j = before; j < upTo; j++) delays.push(at - times[j]!);
        if (upTo > before) counted.set(data.clientId, upTo);
      });
    }),
  );
  const url = `${base}/api/webhook/helpdesk/${tenant.integrationId}`;
  const total = Math.round(rate * seconds);
  const interval = 1000 / rate;
  let failures = 0;
  const inflight: Promise<void>[] = [];
  const t0 = performance.now();
  for (let i = 0; i < total; i++) {
    const wait = t0 + i * interval - performance.now();
    if (wait > 1) await sleep(wait);
    const clientId = `live${i % LIVE_CUSTOMERS}`;
    const body = inboxBody(`${RUN_ID}-inbox-${i}`, clientId, `${QUESTIONS[i % QUESTIONS.length]} (#${i})`, i);
    const headers = { 'content-type': 'application/json', 'x-webhook-signature': signBody(tenant.webhookSecret, body) };
    let times = sent.get(clientId);
    if (!times) sent.set(clientId, (times = []));
    times.push(performance.now());
    inflight.push(
      httpRequest(url, 'POST', body, headers).then(
        (res) => {
          if (res.status !== 200) failures++;
        },
        () => {
          failures++;
        },
      ),
    );
    if (i % 100 === 0) progress('inbox', `events: ${i}/${total} messages sent, ${fmt(delays.length)} stream events counted`);
  }
  await Promise.all(inflight);
  const expected = total * tokens.length;
  for (const until = performance.now() + 10_000; delays.length < expected && performance.now() < until; ) await sleep(50);
  for (const s of streams) s.close();
  return { streams: tokens.length, messages: total, expected, received: delays.length, delayMs: summarise(delays), webhookFailures: failures };
}

export async function runInbox(ctx: BenchContext): Promise<SectionResult> {
  const { args, standIn } = ctx;
  const s = newScenario('inbox');
  note('inbox', `setting up (database ${s.databaseName})`);
  const gateway = await startGatewayChild(s, 'inbox-gateway', { partitions: args.partitions, profile: args.profile, nodeFlags: args.childFlags });
  const tenant = await createTenant(gateway.url, standIn);
  const seeded = await seed(s, tenant, args.inboxConversations, args.partitions);
  note('inbox', `seeded ${fmt(seeded.conversations)} conversations and ${fmt(seeded.messages)} messages in ${seeded.seconds.toFixed(0)} s`);

  const me = await login(gateway.url, seeded.operators[0]!.email, seeded.password);
  const list = await measureList(gateway.url, me, seeded.operators[1]!.id, args.inboxRequests);

  const streams = Math.min(args.inboxStreams, OPERATORS);
  const tokens = [me];
  for (const op of seeded.operators.slice(1, streams)) tokens.push(await login(gateway.url, op.email, seeded.password));
  const worker = await startWorkerChild(s, 'inbox-worker', { partitions: args.partitions, profile: args.profile, nodeFlags: args.childFlags });
  for (const until = performance.now() + 30_000; worker.acquired.length < args.partitions && performance.now() < until; ) await sleep(50);
  standIn.reset();
  const events = await measureEvents(gateway.url, tenant, tokens, args.inboxRate, args.inboxDuration);
  note('inbox', `events: ${fmt(events.received)} of ${fmt(events.expected)} stream events; delay p50 ${events.delayMs.p50.toFixed(0)} ms, p99 ${events.delayMs.p99.toFixed(0)} ms, max ${events.delayMs.max.toFixed(0)} ms`);
  await worker.stop();
  await gateway.stop();
  await s.dispose();

  const rows: Row[] = [
    { section: 'inbox', metric: `seeded: conversations / messages (${seeded.seconds.toFixed(0)} s)`, value: `${fmt(seeded.conversations)} / ${fmt(seeded.messages)}` },
  ];
  for (const f of list) {
    rows.push({
      section: 'inbox',
      metric: `list ${f.name} (${fmt(f.total)} match) p50 / p99`,
      value: `${fmt(f.ms.p50, 1)} / ${fmt(f.ms.p99, 1)} ms`,
      target: `p99 ≤ ${LIST_TARGET_MS} ms`,
      ok: f.ms.p99 <= LIST_TARGET_MS,
    });
  }
  const complete = events.received === events.expected && events.webhookFailures === 0;
  rows.push(
    { section: 'inbox', metric: `events: ${events.streams} streams, ${args.inboxRate} msg/s for ${args.inboxDuration} s: events counted`, value: `${fmt(events.received)} / ${fmt(events.expected)}`, ok: complete },
    { section: 'inbox', metric: 'events: webhook → stream p50 / p99', value: `${fmt(events.delayMs.p50, 0)} / ${fmt(events.delayMs.p99, 0)} ms` },
    { section: 'inbox', metric: 'events: webhook → stream max', value: `${fmt(events.delayMs.max, 0)} ms`, target: `each ≤ ${EVENT_TARGET_MS} ms`, ok: complete && events.delayMs.max <= EVENT_TARGET_MS },
  );
  const ms = (l: LatencySummary) => ({ count: l.count, p50: round(l.p50, 2), p90: round(l.p90, 2), p99: round(l.p99, 2), max: round(l.max, 2), mean: round(l.mean, 2) });
  return {
    rows,
    data: {
      conversations: seeded.conversations,
      messages: seeded.messages,
      seedSeconds: round(seeded.seconds, 1),
      list: list.map((f) => ({ name: f.name, query: f.query, total: f.total, ms: ms(f.ms) })),
      events: { ...events, delayMs: ms(events.delayMs), rate: args.inboxRate, durationSeconds: args.inboxDuration },
    },
  };
}
