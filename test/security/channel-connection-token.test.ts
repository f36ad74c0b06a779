// A voice channel connection's Twilio auth token is write-only: no answer of any route carries it
// (create, read, list, change, refusals that name the field), no log line holds it at the most
// verbose level, and the store keeps it sealed under the tenant's data key, bound to the
// connection, so that it opens there and nowhere else.
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { createLogger } from '../../lib/logger';
import { openConnectionToken } from '../../db/channel-connection';
import { secretMasterKeyRing } from '../../lib/secret-envelope';
import { client, type HttpResult } from '../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../support/stack';

jest.setTimeout(60_000);

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;
const logLines: string[] = [];
const answers: HttpResult[] = [];

const TOKEN = `tok${randomBytes(16).toString('hex')}`;
const NEXT_TOKEN = `tok${randomBytes(16).toString('hex')}`;
const SID = `AC${randomBytes(16).toString('hex')}`;

beforeAll(async () => {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logLines.push(chunk.toString('utf8'));
      done();
    },
  });
  stack = await startTestStack({ logger: createLogger({ level: 'trace' }, sink) });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
});
afterAll(async () => {
  await stack.close();
});

const url = (rest = '') => `/api/projects/${t.projectId}/channel-connections${rest}`;
async function send(method: 'get' | 'post' | 'patch' | 'delete', path: string, json?: unknown): Promise<HttpResult> {
  const res = await api[method](path, { key: t.adminKey, ...(json !== undefined ? { json } : {}) });
  answers.push(res);
  return res;
}

it('returns the auth token in no answer and no log line, and stores it sealed', async () => {
  const created = await send('post', url(), { name: 'Line', accountSid: SID, authToken: TOKEN, callerNumber: '+15551230001' });
  expect(created.status).toBe(201);
  const id = created.body.data && (created.body.data as { id: string }).id;
  expect(id).toMatch(/^cc_/);
  expect(Object.keys(created.body.data as object)).not.toContain('authToken');

  expect((await send('get', url(`/${id}`))).status).toBe(200);
  expect((await send('get', url())).status).toBe(200);
  expect((await send('patch', url(`/${id}`), { authToken: NEXT_TOKEN, name: 'Renamed' })).status).toBe(200);
  // Refusals with a token in the body: bad phone number, bad field, unknown field, bad account.
  expect((await send('post', url(), { name: 'X', accountSid: SID, authToken: TOKEN, callerNumber: TOKEN })).status).toBe(400);
  expect((await send('post', url(), { name: 'X', accountSid: TOKEN, authToken: TOKEN, callerNumber: '+15551230001' })).status).toBe(400);
  expect((await send('post', url(), { name: 'X', accountSid: SID, authToken: TOKEN, callerNumber: '+15551230001', extra: TOKEN })).status).toBe(400);
  expect((await send('post', url(), { name: 'X', accountSid: SID, authToken: TOKEN + 'x'.repeat(300), callerNumber: '+15551230001' })).status).toBe(400);
  expect((await send('patch', url(`/${id}`), { authToken: NEXT_TOKEN, callerNumber: NEXT_TOKEN })).status).toBe(400);
  expect((await send('patch', url(`/${id}`), { accountSid: `AC${'0'.repeat(32)}`, callerNumber: '+15551230002' })).status).toBe(422);
  expect((await send('post', url(), { name: 'X', accountSid: SID, authToken: TOKEN, callerNumber: '+15551230001', agentId: 'Nobody' })).status).toBe(422);

  for (const res of answers) {
    expect(res.text).not.toContain(TOKEN);
    expect(res.text).not.toContain(NEXT_TOKEN);
  }
  expect(logLines.length).toBeGreaterThan(0);
  for (const line of logLines) {
    expect(line).not.toContain(TOKEN);
    expect(line).not.toContain(NEXT_TOKEN);
  }

  // Sealed at rest, and it opens to the latest token under this connection only.
  const raw = await stack.ctx.models.ChannelConnection.findOne({ _id: id }).lean();
  expect(JSON.stringify(raw)).not.toContain(NEXT_TOKEN);
  const ring = secretMasterKeyRing(stack.config)!;
  expect(await openConnectionToken(stack.ctx.models.TenantDataKey, ring, raw!)).toBe(NEXT_TOKEN);
  await expect(openConnectionToken(stack.ctx.models.TenantDataKey, ring, { ...raw!, _id: 'cc_elsewhere' })).rejects.toThrow();
  // The refused creates wrote nothing.
  expect(await stack.ctx.models.ChannelConnection.countDocuments({ tenantId: t.tenantId })).toBe(1);
});
