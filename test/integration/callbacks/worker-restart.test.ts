// A suspended session costs no worker: its worker can die while it waits, and the callback is
// answered by whichever worker runs next. The callback secret never enters workflow history.
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { client } from '../../support/http';
import { publishAgent } from '../../support/agents';
import { sendCallback } from '../../support/callbacks';
import { eventually } from '../../support/eventually';
import { flushProjection } from '../../support/projection';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { FAST_FAILOVER_ENV, startWorkerProcess } from '../../support/worker-process';
import { historyBytes, sessionHistory, storedHistory } from '../../support/workflow-history';

jest.setTimeout(120_000);

let stack: TestStack;
let t: SeededTenant;
let external: Server;
const received: { callbackUrl?: string; callbackSecret?: string }[] = [];

beforeAll(async () => {
  external = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      received.push(JSON.parse(body || '{}') as (typeof received)[number]);
      res.writeHead(202);
      res.end();
    });
  });
  await new Promise<void>((r) => external.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${(external.address() as AddressInfo).port}`;
  stack = await startTestStack({ env: FAST_FAILOVER_ENV, allowPrivate: { tools: [origin] } });
  t = await seedTenant(stack.ctx);
  await publishAgent(
    client(stack.baseUrl),
    t,
    'Checks',
    `AGENT: Checks
GOAL: "Run a check."
TOOLS:
  run_check(subject: string) -> {verdict: string}
    type: async_webhook
    endpoint: "${origin}/checks"
    method: POST
FLOW:
  steps: [check, report]
  check:
    REASONING: false
    CALL: run_check
      WITH:
        subject: "account"
      AS: outcome
    ON_SUCCESS:
      THEN: report
  report:
    REASONING: false
    RESPOND: "Verdict: {{outcome.verdict}}"
`,
  );
});
afterAll(async () => {
  await stack.close();
  external.closeAllConnections();
  await new Promise((r) => external.close(r));
});

it('resumes on a new worker after the one that suspended it was killed, with no secret in history', async () => {
  const api = client(stack.baseUrl);
  const first = await startWorkerProcess(stack.config);
  const res = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, message: 'check please' } });
  expect(res.status).toBe(202);
  const sessionId: string = res.body.sessionId;
  first.child.kill('SIGKILL');
  await first.exited;

  expect(received[0]!.callbackUrl).toMatch(/\/api\/v1\/callbacks\/cb_/);
  const secret = received[0]!.callbackSecret!;
  const body = JSON.stringify({ verdict: 'clear' });
  // Accepted with no worker running: the result waits in the session's history.
  const delivered = await sendCallback(`${stack.baseUrl}/api/v1/callbacks/${res.body.suspensionId}`, secret, body);
  expect(await delivered.json()).toEqual({ ok: true });

  const second = await startWorkerProcess(stack.config);
  try {
    const lines = await eventually(
      async () => {
        await flushProjection(stack.ctx, sessionId);
        return (await stack.ctx.models.TranscriptMessage.find({ sessionId, role: 'assistant' }).lean()).map((m) => m.content);
      },
      (l) => l.includes('Verdict: clear'),
      30_000,
      200,
    );
    expect(lines.filter((l) => l === 'Verdict: clear')).toHaveLength(1);

    // As anyone with access to Temporal reads it (the Web UI), and as an operator decodes it.
    const stored = historyBytes(await storedHistory(stack, `session/${sessionId}`));
    const decoded = historyBytes(await sessionHistory(stack, sessionId));
    expect(stored.length).toBeGreaterThan(1000);
    expect(decoded.includes('check please')).toBe(true);
    expect(stored.includes(secret)).toBe(false);
    expect(decoded.includes(secret)).toBe(false);
  } finally {
    await second.stop();
  }
});
