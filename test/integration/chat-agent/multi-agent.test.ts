// Multi-agent paths through the real runtime: parallel delegation (fan-out) with one failed
// branch, and an input guardrail; each leaves the trace events the spec names.
import { seedDevProject } from '../../../infra/seed-project';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { flushProjection } from '../../support/projection';

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  t = await seedTenant(stack.ctx);
  await seedDevProject(stack.ctx.models, { tenantId: t.tenantId, projectId: t.projectId });
  api = client(stack.baseUrl);
});
afterAll(() => stack.close());

type Trace = { type: string; spanId: string; parentSpanId: string | null; data: Record<string, unknown> };
const chat = (json: Record<string, unknown>) => api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, ...json } });

it('fans out to two delegates in parallel and survives one failing', async () => {
  const toolMocks = [
    { toolName: 'search_flights', response: { best_price: 420, summary: 'Round trip for 420 EUR' } },
    { toolName: 'search_hotels', error: 'no inventory' },
  ];
  const first = await chat({ agentId: 'Trip_Planner', message: 'I want a trip', testContext: { toolMocks } });
  expect(first.status).toBe(200);
  expect(first.body.response).toContain('Where to?');
  const sessionId = first.body.sessionId;
  await chat({ sessionId, message: 'Paris', testContext: { toolMocks } });
  await chat({ sessionId, message: '2027-01-10', testContext: { toolMocks } });
  const last = await chat({ sessionId, message: '2027-01-15', testContext: { toolMocks } });
  expect(last.status).toBe(200);
  expect(last.body.response).toContain('Paris');
  expect(last.body.response).toContain('Round trip for 420 EUR');
  expect(last.body.action.type).toBe('complete');

  const events: Trace[] = last.body.traceEvents;
  const delegates = events.filter((e) => e.type === 'delegate');
  expect(delegates.map((d) => d.data.toAgent).sort()).toEqual(['Flight_Search', 'Hotel_Search']);
  for (const d of delegates) {
    expect(d.data).toEqual(expect.objectContaining({ fromAgent: 'Trip_Planner', task: expect.any(String), duration_ms: expect.any(Number) }));
  }
  // The children's own tool calls are part of the session trace, under their delegate span.
  const flights = delegates.find((d) => d.data.toAgent === 'Flight_Search')!;
  const childCall = events.find((e) => e.type === 'tool_call' && e.data.tool === 'search_flights');
  expect(childCall?.parentSpanId).toBe(flights.spanId);
  const hotelResult = events.find((e) => e.type === 'tool_result' && e.data.tool === 'search_hotels');
  expect(hotelResult?.data).toMatchObject({ success: false });
  await flushProjection(stack.ctx, sessionId);
  const stored = await stack.ctx.models.TraceEvent.countDocuments({ sessionId, type: 'delegate' });
  expect(stored).toBe(2);
  const summary = await stack.ctx.models.Session.findById(sessionId).lean();
  expect(summary?.status).toBe('ended');
});

it('evaluates input guardrails and records the verdict', async () => {
  const res = await chat({ agentId: 'Complaints_Agent', message: 'You charged my card 4111 1111 1111 1111 twice!' });
  expect(res.status).toBe(200);
  const evals = (res.body.traceEvents as Trace[]).filter((e) => e.type === 'guardrail_eval');
  expect(evals).toEqual(
    expect.arrayContaining([expect.objectContaining({ data: expect.objectContaining({ guardrail: 'no_card_numbers', passed: false, action: 'redact' }) })]),
  );
  expect(res.body.response).not.toContain('4111');
  await flushProjection(stack.ctx, res.body.sessionId);
  const stored = await stack.ctx.models.TranscriptMessage.find({ sessionId: res.body.sessionId, role: 'user' }).lean();
  expect(stored.map((m) => m.content)).toEqual(['You charged my card [REDACTED] twice!']);
});
