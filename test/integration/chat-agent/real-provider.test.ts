// The runtime against an OpenAI-compatible provider (a fake that speaks the real wire protocol,
// so the official SDK runs): project settings and encrypted credentials pick the model, the
// LLM's tool call routes the handoff, and agent-session calls land in the usage ledger.
import { seedDevProject } from '../../../infra/seed-project';
import { startFakeOpenAI } from '../../support/fake-openai';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { flushProjection } from '../../support/projection';
import { useFakeOpenAI } from '../../support/agents';

let stack: TestStack;
let t: SeededTenant;
let fake: Awaited<ReturnType<typeof startFakeOpenAI>>;
let api: ReturnType<typeof client>;

beforeAll(async () => {
  fake = await startFakeOpenAI({ apiKey: 'sk-project-key' });
  stack = await startTestStack({ worker: true, allowPrivate: { llm: [fake.baseURL] } });
  t = await seedTenant(stack.ctx);
  await seedDevProject(stack.ctx.models, { tenantId: t.tenantId, projectId: t.projectId });
  api = client(stack.baseUrl);
  await useFakeOpenAI(api, t, fake.baseURL, 'sk-project-key');
});
afterAll(async () => {
  await stack.close();
  await fake.close();
});

it('routes a handoff through the model’s tool call and records the call', async () => {
  fake.script({ toolCalls: [{ name: 'handoff_to_Billing_Agent', arguments: { reason: 'invoice question' } }], usage: { inputTokens: 300, outputTokens: 12 } });
  const res = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, message: 'Something is off with what you charged me' } });
  expect(res.status).toBe(200);
  expect(res.body.state.agent).toBe('Billing_Agent');
  expect(res.body.metadata).toEqual({ models: ['openai:gpt-4o-mini'] });

  const request = fake.requests.at(-1)!;
  expect(request.headers.authorization).toBe('Bearer sk-project-key');
  const body = request.body as { model: string; messages: { role: string; content: string }[]; tools: { function: { name: string; description: string } }[] };
  expect(body.model).toBe('gpt-4o-mini');
  expect(body.messages.at(-1)).toMatchObject({ role: 'user', content: 'Something is off with what you charged me' });
  const handoffTool = body.tools.find((tool) => tool.function.name === 'handoff_to_Billing_Agent');
  expect(handoffTool?.function.description).toContain('billing');

  const llm = res.body.traceEvents.find((e: { type: string }) => e.type === 'llm_call');
  expect(llm.data).toMatchObject({ provider: 'openai', model: 'gpt-4o-mini', usage: { inputTokens: 300, outputTokens: 12 } });

  const usage = await api.get(`/api/v1/chat/usage?projectId=${t.projectId}&groupBy=model`, { key: t.adminKey });
  expect(usage.status).toBe(200);
  expect(usage.body.summary).toMatchObject({ requestCount: 1, totalTokens: 312 });
  expect(usage.body.byModel).toEqual([expect.objectContaining({ provider: 'openai', totalTokens: 312, requestCount: 1 })]);
});

it('turns a provider failure into an error reply and an error trace, not a lost turn', async () => {
  fake.script([{ error: { status: 401, message: 'bad key' } }]);
  const res = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, message: 'Something is off with what you charged me' } });
  expect(res.status).toBe(200);
  const error = res.body.traceEvents.find((e: { type: string }) => e.type === 'error');
  expect(error.data).toMatchObject({ agent: 'Support_Hub', kind: 'LLM_AUTH' });
  expect(res.body.response.length).toBeGreaterThan(0);
  await flushProjection(stack.ctx, res.body.sessionId);
  const summary = await stack.ctx.models.Session.findById(res.body.sessionId).lean();
  expect(summary?.errorCount).toBeGreaterThanOrEqual(1);
});
