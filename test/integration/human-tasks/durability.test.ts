// A human task's resolution is exactly once however many people resolve it at the same moment,
// and a task outlives the worker that created it: a new worker resumes the session when it is
// resolved. Flow escalations (THEN: ESCALATE) create tasks like triggers do.
import { client } from '../../support/http';
import { escalationAgent, publishAgent } from '../../support/agents';
import { eventually } from '../../support/eventually';
import { flushProjection } from '../../support/projection';
import { seedTenant, startTestStack, type SeededTenant, type TestStack, type TestStackOptions } from '../../support/stack';
import { FAST_FAILOVER_ENV, startWorkerProcess } from '../../support/worker-process';

jest.setTimeout(120_000);

const approvals = escalationAgent({
  name: 'Approvals',
  goal: "Get a manager's approval.",
  over: 100,
  reason: 'Approve {{amount}}',
  trigger: '      TAGS: [approval]\n',
  after: 'answer',
  respond: 'Decision: {{human.decision}} by {{human.respondedBy}}.',
});

const desk = `AGENT: Desk
GOAL: "Pass everything to a person."
ESCALATE:
  on_human_complete:
    - IF human.resolved == true: CONTINUE
FLOW:
  steps: [start, after]
  start:
    REASONING: false
    GATHER:
      - topic: required
        prompt: "What is it about?"
    THEN: ESCALATE
  after:
    REASONING: false
    RESPOND: "Back from the team."
`;

/** A stack, a tenant with both agents, and helpers on them. */
function fixture(options: TestStackOptions) {
  const f = { stack: undefined as unknown as TestStack, t: undefined as unknown as SeededTenant, api: undefined as unknown as ReturnType<typeof client> };
  beforeAll(async () => {
    f.stack = await startTestStack(options);
    f.t = await seedTenant(f.stack.ctx);
    f.api = client(f.stack.baseUrl);
    await publishAgent(f.api, f.t, 'Approvals', approvals);
    await publishAgent(f.api, f.t, 'Desk', desk);
  });
  afterAll(async () => {
    await f.stack.close();
  });
  const url = (path = '') => `/api/projects/${f.t.projectId}/human-tasks${path}`;
  async function assistantLines(sessionId: string): Promise<string[]> {
    await flushProjection(f.stack.ctx, sessionId);
    const res = await f.api.get(`/api/v1/sessions/${sessionId}/transcripts?limit=200`, { key: f.t.adminKey });
    return (res.body.messages as { role: string; content: string }[]).filter((m) => m.role === 'assistant').map((m) => m.content);
  }
  async function escalate(agentId: string, first: string, second: string) {
    const a = await f.api.post('/api/v1/chat/agent', { key: f.t.adminKey, json: { projectId: f.t.projectId, agentId, message: first } });
    const b = await f.api.post('/api/v1/chat/agent', { key: f.t.adminKey, json: { projectId: f.t.projectId, sessionId: a.body.sessionId, message: second } });
    expect(b.body.action.type).toBe('escalate');
    return { sessionId: a.body.sessionId as string, taskId: b.body.action.humanTask.id as string };
  }
  return Object.assign(f, { url, assistantLines, escalate });
}

describe('with a worker running throughout', () => {
  // The worker is not what these cases are about: an in-process one serves them.
  const f = fixture({ worker: true });

  it('lets exactly one of 20 concurrent resolves win; the others get 409 with the winner’s resolution', async () => {
    const { sessionId, taskId } = await f.escalate('Approvals', 'hi', '250');
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        f.api.post(f.url(`/${taskId}/resolve`), { key: f.t.adminKey, json: { respondedBy: `reviewer-${i}`, decision: i % 2 ? 'approved' : 'rejected' } }),
      ),
    );
    const won = results.filter((r) => r.status === 200);
    const lost = results.filter((r) => r.status === 409);
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(19);
    const winner = won[0]!.body.task.resolution;
    for (const r of lost) expect(r.body.error.details.resolution).toEqual(winner);

    const line = `Decision: ${winner.decision} by ${winner.respondedBy}.`;
    const lines = await eventually(() => f.assistantLines(sessionId), (l) => l.includes(line), 20_000, 100);
    expect(lines.filter((l) => l.startsWith('Decision:'))).toEqual([line]);
    const task = (await f.api.get(f.url(`/${taskId}`), { key: f.t.adminKey })).body.task;
    expect(task.history.filter((h: { action: string }) => h.action === 'resolved')).toHaveLength(1);
  });

  it("creates a task for THEN: ESCALATE in a flow, and CONTINUE ends the agent once it is resolved (the step's THEN names no next step)", async () => {
    // The first message answers the GATHER, and the step's THEN escalates in the same turn.
    const res = await f.api.post('/api/v1/chat/agent', { key: f.t.adminKey, json: { projectId: f.t.projectId, agentId: 'Desk', message: 'my order' } });
    expect(res.body.action.type).toBe('escalate');
    const sessionId = res.body.sessionId as string;
    const taskId = res.body.action.humanTask.id as string;
    const task = (await f.api.get(f.url(`/${taskId}`), { key: f.t.adminKey })).body.task;
    expect(task).toMatchObject({ type: 'escalation', status: 'pending', title: 'Escalated from step start', agentName: 'Desk' });
    const resolved = await f.api.post(f.url(`/${taskId}/resolve`), { key: f.t.adminKey, json: { respondedBy: 'ada', notes: 'handled' } });
    expect(resolved.status).toBe(200);
    // As a step without THEN would: the flow completes, and the step after it in `steps` is not run.
    const ended = await eventually(() => f.stack.ctx.models.Session.findOne({ _id: sessionId, tenantId: f.t.tenantId }).lean(), (s) => s?.status === 'ended', 20_000, 100);
    expect(ended?.status).toBe('ended');
    expect(await f.assistantLines(sessionId)).not.toContain('Back from the team.');
  });
});

describe('a task outliving its worker', () => {
  // Only worker processes serve this stack, so the test decides which worker holds the session.
  const f = fixture({ env: FAST_FAILOVER_ENV });

  it('resumes the session on a new worker after the one that created the task was killed', async () => {
    const first = await startWorkerProcess(f.stack.config);
    const { sessionId, taskId } = await f.escalate('Approvals', 'hi', '300');
    first.child.kill('SIGKILL');
    await first.exited;

    const second = await startWorkerProcess(f.stack.config);
    try {
      const resolved = await f.api.post(f.url(`/${taskId}/resolve`), { key: f.t.adminKey, json: { respondedBy: 'ada', decision: 'approved' } });
      expect(resolved.status).toBe(200);
      // The resolver is the calling key (its id), whatever name the body gives.
      const line = `Decision: approved by ${resolved.body.task.resolution.respondedBy}.`;
      expect(resolved.body.task.resolution).toMatchObject({ respondedBy: expect.stringMatching(/^ak-/), displayName: 'ada' });
      const lines = await eventually(() => f.assistantLines(sessionId), (l) => l.includes(line), 30_000, 200);
      expect(lines.filter((l) => l === line)).toHaveLength(1);
    } finally {
      await second.stop();
    }
  });
});
