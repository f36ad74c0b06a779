// A button press through POST /api/v1/chat/agent: `action: { id, value }` takes the waiting step's
// ON_ACTION handler (with `message` optional), an id the step does not handle gets the step's
// RESPOND again, and a request with neither a message nor an action, or a malformed action, is 400.
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { publishAgent } from '../../support/agents';
import { replayWithTodaysCode, sessionHistory } from '../../support/workflow-history';

jest.setTimeout(60_000);

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;

const SHOP = `AGENT: Shop
GOAL: "Take a payment."
FLOW:
  steps: [menu, pay, talk]
  menu:
    REASONING: false
    RESPOND: "Pay now or talk to someone?"
    ACTIONS:
      - id: pay_now
        label: "Pay now"
      - id: talk
        label: "Talk to someone"
    ON_ACTION:
      pay_now:
        SET: invoice = action.value.invoice
        THEN: pay
      talk: talk
  pay:
    REASONING: false
    RESPOND: "Paying {{invoice}}."
    THEN: COMPLETE
  talk:
    REASONING: false
    RESPOND: "Connecting you."
    THEN: COMPLETE
`;

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await publishAgent(api, t, 'Shop', SHOP);
});
afterAll(async () => {
  await stack.close();
});

const chat = (body: Record<string, unknown>) => api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId: 'Shop', ...body } });

it('compiles without an unreachable step', async () => {
  const res = await api.post(`/api/projects/${t.projectId}/agents/Shop/validate`, { key: t.adminKey, json: {} });
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({ valid: true, diagnostics: [] });
});

it("moves the flow to the pressed button's step, and answers an unhandled id with the step again", async () => {
  const first = await chat({ message: 'hi' });
  expect(first.status).toBe(200);
  // The step asks on entry, and the first message (no button) gets its question again.
  expect(first.body.response).toContain('Pay now or talk to someone?');
  expect(first.body.actions).toBeDefined();
  const sessionId = first.body.sessionId as string;

  const unknown = await chat({ sessionId, action: { id: 'refund' } });
  expect(unknown.status).toBe(200);
  expect(unknown.body.response).toBe('Pay now or talk to someone?');

  const typed = await chat({ sessionId, message: 'pay_now' });
  expect(typed.body.response).toBe('Pay now or talk to someone?');

  const pressed = await chat({ sessionId, message: 'Pay now', action: { id: 'pay_now', value: { invoice: 'INV-123456' } } });
  expect(pressed.status).toBe(200);
  expect(pressed.body.response).toBe('Paying INV-123456.');
  expect(pressed.body.state).toMatchObject({ status: 'completed' });

  await replayWithTodaysCode(await sessionHistory(stack, sessionId), `session/${sessionId}`);
});

it.each([
  ['neither message nor action', {}, 'body.message or body.action is required'],
  ['a malformed id', { action: { id: 'has space' } }, 'an action id'],
  ['an unknown key', { action: { id: 'pay_now', extra: 1 } }, 'extra'],
  ['a value over 4 KB', { action: { id: 'pay_now', value: 'x'.repeat(5000) } }, 'body.action.value: at most 4096 bytes'],
])('refuses %s with a 400', async (_what, body, message) => {
  const res = await chat(body);
  expect(res.status).toBe(400);
  expect(res.body).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });
  expect(res.body.error.message).toContain(message);
});
