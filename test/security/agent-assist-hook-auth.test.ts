// The agent-assist hook takes only a JWT signed HS256 with the named bot's own secret, unexpired
// and not too long-lived, checked before the body is read; another tenant's bot and its
// conversations stay apart even under the same conversation id.
import { randomBytes } from 'node:crypto';
import { SignJWT } from 'jose';
import { seedTenant, startTestStack, type TestStack } from '../support/stack';
import { request } from '../support/http';
import { createTestBot, hookJwt, lifecycle, message, postHook, transfer, type TestBot } from '../support/agent-assist';

jest.setTimeout(180_000);

let stack: TestStack;
let botA: TestBot;
let botB: TestBot;

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  const a = await seedTenant(stack.ctx);
  const b = await seedTenant(stack.ctx);
  botA = await createTestBot(stack.ctx, a.tenantId, a.projectId);
  botB = await createTestBot(stack.ctx, b.tenantId, b.projectId);
});
afterAll(async () => {
  await stack.close();
});

const entry = (botId: string, c = `conv-${randomBytes(6).toString('hex')}`) => lifecycle(botId, c, transfer('NA', 'entry', 'agent-1'));

async function refused(res: { status: number; body: { success?: boolean; error?: { code?: string } } }) {
  expect(res.status).toBe(401);
  expect(res.body).toMatchObject({ success: false, error: { code: 'UNAUTHORIZED' } });
}

test('no token, a bad signature, another bot\'s secret, an expired or far-future token, alg none: 401', async () => {
  await refused(await postHook(stack.baseUrl, botA.botId, entry(botA.botId), null));
  const good = await hookJwt(botA.secret);
  await refused(await postHook(stack.baseUrl, botA.botId, entry(botA.botId), good.slice(0, -2) + (good.endsWith('AA') ? 'BB' : 'AA')));
  await refused(await postHook(stack.baseUrl, botA.botId, entry(botA.botId), await hookJwt(botB.secret)));
  await refused(await postHook(stack.baseUrl, botA.botId, entry(botA.botId), await hookJwt(botA.secret, { expiresIn: -120 })));
  await refused(await postHook(stack.baseUrl, botA.botId, entry(botA.botId), await hookJwt(botA.secret, { expiresIn: 7 * 24 * 3600 })));
  await refused(await postHook(stack.baseUrl, botA.botId, entry(botA.botId), await hookJwt(botA.secret, { claims: { botId: botB.botId } })));
  // No exp at all.
  const noExp = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).sign(Buffer.from(botA.secret, 'base64url'));
  await refused(await postHook(stack.baseUrl, botA.botId, entry(botA.botId), noExp));
  const header = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
  const payload = Buffer.from(JSON.stringify({ exp: Math.floor(Date.now() / 1000) + 60 })).toString('base64url');
  await refused(await postHook(stack.baseUrl, botA.botId, entry(botA.botId), `${header}.${payload}.`));
  // An unknown bot is 404 once a token is sent (401 without one).
  const unknown = await postHook(stack.baseUrl, 'aab-000000000000000000000000', entry('aab-000000000000000000000000'), good);
  expect(unknown.status).toBe(404);
  await refused(await postHook(stack.baseUrl, 'aab-000000000000000000000000', entry('aab-000000000000000000000000'), null));
  // The right one is accepted.
  expect((await postHook(stack.baseUrl, botA.botId, entry(botA.botId), good)).status).toBe(200);
});

test('the JWT is checked before the body is read: an unauthenticated large body is refused with 401', async () => {
  const big = JSON.stringify({ ...message(botA.botId, 'c', 'USER', 'x'.repeat(15_000)), pad: 'y'.repeat(2_000_000) });
  const res = await request(stack.baseUrl, 'POST', `/agentassist/api/v1/hooks/${botA.botId}`, { raw: big, headers: { 'content-type': 'application/json', auth: await hookJwt(botB.secret) } });
  expect(res.status).toBe(401);
  // Authenticated, the body limit applies.
  const ok = await request(stack.baseUrl, 'POST', `/agentassist/api/v1/hooks/${botA.botId}`, { raw: big, headers: { 'content-type': 'application/json', auth: await hookJwt(botA.secret) } });
  expect(ok.status).toBe(413);
});

test('two tenants\' bots with the same conversation id are separate conversations', async () => {
  const c = `conv-${randomBytes(6).toString('hex')}`;
  const a = await postHook(stack.baseUrl, botA.botId, entry(botA.botId, c), await hookJwt(botA.secret));
  expect(a.status).toBe(200);
  // Bot B's conversation of the same id is new: its first event must still be the entry.
  const b = await postHook(stack.baseUrl, botB.botId, message(botB.botId, c, 'USER', 'hi'), await hookJwt(botB.secret));
  expect(b.status).toBe(409);
  expect(b.body.error.details.phase).toBe('new');
  // Bot B's token cannot post into bot A's conversation, even naming bot A in the body.
  await refused(await postHook(stack.baseUrl, botA.botId, message(botA.botId, c, 'USER', 'hi'), await hookJwt(botB.secret)));
  await refused(await postHook(stack.baseUrl, botB.botId, message(botA.botId, c, 'USER', 'hi'), await hookJwt(botA.secret)));
  expect((await postHook(stack.baseUrl, botA.botId, message(botA.botId, c, 'USER', 'hi'), await hookJwt(botA.secret))).body.data.conversation.messages).toBe(1);
  // Reading it: bot A's JWT only; bot B's JWT on bot A's URL is 401, on its own URL its own conversation (nothing accepted).
  const read = (botId: string, jwt: string | null) => request(stack.baseUrl, 'GET', `/agentassist/api/v1/hooks/${botId}/conversations/${c}`, { headers: jwt ? { auth: jwt } : {} });
  expect((await read(botA.botId, await hookJwt(botA.secret))).body.data.conversation).toMatchObject({ phase: 'active', messages: 1 });
  await refused(await read(botA.botId, null));
  await refused(await read(botA.botId, await hookJwt(botB.secret)));
  expect((await read(botB.botId, await hookJwt(botB.secret))).body.data.conversation).toMatchObject({ phase: 'new', messages: 0, events: 0 });
});
