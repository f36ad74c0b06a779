// The worker's part of OpenTelemetry tracing (lib/tracing.ts): a span per activity, continuing the
// trace its workflow carried in the activity's headers, and the sink through which the workflow
// sandbox's spans (workflows/tracing-interceptors.ts) reach the process's exporter.
import type { ActivityInterceptorsFactory, InjectedSinks } from '@temporalio/worker';
import type { WorkflowInfo } from '@temporalio/workflow';
import type { OpenTelemetrySinks } from '@temporalio/interceptors-opentelemetry/lib/workflow';
import type * as TemporalOtelWorker from '@temporalio/interceptors-opentelemetry/lib/worker';
import { type Tracing } from '../lib/tracing';

export interface WorkerTracing {
  activityInterceptors: ActivityInterceptorsFactory[];
  sinks: InjectedSinks<OpenTelemetrySinks>;
}

/**
 * With tracing off: no interceptor, and a sink that drops what a workflow sends it (a run whose
 * history carries trace context, from an API that traces, still makes spans in the sandbox).
 */
export function workerTracing(tracing: Tracing | null | undefined): WorkerTracing {
  if (!tracing) return { activityInterceptors: [], sinks: { exporter: { export: { fn: () => undefined } } } };
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const otel = require('@temporalio/interceptors-opentelemetry/lib/worker') as typeof TemporalOtelWorker;
  const exporter = otel.makeWorkflowExporter(tracing.processor, tracing.resource);
  return {
    activityInterceptors: [(ctx) => ({ inbound: new otel.OpenTelemetryActivityInboundInterceptor(ctx), outbound: new otel.OpenTelemetryActivityOutboundInterceptor(ctx) })],
    sinks: {
      exporter: {
        export: {
          // The SDK's sink copies the whole WorkflowInfo (memo, search attributes, last result)
          // into each span's attributes: it gets the run's ids only.
          fn: (info, spans) => exporter.export.fn({ temporalWorkflowId: info.workflowId, run_id: info.runId } as unknown as WorkflowInfo, spans),
        },
      },
    },
  };
}
