// Assist mode against the real stack (API, worker, Temporal, FerretDB, the offline `local` model):
// a whole conversation with a warm and a cold transfer gets suggestions after each USER message
// (tied to it, with next-best actions from what the agent declares) and a disposition summary on
// TRIGGER_SUMMARY_EVENT, readable with the bot's JWT and pushed, signed, to its webhook; webhook
// destinations on private addresses are refused; another bot's or tenant's conversation is 404.
import { randomBytes } from 'node:crypto';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { client, request } from '../../support/http';
import { publishAgent, useFakeOpenAI } from '../../support/agents';
import { startFakeOpenAI } from '../../support/fake-openai';
import { startReceiver, type Receiver } from '../../support/receiver';
import { eventually } from '../../support/eventually';
import { createTestBot, end, hookJwt, lifecycle, message, postHook, summary, transfer, type TestBot } from '../../support/agent-assist';
import { agentAssistWorkflowId, createAgentAssistBot } from '../../../core/agent-assist/hooks';
import { AGENT_ASSIST_INSIGHTS_PATCH } from '../../../workflows/agent-assist-conversation';
import { patchIdsIn, replayWithTodaysCode } from '../../support/workflow-history';
import { decodeEncryptedPayloads } from '../../fixtures/histories/history-json';
import { sealBotWebhookSecret } from '../../../db/agent-assist-bot';
import { requireMasterKeys } from '../../../core/tool-secrets/secrets';
import { httpAsyncDestinationPolicy } from '../../../lib/net/destination';
import { verifySignature } from '../../../lib/http-async/signing';
import type { AgentAssistInsights, AgentAssistSuggestion, AgentAssistAction, AgentAssistSummary } from '../../../workflows/definitions';

/** The read route's `data`. */
interface Read {
  conversation: { phase: string };
  suggestions: AgentAssistSuggestion[];
  nextBestActions: AgentAssistAction[];
  summary: AgentAssistSummary | null;
  assist: Pick<AgentAssistInsights, 'pending' | 'lastError' | 'webhook'>;
}

jest.setTimeout(180_000);

const SUPPORT = `AGENT: Support
GOAL: "Help customers with billing questions."
TOOLS:
  get_invoice(invoice_id: string) -> {id: string, amount: number, status: string}
    type: http
    endpoint: "https://billing.example.com/invoices/{invoice_id}"
    method: GET
    description: "Fetch one invoice by its number"
  issue_refund(invoice_id: string, amount: number) -> {refund_id: string}
    type: http
    endpoint: "https://billing.example.com/refunds"
    method: POST
    description: "Refund a duplicate charge on an invoice"
NLU:
  intents:
    - NAME: billing
      PATTERNS: ["charged twice"]
      EXAMPLES: ["Where is my bill?"]
FLOW:
  steps: [ask_invoice]
  ask_invoice:
    REASONING: false
    GATHER:
      - invoice_id: required
        prompt: "What is the invoice number? (INV-123456)"
    THEN: ask_invoice
`;

let stack: TestStack;
let fake: Awaited<ReturnType<typeof startFakeOpenAI>>;
let receiver: Receiver;
let t: SeededTenant;
let bot: TestBot & { webhookSecret: string };
let jwt: string;
const conv = () => `conv-${randomBytes(6).toString('hex')}`;

beforeAll(async () => {
  receiver = await startReceiver();
  fake = await startFakeOpenAI();
  stack = await startTestStack({ worker: true, allowPrivate: { httpAsync: [receiver.origin], llm: [fake.baseURL] } });
  t = await seedTenant(stack.ctx);
  await publishAgent(client(stack.baseUrl), t, 'Support', SUPPORT);
  const made = await createAgentAssistBot(stack.ctx, requireMasterKeys(stack.ctx), {
    tenantId: t.tenantId,
    projectId: t.projectId,
    agentName: 'Support',
    webhookUrl: `${receiver.origin}/assist`,
    webhookRules: { production: false, policy: httpAsyncDestinationPolicy(stack.config) },
  });
  bot = { botId: made.bot._id, secret: made.secret, webhookSecret: made.webhookSecret! };
  jwt = await hookJwt(bot.secret);
});
afterAll(async () => {
  await stack.close();
  await receiver.close();
  await fake.close();
});

async function ok(body: unknown) {
  const res = await postHook(stack.baseUrl, bot.botId, body, jwt);
  expect({ status: res.status, body: res.body }).toMatchObject({ status: 200, body: { success: true } });
  return res.body.data as { eventId: string };
}

const read = (botId: string, c: string, token: string) => request(stack.baseUrl, 'GET', `/agentassist/api/v1/hooks/${botId}/conversations/${c}`, { headers: { auth: token } });

/** The conversation once `done` accepts it (polled, no fixed waits). */
async function readWhen(c: string, done: (data: Read) => boolean): Promise<Read> {
  const res = await eventually(() => read(bot.botId, c, jwt), (r) => r.status === 200 && done(r.body.data), 20_000, 50);
  expect(res.status).toBe(200);
  return res.body.data as Read;
}

test('a whole assist conversation with a warm and a cold transfer: suggestions, next-best actions and a summary, read and pushed signed', async () => {
  const c = conv();
  await ok(lifecycle(bot.botId, c, transfer('NA', 'entry', 'agent-1')));
  const first = await ok(message(bot.botId, c, 'USER', 'I was charged twice on invoice INV-123456, please refund the duplicate'));
  let data = await readWhen(c, (d) => d.suggestions.length === 1);
  const s1 = data.suggestions[0]!;
  expect(s1).toMatchObject({ id: expect.stringMatching(/^sug-/), inReplyTo: { eventId: first.eventId, messageNumber: 1 }, model: 'local:local' });
  expect(s1.replies.length).toBeGreaterThanOrEqual(2);
  // Next-best actions come from what the agent declares: its NLU intent (a pattern hit) and the refund tool.
  expect(s1.nextBestActions[0]).toMatchObject({ kind: 'intent', name: 'billing', confidence: 1 });
  expect(s1.nextBestActions).toContainEqual(expect.objectContaining({ kind: 'tool', name: 'issue_refund' }));
  // The tool's required inputs become a reply the human agent can send.
  expect(s1.replies).toContain('I can look into that for you. Could you give me your invoice id and amount?');
  expect(data.nextBestActions).toEqual(s1.nextBestActions);
  expect(data.summary).toBeNull();

  await ok(message(bot.botId, c, 'AGENT', 'Let me check that for you'));
  // Warm: a consultant joins and leaves while agent-1 stays.
  await ok(lifecycle(bot.botId, c, transfer('WARM', 'entry', 'agent-2')));
  const second = await ok(message(bot.botId, c, 'USER', 'Where is my bill for March?'));
  await ok(lifecycle(bot.botId, c, transfer('WARM', 'exit', 'agent-2')));
  // Cold: agent-1 leaves, agent-3 takes over.
  await ok(lifecycle(bot.botId, c, transfer('COLD', 'exit', 'agent-1')));
  await ok(lifecycle(bot.botId, c, transfer('COLD', 'entry', 'agent-3')));
  await ok(message(bot.botId, c, 'AGENT', 'The refund of $42.50 is on its way'));
  const third = await ok(message(bot.botId, c, 'USER', "Thanks, that's all"));
  data = await readWhen(c, (d) => d.suggestions.length === 3 && d.assist.pending === 0);
  // Latest first, each tied to the USER message it answers.
  expect(data.suggestions.map((s) => s.inReplyTo)).toEqual([
    { eventId: third.eventId, messageNumber: 5 },
    { eventId: second.eventId, messageNumber: 3 },
    { eventId: first.eventId, messageNumber: 1 },
  ]);
  expect(data.suggestions[1]!.nextBestActions[0]).toMatchObject({ kind: 'intent', name: 'billing' });
  expect(data.suggestions[0]!.nextBestActions).toEqual([expect.objectContaining({ kind: 'hint', label: 'Wrap up the conversation' })]);

  await ok(lifecycle(bot.botId, c, transfer('NA', 'exit', 'agent-3')));
  const trigger = await ok(lifecycle(bot.botId, c, summary()));
  data = await readWhen(c, (d) => d.summary !== null);
  expect(data.summary).toMatchObject({
    id: expect.stringMatching(/^sum-/),
    requestedBy: { eventId: trigger.eventId, language: 'English', locale: 'en', type: 'post' },
    disposition: 'resolved',
    model: 'local:local',
  });
  expect(data.summary!.summary).toContain('charged twice on invoice INV-123456');
  expect(data.summary!.summary).toContain('agent-1, then agent-2, then agent-3');
  expect(data.summary!.keyFacts).toEqual(expect.arrayContaining(['Reference: INV-123456', 'Amount: $42.50', 'Topic: billing']));
  expect(((await ok(lifecycle(bot.botId, c, end('agent-3')))) as unknown as Read).conversation.phase).toBe('ended');

  // Pushed to the webhook: three suggestions and the summary, each signed with the bot's webhook secret.
  const pushed = await eventually(
    async () => receiver.received.filter((r) => r.body.conversationId === c),
    (r) => r.length === 4,
    20_000,
    50,
  );
  expect(pushed.map((r) => r.headers['x-abl-event'])).toEqual(['agent_assist.suggestion', 'agent_assist.suggestion', 'agent_assist.suggestion', 'agent_assist.summary']);
  for (const r of pushed) {
    expect(r.path).toBe('/assist');
    expect(verifySignature({ secret: bot.webhookSecret, timestamp: r.headers['x-abl-timestamp'] as string, signature: r.headers['x-abl-signature'] as string, rawBody: r.raw })).toBe(true);
    expect(verifySignature({ secret: bot.secret, timestamp: r.headers['x-abl-timestamp'] as string, signature: r.headers['x-abl-signature'] as string, rawBody: r.raw })).toBe(false);
  }
  expect(pushed[0]!.body).toEqual({ event: 'agent_assist.suggestion', botId: bot.botId, conversationId: c, id: s1.id, suggestion: s1 });
  expect(pushed[3]!.body).toMatchObject({ event: 'agent_assist.summary', botId: bot.botId, conversationId: c, summary: data.summary });
  const final = await readWhen(c, (d) => d.assist.webhook.delivered === 4);
  expect(final.assist.webhook).toEqual({ delivered: 4, failed: 0, pending: 0, lastError: null });

  // The run records the assist marker and replays with today's code.
  const workflowId = agentAssistWorkflowId(bot.botId, c);
  const history = await decodeEncryptedPayloads(await (await stack.ctx.temporal.client()).workflow.getHandle(workflowId).fetchHistory(), stack.ctx.payloadCodec);
  expect(patchIdsIn(history)).toEqual([AGENT_ASSIST_INSIGHTS_PATCH]);
  await replayWithTodaysCode(history, workflowId);
});

test('webhook destinations on private addresses are refused when set, and when delivering', async () => {
  const rules = { production: false, policy: httpAsyncDestinationPolicy(stack.config) };
  const make = (webhookUrl: string) => createAgentAssistBot(stack.ctx, requireMasterKeys(stack.ctx), { tenantId: t.tenantId, projectId: t.projectId, agentName: 'Support', webhookUrl, webhookRules: rules });
  for (const url of ['http://10.1.2.3/hook', 'http://127.0.0.1:8080/hook', 'http://localhost:8080/hook', 'http://[::1]:8080/hook']) {
    await expect(make(url)).rejects.toMatchObject({ code: 'UNPROCESSABLE_ENTITY', message: expect.stringContaining('non-public destinations are refused') });
  }
  // A URL stored before its host turned private (as a name that now resolves there) is refused at delivery, not sent.
  const other = await createTestBot(stack.ctx, t.tenantId, t.projectId);
  const sealed = await sealBotWebhookSecret(stack.ctx.models.TenantDataKey, requireMasterKeys(stack.ctx), t.tenantId, other.botId, 'whsec_test');
  await stack.ctx.models.AgentAssistBot.updateOne({ _id: other.botId, tenantId: t.tenantId }, { $set: { webhookUrl: 'http://127.0.0.9:8080/hook', webhookSecret: sealed } });
  const otherJwt = await hookJwt(other.secret);
  const c = conv();
  for (const body of [lifecycle(other.botId, c, transfer('NA', 'entry', 'agent-1')), message(other.botId, c, 'USER', 'hello')]) {
    expect((await postHook(stack.baseUrl, other.botId, body, otherJwt)).status).toBe(200);
  }
  const res = await eventually(() => read(other.botId, c, otherJwt), (r) => r.body.data?.assist.webhook.failed === 1, 20_000, 50);
  expect(res.body.data.suggestions).toHaveLength(1);
  expect(res.body.data.assist.webhook).toMatchObject({ delivered: 0, failed: 1, pending: 0, lastError: expect.stringContaining('non-public addresses are refused') });
});

test("another bot's or another tenant's conversation is 404", async () => {
  const c = conv();
  await ok(lifecycle(bot.botId, c, transfer('NA', 'entry', 'agent-1')));
  await ok(message(bot.botId, c, 'USER', 'hello'));
  expect((await read(bot.botId, c, jwt)).status).toBe(200);
  const sameTenant = await createTestBot(stack.ctx, t.tenantId, t.projectId);
  const u = await seedTenant(stack.ctx);
  const otherTenant = await createTestBot(stack.ctx, u.tenantId, u.projectId);
  for (const other of [sameTenant, otherTenant]) {
    const res = await read(other.botId, c, await hookJwt(other.secret));
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('NOT_FOUND');
  }
  // The other bot's JWT on this bot's path is not this bot's.
  expect((await read(bot.botId, c, await hookJwt(otherTenant.secret))).status).toBe(401);
});

test("with a real provider the hook answers while the model is still writing, and the model's JSON becomes the suggestion", async () => {
  const u = await seedTenant(stack.ctx);
  const api = client(stack.baseUrl);
  await publishAgent(api, u, 'Support', SUPPORT.replace('GOAL:', 'EXECUTION:\n  llm_timeout: 1s\nGOAL:'));
  await useFakeOpenAI(api, u, fake.baseURL);
  const b = await createTestBot(stack.ctx, u.tenantId, u.projectId);
  const bJwt = await hookJwt(b.secret);
  // The first call never finishes (the agent's llm_timeout ends it); the retry gets an answer.
  fake.reset();
  fake.script([
    { hold: true },
    {
      text: JSON.stringify({
        replies: ['Sorry about the double charge, let me fix that.'],
        nextBestActions: [
          { kind: 'tool', name: 'issue_refund', label: 'Refund the duplicate charge', reason: 'Charged twice', confidence: 0.9 },
          { kind: 'tool', name: 'wire_money', label: 'Wire the money back', reason: 'Faster', confidence: 0.2 },
        ],
      }),
    },
  ]);
  const c = conv();
  expect((await postHook(stack.baseUrl, b.botId, lifecycle(b.botId, c, transfer('NA', 'entry', 'agent-1')), bJwt)).status).toBe(200);
  const asked = await postHook(stack.baseUrl, b.botId, message(b.botId, c, 'USER', 'I was charged twice'), bJwt);
  expect(asked.status).toBe(200);
  // The model has the question and has not answered: the suggestion is still to come.
  await fake.waitForRequests(1);
  const waiting = await read(b.botId, c, bJwt);
  expect(waiting.body.data).toMatchObject({ suggestions: [], assist: { pending: 1 } });
  const done = await eventually(() => read(b.botId, c, bJwt), (r) => r.body.data.suggestions.length === 1, 20_000, 50);
  expect(done.body.data.suggestions[0]).toMatchObject({
    inReplyTo: { eventId: asked.body.data.eventId, messageNumber: 1 },
    replies: ['Sorry about the double charge, let me fix that.'],
    // A tool the agent does not declare is kept as advice, without its name.
    nextBestActions: [
      { kind: 'tool', name: 'issue_refund', label: 'Refund the duplicate charge', reason: 'Charged twice', confidence: 0.9 },
      { kind: 'hint', name: null, label: 'Wire the money back', reason: 'Faster', confidence: 0.2 },
    ],
    model: expect.stringMatching(/^openai:/),
  });
  // What the model was shown: assist mode, the agent's catalogue, the conversation.
  const [system, user] = (fake.requests[1]!.body as { messages: { content: string }[] }).messages;
  expect(system!.content).toContain('assist mode');
  expect(system!.content).toContain('"issue_refund"');
  expect(user!.content).toContain('I was charged twice');
});
