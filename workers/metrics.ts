// The worker's /metrics (WORKER_METRICS_PORT): this process's registry (LLM and tool calls, the
// turns its activities send, Node) followed by the Temporal SDK's own worker metrics. The SDK
// exports those itself from its Rust core on a Prometheus listener that this module binds on a
// free loopback port before any Temporal connection exists; each scrape reads it and appends its
// text, so a scraper needs one target per worker. Off without WORKER_METRICS_PORT (and the SDK
// then exports nothing).
import { createServer } from 'node:net';
import { Runtime } from '@temporalio/worker';
import { type Config } from '../lib/config';
import { type Logger } from '../lib/logger';
import { serveMetrics } from '../lib/metrics/serve';
import { type MetricsServer } from '../lib/metrics/server';

/** A port free on loopback now (the SDK's listener takes an address, not port 0). */
async function freeLoopbackPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', resolve);
  });
  const address = probe.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/**
 * Installs the Temporal runtime with its Prometheus exporter and starts the scrape listener. Must
 * run before the worker's first Temporal connection (the runtime is installed once per process).
 */
export async function startWorkerMetrics(config: Config, logger: Logger): Promise<MetricsServer | null> {
  if (!config.WORKER_METRICS_PORT) return null;
  const sdkPort = await freeLoopbackPort();
  Runtime.install({
    telemetryOptions: {
      metrics: {
        // Histograms in seconds with the unit in their names, counters with `_total`: Prometheus's conventions.
        prometheus: { bindAddress: `127.0.0.1:${sdkPort}`, useSecondsForDurations: true, unitSuffix: true, countersTotalSuffix: true },
      },
    },
  });
  const sdkMetricsUrl = `http://127.0.0.1:${sdkPort}/metrics`;
  logger.info({ sdkMetricsUrl }, 'Temporal SDK metrics exported on loopback, appended to the worker\'s /metrics');
  return serveMetrics({
    config,
    port: config.WORKER_METRICS_PORT,
    logger,
    name: 'worker',
    async extra() {
      const res = await fetch(sdkMetricsUrl, { signal: AbortSignal.timeout(2000) });
      if (!res.ok) throw new Error(`the SDK's exporter answered ${res.status}`);
      return res.text();
    },
  });
}
