// One signed callback POST through the destination guard, against real local servers: a 2xx is
// delivered, anything else is reported with its reason (status, redirect, timeout, refused, down).
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo } from 'node:net';
import { postSignedCallback } from '../../../lib/http-async/callback-post';
import { verifySignature } from '../../../lib/http-async/signing';
import { createDestinationGuard } from '../../../lib/net/destination';

let server: Server;
let port: number;
let reply: (res: ServerResponse) => void = (res) => res.end();
const seen: Array<{ headers: IncomingHttpHeaders; body: string }> = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      seen.push({ headers: req.headers, body });
      reply(res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const allowed = () => createDestinationGuard({ allowPrivateNetworks: false, allowedPrivateDestinations: [`127.0.0.1:${port}`] }).fetch;
const post = (fetch = allowed(), timeoutMs?: number) =>
  postSignedCallback({ url: `http://127.0.0.1:${port}/hook`, secret: 'whsec_s', event: 'agent.response', body: { message_id: 'ham-1' }, fetch, timeoutMs });

it('delivers on 2xx, signed over the exact body sent', async () => {
  reply = (res) => res.writeHead(204).end();
  const outcome = await post();
  expect(outcome).toEqual({ ok: true, statusCode: 204, latencyMs: expect.any(Number), error: null, blocked: false });
  const got = seen[seen.length - 1]!;
  expect(got.body).toBe('{"message_id":"ham-1"}');
  expect(got.headers['x-abl-event']).toBe('agent.response');
  expect(verifySignature({ secret: 'whsec_s', timestamp: got.headers['x-abl-timestamp'] as string, signature: got.headers['x-abl-signature'] as string, rawBody: got.body })).toBe(true);
});

it('reports a non-2xx status and does not follow a redirect', async () => {
  reply = (res) => res.writeHead(500).end('boom');
  expect(await post()).toMatchObject({ ok: false, statusCode: 500, error: 'receiver answered 500' });
  reply = (res) => res.writeHead(302, { location: `http://127.0.0.1:${port}/elsewhere` }).end();
  const before = seen.length;
  expect(await post()).toMatchObject({ ok: false, statusCode: 302, error: 'receiver answered 302 (redirects are not followed)' });
  expect(seen.length).toBe(before + 1);
});

it('gives up when the receiver does not answer in time', async () => {
  reply = () => undefined;
  expect(await post(allowed(), 300)).toMatchObject({ ok: false, statusCode: null, error: 'no answer within 0.3 s', blocked: false });
});

it('refuses a destination the rules do not allow, sending nothing', async () => {
  const before = seen.length;
  const guard = createDestinationGuard({ allowPrivateNetworks: false, allowedPrivateDestinations: [] });
  expect(await post(guard.fetch)).toMatchObject({ ok: false, statusCode: null, blocked: true, error: expect.stringContaining('127.0.0.1') });
  expect(seen.length).toBe(before);
});
