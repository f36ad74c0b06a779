// The Twilio fake's HTTP server: reads each request (a form for Twilio's REST API, JSON for the
// control API), sends /2010-04-01/… to the REST handlers and /__fake/… to the control routes,
// and writes the answer. Loopback only.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo } from 'node:net';
import { type FakeControl } from './control';
import { type Reply, type TwilioRest } from './rest';
import { TwilioApiError } from './resources';

const MAX_BODY_BYTES = 1024 * 1024;

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new TwilioApiError(413, 20413, 'Request entity too large'));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function write(res: ServerResponse, reply: Reply): void {
  if (res.destroyed || res.writableEnded) return;
  const headers: Record<string, string> = { ...reply.headers };
  let body: Buffer | string | undefined;
  if (reply.body) {
    body = reply.body;
    headers['content-type'] = reply.contentType ?? 'application/octet-stream';
  } else if (reply.json !== undefined) {
    body = JSON.stringify(reply.json);
    headers['content-type'] = 'application/json; charset=utf-8';
  }
  res.writeHead(reply.status, headers);
  res.end(body);
}

export interface FakeServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

export async function listen(rest: TwilioRest, control: FakeControl, port: number): Promise<FakeServer> {
  const server: Server = createServer((req, res) => {
    const closed = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) closed.abort();
    });
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://fake');
      try {
        const raw = await readBody(req);
        if (url.pathname.startsWith('/__fake/')) {
          let body: Record<string, unknown> = {};
          if (raw.trim()) {
            try {
              const parsed: unknown = JSON.parse(raw);
              body = parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
            } catch {
              write(res, { status: 400, json: { error: { message: 'the body must be JSON' } } });
              return;
            }
          }
          write(res, await control.handle(req.method ?? 'GET', url.pathname, url.searchParams, body));
          return;
        }
        const reply = await rest.handle({
          method: req.method ?? 'GET',
          path: url.pathname,
          query: url.searchParams,
          form: new URLSearchParams(raw),
          authorization: req.headers.authorization,
          closed: closed.signal,
        });
        write(res, reply);
      } catch (err) {
        const error = err instanceof TwilioApiError ? err : new TwilioApiError(500, 20500, err instanceof Error ? err.message : String(err));
        write(res, { status: error.status, json: error.body() });
      }
    })();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const actual = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${actual}`,
    port: actual,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
