// Tracing is off unless the standard OTEL_* settings ask for it, and then installs nothing; the
// settings are read as the OpenTelemetry specification writes them; what a span may export passes
// an allow-list; the workflow sandbox's span ids come from the run id, never from Math.random.
import { type ProxyTracerProvider, SpanStatusCode, trace } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { loadConfig } from '../../../lib/config';
import { createLogger } from '../../../lib/logger';
import { sanitizeSpan, startTracing, tracingActive, tracingSettings, withSpan } from '../../../lib/tracing';
import { workerTracing } from '../../../workers/tracing';
import { runSeededIds } from '../../../workflows/tracing-interceptors';

const minimal = { MONGODB_URI: 'mongodb://127.0.0.1:27017/sb', JWT_SECRET: 'x'.repeat(32) };
const settings = (env: Record<string, string>, role: 'api' | 'worker' = 'api') => tracingSettings(loadConfig({ ...minimal, ...env }), role);

it('installs nothing with no OTEL_* setting: no provider, no interceptor, spans only run their function', async () => {
  const warnings: unknown[] = [];
  const logger = createLogger({ level: 'silent' });
  logger.warn = ((...args: unknown[]) => warnings.push(args)) as typeof logger.warn;
  expect(startTracing(loadConfig(minimal), 'api', logger)).toBeNull();
  expect(startTracing(loadConfig(minimal), 'worker', logger)).toBeNull();
  expect(warnings).toEqual([]);
  expect(tracingActive()).toBe(false);
  expect((trace.getTracerProvider() as ProxyTracerProvider).getDelegate().constructor.name).toBe('NoopTracerProvider');
  expect(workerTracing(null).activityInterceptors).toEqual([]);
  await expect(withSpan('x', {}, async (span) => span)).resolves.toBeNull();
});

it('reads the standard variables', () => {
  expect(settings({})).toEqual({ enabled: false });
  expect(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })).toMatchObject({ enabled: true, url: 'http://collector:4318/v1/traces', resourceAttributes: { 'service.name': 'switchboard-api' } });
  expect(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b:4318/traces' })).toMatchObject({ url: 'http://b:4318/traces' });
  expect(settings({ OTEL_TRACES_EXPORTER: 'otlp' }, 'worker')).toMatchObject({ enabled: true, url: 'http://localhost:4318/v1/traces', resourceAttributes: { 'service.name': 'switchboard-worker' } });
  expect(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' })).toEqual({ enabled: false });
  expect(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' })).toEqual({ enabled: false });
  expect(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'zipkin' })).toEqual({ enabled: false, warning: expect.stringContaining('OTEL_TRACES_EXPORTER=zipkin is not supported') });
  expect(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toEqual({ enabled: false, warning: expect.stringContaining('grpc') });
  expect(
    settings({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_SERVICE_NAME: 'sb-api-eu',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,team=voice%20ops',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Basic%20abc',
    }),
  ).toEqual({
    enabled: true,
    url: 'http://c:4318/v1/traces',
    headers: { authorization: 'Basic abc' },
    resourceAttributes: { 'deployment.environment': 'prod', team: 'voice ops', 'service.name': 'sb-api-eu' },
  });
});

it('exports only allowed attributes, no status message and no exception text', () => {
  const span = {
    name: 'RunActivity:callTool',
    attributes: { temporalActivityId: '3', 'switchboard.tool.name': 'lookup', 'gen_ai.usage.input_tokens': 12, prompt: 'my secret prompt', temporalTerminateReason: 'because', taskQueue: 'x' },
    events: [{ name: 'exception', time: [0, 0], attributes: { 'exception.type': 'ApplicationFailure', 'exception.message': 'card 4111 declined', 'exception.stacktrace': 'at …' } }],
    links: [{ context: { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: 1 }, attributes: { note: 'x' } }],
    status: { code: SpanStatusCode.ERROR, message: 'card 4111 declined' },
    spanContext: () => ({ traceId: 'c'.repeat(32), spanId: 'd'.repeat(16), traceFlags: 1 }),
  } as unknown as ReadableSpan;
  const clean = sanitizeSpan(span);
  expect(clean.attributes).toEqual({ temporalActivityId: '3', 'switchboard.tool.name': 'lookup', 'gen_ai.usage.input_tokens': 12 });
  expect(clean.events[0]!.attributes).toEqual({ 'exception.type': 'ApplicationFailure' });
  expect(clean.links).toEqual([{ context: span.links[0]!.context }]);
  expect(clean.status).toEqual({ code: SpanStatusCode.ERROR });
  expect(clean.name).toBe('RunActivity:callTool');
  expect(clean.spanContext().spanId).toBe('d'.repeat(16));
});

it('draws a run’s span ids from its run id: the same on replay, apart between runs', () => {
  const a = runSeededIds('run-1');
  const again = runSeededIds('run-1');
  const other = runSeededIds('run-2');
  const ids = [a.generateTraceId(), a.generateSpanId(), a.generateSpanId()];
  expect([again.generateTraceId(), again.generateSpanId(), again.generateSpanId()]).toEqual(ids);
  expect(other.generateTraceId()).not.toBe(ids[0]);
  expect(ids[0]).toMatch(/^[0-9a-f]{32}$/);
  expect(ids[1]).toMatch(/^[0-9a-f]{16}$/);
  expect(new Set(ids).size).toBe(3);
  // The workflow's own Math.random is left alone.
  const random = jest.spyOn(Math, 'random');
  runSeededIds('run-3').generateSpanId();
  expect(random).not.toHaveBeenCalled();
});
