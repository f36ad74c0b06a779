// The HTTP server's own bounds on what one client can hold, before any route runs: how long it
// may take to send its headers and its whole request (408 past either), how long a kept-alive
// connection may idle, and how many connections one peer address may have open at once.
import { type Server, type ServerOptions } from 'node:http';
import { type Config } from '../../lib/config';
import { clientNetwork } from '../auth/login-throttle';

type ServerLimitsConfig = Pick<Config, 'HTTP_HEADERS_TIMEOUT_MS' | 'HTTP_REQUEST_TIMEOUT_MS' | 'HTTP_KEEP_ALIVE_TIMEOUT_MS'>;

/**
 * Options for `http.createServer`. Node's request timeout covers receiving the request (headers
 * and body) only: once the request has arrived, a streamed response (SSE) is not cut by it.
 * Node looks for expired requests every `connectionsCheckingInterval`, so a request is cut
 * between its timeout and a quarter of it (at most 5 s) later.
 */
export function httpServerOptions(config: ServerLimitsConfig): ServerOptions {
  const shortest = Math.min(config.HTTP_HEADERS_TIMEOUT_MS, config.HTTP_REQUEST_TIMEOUT_MS);
  return {
    headersTimeout: config.HTTP_HEADERS_TIMEOUT_MS,
    requestTimeout: config.HTTP_REQUEST_TIMEOUT_MS,
    keepAliveTimeout: config.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    connectionsCheckingInterval: Math.max(100, Math.min(5_000, Math.floor(shortest / 4))),
  };
}

/**
 * Closes at once, unanswered, a connection beyond `max` open from one peer (an IPv4 address, or
 * an IPv6 /64). The peer is the socket's: behind a proxy every connection is the proxy's, and
 * X-Forwarded-For (TRUST_PROXY) plays no part, since no header has been read yet. 0: no cap.
 */
export function limitConnectionsPerAddress(server: Server, max: number): void {
  if (max === 0) return;
  const open = new Map<string, number>();
  server.on('connection', (socket) => {
    const peer = clientNetwork(socket.remoteAddress);
    const count = (open.get(peer) ?? 0) + 1;
    if (count > max) {
      socket.destroy();
      return;
    }
    open.set(peer, count);
    socket.once('close', () => {
      const left = (open.get(peer) ?? 1) - 1;
      if (left === 0) open.delete(peer);
      else open.set(peer, left);
    });
  });
}
