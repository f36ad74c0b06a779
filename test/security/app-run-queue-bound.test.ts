// Async runs of an agentic-app session are bounded like the others: each is charged to the
// session's message rate (429 RATE_LIMIT_EXCEEDED past it), and a session holds at most
// APP_RUN_MAX_IN_FLIGHT_PER_SESSION runs in flight (429 QUEUE_FULL past it), however many
// requests arrive at once. No worker runs here, so every accepted run stays in flight (and a new
// session's greeting is given up after REQUEST_TIMEOUT_MS, kept short here).
import { publishAgent } from '../support/agents';
import { client } from '../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../support/stack';

jest.setTimeout(120_000);

type Answer = { runId?: string; retryAfterMs?: number; error?: { code: string; message: string } };

async function setUp(env: Record<string, string>) {
  const stack = await startTestStack({ worker: false, env });
  const api = client(stack.baseUrl);
  const t = await seedTenant(stack.ctx);
  await publishAgent(api, t, 'Helper', 'AGENT: Helper\nGOAL: "Help the caller."\n');
  const run = (reference: string, content: string) =>
    api.post<Answer>(`/api/v2/apps/${t.projectId}/environments/dev/runs/execute`, {
      headers: { 'x-api-key': t.adminKey },
      json: { sessionIdentity: [{ type: 'sessionReference', value: reference }], input: [{ type: 'text', content }], isAsync: true },
    });
  return { stack, t, run };
}

const runsOf = async (stack: TestStack, t: SeededTenant, reference: string) => {
  const session = await stack.ctx.models.AppSession.findOne({ tenantId: t.tenantId, sessionReference: reference }).lean();
  return stack.ctx.models.AppRun.find({ tenantId: t.tenantId, sessionId: session!._id }).lean();
};

describe('runs in flight per session', () => {
  let s: Awaited<ReturnType<typeof setUp>>;
  beforeAll(async () => {
    s = await setUp({ APP_RUN_MAX_IN_FLIGHT_PER_SESSION: '2', SESSION_MESSAGES_PER_MINUTE: '100', REQUEST_TIMEOUT_MS: '2000' });
  });
  afterAll(async () => s?.stack.close());

  it('accepts exactly the limit from many async runs sent at once, and refuses the rest with 429 QUEUE_FULL', async () => {
    const reference = `burst-${Date.now()}`;
    // The session first, so every run of the burst continues the same one.
    expect((await s.run(reference, 'first')).status).toBe(202);
    const answers = await Promise.all(Array.from({ length: 7 }, (_, n) => s.run(reference, `burst ${n}`)));
    expect(answers.map((a) => a.status).sort()).toEqual([202, 429, 429, 429, 429, 429, 429]);
    for (const a of answers.filter((x) => x.status === 429)) {
      expect(a.body.error?.code).toBe('QUEUE_FULL');
      expect(a.body.retryAfterMs).toBeGreaterThan(0);
      expect(a.headers.get('retry-after')).toMatch(/^\d+$/);
    }
    // A refused run left no record.
    expect(await runsOf(s.stack, s.t, reference)).toHaveLength(2);
  });
});

describe('message rate', () => {
  let s: Awaited<ReturnType<typeof setUp>>;
  beforeAll(async () => {
    s = await setUp({ APP_RUN_MAX_IN_FLIGHT_PER_SESSION: '8', SESSION_MESSAGES_PER_MINUTE: '3', REQUEST_TIMEOUT_MS: '2000' });
  });
  afterAll(async () => s?.stack.close());

  it("charges every async run to the session's message rate: past it, 429 RATE_LIMIT_EXCEEDED and no run", async () => {
    // The rate counts in fixed windows of a clock minute: the first run and the burst go in one,
    // so start early in a window (a burst across a boundary may pass, by design of fixed windows).
    const intoWindowMs = Date.now() % 60_000;
    if (intoWindowMs > 40_000) await new Promise((r) => setTimeout(r, 60_000 - intoWindowMs + 200));
    const reference = `rate-${Date.now()}`;
    expect((await s.run(reference, 'first')).status).toBe(202);
    // Sent at once, well inside the window the first was counted in: two more fit the rate of three.
    const answers = await Promise.all(Array.from({ length: 5 }, (_, n) => s.run(reference, `message ${n}`)));
    expect(answers.map((a) => a.status).sort()).toEqual([202, 202, 429, 429, 429]);
    for (const a of answers.filter((x) => x.status === 429)) {
      expect(a.body.error?.code).toBe('RATE_LIMIT_EXCEEDED');
      expect(a.headers.get('retry-after')).toMatch(/^\d+$/);
    }
    expect(await runsOf(s.stack, s.t, reference)).toHaveLength(3);
});
});
