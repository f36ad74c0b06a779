// The raw bytes of a JSON request body, kept for the routes that must verify a signature over
// exactly what was sent (callbacks); other requests do not keep them.
import type { IncomingMessage } from 'node:http';

const RAW = Symbol('rawBody');
type WithRaw = IncomingMessage & { [RAW]?: Buffer };

/** Paths whose body is kept as sent. */
export function keepsRawBody(url: string | undefined): boolean {
  return url?.startsWith('/api/v1/callbacks/') ?? false;
}

export function keepRawBody(req: IncomingMessage, buf: Buffer): void {
  if (keepsRawBody(req.url)) (req as WithRaw)[RAW] = buf;
}

/** The body as sent, or an empty buffer when there was none. */
export function rawBodyOf(req: IncomingMessage): Buffer {
  return (req as WithRaw)[RAW] ?? Buffer.alloc(0);
}
