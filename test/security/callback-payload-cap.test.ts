// An async tool's result enters a session bounded like a synchronous tool's: a callback's body or a
// resume's toolResult over TOOL_RESULT_HISTORY_MAX_BYTES (64 KiB) reaches the agent, the trace and
// the workflow history only as a cut with `…[truncated` markers; short fields stay whole.
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { createHmac } from 'node:crypto';
import { client } from '../support/http';
import { publishAgent } from '../support/agents';
import { eventually } from '../support/eventually';
import { flushProjection } from '../support/projection';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../support/stack';
import { sessionHistory } from '../support/workflow-history';

jest.setTimeout(120_000);

const HISTORY_MAX = 64 * 1024;
// The end of the long report: it must not survive the cut anywhere.
const SENTINEL = 'END-OF-REPORT-5c1d';

interface Received {
  body: { notify?: { url?: string; callbackSecret?: string } };
}

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;
let external: Server;
const received: Received[] = [];

const paymentAgent = (endpoint: string) => `AGENT: Payments
GOAL: "Take a payment."
TOOLS:
  process_payment(amount: number) -> {status: string, transactionId: string, report: string}
    type: async_webhook
    endpoint: "${endpoint}"
    method: POST
    callback_url_field: "notify.url"
    timeout_seconds: 3600
FLOW:
  steps: [pay, done, failed]
  pay:
    REASONING: false
    RESPOND: "Processing your payment."
    CALL: process_payment
      WITH:
        amount: 42
      AS: payment
    ON_SUCCESS:
      THEN: done
    ON_FAIL:
      THEN: failed
  done:
    REASONING: false
    RESPOND: "Payment {{payment.transactionId}} went through: {{payment.report}}"
  failed:
    REASONING: false
    RESPOND: "The payment did not go through."
`;

beforeAll(async () => {
  external = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      received.push({ body: JSON.parse(body || '{}') as Received['body'] });
      res.writeHead(202);
      res.end();
    });
  });
  await new Promise<void>((r) => external.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${(external.address() as AddressInfo).port}`;
  stack = await startTestStack({ worker: true, allowPrivate: { tools: [origin] } });
  expect(stack.config.TOOL_RESULT_HISTORY_MAX_BYTES).toBe(HISTORY_MAX);
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await publishAgent(api, t, 'Payments', paymentAgent(`${origin}/pay`));
});
afterAll(async () => {
  await stack.close();
  external.closeAllConnections();
  await new Promise((r) => external.close(r));
});

/** A result of about 300 KB: far over the cap, well under the API's 1 MB body limit. */
const bigResult = (transactionId: string) => ({ status: 'completed', transactionId, report: `${'lorem ipsum '.repeat(25_000)}${SENTINEL}` });

async function suspendedSession() {
  const before = received.length;
  const res = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId: 'Payments', message: 'pay please' } });
  expect(res.status).toBe(202);
  await eventually(async () => received.length, (n) => n > before, 10_000);
  return { sessionId: res.body.sessionId as string, suspensionId: res.body.suspensionId as string, secret: received[before]!.body.notify!.callbackSecret! };
}

async function assistantLines(sessionId: string): Promise<string[]> {
  await flushProjection(stack.ctx, sessionId);
  const res = await api.get(`/api/v1/sessions/${sessionId}/transcripts?limit=200`, { key: t.adminKey });
  return (res.body.messages as { role: string; content: string }[]).filter((m) => m.role === 'assistant').map((m) => m.content);
}

/** The `callback` signals' results as the session's history holds them (decoded). */
async function signalledResults(sessionId: string): Promise<string[]> {
  const history = await sessionHistory(stack, sessionId);
  return (history.events ?? [])
    .map((e) => e.workflowExecutionSignaledEventAttributes)
    .filter((s) => s?.signalName === 'callback')
    .map((s) => JSON.stringify((JSON.parse(Buffer.from(s!.input!.payloads![0]!.data!).toString('utf8')) as { payload: unknown }).payload));
}

async function expectCutResult(sessionId: string, transactionId: string) {
  const lines = await eventually(() => assistantLines(sessionId), (l) => l.some((x) => x.includes('went through')), 20_000, 100);
  const reply = lines.find((l) => l.includes('went through'))!;
  // Booleans, not the strings: a failure would print hundreds of kilobytes.
  expect(reply.startsWith(`Payment ${transactionId} went through: lorem ipsum`)).toBe(true);
  expect(reply.includes('…[truncated')).toBe(true);
  expect(reply.includes(SENTINEL)).toBe(false);
  const [result, ...more] = await signalledResults(sessionId);
  expect(more).toEqual([]);
  expect(Buffer.byteLength(result!, 'utf8')).toBeLessThanOrEqual(HISTORY_MAX);
  expect(result!.includes('…[truncated')).toBe(true);
  expect(result!.includes(`"transactionId":"${transactionId}"`)).toBe(true);
  expect(result!.includes(SENTINEL)).toBe(false);
}

it('cuts a signed callback body over TOOL_RESULT_HISTORY_MAX_BYTES before it reaches the session', async () => {
  const { sessionId, suspensionId, secret } = await suspendedSession();
  const body = JSON.stringify(bigResult('tx_cb'));
  expect(Buffer.byteLength(body)).toBeGreaterThan(4 * HISTORY_MAX);
  const res = await fetch(`${stack.baseUrl}/api/v1/callbacks/${suspensionId}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-callback-signature': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}` },
    body,
  });
  expect(res.status).toBe(200);
  await expectCutResult(sessionId, 'tx_cb');
});

it('cuts a resume toolResult over TOOL_RESULT_HISTORY_MAX_BYTES the same way', async () => {
  const { sessionId } = await suspendedSession();
  const res = await api.post(`/api/v1/sessions/${sessionId}/resume`, { key: t.adminKey, json: { toolResult: bigResult('tx_resume') } });
  expect(res.status).toBe(200);
  expect(res.body.status).toBe('resumed');
  await expectCutResult(sessionId, 'tx_resume');
});
