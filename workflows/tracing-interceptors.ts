// The workflow side of OpenTelemetry tracing: Temporal's own OpenTelemetry workflow interceptors,
// put into every workflow bundle (workers/create-worker.ts) and switched on per run by its history.
// A run traces once an event that carries trace context reaches it (its start, an accepted update,
// a signal: each header is in history, so a replay switches on at the same point); until then every
// call passes straight through, and the tracing modules are not even loaded. Span ids come from a
// generator of their own, seeded by the run id, never from the workflow's Math.random: turning
// tracing on or off must not change the uuid4() values (callback and task ids) a workflow draws.
// Update validators and queries are never traced: neither is in history, so they could not be
// replayed alike.
import {
  workflowInfo,
  type ActivityInput,
  type ContinueAsNewInput,
  type DisposeInput,
  type GetLogAttributesInput,
  type LocalActivityInput,
  type Next,
  type SignalInput,
  type SignalWorkflowInput,
  type StartChildWorkflowExecutionInput,
  type StartNexusOperationInput,
  type UpdateInput,
  type WorkflowExecuteInput,
  type WorkflowInboundCallsInterceptor,
  type WorkflowInterceptors,
  type WorkflowInternalsInterceptor,
  type WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';
import type { OpenTelemetryInboundInterceptor, OpenTelemetryInternalsInterceptor, OpenTelemetryOutboundInterceptor } from '@temporalio/interceptors-opentelemetry';

/** The package's workflow module (the runtime `require` below; its index would pull in the worker SDK). */
interface OtelWorkflowModule {
  OpenTelemetryInboundInterceptor: new () => OpenTelemetryInboundInterceptor;
  OpenTelemetryOutboundInterceptor: new () => OpenTelemetryOutboundInterceptor;
  OpenTelemetryInternalsInterceptor: new () => OpenTelemetryInternalsInterceptor;
}

/** The header Temporal's OpenTelemetry interceptors carry the trace context in. */
const TRACE_HEADER = '_tracer-data';

interface TracingInterceptors {
  inbound: OpenTelemetryInboundInterceptor;
  outbound: OpenTelemetryOutboundInterceptor;
  internals: OpenTelemetryInternalsInterceptor;
}

interface IdGenerator {
  generateTraceId(): string;
  generateSpanId(): string;
}

/** 32-bit FNV-1a of `text` after `salt`: the generator's seed words. */
function fnv1a(text: string, salt: number): number {
  let h = (0x811c9dc5 ^ salt) >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** Span and trace ids from an sfc32 generator seeded by the run id: the same sequence on every replay. */
export function runSeededIds(runId: string): IdGenerator {
  let a = fnv1a(runId, 1);
  let b = fnv1a(runId, 2);
  let c = fnv1a(runId, 3);
  let d = fnv1a(runId, 4);
  const next = (): number => {
    const t = (((a + b) >>> 0) + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = ((c << 21) | (c >>> 11)) >>> 0;
    c = (c + t) >>> 0;
    return t;
  };
  const hex = (words: number): string => {
    let out = '';
    for (let i = 0; i < words; i++) out += next().toString(16).padStart(8, '0');
    // An all-zero id is invalid.
    return /^0+$/.test(out) ? `${out.slice(0, -1)}1` : out;
  };
  return { generateTraceId: () => hex(4), generateSpanId: () => hex(2) };
}

/**
 * Loads and builds Temporal's interceptors for this run, their tracer given the run's id generator.
 * Null when the tracer is not shaped as expected (another SDK version): the run is then not traced,
 * rather than traced with ids drawn from the workflow's Math.random.
 */
function loadTracingInterceptors(): TracingInterceptors | null {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const otel = require('@temporalio/interceptors-opentelemetry/lib/workflow') as OtelWorkflowModule;
  const inbound = new otel.OpenTelemetryInboundInterceptor();
  const tracer = (inbound as unknown as { tracer?: { _idGenerator?: IdGenerator } }).tracer;
  if (!tracer || typeof tracer._idGenerator?.generateSpanId !== 'function') return null;
  tracer._idGenerator = runSeededIds(workflowInfo().runId);
  return { inbound, outbound: new otel.OpenTelemetryOutboundInterceptor(), internals: new otel.OpenTelemetryInternalsInterceptor() };
}

export const interceptors = (): WorkflowInterceptors => {
  let tracing: TracingInterceptors | null = null;
  let unavailable = false;
  /** The tracing interceptors once this run carries trace context (`headers` has it, or an earlier event had). */
  const tracingFor = (headers: Record<string, unknown> | undefined): TracingInterceptors | null => {
    if (tracing || unavailable || !headers || !(TRACE_HEADER in headers)) return tracing;
    tracing = loadTracingInterceptors();
    unavailable = tracing === null;
    return tracing;
  };

  const inbound: WorkflowInboundCallsInterceptor = {
    execute: (input: WorkflowExecuteInput, next: Next<WorkflowInboundCallsInterceptor, 'execute'>) => {
      const t = tracingFor(input.headers);
      return t ? t.inbound.execute(input, next) : next(input);
    },
    handleSignal: (input: SignalInput, next: Next<WorkflowInboundCallsInterceptor, 'handleSignal'>) => {
      const t = tracingFor(input.headers);
      return t ? t.inbound.handleSignal(input, next) : next(input);
    },
    handleUpdate: (input: UpdateInput, next: Next<WorkflowInboundCallsInterceptor, 'handleUpdate'>) => {
      const t = tracingFor(input.headers);
      return t ? t.inbound.handleUpdate(input, next) : next(input);
    },
  };

  const outbound: WorkflowOutboundCallsInterceptor = {
    scheduleActivity: (input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>) =>
      tracing ? tracing.outbound.scheduleActivity(input, next) : next(input),
    scheduleLocalActivity: (input: LocalActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>) =>
      tracing ? tracing.outbound.scheduleLocalActivity(input, next) : next(input),
    startChildWorkflowExecution: (input: StartChildWorkflowExecutionInput, next: Next<WorkflowOutboundCallsInterceptor, 'startChildWorkflowExecution'>) =>
      tracing ? tracing.outbound.startChildWorkflowExecution(input, next) : next(input),
    startNexusOperation: (input: StartNexusOperationInput, next: Next<WorkflowOutboundCallsInterceptor, 'startNexusOperation'>) =>
      tracing ? tracing.outbound.startNexusOperation(input, next) : next(input),
    continueAsNew: (input: ContinueAsNewInput, next: Next<WorkflowOutboundCallsInterceptor, 'continueAsNew'>) =>
      tracing ? tracing.outbound.continueAsNew(input, next) : next(input),
    signalWorkflow: (input: SignalWorkflowInput, next: Next<WorkflowOutboundCallsInterceptor, 'signalWorkflow'>) =>
      tracing ? tracing.outbound.signalWorkflow(input, next) : next(input),
    getLogAttributes: (input: GetLogAttributesInput, next: Next<WorkflowOutboundCallsInterceptor, 'getLogAttributes'>) =>
      tracing ? tracing.outbound.getLogAttributes(input, next) : next(input),
  };

  const internals: WorkflowInternalsInterceptor = {
    dispose: (input: DisposeInput, next: Next<WorkflowInternalsInterceptor, 'dispose'>) => (tracing ? tracing.internals.dispose(input, next) : next(input)),
  };

  return { inbound: [inbound], outbound: [outbound], internals: [internals] };
};
