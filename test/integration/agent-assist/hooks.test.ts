// The agent-assist hook against the real stack (API, worker, Temporal, FerretDB): whole
// conversations in the spec's order (with cold and warm transfers, a summary and a redial),
// out-of-order events refused with 409 naming the expected events and changing nothing,
// repeated events answered as duplicates, and bad bodies refused.
import { randomBytes } from 'node:crypto';
import { seedTenant, startTestStack, type TestStack } from '../../support/stack';
import { request } from '../../support/http';
import { eventually } from '../../support/eventually';
import { createTestBot, end, hookJwt, lifecycle, message, postHook, summary, transfer, type TestBot } from '../../support/agent-assist';

jest.setTimeout(180_000);

let stack: TestStack;
let bot: TestBot;
let jwt: string;
const conv = () => `conv-${randomBytes(6).toString('hex')}`;

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  const t = await seedTenant(stack.ctx);
  bot = await createTestBot(stack.ctx, t.tenantId, t.projectId);
  jwt = await hookJwt(bot.secret);
});
afterAll(async () => {
  await stack.close();
});

const send = (body: unknown) => postHook(stack.baseUrl, bot.botId, body, jwt);

async function ok(body: unknown) {
  const res = await send(body);
  expect({ status: res.status, body: res.body }).toMatchObject({ status: 200, body: { success: true } });
  return res.body.data;
}

test('a whole conversation with a cold and a warm transfer, a summary and the end', async () => {
  const c = conv();
  expect((await ok(lifecycle(bot.botId, c, transfer('NA', 'entry', 'agent-1')))).conversation).toMatchObject({ phase: 'active', activeAgent: 'agent-1' });
  await ok(message(bot.botId, c, 'USER', 'My card was charged twice'));
  await ok(message(bot.botId, c, 'AGENT', 'Let me check that for you'));
  // Warm: a consultant joins and leaves while agent-1 stays.
  expect((await ok(lifecycle(bot.botId, c, transfer('WARM', 'entry', 'agent-2')))).conversation).toMatchObject({ activeAgent: 'agent-1', consultants: ['agent-2'] });
  await ok(message(bot.botId, c, 'AGENT', 'Consulting billing'));
  expect((await ok(lifecycle(bot.botId, c, transfer('warm', 'exit', 'agent-2')))).conversation).toMatchObject({ activeAgent: 'agent-1', consultants: [] });
  // Cold: agent-1 leaves, agent-3 takes over.
  expect((await ok(lifecycle(bot.botId, c, transfer('COLD', 'exit', 'agent-1')))).conversation).toMatchObject({ phase: 'transferring', activeAgent: null });
  expect((await ok(lifecycle(bot.botId, c, transfer('COLD', 'entry', 'agent-3')))).conversation).toMatchObject({ phase: 'active', activeAgent: 'agent-3' });
  await ok(message(bot.botId, c, 'USER', 'Thanks'));
  expect((await ok(lifecycle(bot.botId, c, transfer('NA', 'exit', 'agent-3')))).conversation).toMatchObject({ phase: 'exited' });
  expect((await ok(lifecycle(bot.botId, c, summary()))).conversation).toMatchObject({ phase: 'summarized', summaryRequested: true });
  const last = await ok(lifecycle(bot.botId, c, end('agent-3')));
  expect(last.conversation).toMatchObject({ phase: 'ended', messages: 4, events: 12 });
  // END_OF_CONVERSATION is sent once: another one (a different call) is out of order.
  const again = await send({ ...lifecycle(bot.botId, c, end('agent-3')), eventId: 'second-end' });
  expect(again.status).toBe(409);
  expect(again.body.error).toMatchObject({ code: 'AGENT_ASSIST_EVENT_OUT_OF_ORDER', details: { expected: [] } });
  // The conversation's state is readable with the bot's JWT.
  const read = await request(stack.baseUrl, 'GET', `/agentassist/api/v1/hooks/${bot.botId}/conversations/${c}`, { headers: { auth: jwt } });
  expect(read.status).toBe(200);
  expect(read.body.data).toMatchObject({ conversationId: c, botId: bot.botId, conversation: { phase: 'ended', activeAgent: null, consultants: [], messages: 4, events: 12, summaryRequested: true } });
  // This bot's agent has no saved version: assist mode has nothing to run, and says so.
  const assisted = await eventually(() => request(stack.baseUrl, 'GET', `/agentassist/api/v1/hooks/${bot.botId}/conversations/${c}`, { headers: { auth: jwt } }), (r) => r.body.data?.assist.pending === 0 && r.body.data?.assist.lastError !== null, 10_000, 50);
  expect(assisted.body.data).toMatchObject({ suggestions: [], nextBestActions: [], summary: null, assist: { lastError: { message: 'the agent "Support" has no saved version in the bot\'s project' } } });
});

test('a conversation the bot never had is 404', async () => {
  const res = await request(stack.baseUrl, 'GET', `/agentassist/api/v1/hooks/${bot.botId}/conversations/${conv()}`, { headers: { auth: jwt } });
  expect(res.status).toBe(404);
  expect(res.body.error.code).toBe('NOT_FOUND');
});

test('the token header is accepted as well as auth', async () => {
  const res = await postHook(stack.baseUrl, bot.botId, lifecycle(bot.botId, conv(), transfer('NA', 'entry', 'agent-1')), jwt, 'token');
  expect(res.status).toBe(200);
});

test('an out-of-order event is 409 naming the expected events, and changes nothing', async () => {
  const c = conv();
  // Before the first agent's entry, nothing else is accepted.
  const first = await send(message(bot.botId, c, 'USER', 'hello'));
  expect(first.status).toBe(409);
  expect(first.body).toMatchObject({ success: false, error: { code: 'AGENT_ASSIST_EVENT_OUT_OF_ORDER', details: { phase: 'new', expected: ['INTERNAL_TRANSFER_EVENT (NA, entry)', 'INTERNAL_TRANSFER_EVENT (REDIAL, entry)'] } } });
  expect(first.body.error.message).toContain('INTERNAL_TRANSFER_EVENT (NA, entry)');
  await ok(lifecycle(bot.botId, c, transfer('NA', 'entry', 'agent-1')));
  // END before the final agent exit.
  const early = await send(lifecycle(bot.botId, c, end('agent-1')));
  expect(early.status).toBe(409);
  expect(early.body.error.details.expected).toEqual(['message (USER or AGENT)', 'INTERNAL_TRANSFER_EVENT (COLD, exit)', 'INTERNAL_TRANSFER_EVENT (WARM, entry)', 'INTERNAL_TRANSFER_EVENT (NA, exit)']);
  // A warm exit of someone who never joined.
  const stranger = await send(lifecycle(bot.botId, c, transfer('WARM', 'exit', 'agent-9')));
  expect(stranger.status).toBe(409);
  expect(stranger.body.error.message).toContain('agent-9');
  // A call's events are all or none: the exit before the bad summary is not kept.
  const partial = await send(lifecycle(bot.botId, c, transfer('NA', 'exit', 'agent-1'), summary(), summary()));
  expect(partial.status).toBe(409);
  expect(partial.body.error.details.expected).toEqual(['END_OF_CONVERSATION']);
  const still = await ok(message(bot.botId, c, 'USER', 'still here'));
  expect(still.conversation).toMatchObject({ phase: 'active', activeAgent: 'agent-1', messages: 1, events: 2 });
});

test('a repeated event is answered as the first time and taken once', async () => {
  const c = conv();
  await ok(lifecycle(bot.botId, c, transfer('NA', 'entry', 'agent-1')));
  const a = await ok(message(bot.botId, c, 'USER', 'hi', 'm-1'));
  const b = await ok(message(bot.botId, c, 'USER', 'hi', 'm-1'));
  expect(a).toMatchObject({ duplicate: false, eventId: 'id:m-1' });
  expect(b).toMatchObject({ duplicate: true, eventId: 'id:m-1', conversation: { messages: 1 } });
  // Without an eventId, a byte-identical retry of the latest call is a repeat.
  const ping = message(bot.botId, c, 'USER', 'are you there?');
  expect(await ok(ping)).toMatchObject({ duplicate: false, conversation: { messages: 2 } });
  expect(await ok(ping)).toMatchObject({ duplicate: true, conversation: { messages: 2 } });
  // Concurrent retries of one event: one taken, the rest duplicates.
  const results = await Promise.all([1, 2, 3, 4].map(() => send(message(bot.botId, c, 'AGENT', 'on it', 'm-2'))));
  expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200]);
  expect(results.filter((r) => r.body.data.duplicate === false)).toHaveLength(1);
  const after = await ok(message(bot.botId, c, 'USER', 'ok', 'm-3'));
  expect(after.conversation.messages).toBe(4);
  // After the end, a repeat of the end is still a duplicate (not a second END).
  await ok(lifecycle(bot.botId, c, transfer('NA', 'exit', 'agent-1')));
  const endCall = { ...lifecycle(bot.botId, c, end('agent-1')), eventId: 'end-1' };
  expect(await ok(endCall)).toMatchObject({ duplicate: false, conversation: { phase: 'ended' } });
  expect(await ok(endCall)).toMatchObject({ duplicate: true, conversation: { phase: 'ended' } });
});

test('a dropped conversation redials: NA exit, then redial entry, then on to the end', async () => {
  const c = conv();
  await ok(lifecycle(bot.botId, c, transfer('NA', 'entry', 'agent-1')));
  await ok(lifecycle(bot.botId, c, transfer('NA', 'exit', 'agent-1')));
  expect((await ok(lifecycle(bot.botId, c, { ...transfer('redial', 'entry', 'agent-1'), reason: 'dropped' }))).conversation).toMatchObject({ phase: 'active', activeAgent: 'agent-1' });
  await ok(lifecycle(bot.botId, c, transfer('NA', 'exit', 'agent-1')));
  expect((await ok(lifecycle(bot.botId, c, end('agent-1')))).conversation.phase).toBe('ended');
  // An agent-initiated callback with no prior conversation starts with redial.
  expect((await ok(lifecycle(bot.botId, conv(), transfer('REDIAL', 'entry', 'agent-5')))).conversation).toMatchObject({ phase: 'active', activeAgent: 'agent-5' });
});

test('bad bodies are 400 and change nothing', async () => {
  const c = conv();
  const missing = await send({ conversationId: c, botId: bot.botId, query: 'hi' });
  expect(missing.status).toBe(400);
  expect(missing.body.error.code).toBe('VALIDATION_ERROR');
  expect(missing.body.error.message).toContain('body.author');
  const badType = await send(lifecycle(bot.botId, c, { ...transfer('NA', 'entry', 'a'), transfertype: 'HOT' }));
  expect(badType.status).toBe(400);
  const noParticipant = await send(lifecycle(bot.botId, c, { name: 'END_OF_CONVERSATION', reason: 'x', language: 'en', experience: 'chat' }));
  expect(noParticipant.status).toBe(400);
  const otherBot = await send(lifecycle('aab-000000000000000000000000', c, transfer('NA', 'entry', 'a')));
  expect(otherBot.status).toBe(400);
  // Nothing was recorded: the conversation still starts with the entry.
  expect((await ok(lifecycle(bot.botId, c, transfer('NA', 'entry', 'agent-1')))).conversation.events).toBe(1);
});
