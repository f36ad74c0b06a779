// The SSE writer sends the events of one run of promise continuations in one socket write, and
// sends it before the event loop goes on to other I/O (an uncork on setImmediate held a first
// token behind whatever else the process had to read).
import express from 'express';
import { createServer, request, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { SseWriter } from '../../../api/http/sse';

let server: Server;
let order: string[];
let socketWrites: number;
let writesBeforeEnd: number;

beforeEach(async () => {
  order = [];
  socketWrites = 0;
  const app = express();
  app.get('/events', (_req, res) => {
    void (async () => {
      // What reaches the socket's handle: one call per system call (writev for corked data).
      const socket = res.socket as unknown as { _write: (...args: unknown[]) => void; _writev: (...args: unknown[]) => void };
      for (const method of ['_write', '_writev'] as const) {
        const original = socket[method].bind(socket);
        socket[method] = (...args: unknown[]) => {
          socketWrites += 1;
          original(...args);
        };
      }
      const uncork = res.uncork.bind(res);
      res.uncork = () => {
        order.push('uncork');
        uncork();
      };
      const sse = new SseWriter(res, 60_000);
      sse.open();
      setImmediate(() => order.push('other I/O'));
      await sse.send('metadata', { n: 0 });
      await Promise.resolve();
      await sse.send('text_delta', { text: 'a' });
      await sse.send('text_delta', { text: 'b' });
      setTimeout(() => {
        writesBeforeEnd = socketWrites;
        sse.end();
      }, 20);
    })();
  });
  server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});

afterEach(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function readAll(): Promise<string> {
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path: '/events' }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve(text));
    })
      .on('error', reject)
      .end();
  });
}

it('flushes the events of one run of continuations together, before other I/O is handled', async () => {
  const body = await readAll();
  expect(body).toBe('event: metadata\ndata: {"n":0}\n\nevent: text_delta\ndata: {"text":"a"}\n\nevent: text_delta\ndata: {"text":"b"}\n\n');
  expect(order.slice(0, 2)).toEqual(['uncork', 'other I/O']);
  // The headers and the three events left in one write (the end of the response is another).
  expect(writesBeforeEnd).toBe(1);
});
