// A callback that arrives while a session continues as new is never lost. The session suspends on
// an async tool call, and its history is long enough that it rolls over right after; the
// rollover's database write (its held transcript rows) is slowed down, and the signed callback
// comes meanwhile. The resume it starts is still calling a tool when the write ends: the session
// must finish the resume (the tool is called, the reply written) instead of continuing as new
// with the resume cut off and a wait whose result it has already taken.
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { Context } from '@temporalio/activity';
import { client } from '../support/http';
import { paymentAgent, publishAgent } from '../support/agents';
import { sendCallback } from '../support/callbacks';
import { eventually } from '../support/eventually';
import { flushProjection } from '../support/projection';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../support/stack';
import { patchIdsIn, sessionHistory } from '../support/workflow-history';
import { CALLBACK_AT_ROLLOVER_PATCH } from '../../workflows/patches';

jest.setTimeout(180_000);

/** A promise with its resolver, for the test to open a gate. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;
let external: Server;
let secret = '';
/** Armed, the next projection write waits for `releaseWrite`; `writeHeld` opens when one does. */
let holdNextWrite = false;
const writeHeld = gate();
const releaseWrite = gate();
/** The resume's tool call waits for `releaseRecord`; `recordCalled` opens when it is made. */
const recordCalled = gate();
const releaseRecord = gate();

// After the callback, the `done` step records the payment with a second (plain HTTP) tool.
const agent = (origin: string) =>
  paymentAgent({
    endpoint: `${origin}/pay`,
    moreTools: `  record_payment(transactionId: string) -> {ok: boolean}
    type: http
    endpoint: "${origin}/record"
    method: POST
`,
    done: `    CALL: record_payment
      WITH:
        transactionId: "{{payment.transactionId}}"
      AS: recorded
    ON_SUCCESS:
      RESPOND: "Payment {{payment.transactionId}} went through."
      THEN: COMPLETE
    ON_FAIL:
      RESPOND: "Payment {{payment.transactionId}} went through, unrecorded."
      THEN: COMPLETE
`,
  });

beforeAll(async () => {
  external = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      if (req.url === '/pay') {
        secret = (JSON.parse(body) as { notify: { callbackSecret: string } }).notify.callbackSecret;
        res.writeHead(202);
        res.end();
        return;
      }
      recordCalled.open();
      void releaseRecord.opened.then(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"ok":true}');
      });
    });
  });
  await new Promise<void>((r) => external.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${(external.address() as AddressInfo).port}`;
  stack = await startTestStack({
    worker: true,
    allowPrivate: { tools: [origin] },
    // The first turn's history is over this, so the session rolls over once it suspends; rows are
    // written only at the rollover (no timer write comes first).
    env: { SESSION_MAX_HISTORY_EVENTS: '12', SESSION_PROJECTION_FLUSH_MS: '60000' },
    // The slow database write: the projection write the rollover waits for.
    workerInterceptors: {
      activity: [
        () => ({
          inbound: {
            async execute(input, next) {
              if (Context.current().info.activityType === 'recordTurn' && holdNextWrite) {
                holdNextWrite = false;
                writeHeld.open();
                await releaseWrite.opened;
              }
              return next(input);
            },
          },
        }),
      ],
    },
  });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await publishAgent(api, t, 'Payments', agent(origin));
});
afterAll(async () => {
  releaseWrite.open();
  releaseRecord.open();
  await stack.close();
  external.closeAllConnections();
  await new Promise((r) => external.close(r));
});

async function assistantLines(sessionId: string): Promise<string[]> {
  await flushProjection(stack.ctx, sessionId);
  const res = await api.get(`/api/v1/sessions/${sessionId}/transcripts?limit=200`, { key: t.adminKey });
  return (res.body.messages as { role: string; content: string }[]).filter((m) => m.role === 'assistant').map((m) => m.content);
}

it('delivers a callback that arrives during the rollover’s database write', async () => {
  holdNextWrite = true;
  const res = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId: 'Payments', message: 'pay please' } });
  expect(res.status).toBe(202);
  const sessionId = res.body.sessionId as string;
  const suspensionId = res.body.suspensionId as string;
  const handle = (await stack.ctx.temporal.client()).workflow.getHandle(`session/${sessionId}`);
  const firstRun = (await handle.describe()).runId;

  // The session is rolling over, its write held: the callback comes now.
  await writeHeld.opened;
  const body = JSON.stringify({ status: 'completed', transactionId: 'tx_rollover' });
  const delivered = await sendCallback(`${stack.baseUrl}/api/v1/callbacks/${suspensionId}`, secret, body);
  expect(delivered.status).toBe(200);
  expect(await delivered.json()).toEqual({ ok: true });
  // The held write outlasts its attempt's timeout, and its retry writes the rows: the rollover
  // goes on while the resume the callback started waits for its tool. That call must come (the
  // session kept the result) and the resume must end before the session moves on.
  const called = await Promise.race([recordCalled.opened.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 90_000))]);
  expect(called ? 'the resume called its tool' : 'the callback was dropped at the rollover').toBe('the resume called its tool');
  releaseWrite.open();
  releaseRecord.open();

  const lines = await eventually(() => assistantLines(sessionId), (l) => l.some((x) => x.includes('went through')), 30_000, 200);
  expect(lines).toContain('Payment tx_rollover went through.');
  const suspension = await stack.ctx.models.Suspension.findById(suspensionId).lean();
  expect(suspension?.status).toBe('delivered');
  // The flow went on to its end, in the run that took the callback (which held off its rollover).
  const last = await handle.describe();
  expect(last.status.name).toBe('COMPLETED');
  expect(last.runId).toBe(firstRun);
  expect(patchIdsIn(await sessionHistory(stack, sessionId, firstRun))).toContain(CALLBACK_AT_ROLLOVER_PATCH);
});
