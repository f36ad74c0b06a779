// The two-task floor's worker, a process of its own as the platform's worker is, with the SDK's
// defaults: TEMPORAL_ADDRESS and FLOOR_TASK_QUEUE from the environment; prints "ready" once polling.
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import * as activities from './activities';

const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };

async function main() {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  const worker = await Worker.create({
    connection,
    taskQueue: process.env.FLOOR_TASK_QUEUE!,
    workflowBundle: await bundleWorkflowCode({ workflowsPath: require.resolve('./workflow'), logger: quiet }),
    activities,
  });
  process.once('SIGTERM', () => worker.shutdown());
  const running = worker.run();
  process.stdout.write('ready\n');
  await running;
  await connection.close();
}

main().catch((err: unknown) => {
  process.stderr.write(`${String(err)}\n`);
  process.exit(1);
});
