// Builds the Switchboard worker: the workflow bundle, the activities and the tuning. Used by
// the worker process and by the in-process worker of the integration tests.
import { type NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { type PayloadCodec } from '@temporalio/common';
import { Client } from '@temporalio/client';
import { createActivities, type ActivityDeps } from '../activities';
import { DEFAULT_WORKER_TUNING, tuningFromConfig, type WorkerTuning } from './tuning';
import { sessionBundleCodec } from './session-bundle-storage';
import { FAILURE_CONVERTER_PATH } from '../lib/payload-codec';
import { type Tracing } from '../lib/tracing';
import { workerTracing } from './tracing';

export const WORKFLOWS_PATH = require.resolve('../workflows');
/** The payload converter of the worker and its workflow bundle: session bundles get their own encoding. */
export const PAYLOAD_CONVERTER_PATH = require.resolve('../lib/payload-converter');
/**
 * Workflow interceptors in every bundle: tracing, which a run switches on only when its history
 * carries trace context (workflows/tracing-interceptors.ts), so one bundle serves either setting.
 */
export const WORKFLOW_INTERCEPTOR_MODULES = [require.resolve('../workflows/tracing-interceptors')];

/**
 * What every workflow bundle is built with, at worker start or ahead of it (`bundleWorkflowCode`
 * for WORKFLOW_BUNDLE_PATH, the test suite's global setup): a bundle built otherwise would read
 * history differently from the worker that runs it.
 */
export const WORKFLOW_BUNDLE_OPTIONS = {
  workflowsPath: WORKFLOWS_PATH,
  payloadConverterPath: PAYLOAD_CONVERTER_PATH,
  failureConverterPath: FAILURE_CONVERTER_PATH,
  workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES,
};

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
  /** A prebuilt bundle (tests build it once); otherwise the workflows are bundled at start. */
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
    ...(options.workflowBundle ? { workflowBundle: options.workflowBundle } : { workflowsPath: WORKFLOWS_PATH }),
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
    interceptors: {
      ...options.interceptors,
      activity: activityInterceptors,
      // Bundled at start: with the modules every prebuilt bundle has (WORKFLOW_BUNDLE_OPTIONS).
      ...(options.workflowBundle ? {} : { workflowModules: [...WORKFLOW_INTERCEPTOR_MODULES, ...(options.interceptors?.workflowModules ?? [])] }),
    },
  });
}
