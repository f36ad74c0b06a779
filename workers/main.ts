// Worker process entry: connects to Temporal and MongoDB and runs until SIGINT/SIGTERM, which
// the Temporal runtime turns into a graceful shutdown (activities in flight get
// SHUTDOWN_GRACE_MS to finish, workers/create-worker.ts).
import { NativeConnection } from '@temporalio/worker';
import { ConfigError, loadConfig } from '../lib/config';
import { createLogger } from '../lib/logger';
import { temporalConnectionSettings } from '../lib/temporal-options';
import { FAILURE_CONVERTER_PATH, payloadCodecForProcess } from '../lib/payload-codec';
import { connectMongo } from '../db/connection';
import { createModels, syncIndexes } from '../db/models';
import { createActivityDeps } from './activity-deps';
import { createSwitchboardWorker, PAYLOAD_CONVERTER_PATH } from './create-worker';
import { assertTemporalSetUp, TemporalSetupError } from '../lib/temporal-setup';
import { searchAttributeSpecs } from '../workflows/search-attributes';
import { startRollupWarmer } from '../core/analytics/rollup-warmer';
import { verifyWorkflowBundle, WorkflowBundleError } from './workflow-bundle';
import { startWorkerMetrics } from './metrics';
import { startTracing } from '../lib/tracing';
import { Client } from '@temporalio/client';
import { ensureRetentionSchedule, retentionScheduleId } from '../core/lifecycle/workflows';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const logger = createLogger({ level: config.LOG_LEVEL, name: 'worker' });
  // A prebuilt bundle is checked before anything connects: a missing file, or one built from
  // other code than this worker's, must stop a rollout at once, not run old workflow code.
  const prebuilt = config.WORKFLOW_BUNDLE_PATH ? verifyWorkflowBundle(config.WORKFLOW_BUNDLE_PATH) : null;
  if (prebuilt) logger.info({ path: config.WORKFLOW_BUNDLE_PATH, builtAt: prebuilt.manifest.builtAt }, 'loading the prebuilt workflow bundle');
  // Before any Temporal connection: it installs the SDK runtime with its metrics exporter.
  const metrics = await startWorkerMetrics(config, logger);
  const payloadCodec = payloadCodecForProcess(config, logger);
  const tracing = startTracing(config, 'worker', logger);
  const models = createModels(await connectMongo(config.MONGODB_URI, { serverSelectionTimeoutMs: config.MONGODB_SERVER_SELECTION_TIMEOUT_MS }));
  await syncIndexes(models);
  const connection = await NativeConnection.connect(temporalConnectionSettings(config));
  // Workflows that set a search attribute the namespace lacks would fail: refuse to run them.
  try {
    await assertTemporalSetUp(connection, config.TEMPORAL_NAMESPACE, searchAttributeSpecs(), (err) => logger.warn({ err }, 'The Temporal search attributes could not be listed with these credentials; not checked'));
  } catch (err) {
    await connection.close();
    await models.connection.close();
    throw err;
  }
  const worker = await createSwitchboardWorker({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    deps: createActivityDeps({ config, models, logger }),
    payloadCodec,
    ...(prebuilt ? { workflowBundle: { codePath: config.WORKFLOW_BUNDLE_PATH! } } : {}),
    tracing,
  });
  logger.info({ taskQueue: config.TEMPORAL_TASK_QUEUE }, 'worker started');
  // The retention sweep's schedule: created, or brought to this interval, by every worker start.
  if (config.RETENTION_SWEEP_INTERVAL_HOURS > 0) {
    const client = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE, dataConverter: { failureConverterPath: FAILURE_CONVERTER_PATH, payloadConverterPath: PAYLOAD_CONVERTER_PATH, payloadCodecs: payloadCodec ? [payloadCodec] : [] } });
    ensureRetentionSchedule(client, { taskQueue: config.TEMPORAL_TASK_QUEUE, everyHours: config.RETENTION_SWEEP_INTERVAL_HOURS }).then(
      (outcome) => logger.info({ scheduleId: retentionScheduleId(config.TEMPORAL_TASK_QUEUE), everyHours: config.RETENTION_SWEEP_INTERVAL_HOURS, outcome }, 'retention schedule ensured'),
      (err: unknown) => logger.warn({ err }, 'the retention schedule could not be created or updated; retention is not enforced until it is (npm run admin -- retention-schedule)'),
    );
  }
  // The turns' analytics events are written here: their hours' rollups are built here as they close.
  const stopRollupWarmer = startRollupWarmer({ models, logger });
  await worker.run();
  stopRollupWarmer();
  await metrics?.close();
  await connection.close();
  await models.connection.close();
  await tracing?.shutdown();
  logger.info('worker stopped');
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError) {
    process.stderr.write(`${err.message}\nSee docs/configuration.md.\n`);
    process.exit(2);
  }
  if (err instanceof WorkflowBundleError) {
    process.stderr.write(`worker refused to start: ${err.message}\n`);
    process.exit(4);
  }
  if (err instanceof TemporalSetupError) {
    process.stderr.write(`worker refused to start: ${err.message}\n`);
    process.exit(3);
  }
  process.stderr.write(`worker failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
