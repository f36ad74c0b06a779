// What a new user meets in their first session with an agent like docs/getting-started.md's, on
// the real API, worker and store: a first step's GATHER question said once when the first message
// does not answer it; the escalation notice said in a turn a callback resumed; and a failed tool
// call, async or not, reported by one `error` event, counted once.
import { flushProjection } from '../../support/projection';
import { client } from '../../support/http';
import { publishAgent, type TraceEvent } from '../../support/agents';
import { sendCallback } from '../../support/callbacks';
import { eventually } from '../../support/eventually';
import { startReceiver, type Receiver } from '../../support/receiver';
import { patchIdsIn, replayWithTodaysCode, sessionHistory } from '../../support/workflow-history';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';

jest.setTimeout(120_000);

const QUESTION = 'Which order should I refund? (ORD-1234)';
const NOTICE = 'I have passed this to a member of our team. I will continue as soon as they respond.';

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;
let receiver: Receiver;

/** docs/getting-started.md's Refund_Desk, its order system at `endpoint`; `onSuccess` replaces look_up's ON_SUCCESS lines. */
function refundDesk(name: string, endpoint: string, onSuccess?: string): string {
  return `AGENT: ${name}
GOAL: "Refund a customer's order; refunds over 100 need a manager's approval."
TOOLS:
  look_up_order(order_id: string) -> {status: string, amount: number}
    type: async_webhook
    endpoint: "${endpoint}"
    method: POST
    timeout_seconds: 600
ESCALATE:
  triggers:
    - WHEN: order.amount > 100 AND human IS NOT SET
      REASON: "Refund {{order.amount}} for {{order_id}}"
      TYPE: approval
FLOW:
  steps: [ask_order, look_up, approval, refund, declined]
  ask_order:
    REASONING: false
    GATHER:
      - order_id: required
        prompt: "${QUESTION}"
        validate: pattern(^ORD-\\d{4}$)
    THEN: look_up
  look_up:
    REASONING: false
    RESPOND: "Looking up {{order_id}}."
    CALL: look_up_order
      WITH:
        order_id: order_id
      AS: order
    ON_SUCCESS:
${onSuccess ?? `      RESPOND: "{{order_id}} was {{order.status}}: {{order.amount}}."
      THEN: approval`}
    ON_FAIL:
      RESPOND: "The order system did not answer; try again later."
  approval:
    REASONING: false
    CHECK: order.amount <= 100 OR human.approved == true
    ON_FAIL: declined
    THEN: refund
  refund:
    REASONING: false
    RESPOND: "Refunded {{order.amount}} for {{order_id}}."
    THEN: COMPLETE
  declined:
    REASONING: false
    RESPOND: "A manager declined the refund for {{order_id}}."
`;
}

beforeAll(async () => {
  receiver = await startReceiver(() => 202);
  stack = await startTestStack({ worker: true, allowPrivate: { tools: [receiver.origin] } });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await publishAgent(api, t, 'Refund_Desk', refundDesk('Refund_Desk', `${receiver.origin}/orders/lookup`));
  await publishAgent(
    api,
    t,
    'Refund_Desk_Own',
    refundDesk('Refund_Desk_Own', `${receiver.origin}/orders/lookup`, '      RESPOND: "A manager will look at {{order_id}}."\n      THEN: ESCALATE'),
  );
  // Nothing listens there: the request cannot be sent.
  await publishAgent(api, t, 'Refund_Desk_Down', refundDesk('Refund_Desk_Down', 'http://127.0.0.1:9/orders/lookup'));
  // The same order system as an ordinary (synchronous) HTTP tool.
  const sync = refundDesk('Refund_Desk_Sync_Down', 'http://127.0.0.1:9/orders/lookup').replace('type: async_webhook', 'type: http').replace('    timeout_seconds: 600\n', '');
  await publishAgent(api, t, 'Refund_Desk_Sync_Down', sync);
});
afterAll(async () => {
  await stack?.close();
  await receiver?.close();
});

const say = (json: Record<string, unknown>) => api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, ...json } });

async function transcript(sessionId: string): Promise<string[]> {
  await flushProjection(stack.ctx, sessionId);
  const res = await api.get(`/api/v1/sessions/${sessionId}/transcripts?limit=200`, { key: t.adminKey });
  return (res.body.messages as { role: string; content: string }[]).map((m) => `${m.role}: ${m.content}`);
}

/** Starts a session that asks for an order, gives it ORD-1234 and answers its order system's call with `result`. */
async function lookedUp(agentId: string, result: Record<string, unknown>): Promise<string> {
  const before = receiver.received.length;
  const first = await say({ agentId, message: 'I would like a refund for ORD-1234' });
  expect(first.status).toBe(202);
  const call = receiver.received[before]!;
  const answered = await sendCallback(call.body.callbackUrl as string, call.body.callbackSecret as string, JSON.stringify(result));
  expect(answered.status).toBe(200);
  return first.body.sessionId as string;
}

it("asks the first step's question once when the session's first message does not answer it", async () => {
  const res = await say({ agentId: 'Refund_Desk', message: 'Hi' });
  expect(res.status).toBe(200);
  expect(res.body.response).toBe(QUESTION);
  const sessionId = res.body.sessionId as string;
  // A message after the question that still names no order is a failed answer: asked again, once.
  const again = await say({ sessionId, message: 'Hello?' });
  expect(again.body.response).toBe(QUESTION);
  const answered = await say({ sessionId, message: 'ORD-1234' });
  expect(answered.status).toBe(202);
  expect(answered.body.response).toBe('Looking up ORD-1234.');
  // The patch is recorded where it changed the run, and the history replays with today's code.
  const history = await sessionHistory(stack, sessionId);
  expect(patchIdsIn(history)).toContain('start-gather-hold-v1');
  await replayWithTodaysCode(history, `session/${sessionId}`);
});

it('says the escalation notice when a trigger fires in the turn a callback resumed', async () => {
  const sessionId = await lookedUp('Refund_Desk', { status: 'delivered', amount: 250 });
  const lines = await eventually(() => transcript(sessionId), (l) => l.some((x) => x.includes(NOTICE)), 30_000, 200);
  expect(lines.at(-1)).toBe(`assistant: ORD-1234 was delivered: 250.\n\n${NOTICE}`);
  const history = await sessionHistory(stack, sessionId);
  expect(patchIdsIn(history)).toContain('escalation-notice-v1');
  await replayWithTodaysCode(history, `session/${sessionId}`);
});

it("says the agent's own message instead when the branch that escalates says one", async () => {
  const sessionId = await lookedUp('Refund_Desk_Own', { status: 'delivered', amount: 250 });
  await eventually(
    () => api.get(`/api/projects/${t.projectId}/human-tasks?status=pending&sessionId=${sessionId}`, { key: t.adminKey }),
    (r) => (r.body.tasks as unknown[] | undefined)?.length === 1,
    30_000,
    200,
  );
  const lines = await transcript(sessionId);
  expect(lines.at(-1)).toBe('assistant: A manager will look at ORD-1234.');
  expect(lines.join('\n')).not.toContain(NOTICE);
});

it.each([
  ['async', 'Refund_Desk_Down'],
  ['synchronous', 'Refund_Desk_Sync_Down'],
])('reports a failed %s tool call with one error event, counted once', async (_kind, agentId) => {
  const res = await say({ agentId, message: 'Refund ORD-1234' });
  expect(res.status).toBe(200);
  expect(res.body.response).toContain('The order system did not answer; try again later.');
  const errors = (res.body.traceEvents as TraceEvent[]).filter((e) => e.type === 'error');
  expect(errors).toHaveLength(1);
  expect(errors[0]!.data).toMatchObject({ kind: 'tool_error', tool: 'look_up_order' });
  const sessionId = res.body.sessionId as string;
  await flushProjection(stack.ctx, sessionId);
  const detail = await api.get(`/api/projects/${t.projectId}/sessions/${sessionId}`, { key: t.adminKey });
  expect(detail.body.session).toMatchObject({ errorCount: 1 });
});
