import { join } from 'node:path';
import { makePdf } from '../../test/support/pdf.js';
import { seededRandom } from '../../test/support/random.js';
import { ROOT, spawnChild } from '../lib/children.js';
import { CHILD_BASE_ENV, newScenario } from '../lib/env.js';
import { note } from '../lib/progress.js';
import { fmt, summarise } from '../lib/stats.js';
import type { BenchContext, Row, SectionResult } from './types.js';

/**
 * Ingestion (issue #26): documents through the whole path a customer's take, `npm run
 * gateway` as a child with its defaults (INGEST_THREADS 1, INGEST_MAX_PER_COMPANY 1):
 * `POST …/documents` for `--ingestion-docs` documents of each format (text, markdown, HTML,
 * PDF; generated help-centre prose of 20–60 KB, PDFs of 10 pages), then the document list
 * polled until none is `processing`. Meanwhile another company asks `GET /api/agents` every
 * 50 ms. Then the issue's hostile documents, one at a time, with the same bystander.
 *
 * `--ingestion-root DIR` runs the gateway of another checkout instead (the figures before a
 * change: `git clone -q . /tmp/base && git -C /tmp/base checkout -q <commit>`, with its
 * node_modules linked), against the same corpus and the same client.
 */
const FORMATS = ['text', 'markdown', 'html', 'pdf'] as const;
type Format = (typeof FORMATS)[number];

const WORDS = 'order delivery parcel refund warranty kettle descale filter water tank button display coffee grinder beans milk froth clean rinse program setting power cable store pickup courier address invoice card payment receipt return exchange size colour model serial service repair spare part manual guide step minute hour day week month'.split(' ');

function corpus(format: Format, n: number, seed: number): { name: string; bytes: Buffer }[] {
  const random = seededRandom(seed);
  const word = () => WORDS[Math.floor(random() * WORDS.length)]!;
  const sentence = () => {
    const w = Array.from({ length: 8 + Math.floor(random() * 12) }, word);
    return `${w[0]![0]!.toUpperCase()}${w.join(' ').slice(1)}.`;
  };
  const paragraph = () => Array.from({ length: 3 + Math.floor(random() * 5) }, sentence).join(' ');
  return Array.from({ length: n }, (_, d) => {
    const sections = Array.from({ length: 24 }, (_, s) => ({ heading: `${word()} ${word()} ${s}`, paras: Array.from({ length: 2 + Math.floor(random() * 3) }, paragraph) }));
    switch (format) {
      case 'text':
        return { name: `guide-${d}.txt`, bytes: Buffer.from(sections.map((s) => `${s.heading}\n\n${s.paras.join('\n\n')}`).join('\n\n')) };
      case 'markdown':
        return {
          name: `guide-${d}.md`,
          bytes: Buffer.from(
            `# Guide ${d}\n\n${sections.map((s) => `## ${s.heading}\n\n${s.paras.map((p) => p.replace(/(\w+) (\w+)\./, '**$1** [$2](https://help.example.com/$2).')).join('\n\n')}\n\n- ${word()}\n- \`${word()}\``).join('\n\n')}`,
          ),
        };
      case 'html':
        return {
          name: `guide-${d}.html`,
          bytes: Buffer.from(
            `<!doctype html><html><head><title>Guide ${d}</title><style>p{margin:0}</style><script>var x=1;</script></head><body><nav><a href="/">Home</a> | <a href="/shop">Shop</a></nav><main><h1>Guide ${d}</h1>${sections
              .map((s) => `<section><h2>${s.heading}</h2>${s.paras.map((p) => `<p class="text">${p.replace(/(\w+)\./, '<b>$1</b>.')}</p>`).join('')}<ul><li>${word()}</li><li>${word()}</li></ul><table><tr><td>${word()}</td><td>${word()}</td></tr></table></section>`)
              .join('')}</main><footer>© Shop</footer></body></html>`,
          ),
        };
      case 'pdf':
        return { name: `guide-${d}.pdf`, bytes: makePdf(Array.from({ length: 10 }, (_, p) => [{ text: `${sections[p]!.heading}`, size: 16 }, ...sections[p]!.paras.flatMap((para) => para.match(/.{1,90}(\s|$)/g)!.map((line) => ({ text: line.trim() })))])) };
    }
  });
}

/** The issue's documents that froze the gateway (JSON bodies). */
const HOSTILE: [string, Record<string, unknown>][] = [
  ['markdown "![" × 100,000', { title: 'Images', format: 'markdown', content: `word ${'!['.repeat(100_000)}` }],
  ['text 60,000 spaces', { title: 'Spaces', format: 'text', content: `a${' '.repeat(60_000)}b` }],
  ['HTML nested 30,000 deep', { title: 'Deep', format: 'html', content: `${'<div>'.repeat(30_000)}deep text${'</div>'.repeat(30_000)}` }],
];

type Api = (method: string, path: string, token: string | null, body?: unknown, form?: { name: string; bytes: Buffer }) => Promise<{ status: number; body: any }>;

function client(base: string): Api {
  return async (method, path, token, body, form) => {
    const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
    let payload: BodyInit | undefined;
    if (form) {
      const data = new FormData();
      data.set('file', new Blob([new Uint8Array(form.bytes)]), form.name);
      payload = data;
    } else if (body !== undefined) {
      headers['content-type'] = 'application/json';
      payload = JSON.stringify(body);
    }
    const res = await fetch(base + path, { method, headers, body: payload });
    const text = await res.text();
    return { status: res.status, body: text && res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text };
  };
}

async function signUp(api: Api, name: string): Promise<string> {
  const email = `${name.toLowerCase().replace(/\W/g, '')}-${Date.now()}@bench.example`;
  const password = 'correct horse battery';
  const reg = await api('POST', '/api/auth/register', null, { email, password, companyName: name });
  if (reg.status !== 201) throw new Error(`register: ${reg.status} ${JSON.stringify(reg.body)}`);
  return (await api('POST', '/api/auth/login', null, { email, password })).body.session.access_token as string;
}

/** The other company's `GET /api/agents` every 50 ms until stopped: its latencies. */
function bystander(api: Api, token: string): { stop: () => Promise<number[]> } {
  const times: number[] = [];
  let done = false;
  const loop = (async () => {
    while (!done) {
      const began = performance.now();
      await api('GET', '/api/agents', token);
      times.push(performance.now() - began);
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  return {
    stop: async () => {
      done = true;
      await loop;
      return times;
    },
  };
}

async function untilRead(api: Api, token: string, kb: number, count: number, timeoutMs: number): Promise<{ ready: number; failed: number }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await api('GET', `/api/knowledge-bases/${kb}/documents?limit=200`, token);
    const docs = res.body.documents as { status: string }[];
    if (docs.length >= count && docs.every((d) => d.status !== 'processing')) return { ready: docs.filter((d) => d.status === 'ready').length, failed: docs.filter((d) => d.status === 'failed').length };
    if (Date.now() > deadline) throw new Error(`documents still processing after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export async function runIngestion(ctx: BenchContext): Promise<SectionResult> {
  const root = ctx.args.ingestionRoot ?? ROOT;
  const n = Math.min(200, ctx.args.ingestionDocs);
  const scenario = newScenario('ingest');
  const gateway = await spawnChild({
    file: join(root, 'gateway', 'main.ts'),
    label: 'ingestion-gateway',
    env: { ...CHILD_BASE_ENV, DATABASE_URL: scenario.databaseUrl, NATS_PREFIX: scenario.natsPrefix, PORT: '0', HOST: '127.0.0.1' },
  });
  const rows: Row[] = [];
  const data: Record<string, unknown> = { root, documentsPerFormat: n };
  try {
    const line = await gateway.waitForLog((l) => l.msg === 'gateway listening', 90_000);
    const api = client(String(line.url));
    const owner = await signUp(api, 'Ingest Co');
    const other = await signUp(api, 'Bystander Co');

    for (const format of FORMATS) {
      const docs = corpus(format, n, 26 + FORMATS.indexOf(format));
      const bytes = docs.reduce((s, d) => s + d.bytes.length, 0);
      const kb = (await api('POST', '/api/knowledge-bases', owner, { name: `Bench ${format}` })).body.knowledgeBase.id as number;
      // One document first: the reader thread started, PDF.js loaded (not the corpus's time).
      const warm = corpus(format, 1, 99)[0]!;
      await api('POST', `/api/knowledge-bases/${kb}/documents`, owner, undefined, warm);
      await untilRead(api, owner, kb, 1, 120_000);
      const watch = bystander(api, other);
      const cpuBefore = gateway.cpuMs();
      const began = performance.now();
      for (const doc of docs) {
        const res = await api('POST', `/api/knowledge-bases/${kb}/documents`, owner, undefined, doc);
        if (res.status !== 201) throw new Error(`${format}: POST ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
      }
      const outcome = await untilRead(api, owner, kb, n + 1, 600_000);
      const seconds = (performance.now() - began) / 1000;
      const cpuMs = gateway.cpuMs() - cpuBefore;
      const latency = summarise(await watch.stop());
      const figures = { documents: n, megabytes: bytes / 1e6, seconds, documentsPerSecond: n / seconds, megabytesPerSecond: bytes / 1e6 / seconds, gatewayCpuMsPerDocument: cpuMs / n, ready: outcome.ready - 1, failed: outcome.failed, bystanderMs: latency };
      data[format] = figures;
      note('ingestion', `${format}: ${n} documents (${fmt(bytes / 1e6, 1)} MB) in ${fmt(seconds, 1)} s; bystander p50 ${fmt(latency.p50, 0)} ms, max ${fmt(latency.max, 0)} ms`);
      rows.push(
        { section: 'ingestion', metric: `${format}: documents/s (${fmt(bytes / n / 1024, 0)} KB each)`, value: fmt(figures.documentsPerSecond, 1) },
        { section: 'ingestion', metric: `${format}: MB/s`, value: fmt(figures.megabytesPerSecond, 2) },
        { section: 'ingestion', metric: `${format}: gateway CPU ms / document`, value: fmt(figures.gatewayCpuMsPerDocument, 0) },
        { section: 'ingestion', metric: `${format}: other company GET /api/agents max ms`, value: fmt(latency.max, 0), target: '< 500', ok: latency.max < 500 },
      );
      if (figures.ready !== n) rows.push({ section: 'ingestion', metric: `${format}: NOT ready`, value: String(n - figures.ready) });
    }

    const kb = (await api('POST', '/api/knowledge-bases', owner, { name: 'Hostile' })).body.knowledgeBase.id as number;
    let count = 0;
    for (const [label, body] of HOSTILE) {
      const watch = bystander(api, other);
      const began = performance.now();
      const res = await api('POST', `/api/knowledge-bases/${kb}/documents`, owner, body);
      const answeredMs = performance.now() - began;
      await untilRead(api, owner, kb, ++count, 600_000);
      const doneMs = performance.now() - began;
      const latency = summarise(await watch.stop());
      data[label] = { status: res.status, answeredMs, doneMs, bystanderMs: latency };
      note('ingestion', `${label}: answered in ${fmt(answeredMs, 0)} ms, read in ${fmt(doneMs, 0)} ms; bystander max ${fmt(latency.max, 0)} ms`);
      rows.push(
        { section: 'ingestion', metric: `${label}: POST answered ms`, value: fmt(answeredMs, 0), target: '< 200', ok: answeredMs < 200 },
        { section: 'ingestion', metric: `${label}: read in ms`, value: fmt(doneMs, 0) },
        { section: 'ingestion', metric: `${label}: other company max ms`, value: fmt(latency.max, 0), target: '< 500', ok: latency.max < 500 },
      );
    }
    data.gatewayPeakRssMB = gateway.peakRssBytes() / 1e6;
    rows.push({ section: 'ingestion', metric: 'gateway peak RSS MB', value: fmt(gateway.peakRssBytes() / 1e6, 0) });
  } finally {
    await gateway.stop();
    await scenario.dispose();
  }
  return { rows, data };
}
