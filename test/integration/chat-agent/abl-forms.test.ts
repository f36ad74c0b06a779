// ABL forms that used to compile into something else, run through the real API and worker: a
// quoted WITH value reaches the tool as that text (templates rendered, nested objects built), and
// a constraint's `ON_FAIL: RESPOND "…"` answers with the message alone, once in the first turn.
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { publishAgent } from '../../support/agents';

jest.setTimeout(60_000);

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;

const router = `AGENT: Router
GOAL: "Route a ticket."
TOOLS:
  route(currency: string, queue: string, label: string, metadata: object) -> {ticket: string}
    type: http
    endpoint: "https://tickets.example.com/route"
    method: POST
FLOW:
  steps: [prepare, send]
  prepare:
    REASONING: false
    SET:
      department = "billing"
      USD = "not this"
    THEN: send
  send:
    REASONING: false
    CALL: route
      WITH:
        currency: "USD"
        queue: "{{department}}_queue"
        label: "{{department | upper}}"
        metadata:
          source: "chat"
          attempt: COALESCE(attempts, 0) + 1
      AS: routed
    ON_SUCCESS:
      RESPOND: "Ticket {{routed.ticket}}"
`;

const guarded = `AGENT: Guarded
GOAL: "Refund within policy."
TOOLS:
  refund(amount: number) -> {id: string}
    type: http
    endpoint: "https://pay.example.com/refunds"
    method: POST
CONSTRAINTS:
  - REQUIRE amount <= 500 BEFORE calling refund
    ON_FAIL: RESPOND "Refunds over 500 need a manager."
FLOW:
  steps: [ask, pay]
  ask:
    REASONING: false
    SET: amount = 900
    THEN: pay
  pay:
    REASONING: false
    CALL: refund(amount)
    ON_SUCCESS:
      RESPOND: "Refunded."
`;

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await publishAgent(api, t, 'Router', router);
  await publishAgent(api, t, 'Guarded', guarded);
  await publishAgent(api, t, 'Guarded_Plain', guarded.replace('AGENT: Guarded', 'AGENT: Guarded_Plain').replace('ON_FAIL: RESPOND "', 'ON_FAIL: "'));
});
afterAll(() => stack.close());

type Trace = { type: string; data: Record<string, unknown> };

const chat = (agentId: string, toolMocks: unknown[]) =>
  api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId, message: 'hello', testContext: { toolMocks } } });

it('passes quoted WITH values as text, renders their templates and builds nested objects', async () => {
  const res = await chat('Router', [{ toolName: 'route', response: { ticket: 'T-1' } }]);
  expect(res.status).toBe(200);
  expect(res.body.response).toBe('Ticket T-1');
  const calls = (res.body.traceEvents as Trace[]).filter((e) => e.type === 'tool_call');
  expect(calls.map((c) => c.data.input)).toEqual([
    { currency: 'USD', queue: 'billing_queue', label: 'BILLING', metadata: { source: 'chat', attempt: 1 } },
  ]);
});

it.each(['Guarded', 'Guarded_Plain'])('%s: answers a failed constraint with the ON_FAIL text, without the keyword or quotes, once', async (agent) => {
  const res = await chat(agent, [{ toolName: 'refund', response: { id: 'R-1' } }]);
  expect(res.status).toBe(200);
  // Said once: the session's first message does not run the step the start just blocked.
  expect(res.body.response).toBe('Refunds over 500 need a manager.');
  expect((res.body.traceEvents as Trace[]).filter((e) => e.type === 'tool_call')).toEqual([]);
  // The next message runs the step again, and it is blocked again: the message once more.
  const next = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, sessionId: res.body.sessionId, message: 'please', testContext: { toolMocks: [] } } });
  expect(next.body.response).toBe('Refunds over 500 need a manager.');
});

it('refuses to save an agent whose RESPOND has an indented child other than a voice block, naming E110', async () => {
  const created = await api.post(`/api/projects/${t.projectId}/agents`, {
    key: t.adminKey,
    json: { name: 'Voice', dslContent: 'AGENT: Voice\nGOAL: "g"\nFLOW:\n  a:\n    REASONING: false\n    RESPOND: "Booked."\n      THEN: COMPLETE\n' },
  });
  const version = created.status === 201 ? await api.post(`/api/projects/${t.projectId}/agents/Voice/versions`, { key: t.adminKey, json: {} }) : created;
  expect(version.status).toBeGreaterThanOrEqual(400);
  expect(version.status).toBeLessThan(500);
  expect(version.text).toContain('E110');
});
