// A bot's hook calls count against its tenant's request limit like any other of the tenant's
// calls, charged once the JWT is verified and before the body is read; another tenant's bot is
// not held back by it, and calls without a valid JWT charge no tenant.
import { seedTenant, startTestStack, type TestStack } from '../support/stack';
import { createTestBot, hookJwt, postHook, type TestBot } from '../support/agent-assist';

jest.setTimeout(120_000);

let stack: TestStack;
let botA: TestBot;
let botB: TestBot;

beforeAll(async () => {
  stack = await startTestStack({ env: { RATE_LIMIT_REQUESTS: '3', RATE_LIMIT_WINDOW_SECONDS: '600' } });
  const a = await seedTenant(stack.ctx);
  const b = await seedTenant(stack.ctx);
  botA = await createTestBot(stack.ctx, a.tenantId, a.projectId);
  botB = await createTestBot(stack.ctx, b.tenantId, b.projectId);
});
afterAll(async () => {
  await stack.close();
});

// An incomplete message event: past the JWT (400 from the body), so no workflow is needed.
const incomplete = (botId: string) => ({ conversationId: 'c1', botId, query: 'hi' });

test('a tenant over its limit gets 429 from the hook; unauthenticated calls and other tenants are not charged to it', async () => {
  const a = await hookJwt(botA.secret);
  // Calls with another bot's token are refused before any charge.
  for (let i = 0; i < 5; i++) expect((await postHook(stack.baseUrl, botA.botId, incomplete(botA.botId), await hookJwt(botB.secret))).status).toBe(401);
  for (let i = 0; i < 3; i++) expect((await postHook(stack.baseUrl, botA.botId, incomplete(botA.botId), a)).status).toBe(400);
  const over = await postHook(stack.baseUrl, botA.botId, incomplete(botA.botId), a);
  expect(over.status).toBe(429);
  expect(over.body).toMatchObject({ success: false, error: { code: 'RATE_LIMIT_EXCEEDED' } });
  expect((await postHook(stack.baseUrl, botB.botId, incomplete(botB.botId), await hookJwt(botB.secret))).status).toBe(400);
});
