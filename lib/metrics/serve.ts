// Starts a process's scrape listener from configuration (METRICS_HOST, METRICS_TOKEN and the
// process's port): the API and the worker call it with their own port and, for the worker, the
// Temporal SDK's own exposition text to append.
import { isLoopbackName } from '../net/loopback';
import { type Logger } from '../logger';
import { switchboardMetrics } from './registry';
import { type MetricsServer, startMetricsServer } from './server';

export interface ServeMetricsOptions {
  config: { METRICS_HOST: string; METRICS_TOKEN?: string | undefined; NODE_ENV: string };
  port: number;
  logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** Which process serves them, for the log line. */
  name: 'API' | 'worker';
  /** More exposition text after the registry's (the Temporal SDK's metrics, on the worker). */
  extra?(): Promise<string>;
}

export async function serveMetrics(options: ServeMetricsOptions): Promise<MetricsServer> {
  const { registry } = switchboardMetrics();
  const { config, logger } = options;
  const server = await startMetricsServer({
    host: config.METRICS_HOST,
    port: options.port,
    token: config.METRICS_TOKEN,
    async render() {
      const own = await registry.metrics();
      const extra = options.extra ? await options.extra().catch((err: unknown) => {
        logger.warn({ err }, 'the Temporal SDK metrics could not be read; /metrics serves the others');
        return '';
      }) : '';
      return { contentType: registry.contentType, body: extra ? `${own}\n${extra}` : own };
    },
    onError: (err) => logger.error({ err }, '/metrics could not be rendered'),
  });
  const exposed = !isLoopbackName(config.METRICS_HOST.includes(':') ? `[${config.METRICS_HOST}]` : config.METRICS_HOST);
  if (exposed && !config.METRICS_TOKEN && config.NODE_ENV === 'production') {
    logger.warn({ host: config.METRICS_HOST }, 'metrics listener reachable beyond this machine without METRICS_TOKEN: restrict it by network policy or set METRICS_TOKEN');
  }
  logger.info({ host: config.METRICS_HOST, port: server.port, token: Boolean(config.METRICS_TOKEN) }, `${options.name} metrics on http://${config.METRICS_HOST}:${server.port}/metrics`);
  return server;
}
