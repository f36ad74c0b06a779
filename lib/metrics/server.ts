// The scrape listener: a small HTTP server, apart from the API's public port, that answers
// `GET /metrics` in the Prometheus text format and nothing else. With METRICS_TOKEN set it asks
// for `Authorization: Bearer <token>` (compared in constant time) before it renders anything, so
// an anonymous caller who reaches it costs a few hundred bytes and learns nothing.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo } from 'node:net';
import { safeEqual } from '../crypto';

export interface MetricsServerOptions {
  host: string;
  /** 0 picks a free port (tests). */
  port: number;
  /** Required as a bearer token when set. */
  token?: string | undefined;
  /** The exposition text and its content type (the registry's, plus anything appended). */
  render(): Promise<{ contentType: string; body: string }>;
  /** Called with a render failure (the scrape gets a 500 without detail). */
  onError?(err: unknown): void;
}

export interface MetricsServer {
  server: Server;
  /** The port it listens on. */
  port: number;
  close(): Promise<void>;
}

function refuse(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', ...headers });
  res.end(`${message}\n`);
}

function authorized(req: IncomingMessage, token: string | undefined): boolean {
  if (!token) return true;
  const header = req.headers.authorization ?? '';
  const match = /^Bearer (.+)$/i.exec(header);
  return match !== null && safeEqual(match[1]!, token);
}

export async function startMetricsServer(options: MetricsServerOptions): Promise<MetricsServer> {
  const server = createServer((req, res) => {
    // No request body is ever read: whatever a caller sends is dropped with the connection.
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/metrics') return refuse(res, 404, 'Not found');
    if (req.method !== 'GET' && req.method !== 'HEAD') return refuse(res, 405, 'Method not allowed', { allow: 'GET, HEAD' });
    if (!authorized(req, options.token)) return refuse(res, 401, 'Unauthorized', { 'www-authenticate': 'Bearer realm="metrics"' });
    options.render().then(
      ({ contentType, body }) => {
        res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' });
        res.end(req.method === 'HEAD' ? undefined : body);
      },
      (err: unknown) => {
        options.onError?.(err);
        refuse(res, 500, 'Metrics unavailable');
      },
    );
  });
  // Scrapers send small requests and come back every few seconds.
  server.headersTimeout = 10_000;
  server.requestTimeout = 15_000;
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
