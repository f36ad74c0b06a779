// The seeded sample project against the dev stack's sample back-end, through the real API and
// worker: a new user's billing conversation ends in the invoice and a refund from the back-end,
// an unknown invoice takes the agent's ON_FAIL path, and a trip plan fans out to flights and
// hotels; the dev project's HTTP-async subscription answers at the sample receiver. The back-end
// is started and allowed exactly as infra/dev-stack.ts does it.
import { seedDevProject, toolFilesOffSampleBackend } from '../../../infra/seed-project';
import { SAMPLE_RECEIVER_PATH, sampleBackendHttpAsyncEnv, sampleBackendToolEnv, startSampleBackend, type SampleBackend } from '../../../infra/sample-backend';
import { DEV_SUBSCRIPTION_NAME, ensureDevSubscription } from '../../../infra/seed-subscription';
import { secretMasterKeyRing } from '../../../lib/secret-envelope';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { eventually } from '../../support/eventually';
import { flushProjection } from '../../support/projection';

let backend: SampleBackend;
let stack: TestStack;
let t: SeededTenant;

beforeAll(async () => {
  backend = await startSampleBackend(0);
  // Only the dev stack's tool settings: the sample back-end is the one private destination allowed.
  stack = await startTestStack({ worker: true, env: { ...sampleBackendToolEnv(backend), ...sampleBackendHttpAsyncEnv(backend) } });
  t = await seedTenant(stack.ctx);
  await seedDevProject(stack.ctx.models, { tenantId: t.tenantId, projectId: t.projectId }, { sampleBackendUrl: backend.url });
});
afterAll(async () => {
  await stack.close();
  await backend.close();
});

function conversation() {
  const api = client(stack.baseUrl);
  let sessionId: string | undefined;
  return async (message: string) => {
    const res = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, message, ...(sessionId ? { sessionId } : {}) } });
    expect(res.status).toBe(200);
    sessionId = res.body.sessionId;
    return res.body as { response: string; state: { agent: string }; traceEvents: { type: string; data: Record<string, unknown> }[] };
  };
}

it('finds the invoice on the sample back-end and refunds it, after a not-found invoice takes the ON_FAIL path', async () => {
  const say = conversation();
  await say('hello');
  const asked = await say('I have a question about my invoice');
  expect(asked.state.agent).toBe('Billing_Agent');
  expect(asked.response).toContain('What is the invoice number?');

  const unknown = await say('INV-999999');
  expect(unknown.response).toContain("I couldn't find that invoice.");

  const found = await say('INV-123456');
  expect(found.response).toContain('INV-123456: $120.00, open. Want a refund?');
  const result = found.traceEvents.find((e) => e.type === 'tool_result');
  expect(result?.data).toMatchObject({ tool: 'get_invoice', success: true, mocked: false, output: { id: 'INV-123456', amount: 120, status: 'open' } });

  expect((await say('yes')).response).toContain('How much should be refunded?');
  expect((await say('50')).response).toContain("What's the reason?");
  // issue_refund asks for confirmation (require: always), showing the call's arguments.
  const confirm = await say('charged twice');
  expect(confirm.response).toContain('Please confirm: issue_refund (Refund part or all of an invoice) with invoice_id: INV-123456, amount: 50, reason: charged twice.');
  const refunded = await say('yes');
  expect(refunded.response).toContain('Refund RF-123456-5000 is approved.');
});

it('plans a trip with flights and hotels from the sample back-end', async () => {
  const say = conversation();
  await say('hello');
  const planning = await say('I want to plan a trip');
  expect(planning.state.agent).toBe('Trip_Planner');
  await say('Lisbon');
  await say('2026-05-01');
  const plan = await say('2026-05-08');
  expect(plan.response).toContain('Flights: Round trip to Lisbon, 2026-05-01 to 2026-05-08 from $240');
  expect(plan.response).toContain('Hotels: Harbor Inn, Alfama Suites and Tagus Lodge in Lisbon');
});

it('opens an account after the sample KYC provider calls back with its verdict', async () => {
  const api = client(stack.baseUrl);
  let sessionId: string | undefined;
  const say = async (message: string) => {
    const res = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, message, ...(sessionId ? { sessionId } : {}) } });
    sessionId = res.body.sessionId;
    return res;
  };
  await say('hello');
  const asked = await say('I want to open a new account');
  expect(asked.body.state.agent).toBe('Onboarding_Agent');
  await say('Ada Lovelace');
  const checking = await say('AB123456');
  // The KYC check is async: the session waits for the provider's signed callback.
  expect(checking.status).toBe(202);
  expect(checking.body.response).toContain('Running the identity check');
  const opened = await eventually(
    async () => {
      await flushProjection(stack.ctx, sessionId!);
      return (await stack.ctx.models.TranscriptMessage.find({ sessionId, role: 'assistant' }).sort({ seq: 1 }).lean()).map((m) => m.content);
    },
    (lines) => lines.some((l) => l.startsWith('Verified. Account')),
    20_000,
    200,
  );
  expect(opened[opened.length - 1]).toMatch(/^Verified\. Account \S*\d{4} is open\.$/);
});

it('finds the tool files of a project seeded without the sample back-end, so the dev stack can say so', async () => {
  expect(await toolFilesOffSampleBackend(stack.ctx.models, t, backend.url)).toEqual([]);
  const older = { tenantId: t.tenantId, projectId: t.otherProjectId };
  await seedDevProject(stack.ctx.models, older);
  expect(await toolFilesOffSampleBackend(stack.ctx.models, older, backend.url)).toEqual(['billing-api', 'travel']);
});

it('answers an HTTP-async message at the sample receiver through the dev subscription, created once', async () => {
  const receiverUrl = `${backend.url}${SAMPLE_RECEIVER_PATH}`;
  const owner = { tenantId: t.tenantId, projectId: t.projectId };
  const id = await ensureDevSubscription(stack.ctx.models, secretMasterKeyRing(stack.config), owner, receiverUrl);
  expect(id).toMatch(/^whs-/);
  expect(await ensureDevSubscription(stack.ctx.models, secretMasterKeyRing(stack.config), owner, receiverUrl)).toBe(id);
  expect(await stack.ctx.models.HttpAsyncSubscription.countDocuments({ ...owner, name: DEV_SUBSCRIPTION_NAME })).toBe(1);

  const api = client(stack.baseUrl);
  const sent = await api.post('/api/v1/channels/http-async/message', {
    headers: { 'x-api-key': t.adminKey },
    json: { project_id: t.projectId, subscription_id: id, message: 'hello', session_key: 'me' },
  });
  expect(sent.status).toBe(202);
  const replies = await eventually(
    async () => backend.callbacks.filter((c) => c.event === 'agent.response' && c.body.message_id === sent.body.message_id),
    (found) => found.length === 1,
    30_000,
  );
  expect(replies[0]!.body).toMatchObject({ session_key: sent.body.session_key, is_new_session: true, outcome: { status: 'ok' } });
  // What came is shown on GET, as the dev stack's banner says.
  const shown = (await (await fetch(receiverUrl)).json()) as { callbacks: { body: { message_id: string } }[] };
  expect(shown.callbacks.map((c) => c.body.message_id)).toContain(sent.body.message_id);
});
