// Builds the Switchboard worker: the workflow bundle, the activities and the tuning. Used by
// the worker process and by the in-process worker of the integration tests.
import { type NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { type PayloadCodec } from '@temporalio/common';
import { Client } from '@temporalio/client';
import { createActivities, type ActivityDeps } from '../activities';
import { DEFAULT_WORKER_TUNING, tuningFromConfig, type WorkerTuning } from './tuning';
import { sessionBundleCodec } from './session-bundle-storage';
import { FAILURE_CONVERTER_PATH } from '../lib/payload-codec';
import { buildWorkflowBundle, PAYLOAD_CONVERTER_PATH } from './workflow-bundle';
import { activityMetrics } from './activity-metrics';
import { type Tracing } from '../lib/tracing';
import { workerTracing } from './tracing';

export { PAYLOAD_CONVERTER_PATH, WORKFLOW_PRELOAD_MODULES, WORKFLOWS_PATH } from './workflow-bundle';

export interface CreateWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  deps: ActivityDeps;
  /**
   * The payload codec (lib/payload-codec.ts, null: payloads in clear). It runs in the worker's
   * main thread, outside the workflow sandbox: workflow code only ever sees decoded values.
   */
  payloadCodec: PayloadCodec | null;
  /**
   * A prebuilt bundle (workers/workflow-bundle.ts: the worker process's WORKFLOW_BUNDLE_PATH, the
   * tests' one bundle); otherwise the workflows are bundled at start with the same options.
   */
  workflowBundle?: WorkerOptions['workflowBundle'];
  tuning?: Partial<WorkerTuning>;
  /** Worker interceptors (tests use one to hold an activity while they act). */
  interceptors?: WorkerOptions['interceptors'];
  /** The process's tracing (lib/tracing.ts); null or absent: off, no interceptor installed. */
  tracing?: Tracing | null;
}

export async function createSwitchboardWorker(options: CreateWorkerOptions): Promise<Worker> {
  const payloadCodecs = [sessionBundleCodec(options.deps.sessionBundles), ...(options.payloadCodec ? [options.payloadCodec] : [])];
  // Activities that talk to other workflows (an async app run's turn) use the worker's own
  // connection, with the same codecs as the worker.
  const clientInterceptors = options.tracing?.clientInterceptors() ?? [];
  const temporalClient =
    options.deps.temporalClient ??
    new Client({
      connection: options.connection,
      namespace: options.namespace,
      dataConverter: { failureConverterPath: FAILURE_CONVERTER_PATH, payloadConverterPath: PAYLOAD_CONVERTER_PATH, payloadCodecs },
      ...(clientInterceptors.length > 0 ? { interceptors: { workflow: clientInterceptors } } : {}),
    });
  const tracing = workerTracing(options.tracing);
  const activityInterceptors = [...tracing.activityInterceptors, ...(options.interceptors?.activity ?? [])];
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    workflowBundle: options.workflowBundle ?? { code: await buildWorkflowBundle() },
    sinks: tracing.sinks,
    activities: createActivities({ ...options.deps, temporalClient }),
    // Session bundles, which only the payload converter marks as such (lib/payload-converter.ts),
    // travel through history as their hash (workers/session-bundle-storage.ts), and every payload
    // is then encrypted (lib/payload-codec.ts): codecs encode in this order and decode in the
    // reverse one. A prebuilt workflow bundle must be built with the same converter path.
    // Failure messages and stack traces are moved into an encoded payload so the codec covers them.
    dataConverter: { failureConverterPath: FAILURE_CONVERTER_PATH, payloadConverterPath: PAYLOAD_CONVERTER_PATH, payloadCodecs },
    // A graceful stop (a redeploy) lets activities in flight finish instead of cancelling them at
    // once: a cancelled tool call may already have reached its server, and its retry on another
    // worker would call it again. Past the grace period they are cancelled and retried elsewhere.
    shutdownGraceTime: options.deps.config.SHUTDOWN_GRACE_MS,
    stickyQueueScheduleToStartTimeout: options.deps.config.WORKER_STICKY_QUEUE_TIMEOUT_MS,
    ...DEFAULT_WORKER_TUNING,
    ...tuningFromConfig(options.deps.config),
    ...options.tuning,
    // Workflow interceptor modules go into the bundle (workers/workflow-bundle.ts), not here: the
    // SDK ignores them beside a bundle. LLM and tool activities are timed for /metrics
    // (workers/activity-metrics.ts), outermost.
    interceptors: { ...options.interceptors, activity: [activityMetrics, ...activityInterceptors] },
  });
}
