// OpenTelemetry tracing of a process (API or worker): off unless the standard OTEL_* settings ask
// for it, in which case one tracer provider exports over OTLP/HTTP. Everything a span records
// passes an allow-list first (`sanitizeSpan`): ids, names, counts and statuses, never text.
import { context, propagation, trace, SpanStatusCode, TraceFlags, type Attributes, type AttributeValue, type Link, type Span, type SpanContext, type SpanKind } from '@opentelemetry/api';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ExportResult } from '@opentelemetry/core';
import type { WorkflowClientInterceptor } from '@temporalio/client';
// Types only: the modules themselves load when tracing starts (`startTracing`).
import type * as SdkTraceBase from '@opentelemetry/sdk-trace-base';
import type * as Resources from '@opentelemetry/resources';
import type * as OtlpHttp from '@opentelemetry/exporter-trace-otlp-http';
import type * as ContextAsyncHooks from '@opentelemetry/context-async-hooks';
import type * as OtelCore from '@opentelemetry/core';
import type * as TemporalOtelClient from '@temporalio/interceptors-opentelemetry/lib/client';
import { type Config } from './config';
import { type Logger } from './logger';

export type TracedProcess = 'api' | 'worker';

export type TracingSettings =
  | { enabled: false; warning?: string }
  | { enabled: true; url: string; headers: Record<string, string>; resourceAttributes: Record<string, string> };

/** OTLP/HTTP's default receiver, when tracing is asked for with OTEL_TRACES_EXPORTER=otlp and no endpoint. */
const DEFAULT_OTLP_TRACES_URL = 'http://localhost:4318/v1/traces';

/** `k=v,k2=v2` as OTEL_RESOURCE_ATTRIBUTES and OTEL_EXPORTER_OTLP_HEADERS write it (values percent-encoded). */
export function parseKeyValueList(value: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (value ?? '').split(',')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const key = part.slice(0, eq).trim();
    const raw = part.slice(eq + 1).trim();
    if (!key) continue;
    try {
      out[key] = decodeURIComponent(raw);
    } catch {
      out[key] = raw;
    }
  }
  return out;
}

/**
 * Whether and where this process exports traces, from the standard variables. Tracing is on only
 * when an OTLP endpoint is set or OTEL_TRACES_EXPORTER=otlp asks for the default one, and neither
 * OTEL_SDK_DISABLED nor OTEL_TRACES_EXPORTER=none turns it off. An exporter or protocol this build
 * does not have leaves it off with a warning.
 */
export function tracingSettings(config: Config, role: TracedProcess): TracingSettings {
  if (config.OTEL_SDK_DISABLED) return { enabled: false };
  const exporter = config.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  if (exporter === 'none') return { enabled: false };
  if (exporter !== undefined && exporter !== 'otlp') {
    return { enabled: false, warning: `OTEL_TRACES_EXPORTER=${exporter} is not supported (only otlp or none): traces are not exported` };
  }
  const protocol = (config.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? config.OTEL_EXPORTER_OTLP_PROTOCOL)?.trim().toLowerCase();
  if (protocol !== undefined && protocol !== 'http/json' && protocol !== 'http/protobuf') {
    return { enabled: false, warning: `OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is not supported (traces go over OTLP/HTTP): traces are not exported` };
  }
  const url = config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
    ?? (config.OTEL_EXPORTER_OTLP_ENDPOINT ? `${config.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces` : undefined)
    ?? (exporter === 'otlp' ? DEFAULT_OTLP_TRACES_URL : undefined);
  if (!url) return { enabled: false };
  return {
    enabled: true,
    url,
    headers: { ...parseKeyValueList(config.OTEL_EXPORTER_OTLP_HEADERS), ...parseKeyValueList(config.OTEL_EXPORTER_OTLP_TRACES_HEADERS) },
    resourceAttributes: {
      ...parseKeyValueList(config.OTEL_RESOURCE_ATTRIBUTES),
      'service.name': config.OTEL_SERVICE_NAME ?? parseKeyValueList(config.OTEL_RESOURCE_ATTRIBUTES)['service.name'] ?? `switchboard-${role}`,
    },
  };
}

/** A process's tracing while it is on: what the Temporal client and worker need, and its shutdown. */
export interface Tracing {
  /** Where ended spans go (the workflow sandbox's spans too, through the worker's sink). */
  processor: SpanProcessor;
  resource: Resource;
  /** Temporal client interceptors that start a span per start, update, signal and query and carry its context in the headers. */
  clientInterceptors(): WorkflowClientInterceptor[];
  /** Exports what has ended (tests; shutdown). */
  forceFlush(): Promise<void>;
  shutdown(): Promise<void>;
}

/** Span attributes that may leave the process: ids, names, counts and statuses. */
const ALLOWED_ATTRIBUTES = new Set([
  // Set by Temporal's interceptors.
  'run_id',
  'temporalWorkflowId',
  'temporalActivityId',
  'temporalUpdateId',
  // HTTP server spans.
  'http.request.method',
  'http.route',
  'http.response.status_code',
  // LLM calls (OpenTelemetry's generative-AI conventions).
  'gen_ai.operation.name',
  'gen_ai.system',
  'gen_ai.request.model',
  'gen_ai.response.model',
  'gen_ai.usage.input_tokens',
  'gen_ai.usage.output_tokens',
  // Exception events: the type, never the message or the stack.
  'exception.type',
]);
/** Our own attributes, each an id, a name, a count or a status (see `withSpan`'s callers). */
const ALLOWED_PREFIX = 'switchboard.';

const allowedAttribute = (key: string) => ALLOWED_ATTRIBUTES.has(key) || key.startsWith(ALLOWED_PREFIX);

function allowedAttributes(attributes: Attributes | undefined): Attributes {
  const out: Attributes = {};
  for (const [key, value] of Object.entries(attributes ?? {})) {
    if (allowedAttribute(key) && isAttributeValue(value)) out[key] = value;
  }
  return out;
}

const isAttributeValue = (value: unknown): value is AttributeValue =>
  typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' || (Array.isArray(value) && value.every((v) => v === null || v === undefined || ['string', 'number', 'boolean'].includes(typeof v)));

/**
 * The span as it may leave the process: allowed attributes only (on the span, its events and
 * links), no status message (an error's text may quote a message, a tool's response or a secret).
 */
export function sanitizeSpan(span: ReadableSpan): ReadableSpan {
  return Object.create(span, {
    attributes: { value: allowedAttributes(span.attributes), enumerable: true },
    events: { value: span.events.map((e) => ({ ...e, attributes: allowedAttributes(e.attributes) })), enumerable: true },
    links: { value: span.links.map((l) => ({ context: l.context })), enumerable: true },
    status: { value: { code: span.status.code }, enumerable: true },
  }) as ReadableSpan;
}

/** Hands the exporter sanitized copies: nothing leaves unfiltered, whoever created the span. */
class SanitizingExporter implements SpanExporter {
  constructor(private readonly inner: SpanExporter) {}
  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    this.inner.export(spans.map(sanitizeSpan), resultCallback);
  }
  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

let active: { tracing: Tracing; users: number } | null = null;

/**
 * Starts tracing for this process when the settings ask for it (null otherwise: no provider, no
 * module of the SDK loaded). Registers the provider, the context manager and the W3C propagator
 * globally; a second start in the same process (the test harness's API and worker) shares it.
 */
export function startTracing(config: Config, role: TracedProcess, logger: Logger): Tracing | null {
  const settings = tracingSettings(config, role);
  if (!settings.enabled) {
    if (settings.warning) logger.warn(settings.warning);
    return null;
  }
  if (active) {
    active.users++;
    return active.tracing;
  }
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { BasicTracerProvider, BatchSpanProcessor } = require('@opentelemetry/sdk-trace-base') as typeof SdkTraceBase;
  const { Resource } = require('@opentelemetry/resources') as typeof Resources;
  const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http') as typeof OtlpHttp;
  const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks') as typeof ContextAsyncHooks;
  const { W3CTraceContextPropagator } = require('@opentelemetry/core') as typeof OtelCore;
  const { OpenTelemetryWorkflowClientInterceptor } = require('@temporalio/interceptors-opentelemetry/lib/client') as typeof TemporalOtelClient;
  /* eslint-enable @typescript-eslint/no-require-imports */
  const resource = Resource.default().merge(new Resource(settings.resourceAttributes)) as Resource;
  const processor = new BatchSpanProcessor(new SanitizingExporter(new OTLPTraceExporter({ url: settings.url, headers: settings.headers })));
  const provider = new BasicTracerProvider({ resource, spanProcessors: [processor] });
  provider.register({ contextManager: new AsyncLocalStorageContextManager().enable(), propagator: new W3CTraceContextPropagator() });
  const tracing: Tracing = {
    processor,
    resource,
    clientInterceptors: () => [new OpenTelemetryWorkflowClientInterceptor()],
    forceFlush: () => provider.forceFlush(),
    async shutdown() {
      if (!active || --active.users > 0) return;
      active = null;
      await provider.shutdown().catch((err: unknown) => logger.warn({ err }, 'traces not all exported at shutdown'));
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
  active = { tracing, users: 1 };
  logger.info({ endpoint: new URL(settings.url).origin, service: settings.resourceAttributes['service.name'] }, 'OpenTelemetry traces exported over OTLP/HTTP');
  return tracing;
}

/** Whether this process records spans (false: `withSpan` only runs its function). */
export const tracingActive = (): boolean => active !== null;

export interface SpanOptions {
  kind?: SpanKind;
  /** Ids, names, counts and statuses only: anything else is dropped before export. */
  attributes?: Attributes;
  links?: Link[];
}

/**
 * Runs `fn` in a span (its child spans and Temporal calls nest under it). A thrown error marks the
 * span failed with the error's type; the error itself is not recorded. With tracing off it only runs `fn`.
 */
export async function withSpan<T>(name: string, options: SpanOptions, fn: (span: Span | null) => Promise<T>): Promise<T> {
  if (!active) return fn(null);
  return trace.getTracer('switchboard').startActiveSpan(name, { ...(options.kind !== undefined ? { kind: options.kind } : {}), attributes: options.attributes ?? {}, links: options.links ?? [] }, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR });
      span.setAttribute('switchboard.error.type', err instanceof Error ? ((err as { type?: unknown }).type as string | undefined) ?? err.name : typeof err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/** The active span's context as a W3C `traceparent`, to keep with a suspension (undefined: none). */
export function currentTraceparent(): string | undefined {
  if (!active) return undefined;
  const ctx = trace.getSpanContext(context.active());
  if (!ctx || !trace.isSpanContextValid(ctx)) return undefined;
  return `00-${ctx.traceId}-${ctx.spanId}-0${(ctx.traceFlags & TraceFlags.SAMPLED).toString(16)}`;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A link to the span a stored `traceparent` names (none when it is absent or malformed). */
export function linkToTraceparent(traceparent: string | undefined | null): Link[] {
  const match = traceparent ? TRACEPARENT.exec(traceparent) : null;
  if (!match) return [];
  const spanContext: SpanContext = { traceId: match[1]!, spanId: match[2]!, traceFlags: parseInt(match[3]!, 16), isRemote: true };
  return trace.isSpanContextValid(spanContext) ? [{ context: spanContext }] : [];
}

/** A tool call's span: the tool's name and kind, whether it is async; never its arguments or result. */
export function withToolSpan<T>(tool: { name: string; binding: { type: string; async?: unknown } }, fn: () => Promise<T>): Promise<T> {
  return withSpan('tool.call', { attributes: { 'switchboard.tool.name': tool.name, 'switchboard.tool.kind': tool.binding.type, 'switchboard.tool.async': Boolean(tool.binding.async) } }, fn);
}
