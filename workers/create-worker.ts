// Builds the Switchboard worker: the workflow bundle, the activities and the tuning. Used by
// the worker process and by the in-process worker of the integration tests.
import { type NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { type PayloadCodec } from '@temporalio/common';
import { Client } from '@temporalio/client';
import { createActivities, type ActivityDeps } from '../activities';
import { DEFAULT_WORKER_TUNING, tuningFromConfig, type WorkerTuning } from './tuning';
import { sessionBundleCodec } from './session-bundle-storage';
import { FAILURE_CONVERTER_PATH } from '../lib/payload-codec';

export const WORKFLOWS_PATH = require.resolve('../workflows');
/** The payload converter of the worker and its workflow bundle: session bundles get their own encoding. */
export const PAYLOAD_CONVERTER_PATH = require.resolve('../lib/payload-converter');
/**
 * Modules of the workflow bundle that every workflow in a worker's reusable V8 context shares
 * instead of evaluating its own copy (the SDK's `preloadModules`): the ABL interpreter and what it
 * imports (re2js among them). They are pure: no workflow API at module scope, no per-workflow
 * state at module scope (only memo caches of values computed from their keys, bounded). The SDK
 * deep-freezes their exports. A prebuilt bundle must be built with the same list (WORKFLOW_BUNDLE_OPTIONS).
 */
export const WORKFLOW_PRELOAD_MODULES = ['../workflows', '../workflows/shared-bundles', '../abl/runtime', '../abl/gather', '../abl/tool-retry', '../abl/tool-access', '../abl/ir'].map((m) => require.resolve(m));
/** The bundler options of the worker's workflow bundle, at start or prebuilt (`bundleWorkflowCode`). */
export const WORKFLOW_BUNDLE_OPTIONS = {
  workflowsPath: WORKFLOWS_PATH,
  payloadConverterPath: PAYLOAD_CONVERTER_PATH,
  failureConverterPath: FAILURE_CONVERTER_PATH,
  preloadModules: WORKFLOW_PRELOAD_MODULES,
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
}

export async function createSwitchboardWorker(options: CreateWorkerOptions): Promise<Worker> {
  const payloadCodecs = [sessionBundleCodec(options.deps.sessionBundles), ...(options.payloadCodec ? [options.payloadCodec] : [])];
  // Activities that talk to other workflows (an async app run's turn) use the worker's own
  // connection, with the same codecs as the worker.
  const temporalClient = options.deps.temporalClient ?? new Client({ connection: options.connection, namespace: options.namespace, dataConverter: { failureConverterPath: FAILURE_CONVERTER_PATH, payloadConverterPath: PAYLOAD_CONVERTER_PATH, payloadCodecs } });
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    ...(options.workflowBundle ? { workflowBundle: options.workflowBundle } : { workflowsPath: WORKFLOWS_PATH, bundlerOptions: { preloadModules: WORKFLOW_PRELOAD_MODULES } }),
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
    ...(options.interceptors ? { interceptors: options.interceptors } : {}),
  });
}
