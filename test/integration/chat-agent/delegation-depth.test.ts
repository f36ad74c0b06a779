// Delegated agents nest at most ten deep (ABL.md §9 "Guards"): a chain of twelve agents, each
// delegating to the next from a flow step, runs children down to depth 10; the DELEGATE that
// would start an eleventh fails without a child, and that agent's ON_FAILURE carries on.
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { publishAgent } from '../../support/agents';

jest.setTimeout(90_000);

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;

const LEVELS = 12;
const name = (level: number) => `Chain_${level}`;
const agentSource = (level: number) =>
  level === LEVELS - 1
    ? `AGENT: ${name(level)}
GOAL: "Answer at the bottom."
FLOW:
  steps: [answer]
  answer:
    REASONING: false
    RESPOND: "bottom reached"
    THEN: COMPLETE
`
    : `AGENT: ${name(level)}
GOAL: "Pass the task down."
DELEGATE:
  - AGENT: ${name(level + 1)}
    PURPOSE: "Go one level down"
    ON_FAILURE: continue
FLOW:
  steps: [pass]
  pass:
    REASONING: false
    DELEGATE: ${name(level + 1)}
    RESPOND: "level ${level} done"
    THEN: COMPLETE
`;

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  for (let level = LEVELS - 1; level >= 0; level -= 1) await publishAgent(api, t, name(level), agentSource(level));
});
afterAll(() => stack.close());

type Trace = { type: string; data: Record<string, unknown> };

it('starts delegated agents down to depth 10 and refuses the eleventh level', async () => {
  const res = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId: name(0), message: 'go' } });
  expect(res.status).toBe(200);
  expect(res.body.response).toContain('level 0 done');
  const delegations = (res.body.traceEvents as Trace[]).filter((e) => e.type === 'delegate');
  const byTarget = new Map(delegations.map((e) => [e.data.toAgent as string, e.data]));
  for (let level = 1; level <= 10; level += 1) expect(byTarget.get(name(level))).toMatchObject({ fromAgent: name(level - 1), status: 'completed' });
  expect(byTarget.get(name(11))).toMatchObject({
    fromAgent: name(10),
    status: 'failed',
    error: expect.stringMatching(/deeper than 10/),
  });
  expect(delegations).toHaveLength(11);

  // No child workflow was started for the refused level.
  const children: string[] = [];
  const temporal = await stack.ctx.temporal.client();
  for await (const execution of temporal.workflow.list({ query: `WorkflowType = 'delegationWorkflow'` })) children.push(execution.workflowId);
  expect(children.filter((id) => id.startsWith(`session/${res.body.sessionId as string}`))).toHaveLength(10);
});
