/**
 * A fake of Deepgram's pre-recorded transcription endpoint speaking its wire protocol
 * (`POST /v1/listen`, `Authorization: Token <key>`, the audio as the body, options in the query;
 * Deepgram's result and error shapes), so the adapter's HTTP path runs in tests.
 *
 *   const fake = await startFakeDeepgram({ apiKey: 'dg-test' });
 *   fake.result = (req) => ({ transcript: 'book a meeting', confidence: 0.93 });
 *   fake.failNext(429, { 'retry-after': '2' });
 *   expect(fake.requests[0]?.query.getAll('keyterm')).toEqual(['book a meeting']);
 *
 * A request with another key gets 401 (`INVALID_AUTH`); another path 404.
 */
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';

export interface FakeDeepgramRequest {
  path: string;
  query: URLSearchParams;
  headers: Record<string, string>;
  body: Buffer;
}

export interface FakeDeepgramServer {
  /** Pass to the adapter as `baseURL`. */
  readonly baseURL: string;
  readonly requests: FakeDeepgramRequest[];
  /** The best alternative for a request. @default { transcript: 'hello from the fake deepgram', confidence: 0.9 } */
  result: (request: FakeDeepgramRequest) => { transcript: string; confidence: number };
  /** Answer the next request with this status (Deepgram's error body) and headers. */
  failNext(status: number, headers?: Record<string, string>): void;
  close(): Promise<void>;
}

export async function startFakeDeepgram(options: { apiKey?: string } = {}): Promise<FakeDeepgramServer> {
  const requests: FakeDeepgramRequest[] = [];
  const failures: { status: number; headers: Record<string, string> }[] = [];
  let result: FakeDeepgramServer['result'] = () => ({ transcript: 'hello from the fake deepgram', confidence: 0.9 });
  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://fake');
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
      const send = (status: number, body: unknown, extra: Record<string, string> = {}): void => {
        res.writeHead(status, { 'content-type': 'application/json', ...extra });
        res.end(JSON.stringify(body));
      };
      const error = (code: string, message: string) => ({ err_code: code, err_msg: message, request_id: `req-${requests.length}` });
      if (req.method !== 'POST' || url.pathname !== '/v1/listen') return send(404, error('NOT_FOUND', 'Not found'));
      const request: FakeDeepgramRequest = { path: url.pathname, query: url.searchParams, headers, body: Buffer.concat(parts) };
      requests.push(request);
      if (options.apiKey && headers.authorization !== `Token ${options.apiKey}`) return send(401, error('INVALID_AUTH', 'Invalid credentials.'));
      const failure = failures.shift();
      if (failure) return send(failure.status, error(failure.status === 429 ? 'TOO_MANY_REQUESTS' : 'INTERNAL_SERVER_ERROR', 'Fake failure.'), failure.headers);
      if (request.body.length === 0) return send(400, error('Bad Request', 'Bad Request: failed to process audio: corrupt or unsupported data'));
      const best = result(request);
      send(200, {
        metadata: { request_id: `req-${requests.length}`, channels: 1, models: [url.searchParams.get('model')] },
        results: { channels: [{ alternatives: [{ transcript: best.transcript, confidence: best.confidence, words: [] }] }] },
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    baseURL: origin,
    requests,
    get result() {
      return result;
    },
    set result(fn) {
      result = fn;
    },
    failNext(status, headers = {}) {
      failures.push({ status, headers });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
