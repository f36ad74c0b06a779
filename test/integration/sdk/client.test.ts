// The typed client (sdk/) against the real stack: the document it is generated from is the one
// the API serves; a chat turn made with it is read back through its session helpers; API errors
// come back as SwitchboardApiError with the envelope's code; the completion stream and a streamed
// agent turn are parsed into their events (the turn's resumed from an event id); and a callback signed by its helper resumes a suspended session.
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { buildOpenApiDocument } from '../../../api/app';
import { createSwitchboardClient, sendCallback, signCallback, SwitchboardApiError, type SwitchboardClient } from '../../../sdk';
import { client } from '../../support/http';
import { paymentAgent, publishAgent } from '../../support/agents';
import { eventually } from '../../support/eventually';
import { flushProjection } from '../../support/projection';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';

jest.setTimeout(120_000);

interface ToolRequest {
  notify?: { url?: string; callbackSecret?: string };
}

let stack: TestStack;
let t: SeededTenant;
let sdk: SwitchboardClient;
let external: Server;
const received: ToolRequest[] = [];

beforeAll(async () => {
  external = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      received.push(JSON.parse(body || '{}') as ToolRequest);
      res.writeHead(202);
      res.end();
    });
  });
  await new Promise<void>((r) => external.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${(external.address() as AddressInfo).port}`;
  stack = await startTestStack({ worker: true, allowPrivate: { tools: [origin] } });
  t = await seedTenant(stack.ctx);
  const api = client(stack.baseUrl);
  await publishAgent(api, t, 'Greeter', 'AGENT: Greeter\nGOAL: "Greet."\nON_START:\n  RESPOND: "Hello from the greeter."\n');
  await publishAgent(api, t, 'Payments', paymentAgent({ name: 'Payments', endpoint: `${origin}/pay` }));
  sdk = createSwitchboardClient({ baseUrl: `${stack.baseUrl}/`, apiKey: t.adminKey });
});
afterAll(async () => {
  await stack.close();
  external.closeAllConnections();
  await new Promise((r) => external.close(r));
});

it('is generated from the document the API serves', async () => {
  const served = (await (await fetch(`${stack.baseUrl}/openapi.json`)).json()) as unknown;
  expect(JSON.parse(JSON.stringify(buildOpenApiDocument(stack.config.PUBLIC_BASE_URL)))).toEqual(served);
});

it('makes a chat turn and reads it back as a session and its transcript', async () => {
  const turn = await sdk.chat({ projectId: t.projectId, agentId: 'Greeter', message: 'hi there' });
  expect(turn.success).toBe(true);
  expect(turn.response).toContain('Hello from the greeter.');
  const sessionId = turn.sessionId;

  await flushProjection(stack.ctx, sessionId);
  const { session } = await sdk.sessions.get(t.projectId, sessionId);
  expect(session).toMatchObject({ id: sessionId, agentName: 'Greeter', channel: 'api' });

  const listed = await sdk.sessions.list(t.projectId, { limit: 50 });
  expect(listed.sessions.map((s) => s.id)).toContain(sessionId);

  const transcript = await sdk.sessions.transcript(sessionId, { limit: 200 });
  expect(transcript.messages.map((m) => [m.role, m.content])).toEqual(
    expect.arrayContaining([
      ['user', 'hi there'],
      ['assistant', expect.stringContaining('Hello from the greeter.')],
    ]),
  );

  // The next turn continues the same session.
  const next = await sdk.chat({ projectId: t.projectId, sessionId, message: 'again' });
  expect(next.sessionId).toBe(sessionId);
});

it('authenticates with a bearer token too, and turns error answers into SwitchboardApiError', async () => {
  const bearer = createSwitchboardClient({ baseUrl: stack.baseUrl, bearerToken: t.adminKey });
  expect((await bearer.sessions.list(t.projectId)).success).toBe(true);

  const missing = await sdk.sessions.get(t.projectId, '00000000-0000-4000-8000-000000000000').catch((e: unknown) => e);
  expect(missing).toBeInstanceOf(SwitchboardApiError);
  expect(missing).toMatchObject({ status: 404, code: 'NOT_FOUND' });

  const anonymous = createSwitchboardClient({ baseUrl: stack.baseUrl });
  await expect(anonymous.sessions.list(t.projectId)).rejects.toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
});

it('streams a completion as parsed events ending with complete', async () => {
  const events = [];
  for await (const event of sdk.streamCompletion({ projectId: t.projectId, messages: [{ role: 'user', content: 'Say hello' }], tier: 'fast' })) events.push(event);
  const names = events.map((e) => e.event);
  expect(names[0]).toBe('metadata');
  expect(names).toContain('text_delta');
  expect(names[names.length - 1]).toBe('complete');
  const text = events.filter((e) => e.event === 'text_delta').map((e) => String(e.data.delta)).join('');
  expect(text.length).toBeGreaterThan(0);
});

it('streams an agent turn as parsed events and resumes it after an event', async () => {
  const events = [];
  for await (const event of sdk.streamChat({ projectId: t.projectId, agentId: 'Greeter', message: 'hi there' })) events.push(event);
  expect(events.map((e) => e.id)).toEqual(events.map((_, i) => i));
  expect(events[0]!.event).toBe('turn');
  expect(events.at(-1)!.event).toBe('response');
  expect(events.at(-1)!.data.response).toContain('Hello from the greeter.');
  const resumed = [];
  for await (const event of sdk.resumeChatStream(String(events[0]!.data.turnId), { after: 0 })) resumed.push(event);
  expect(resumed).toEqual(events.slice(1));
});

it('signs a callback the real callback route accepts, once', async () => {
  const before = received.length;
  const suspended = await sdk.chat({ projectId: t.projectId, agentId: 'Payments', message: 'pay please' });
  expect(suspended.suspension?.tool).toBe('process_payment');
  const request = await eventually(async () => received[before], (r) => r !== undefined, 15_000, 50);
  const url = request!.notify!.url!;
  const secret = request!.notify!.callbackSecret!;
  expect(url).toBe(`${stack.config.PUBLIC_BASE_URL}/api/v1/callbacks/${suspended.suspensionId}`);
  // The API's PUBLIC_BASE_URL is not this test's address: post to the same path on the stack.
  const target = `${stack.baseUrl}/api/v1/callbacks/${suspended.suspensionId}`;

  // A signature with another secret is refused and uses nothing up.
  const body = JSON.stringify({ status: 'completed', transactionId: 'tx_sdk_1' });
  const forged = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json', 'x-callback-signature': signCallback('not-the-secret', body) }, body });
  expect(forged.status).toBe(401);
  await forged.body?.cancel();

  const delivered = await sendCallback(target, secret, { status: 'completed', transactionId: 'tx_sdk_1' });
  expect(delivered).toMatchObject({ status: 200, ok: true, alreadyProcessed: false, body: { ok: true } });
  const again = await sendCallback(target, secret, { status: 'completed', transactionId: 'tx_sdk_1' });
  expect(again).toMatchObject({ status: 200, ok: true, alreadyProcessed: true });

  const lines = await eventually(
    async () => {
      await flushProjection(stack.ctx, suspended.sessionId);
      return (await sdk.sessions.transcript(suspended.sessionId, { limit: 200 })).messages.map((m) => m.content);
    },
    (contents) => contents.some((c) => c.includes('Payment tx_sdk_1 went through.')),
    20_000,
    200,
  );
  expect(lines).toEqual(expect.arrayContaining([expect.stringContaining('Payment tx_sdk_1 went through.')]));
});
