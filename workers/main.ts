// Worker process entry: connects to Temporal and MongoDB and runs until SIGINT/SIGTERM, which
// the Temporal runtime turns into a graceful shutdown (activities in flight get
// SHUTDOWN_GRACE_MS to finish, workers/create-worker.ts).
import { NativeConnection } from '@temporalio/worker';
import { ConfigError, loadConfig } from '../lib/config';
import { createLogger } from '../lib/logger';
import { temporalConnectionSettings } from '../lib/temporal-options';
import { payloadCodecForProcess } from '../lib/payload-codec';
import { connectMongo } from '../db/connection';
import { createModels, syncIndexes } from '../db/models';
import { createActivityDeps } from './activity-deps';
import { createSwitchboardWorker } from './create-worker';
import { assertTemporalSetUp, TemporalSetupError } from '../lib/temporal-setup';
import { searchAttributeSpecs } from '../workflows/search-attributes';
import { startRollupWarmer } from '../core/analytics/rollup-warmer';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const logger = createLogger({ level: config.LOG_LEVEL, name: 'worker' });
  const payloadCodec = payloadCodecForProcess(config, logger);
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
    ...(config.WORKFLOW_BUNDLE_PATH ? { workflowBundle: { codePath: config.WORKFLOW_BUNDLE_PATH } } : {}),
  });
  logger.info({ taskQueue: config.TEMPORAL_TASK_QUEUE }, 'worker started');
  // The turns' analytics events are written here: their hours' rollups are built here as they close.
  const stopRollupWarmer = startRollupWarmer({ models, logger });
  await worker.run();
  stopRollupWarmer();
  await connection.close();
  await models.connection.close();
  logger.info('worker stopped');
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError) {
    process.stderr.write(`${err.message}\nSee docs/configuration.md.\n`);
    process.exit(2);
  }
  if (err instanceof TemporalSetupError) {
    process.stderr.write(`worker refused to start: ${err.message}\n`);
    process.exit(3);
  }
  process.stderr.write(`worker failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
