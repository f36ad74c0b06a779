// A real HTTP server on loopback that records every request a test's platform sends it (webhook
// callbacks, async tool requests) and answers with what the test says, by default 200.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';

export interface ReceivedRequest {
  path: string;
  headers: IncomingHttpHeaders;
  raw: string;
  /** The body parsed as JSON, or {} when it is empty or not JSON. */
  body: Record<string, unknown>;
}

export interface Receiver {
  /** `http://127.0.0.1:<port>` */
  origin: string;
  received: ReceivedRequest[];
  /** Decides each answer's status (and may hold the request by returning a promise). */
  answer: (request: ReceivedRequest) => number | Promise<number>;
  close(): Promise<void>;
}

export async function startReceiver(answer: Receiver['answer'] = () => 200): Promise<Receiver> {
  const receiver: Receiver = { origin: '', received: [], answer, close: async () => undefined };
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
    req.on('end', () => {
      let body: Record<string, unknown> = {};
      try {
        body = raw ? (JSON.parse(raw) as Record<string, unknown>) : {};
      } catch {
        body = {};
      }
      const request = { path: req.url ?? '', headers: req.headers, raw, body };
      receiver.received.push(request);
      void Promise.resolve(receiver.answer(request)).then((status) => {
        res.writeHead(status);
        res.end();
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  receiver.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  receiver.close = async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  };
  return receiver;
}
