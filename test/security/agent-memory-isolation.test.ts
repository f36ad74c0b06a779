// Persistent agent memory is keyed by tenant, project, scope and contact: what one contact's
// session remembered is read by that contact's next session only, never by another contact, an
// anonymous session or another tenant's session (even one naming the same contact id), and an
// agent may write a path it was granted read-only access to only to have the write refused.
import { client } from '../support/http';
import { publishAgent } from '../support/agents';
import { eventually } from '../support/eventually';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../support/stack';
import { buildSessionStartInput, claimSessionCapacity, createSessionRecord } from '../../core/sessions/start';
import { AGENT_SESSION_WORKFLOW_TYPE, sessionStartOptions, temporalClient } from '../../core/sessions/workflow-client';
import type { SessionContact } from '../../workflows/definitions';

jest.setTimeout(120_000);

const KEEPER = `AGENT: Keeper
GOAL: "Keep the guest's secret word"
MEMORY:
  persistent:
    - user.word
      DEFAULT: "none"
  remember:
    - WHEN: word IS SET
      STORE: word -> user.word
FLOW:
  steps: [hello]
  hello:
    REASONING: false
    RESPOND: "Word [{{user.word}}]"
    ON_INPUT:
      - ELSE:
        THEN: hello
`;

const FRONT = `AGENT: Front
GOAL: "Route"
MEMORY:
  persistent:
    - user.word
    - user.role
      ACCESS: read
HANDOFF:
  - TO: Back
    WHEN: input == "back"
    CONTEXT:
      grant_memory: [user.word, user.role]
FLOW:
  steps: [menu]
  menu:
    REASONING: false
    RESPOND: "Word [{{user.word}}] role [{{user.role}}]"
    ON_INPUT:
      - ELSE:
        THEN: menu
`;

const BACK = `AGENT: Back
GOAL: "Write what Front granted"
FLOW:
  steps: [write]
  write:
    REASONING: false
    SET:
      user.role = "admin"
      user.word = "granted"
    RESPOND: "Saved"
    ON_INPUT:
      - ELSE:
        THEN: write
`;

let stack: TestStack;
let a: SeededTenant;
let b: SeededTenant;
let api: ReturnType<typeof client>;

const contact = (contactId: string): SessionContact => ({ contactId, type: 'customer', identityType: 'email', displayName: null, company: null, department: null, accountRef: null, tags: [] });

async function reply(owner: SeededTenant, agentName: string, who: SessionContact | undefined, messages: string[], testContext?: Record<string, unknown>): Promise<{ sessionId: string; responses: string[] }> {
  const start = {
    ...buildSessionStartInput(stack.config, { tenantId: owner.tenantId, projectId: owner.projectId, agentId: null, agentName, channel: 'api' }),
    ...(who ? { contact: who } : {}),
  };
  await claimSessionCapacity(stack.ctx, start);
  await createSessionRecord(stack.ctx.models, start);
  await (await temporalClient(stack.ctx)).workflow.start(AGENT_SESSION_WORKFLOW_TYPE, sessionStartOptions(stack.config, start));
  const responses: string[] = [];
  for (const [i, message] of messages.entries()) {
    const res = await api.post('/api/v1/chat/agent', {
      key: owner.adminKey,
      json: { projectId: owner.projectId, sessionId: start.sessionId, message, ...(i === 0 && testContext ? { testContext } : {}) },
    });
    expect(res.status).toBe(200);
    responses.push((res.body as { response: string }).response);
  }
  return { sessionId: start.sessionId, responses };
}

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  api = client(stack.baseUrl);
  a = await seedTenant(stack.ctx);
  b = await seedTenant(stack.ctx);
  for (const owner of [a, b]) {
    await publishAgent(api, owner, 'Keeper', KEEPER);
    await publishAgent(api, owner, 'Back', BACK);
    await publishAgent(api, owner, 'Front', FRONT);
  }
});
afterAll(() => stack.close());

test("a contact's fact reaches only that contact's later sessions in that tenant; no other contact, anonymous session or tenant", async () => {
  await reply(a, 'Keeper', contact('ct_alice'), ['hi'], { gatherValues: { word: 'swordfish' } });
  expect((await reply(a, 'Keeper', contact('ct_alice'), ['hi'])).responses[0]).toContain('Word [swordfish]');
  expect((await reply(a, 'Keeper', contact('ct_mallory'), ['hi'])).responses[0]).toContain('Word [none]');
  // An anonymous session's user facts stay in that session: the next one starts from the DEFAULT.
  const anon = await reply(a, 'Keeper', undefined, ['hi', 'again'], { gatherValues: { word: 'anon-secret' } });
  expect(anon.responses[1]).toContain('Word [anon-secret]');
  expect((await reply(a, 'Keeper', undefined, ['hi'])).responses[0]).toContain('Word [none]');
  // Tenant B's session names the same contact id: it still sees nothing of tenant A's.
  expect((await reply(b, 'Keeper', contact('ct_alice'), ['hi'])).responses[0]).toContain('Word [none]');
});

test('a granted read-only path is not written: the write is refused and traced, the readwrite one is saved', async () => {
  const s = await reply(a, 'Front', contact('ct_grant'), ['hi', 'back']);
  expect(s.responses[1]).toContain('Saved');
  const events = await eventually(
    () => stack.ctx.models.TraceEvent.find({ tenantId: a.tenantId, sessionId: s.sessionId }).lean(),
    (evs) => evs.some((e) => e.type === 'error' && e.data.kind === 'memory_access'),
    10_000,
  );
  expect(events.find((e) => e.data.kind === 'memory_access')?.data.message).toBe('SET user.role refused: Back may only read "user.role" (ACCESS: read)');
  expect((await reply(a, 'Front', contact('ct_grant'), ['hi'])).responses[0]).toContain('Word [granted] role []');
});
