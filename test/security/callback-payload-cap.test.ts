// An async tool's result enters a session bounded like a synchronous tool's: a callback's body or a
// resume's toolResult over TOOL_RESULT_HISTORY_MAX_BYTES (64 KiB) reaches the agent, the trace and
// the workflow history only as a cut with `…[truncated` markers; short fields stay whole.
import { client } from '../support/http';
import { paymentAgent, publishAgent } from '../support/agents';
import { sendCallback } from '../support/callbacks';
import { eventually } from '../support/eventually';
import { flushProjection } from '../support/projection';
import { startReceiver, type Receiver } from '../support/receiver';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../support/stack';
import { sessionHistory } from '../support/workflow-history';

jest.setTimeout(120_000);

const HISTORY_MAX = 64 * 1024;
// The end of the long report: it must not survive the cut anywhere.
const SENTINEL = 'END-OF-REPORT-5c1d';

interface PaymentRequest {
  notify?: { url?: string; callbackSecret?: string };
}

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;
let external: Receiver;

const payments = (endpoint: string) =>
  paymentAgent({ endpoint, resultFields: 'status: string, transactionId: string, report: string', done: '    RESPOND: "Payment {{payment.transactionId}} went through: {{payment.report}}"\n' });

beforeAll(async () => {
  // The payment service acknowledges with 202; its verdict comes by callback.
  external = await startReceiver(() => 202);
  const origin = external.origin;
  stack = await startTestStack({ worker: true, allowPrivate: { tools: [origin] } });
  expect(stack.config.TOOL_RESULT_HISTORY_MAX_BYTES).toBe(HISTORY_MAX);
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await publishAgent(api, t, 'Payments', payments(`${origin}/pay`));
});
afterAll(async () => {
  await stack.close();
  await external.close();
});

/** A result of about 300 KB: far over the cap, well under the API's 1 MB body limit. */
const bigResult = (transactionId: string) => ({ status: 'completed', transactionId, report: `${'lorem ipsum '.repeat(25_000)}${SENTINEL}` });

async function suspendedSession() {
  const received = external.received;
  const before = received.length;
  const res = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId: 'Payments', message: 'pay please' } });
  expect(res.status).toBe(202);
  await eventually(async () => received.length, (n) => n > before, 10_000);
  return { sessionId: res.body.sessionId as string, suspensionId: res.body.suspensionId as string, secret: (received[before]!.body as PaymentRequest).notify!.callbackSecret! };
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
  const res = await sendCallback(`${stack.baseUrl}/api/v1/callbacks/${suspensionId}`, secret, body);
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
