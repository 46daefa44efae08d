import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Link, type Span, type TextMapGetter, type TextMapSetter } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { BatchSpanProcessor, NodeTracerProvider, SimpleSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-node';
import { resourceFromAttributes } from '@opentelemetry/resources';

export { SpanKind };
export type { Context, Span };

/**
 * OpenTelemetry tracing, off unless installed: when OTEL_EXPORTER_OTLP_ENDPOINT is unset no
 * provider is registered and every helper below returns before touching the API, so the
 * webhook path pays one boolean test.
 *
 * A trace follows one inbound message: the webhook's span (gateway) → the JetStream publish,
 * whose context travels in the NATS message headers (`traceparent`, W3C Trace Context; NATS
 * has no propagator of its own, the carrier is below) → the worker's handling of that
 * envelope → its transaction, the model call and the helpdesk send.
 */
const TRACER_NAME = 'messaging-automation';

let enabled = false;
/**
 * Whether spans are recorded, as a field the message path reads before calling anything here:
 * with tracing off (the default) a webhook or a step does no tracing work at all.
 */
export const tracing: { readonly enabled: boolean } = { enabled: false };
const setEnabled = (on: boolean) => {
  enabled = on;
  (tracing as { enabled: boolean }).enabled = on;
};

export interface TracingOptions {
  serviceName: string;
  /** The OTLP/HTTP traces endpoint (`…/v1/traces`). */
  url?: string;
  headers?: Record<string, string>;
  /** Spans go here instead (tests: an in-memory exporter), one by one as they end. */
  exporter?: SpanExporter;
  attributes?: Attributes;
}

export interface InstalledTracing {
  /** Exports what is buffered and stops the provider. */
  shutdown(): Promise<void>;
}

/** Registers the process-wide tracer provider. Call once, before the roles start. */
export function installTracing(options: TracingOptions): InstalledTracing {
  const processor = options.exporter
    ? new SimpleSpanProcessor(options.exporter)
    : new BatchSpanProcessor(new OTLPTraceExporter({ url: options.url, headers: options.headers }));
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': options.serviceName, 'service.instance.id': String(process.pid), ...options.attributes }),
    spanProcessors: [processor],
  });
  provider.register({ propagator: new W3CTraceContextPropagator() });
  setEnabled(true);
  return {
    async shutdown() {
      setEnabled(false);
      await provider.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}

export function tracingEnabled(): boolean {
  return enabled;
}

/** Runs `fn` inside a new span (child of `parent`, or of the active span); the span ends when `fn` settles and records a throw. */
export async function inSpan<T>(name: string, options: { kind?: SpanKind; attributes?: Attributes; /** Default: the active context; NO_PARENT starts a trace. */ parent?: Context; links?: Link[] }, fn: (span: Span | undefined) => Promise<T>): Promise<T> {
  if (!enabled) return fn(undefined);
  const tracer = trace.getTracer(TRACER_NAME);
  const parent = options.parent ?? context.active();
  const span = tracer.startSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes, links: options.links }, parent);
  try {
    return await context.with(trace.setSpan(parent, span), () => fn(span));
  } catch (err) {
    failSpan(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/** Starts a span the caller ends (work whose end is an event, not a returned promise), or undefined when tracing is off. */
export function startSpan(name: string, options: { kind?: SpanKind; attributes?: Attributes; parent?: Context; startTime?: number }): Span | undefined {
  if (!enabled) return undefined;
  return trace.getTracer(TRACER_NAME).startSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes, startTime: options.startTime }, options.parent ?? context.active());
}

/** Runs `fn` with `span` active, so spans started inside are its children. */
export function withSpan<T>(span: Span | undefined, fn: () => T): T {
  if (!span) return fn();
  return context.with(trace.setSpan(context.active(), span), fn);
}

export function failSpan(span: Span | undefined, err: unknown): void {
  if (!span) return;
  span.recordException(err instanceof Error ? err : String(err));
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
}

/** The smallest view of NATS message headers the carrier needs (`MsgHdrs` of @nats-io/transport-node). */
export interface HeaderBag {
  get(key: string): string;
  set(key: string, value: string): void;
  has(key: string): boolean;
  keys(): string[];
}

const natsSetter: TextMapSetter<HeaderBag> = {
  set: (carrier, key, value) => carrier.set(key, value),
};
const natsGetter: TextMapGetter<HeaderBag | undefined> = {
  get: (carrier, key) => (carrier?.has(key) ? carrier.get(key) : undefined),
  keys: (carrier) => (carrier ? carrier.keys() : []),
};

/** Writes the active span's context (`traceparent`, `tracestate`) into NATS headers; false when there is nothing to carry. */
export function injectTraceContext(headers: HeaderBag): boolean {
  if (!enabled || !trace.getSpan(context.active())) return false;
  propagation.inject(context.active(), headers, natsSetter);
  return true;
}

/** The context a NATS message carries (the publisher's span as a remote parent), or undefined. */
export function extractTraceContext(headers: HeaderBag | undefined): Context | undefined {
  if (!enabled || !headers) return undefined;
  const ctx = propagation.extract(ROOT_CONTEXT, headers, natsGetter);
  return trace.getSpan(ctx) ? ctx : undefined;
}

/**
 * Work that is batched (many envelopes' events in one transaction) or handed between parts
 * (a committed reply to the outbox sender) loses the async context it came from: the trace
 * context is attached to the object that travels instead (an envelope, a conversation row,
 * an outbox row). Weak: it goes with the object.
 */
const attached = new WeakMap<object, Context>();

/** Attaches `ctx` to `target`, when it carries a span. */
export function attachTrace(target: object, ctx: Context | undefined): void {
  if (enabled && ctx && trace.getSpan(ctx)) attached.set(target, ctx);
}

/** Attaches the active context to `target` (work created now, carried on later elsewhere). */
export function attachActiveTrace(target: object): void {
  if (enabled) attachTrace(target, context.active());
}

/** The trace context attached to `target`, or undefined. */
export function traceOf(target: object): Context | undefined {
  return enabled ? attached.get(target) : undefined;
}

/** The active context when it carries a span (tracing on), else undefined. */
export function activeTrace(): Context | undefined {
  if (!enabled) return undefined;
  const ctx = context.active();
  return trace.getSpan(ctx) ? ctx : undefined;
}

/** Now, in epoch milliseconds with sub-millisecond precision (span start and end times). */
export function spanClock(): number {
  return performance.timeOrigin + performance.now();
}

/** A context whose active span is `span` (a parent for its children). */
export function contextOf(span: Span): Context {
  return trace.setSpan(ROOT_CONTEXT, span);
}

/** Runs `fn` in `ctx` (the active context when undefined). */
export function inContext<T>(ctx: Context | undefined, fn: () => T): T {
  return ctx ? context.with(ctx, fn) : fn();
}

/** The root context: a span started under it begins a trace of its own. */
export const NO_PARENT: Context = ROOT_CONTEXT;

/**
 * One span per parent for work done once for several of them (a group commit of many
 * conversations' events), each with the work's real start and end.
 */
export function recordSharedSpan(name: string, parents: Iterable<Context>, startTime: number, endTime: number, attributes?: Attributes, error?: unknown): void {
  if (!enabled) return;
  const tracer = trace.getTracer(TRACER_NAME);
  for (const parent of parents) {
    const span = tracer.startSpan(name, { kind: SpanKind.INTERNAL, attributes, startTime }, parent);
    if (error !== undefined) failSpan(span, error);
    span.end(endTime);
  }
}

/** The trace id of `span`, else of the active span, or undefined (tracing off, or no span). */
export function traceIdOf(span?: Span): string | undefined {
  if (!enabled) return undefined;
  return (span ?? trace.getSpan(context.active()))?.spanContext().traceId;
}

/** `{traceId, spanId}` of the active span for log lines, or nothing. */
export function activeTraceFields(): { traceId: string; spanId: string } | Record<string, never> {
  if (!enabled) return {};
  const span = trace.getSpan(context.active());
  if (!span) return {};
  const { traceId, spanId } = span.spanContext();
  return { traceId, spanId };
}
