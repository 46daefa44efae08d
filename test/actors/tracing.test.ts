import { Writable } from 'node:stream';
import t from 'tap';
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-node';
import { createLogger } from '../../lib/logger.js';
import { inSpan, installTracing } from '../../lib/tracing.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { startOpenAiStub } from '../support/openai-stub.js';
import { signUp, startTestService } from '../support/service.js';
import { deliver } from '../support/webhooks.js';
import { createHelpdeskIntegration, eventually, startTestWorker, untilIdle, waitForPartitions } from '../support/worker.js';

// Tracing on for this whole process (gateway and worker run in it), exported to memory.
const exporter = new InMemorySpanExporter();
const tracing = installTracing({ serviceName: 'mas-test', exporter });
t.teardown(() => tracing.shutdown());

const svc = await startTestService(t, 'tracing', { env: { PARTITIONS: '2' } });
const helpdesk = await startChat2DeskStub(t);
helpdesk.setSendLatency(150);
const llm = await startOpenAiStub(t);
llm.respond((req) => ({ delayMs: 300, content: `Model says: ${llm.lastUserText(req)}` }));
const worker = await startTestWorker(t, svc, { workerId: 'tracing', options: { agentRunner: { cacheTtlMs: 0 } } });
await waitForPartitions([worker], 2);

const user = await signUp(svc.api, 'Tracing Co');
const agent = await svc.api('POST', '/api/agents', {
  token: user.token,
  body: { name: 'LLM', systemPrompt: 'Be brief.', model: { provider: 'openai', name: 'gpt-4o-mini', baseUrl: llm.baseUrl, apiKey: 'sk-test-key' } },
});
const integration = await createHelpdeskIntegration(svc, user, helpdesk, 'Traced', agent.body.agent.id);

const spanId = (s: ReadableSpan) => s.spanContext().spanId;
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;

t.test('one webhook gives one trace: ingress → publish → worker → transaction, model call, helpdesk send', async (t) => {
  exporter.reset();
  const payload = { hook_type: 'inbox', type: 'from_client', message_id: 5151, text: 'where is my order?', client_id: 777, channel_id: 9, transport: 'telegram' };
  const res = await deliver(svc.api, integration.id, payload, { secret: integration.webhookSecret });
  t.equal(res.status, 200);
  await helpdesk.waitFor(() => helpdesk.sent().some((b) => b.client_id === 777));
  await untilIdle(svc);
  // The send's span ends after the outcome is recorded.
  const spans = await eventually(async () => {
    const all = exporter.getFinishedSpans();
    return all.some((s) => s.name === 'helpdesk send') ? all : null;
  });

  const ingress = spans.find((s) => s.name === 'POST /api/webhook/helpdesk/:id');
  t.ok(ingress, 'a span for the webhook');
  if (!ingress) return;
  const traceId = ingress.spanContext().traceId;
  t.equal(parentOf(ingress), undefined, 'the webhook starts the trace');
  t.equal(ingress.kind, SpanKind.SERVER);
  t.equal(ingress.attributes['http.response.status_code'], 200);

  const inTrace = spans.filter((s) => s.spanContext().traceId === traceId);
  const named = (name: string) => inTrace.filter((s) => s.name === name);
  const [publish] = named('inbound publish');
  const [processing] = named('inbound process');
  t.ok(publish, 'the JetStream publish is in the trace');
  t.ok(processing, "the worker's handling is in the same trace (traceparent through the NATS headers)");
  if (!publish || !processing) return;
  t.equal(parentOf(publish), spanId(ingress), 'publish is a child of the webhook');
  t.equal(publish.kind, SpanKind.PRODUCER);
  t.equal(parentOf(processing), spanId(publish), "the worker's span is a child of the publish");
  t.equal(processing.kind, SpanKind.CONSUMER);
  t.equal(processing.attributes['mas.outcome'], 'ack');

  const transactions = named('db transaction');
  t.ok(transactions.length >= 2, `the message's and the answer's transactions (${transactions.length})`);
  t.ok(transactions.every((s) => parentOf(s) === spanId(processing)), 'each a child of the worker span');

  const [model] = named('model call');
  t.ok(model, 'the model call is in the trace');
  t.equal(model?.attributes['gen_ai.request.model'], 'gpt-4o-mini');
  t.equal(parentOf(model!), spanId(processing));
  t.ok((model!.attributes['gen_ai.usage.input_tokens'] as number) > 0, 'with its token usage');

  const [send] = named('helpdesk send');
  t.ok(send, 'the helpdesk send is in the trace');
  t.equal(send?.kind, SpanKind.CLIENT);
  t.equal(parentOf(send!), spanId(processing));
  const durationMs = (s: ReadableSpan) => s.duration[0] * 1e3 + s.duration[1] / 1e6;
  t.ok(durationMs(send!) >= 140, `the send span covers the helpdesk's 150 ms (${durationMs(send!).toFixed(0)} ms)`);
  t.ok(durationMs(model!) >= 290, `the model span covers the model's 300 ms (${durationMs(model!).toFixed(0)} ms)`);

  t.equal(spans.filter((s) => s.name === 'POST /api/webhook/helpdesk/:id').length, 1, 'one webhook span');
  t.equal(new Set(named('inbound process').map((s) => s.spanContext().traceId)).size, 1);
  t.equal(helpdesk.sent().filter((b) => b.client_id === 777).length, 1, 'one reply');
});

t.test('a refused webhook is traced with its status, and nothing is published', async (t) => {
  exporter.reset();
  const res = await deliver(svc.api, integration.id, { hook_type: 'inbox', text: 'x', client_id: 1 }, { secret: 'not-the-secret-at-all-0123456789' });
  t.equal(res.status, 401);
  const spans = await eventually(async () => {
    const all = exporter.getFinishedSpans();
    return all.length > 0 ? all : null;
  });
  t.same(spans.map((s) => s.name), ['POST /api/webhook/helpdesk/:id']);
  t.equal(spans[0]!.attributes['http.response.status_code'], 401);
});

t.test('log lines written inside a span carry its traceId and spanId', async (t) => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const logger = createLogger('info', sink);
  let ids: { traceId: string; spanId: string } | undefined;
  await inSpan('work', {}, async (span) => {
    ids = { traceId: span!.spanContext().traceId, spanId: span!.spanContext().spanId };
    logger.info('inside');
  });
  logger.info('outside');
  const [inside, outside] = lines.map((l) => JSON.parse(l));
  t.equal(inside.traceId, ids!.traceId);
  t.equal(inside.spanId, ids!.spanId);
  t.notOk('traceId' in outside, 'no traceId outside a span');
});
