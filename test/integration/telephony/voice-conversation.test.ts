// A phone call as an agent conversation, on the real API, worker and store with the Twilio fake
// calling the voice webhooks: an inbound call of three spoken turns shaped by the agent's VOICE
// settings, the hang-up ending the session, the metrics events of the call, a turn slower than
// the webhook's wait answered through a redirect, silence reprompted then hung up on, and an
// escalation transferred to the connection's number (or kept in the session without one).
import { startTwilioFake, type FakeCallView, type TwilioFake } from '../../../infra/twilio-fake';
import { voiceSessionId } from '../../../core/telephony/voice';
import { client } from '../../support/http';
import { escalationAgent, publishAgent } from '../../support/agents';
import { eventually } from '../../support/eventually';
import { startReceiver, type Receiver } from '../../support/receiver';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { ACCOUNT_SID, AUTH_TOKEN, insertConnection, webhookPath } from '../../support/voice';

jest.setTimeout(180_000);

const CALLER = '+15557654321';
const SIZE_PROMPT = 'Welcome to the pizza line. Which size: small, medium or large?';
const TOPPING_PROMPT = 'Which topping: ham, mushroom or olives?';

const PIZZA_LINE = `AGENT: Pizza_Line
GOAL: "Take a pizza order by phone."
VOICE:
  voice: "Polly.Joanna"
  language: en-GB
  silence_timeout: 4
FLOW:
  steps: [ask_size, ask_topping, confirm, placed]
  ask_size:
    REASONING: false
    GATHER:
      - size: required
        prompt: "${SIZE_PROMPT}"
        validate: enum(small, medium, large)
    THEN: ask_topping
  ask_topping:
    REASONING: false
    VOICE:
      barge_in: false
      speech_timeout: 2
    GATHER:
      - topping: required
        prompt: "${TOPPING_PROMPT}"
        validate: enum(ham, mushroom, olives)
    THEN: confirm
  confirm:
    REASONING: false
    RESPOND: "A {{size}} pizza with {{topping}}. Shall I place the order?"
    ON_INPUT:
      - IF: yes
        THEN: placed
      - ELSE:
        THEN: ask_size
  placed:
    REASONING: false
    RESPOND: "Your order is placed. Goodbye."
    THEN: COMPLETE
`;

/** An agent without VOICE settings that answers every utterance. */
const PLAIN = `AGENT: Plain_Line
GOAL: "Acknowledge what the caller says."
FLOW:
  steps: [listen]
  listen:
    REASONING: false
    RESPOND: "Go ahead."
    ON_INPUT:
      - ELSE:
        THEN: listen
`;

/** An agent whose turn calls a lookup service, which the test holds to make the turn slow. */
const slowLine = (endpoint: string) => `AGENT: Slow_Line
GOAL: "Look things up for the caller."
TOOLS:
  look_up(q: string) -> {ok: boolean}
    type: http
    endpoint: "${endpoint}"
    method: POST
FLOW:
  steps: [listen, lookup]
  listen:
    REASONING: false
    RESPOND: "What shall I look up?"
    ON_INPUT:
      - ELSE:
        THEN: lookup
  lookup:
    REASONING: false
    CALL: look_up
      WITH:
        q: "order"
    ON_SUCCESS:
      RESPOND: "Found it."
    ON_FAIL:
      RESPOND: "Found it."
    THEN: COMPLETE
`;

let stack: TestStack;
let receiver: Receiver;
let release: () => void = () => undefined;
let fake: TwilioFake;
let t: SeededTenant;
let api: ReturnType<typeof client>;

beforeAll(async () => {
  // The lookup service answers once the test releases it.
  receiver = await startReceiver(() => new Promise<number>((resolve) => (release = () => resolve(200))));
  stack = await startTestStack({ worker: true, allowPrivate: { tools: [receiver.origin] } });
  // One TwiML second lasts 50 ms, so a <Gather timeout> that hears nothing passes quickly.
  fake = await startTwilioFake({ settings: { secondMs: 50 } });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await publishAgent(api, t, 'Pizza_Line', PIZZA_LINE);
  await publishAgent(api, t, 'Plain_Line', PLAIN);
  await publishAgent(api, t, 'Slow_Line', slowLine(`${receiver.origin}/lookup`));
  await publishAgent(
    api,
    t,
    'Refund_Line',
    escalationAgent({ name: 'Refund_Line', goal: 'Refund by phone.', over: 100, reason: 'Refund of {{amount}}', respond: 'Your refund is approved.' }),
  );
});
afterAll(async () => {
  await fake?.close();
  await stack?.close();
  await receiver?.close();
});

/** An inbound call from CALLER to the connection's number, with the caller's utterances queued. */
async function callIn(connectionId: string, utterances: string[], hangupAfter = true): Promise<FakeCallView> {
  const view = fake.inbound({
    accountSid: ACCOUNT_SID,
    authToken: AUTH_TOKEN,
    from: CALLER,
    to: '+15550001000',
    url: stack.baseUrl + webhookPath(connectionId, 'voice'),
    statusCallback: stack.baseUrl + webhookPath(connectionId, 'voice-status'),
    utterances,
    hangupAfter,
  });
  return fake.waitForStatus(view.sid, undefined, 120_000);
}

const sessionOf = (connectionId: string, callSid: string) => voiceSessionId(connectionId, callSid);

async function endedSession(sessionId: string) {
  return eventually(
    () => stack.ctx.models.Session.findOne({ _id: sessionId }).lean(),
    (s) => s?.status === 'ended',
    60_000,
    200,
  );
}

const voiceEvents = (callSid: string) => stack.ctx.models.VoiceEvent.find({ callSid }).sort({ at: 1 }).lean();

it('an inbound call is a three-turn conversation with the agent, shaped by its VOICE settings, and its hang-up ends the session', async () => {
  const cc = await insertConnection(stack, t, { agentId: 'Pizza_Line' });
  const call = await callIn(cc, ['large', 'mushroom', 'yes']);

  expect(call.status).toBe('completed');
  expect(call.errors).toEqual([]);
  expect(call.heard).toEqual(['large', 'mushroom', 'yes']);
  expect(call.said).toEqual([SIZE_PROMPT, TOPPING_PROMPT, 'A large pizza with mushroom. Shall I place the order?', 'Your order is placed. Goodbye.']);

  // The agent's VOICE section shapes every <Say> and <Gather>; the step's VOICE block applies over it.
  const [greeting, second, , last] = call.twimlRequests.map((r) => r.twiml ?? '');
  expect(greeting).toContain('<Gather input="dtmf speech"');
  expect(greeting).toContain('timeout="4" speechTimeout="auto" bargeIn="true" language="en-GB"');
  expect(greeting).toMatch(/<Gather[^>]*><Say voice="Polly.Joanna" language="en-GB">Welcome/);
  expect(second).toContain('speechTimeout="2" bargeIn="false" language="en-GB"');
  expect(second).toMatch(/<Say voice="Polly.Joanna" language="en-GB">Which topping[^<]*<\/Say><Gather/);
  expect(last).toMatch(/<Say[^>]*>Your order is placed. Goodbye.<\/Say><Hangup\/>/);

  // One voice session, ended by the call's end; its transcript holds the conversation.
  const sessionId = sessionOf(cc, call.sid);
  const session = await endedSession(sessionId);
  expect(session).toMatchObject({ channel: 'voice', agentName: 'Pizza_Line', tenantId: t.tenantId, projectId: t.projectId });
  const transcript = await eventually(
    () => api.get(`/api/v1/sessions/${sessionId}/transcripts?limit=50`, { key: t.adminKey }),
    (r) => (r.body.messages as unknown[] | undefined)?.length === 7,
    30_000,
    200,
  );
  const lines = (transcript.body.messages as { role: string; content: string }[]).map((m) => `${m.role}: ${m.content}`);
  expect(lines).toEqual([
    `assistant: ${SIZE_PROMPT}`,
    'user: large',
    `assistant: ${TOPPING_PROMPT}`,
    'user: mushroom',
    'assistant: A large pizza with mushroom. Shall I place the order?',
    'user: yes',
    'assistant: Your order is placed. Goodbye.',
  ]);

  // The call's metrics: its start, a turn per reply, the agent's goodbye and the totals.
  const events = await eventually(() => voiceEvents(call.sid), (e) => e.some((x) => x.type === 'voice.call_ended'), 30_000, 200);
  expect(events.map((e) => `${e.type}:${e.turn}`).sort()).toEqual(
    ['voice.agent_ended:0', 'voice.call_ended:0', 'voice.call_started:0', 'voice.turn:0', 'voice.turn:1', 'voice.turn:2', 'voice.turn:3'].sort(),
  );
  const started = events.find((e) => e.type === 'voice.call_started')!;
  expect(started).toMatchObject({ sessionId, connectionId: cc, data: { direction: 'inbound', from: '+1********21', agent: 'Pizza_Line' } });
  const turn = events.find((e) => e.type === 'voice.turn' && e.turn === 2)!;
  expect(turn.data).toMatchObject({ callerChars: 'mushroom'.length, confidence: 0.92, agentChars: 'A large pizza with mushroom. Shall I place the order?'.length, polls: 0 });
  expect(typeof turn.data.latencyMs).toBe('number');
  const ended = events.find((e) => e.type === 'voice.call_ended')!;
  expect(ended.data).toMatchObject({ outcome: 'completed_by_agent', callStatus: 'completed', turns: 3, noInputs: 0 });
  expect(ended.data.agentTalkMs).toBeGreaterThan(0);
  // No number in clear in what the call recorded.
  expect(JSON.stringify(events)).not.toContain(CALLER);
});

it('a turn that outlasts the webhook\'s wait is answered by a pause and a redirect that waits for it again', async () => {
  const cc = await insertConnection(stack, t, { agentId: 'Slow_Line' });
  const config = stack.ctx.config;
  // Each wait ends quickly, so the held turn is polled for while the test holds it.
  stack.ctx.config = { ...config, VOICE_REPLY_WAIT_MS: 200 };
  try {
    const view = fake.inbound({
      accountSid: ACCOUNT_SID,
      authToken: AUTH_TOKEN,
      from: CALLER,
      to: '+15550001000',
      url: stack.baseUrl + webhookPath(cc, 'voice'),
      statusCallback: stack.baseUrl + webhookPath(cc, 'voice-status'),
      utterances: ['find my order'],
      hangupAfter: true,
    });
    // The turn waits on the lookup: Twilio is answered with a pause and a redirect, and asks again.
    const held = await fake.waitForCall((c) => c.sid === view.sid && c.twimlRequests.filter((r) => r.url.includes('poll=')).length >= 2, 60_000);
    expect(held.said).toEqual(['What shall I look up?']);
    expect(held.twimlRequests.some((r) => /<Pause length="1"\/><Redirect method="POST">[^<]*poll=1/.test(r.twiml ?? ''))).toBe(true);
    release();
    const call = await fake.waitForStatus(view.sid, undefined, 60_000);
    expect(call.errors).toEqual([]);
    expect(call.said).toEqual(['What shall I look up?', 'Found it.']);
    expect(call.twimlRequests.at(-1)?.twiml).toContain('<Hangup/>');
    const events = await eventually(() => voiceEvents(call.sid), (e) => e.some((x) => x.type === 'voice.call_ended'), 30_000, 200);
    const turn = events.find((e) => e.type === 'voice.turn' && e.turn === 1)!;
    expect(turn.data.polls).toBeGreaterThanOrEqual(2);
    expect(turn.data.callerChars).toBe('find my order'.length);
    await endedSession(sessionOf(cc, call.sid));
  } finally {
    stack.ctx.config = config;
  }
});

it('silence is reprompted once, then the call says goodbye, hangs up and the session ends', async () => {
  const cc = await insertConnection(stack, t, { agentId: 'Plain_Line' });
  const call = await callIn(cc, [], false);
  expect(call.status).toBe('completed');
  expect(call.said).toEqual(['Go ahead.', 'Sorry, I did not hear anything. Please go ahead.', 'I still did not hear anything. Goodbye.']);
  expect(call.twimlRequests.at(-1)?.twiml).toContain('<Hangup/>');
  await endedSession(sessionOf(cc, call.sid));
  const events = await eventually(() => voiceEvents(call.sid), (e) => e.some((x) => x.type === 'voice.call_ended'), 30_000, 200);
  expect(events.filter((e) => e.type === 'voice.no_input').map((e) => e.data.final)).toEqual([false, true]);
  expect(events.find((e) => e.type === 'voice.call_ended')!.data).toMatchObject({ outcome: 'no_input', turns: 0, noInputs: 2, silenceMs: 2 * 5000 });
});

it('an escalation dials the connection\'s transfer number after its notice', async () => {
  const cc = await insertConnection(stack, t, { agentId: 'Refund_Line', transferNumber: '+15559990000' });
  const call = await callIn(cc, ['500']);
  expect(call.said[0]).toBe('How much?');
  expect(call.dialed).toBe('+15559990000');
  const dialTwiml = call.twimlRequests.at(-1)?.twiml ?? '';
  expect(dialTwiml).toMatch(/<Say>[^<]+<\/Say><Dial>\+15559990000<\/Dial><\/Response>/);
  expect(call.said).toHaveLength(2);
  const sessionId = sessionOf(cc, call.sid);
  await endedSession(sessionId);
  const events = await eventually(() => voiceEvents(call.sid), (e) => e.some((x) => x.type === 'voice.call_ended'), 30_000, 200);
  expect(events.find((e) => e.type === 'voice.transfer')!.data).toMatchObject({ to: '+1********00' });
  expect(events.find((e) => e.type === 'voice.call_ended')!.data).toMatchObject({ outcome: 'transferred' });
});

it('without a transfer number the escalation stays in the session: its notice is said and the call goes on', async () => {
  const cc = await insertConnection(stack, t, { agentId: 'Refund_Line' });
  const call = await callIn(cc, ['500']);
  expect(call.dialed).toBeNull();
  expect(call.said).toHaveLength(2);
  expect(call.twimlRequests[1]?.twiml).toContain('<Gather input="dtmf speech"');
  const sessionId = sessionOf(cc, call.sid);
  // The escalation made its human task, which the call's end cancels with the session.
  const tasks = await stack.ctx.models.HumanTask.find({ sessionId }).lean();
  expect(tasks).toHaveLength(1);
  await endedSession(sessionId);
});

it('an inbound call of a connection with recording on starts recording both channels with its first answer only', async () => {
  const cc = await insertConnection(stack, t, { agentId: 'Plain_Line', recordingEnabled: true });
  const call = await callIn(cc, ['hello']);
  const sessionId = sessionOf(cc, call.sid);
  const [first, second] = call.twimlRequests.map((r) => r.twiml ?? '');
  expect(first).toContain(
    `<Start><Recording channels="dual" recordingStatusCallback="${stack.baseUrl}${webhookPath(cc, 'recording-status', `sessionId=${sessionId}`)}" recordingStatusCallbackMethod="POST" recordingStatusCallbackEvent="completed"/></Start>`,
  );
  expect(second).not.toContain('<Start>');
  expect(fake.recordings(call.sid)).toHaveLength(1);
  // Without recording on, nothing is recorded.
  const plain = await callIn(await insertConnection(stack, t, { agentId: 'Plain_Line' }), ['hello']);
  expect(plain.twimlRequests[0]?.twiml).not.toContain('<Start>');
  expect(fake.recordings(plain.sid)).toHaveLength(0);
});
