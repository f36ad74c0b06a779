// The Express receiver example of docs/http-async.md: it refuses unsigned or wrongly signed
// callbacks, handles a repeated message_id once, and the docs show its code as it is.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { type AddressInfo } from 'node:net';
import { type Server } from 'node:http';
import { signatureHeaders } from '../../../lib/http-async/signing';
import { createReceiver, type AblCallback } from '../../../examples/http-async/receiver';

const secret = 'whsec_test-secret';
let server: Server;
let url: string;
const handled: AblCallback[] = [];

beforeAll(async () => {
  server = createReceiver(secret, (c) => handled.push(c)).listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/abl`;
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
});

const post = (raw: string, headers: Record<string, string>) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: raw });

it('handles a signed callback once, however often it arrives, and refuses bad signatures', async () => {
  const raw = JSON.stringify({ event: 'agent.response', message_id: 'ham-1', session_key: 'http_async:p:s:k', response: 'Hi' });
  const first = await post(raw, signatureHeaders(secret, raw));
  const again = await post(raw, signatureHeaders(secret, raw));
  expect([first.status, again.status]).toEqual([200, 200]);
  expect(handled.map((c) => c.message_id)).toEqual(['ham-1']);
  expect((await post(raw, signatureHeaders('whsec_other', raw))).status).toBe(401);
  expect((await post(raw, {})).status).toBe(401);
  // The body is verified as bytes: the same JSON re-serialised differently is refused.
  const headers = signatureHeaders(secret, raw);
  expect((await post(JSON.stringify(JSON.parse(raw), null, 2), headers)).status).toBe(401);
  expect(handled).toHaveLength(1);
});

it('is shown in docs/http-async.md exactly as it is', () => {
  const read = (file: string) => readFileSync(path.join(__dirname, '../../..', file), 'utf8');
  const code = read('examples/http-async/receiver.ts').split('\n').slice(2).join('\n').trim();
  expect(read('docs/http-async.md')).toContain(code);
});
