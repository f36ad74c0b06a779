// API process entry: load config, connect, listen, and shut down gracefully on SIGINT/SIGTERM.
import { createServer } from 'node:http';
import { ConfigError, loadConfig } from '../lib/config';
import { createApp } from './app';
import { buildAppContext, closeAppContext } from './bootstrap';
import { type AppContext } from './context';
import { runningCalls } from '../core/running-calls';
import { startCapacityReconciler } from '../core/sessions/capacity-reconciler';
import { startRollupWarmer } from '../core/analytics/rollup-warmer';
import { startStaleClaimSweep } from '../core/callbacks/stale-claims';
import { startVoiceRoomReconciler } from '../core/voice/room-reconciler';
import { startClosedWorkflowReconciler } from '../core/sessions/closed-reconciler';
import { startInterruptedRunSweep } from '../core/agentic-apps/stale-runs';
import { httpServerOptions, limitConnectionsPerAddress } from './http/server-limits';
import { assertTemporalSetUp, TemporalSetupError } from '../lib/temporal-setup';
import { searchAttributeSpecs } from '../workflows/search-attributes';
import { serveMetrics } from '../lib/metrics/serve';
import { registerClusterGauges } from '../core/metrics/cluster-gauges';

/**
 * Refuses to serve a namespace that lacks what the workflows set (TemporalSetupError). Temporal
 * not answering now is not a refusal: the API starts and answers 503 until it is back (the worker
 * checks too).
 */
async function refuseWithoutTemporalSetUp(ctx: AppContext): Promise<void> {
  const unchecked = (err: unknown) => ctx.logger.warn({ err }, 'Temporal namespace and search attributes not checked at start');
  try {
    const temporal = await ctx.temporal.client();
    await assertTemporalSetUp(temporal.connection, ctx.config.TEMPORAL_NAMESPACE, searchAttributeSpecs(), unchecked);
  } catch (err) {
    if (err instanceof TemporalSetupError) throw err;
    unchecked(err);
  }
}

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const ctx = await buildAppContext(config);
  await refuseWithoutTemporalSetUp(ctx).catch(async (err: unknown) => {
    await closeAppContext(ctx).catch(() => undefined);
    throw err;
  });
  if (config.NODE_ENV === 'production' && config.RATE_LIMIT_STORE === 'memory') {
    ctx.logger.warn('RATE_LIMIT_STORE=memory: counters are per process; use it only with a single API replica');
  }
  // Header, request (receiving it only: SSE streams go on) and idle timeouts, and the per-address connection cap.
  const server = createServer(httpServerOptions(config), createApp(ctx));
  limitConnectionsPerAddress(server, config.HTTP_MAX_CONNECTIONS_PER_ADDRESS);
  await new Promise<void>((resolve) => server.listen(config.PORT, config.HOST, resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  ctx.logger.info({ port }, `API listening on http://${config.HOST}:${port}`);
  // /metrics on a listener of its own (METRICS_PORT), never on the public port.
  const metrics = config.METRICS_PORT ? await serveMetrics({ config, port: config.METRICS_PORT, logger: ctx.logger, name: 'API' }) : null;
  const stopClusterGauges = metrics
    ? registerClusterGauges({ client: () => ctx.temporal.client(), namespace: config.TEMPORAL_NAMESPACE, taskQueue: config.TEMPORAL_TASK_QUEUE, refreshMs: config.METRICS_REFRESH_MS, logger: ctx.logger })
    : () => undefined;
  const stopReconciler = startCapacityReconciler(ctx);
  const stopClaimSweep = startStaleClaimSweep(ctx);
  const stopVoiceRoomReconciler = startVoiceRoomReconciler(ctx);
  const stopClosedWorkflowReconciler = startClosedWorkflowReconciler(ctx);
  const stopRunSweep = startInterruptedRunSweep(ctx);
  const stopRollupWarmer = startRollupWarmer(ctx);

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    ctx.logger.info({ signal }, 'API shutting down');
    stopReconciler();
    stopClaimSweep();
    stopVoiceRoomReconciler();
    stopClosedWorkflowReconciler();
    stopRunSweep();
    stopRollupWarmer();
    stopClusterGauges();
    const graceMs = config.SHUTDOWN_GRACE_MS;
    const force = setTimeout(() => process.exit(1), graceMs + 1500);
    force.unref();
    // Provider calls and agent turns get the grace period to finish, then end with a retryable
    // error (provider calls on record); the database stays open until they have ended.
    const callsEnded = runningCalls(ctx).drain(graceMs);
    // A response that finishes after close() leaves its kept-alive connection open until the
    // keep-alive timeout, and close() waits for every connection: close them as they go idle.
    const closeIdle = setInterval(() => server.closeIdleConnections(), 50);
    server.close(() => {
      clearInterval(closeIdle);
      callsEnded
        .then(() => closeAppContext(ctx))
        .then(
          () => process.exit(0),
          () => process.exit(1),
        );
    });
    server.closeIdleConnections();
    // Any other request still running after it is cut.
    setTimeout(() => server.closeAllConnections(), graceMs + 500).unref();
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError) {
    process.stderr.write(`${err.message}\nSee docs/configuration.md.\n`);
    process.exit(2);
  }
  if (err instanceof TemporalSetupError) {
    process.stderr.write(`API refused to start: ${err.message}\n`);
    process.exit(3);
  }
  process.stderr.write(`API failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
