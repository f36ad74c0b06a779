// A GATHER opened by a flow's ON_FAIL branch, through the real API and Temporal: the tool fails
// (a test mock), the branch asks for the order number, the answer fills it, and the branch's
// THEN runs the call again with it. The session records patches branch-gather-v1 and
// start-gather-hold-v1 and replays.
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { publishAgent } from '../../support/agents';
import { patchIdsIn, replayWithTodaysCode, sessionHistory } from '../../support/workflow-history';
import { ASK_ORDER_ON_FAIL, shopAgent } from '../../fixtures/agents/gather-and-errors';

jest.setTimeout(60_000);

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;

const shop = shopAgent(ASK_ORDER_ON_FAIL);

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await publishAgent(api, t, 'Shop', shop);
});
afterAll(() => stack.close());

type Trace = { type: string; data: Record<string, unknown> };

const chat = (message: string, toolMocks: unknown[], sessionId?: string) =>
  api.post('/api/v1/chat/agent', {
    key: t.adminKey,
    json: { projectId: t.projectId, agentId: 'Shop', message, testContext: { toolMocks }, ...(sessionId ? { sessionId } : {}) },
  });

it("takes the answer to an ON_FAIL branch's GATHER and follows the branch's THEN", async () => {
  const first = await chat('where is my order?', [{ toolName: 'lookup', error: 'no order id' }]);
  expect(first.status).toBe(200);
  // The session's first turn runs the flow up to the branch's question; the message, sent before
  // its sender saw that question, is not a failed answer to it: asked once, no retry prompt.
  expect(first.body.response).toBe('I could not find it.\n\nWhich order number?');
  const sessionId = first.body.sessionId as string;

  const second = await chat('A-42', [{ toolName: 'lookup', response: { status: 'shipped' } }], sessionId);
  expect(second.status).toBe(200);
  expect(second.body.response).toBe('Found A-42.');
  const calls = (second.body.traceEvents as Trace[]).filter((e) => e.type === 'tool_call');
  expect(calls.map((c) => c.data.input)).toEqual([{ order_id: 'A-42' }]);

  const history = await sessionHistory(stack, sessionId);
  expect(patchIdsIn(history)).toEqual(expect.arrayContaining(['branch-gather-v1', 'start-gather-hold-v1']));
  await replayWithTodaysCode(history, `session/${sessionId}`);
});
