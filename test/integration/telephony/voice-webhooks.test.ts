// The voice webhooks posted directly, signed as Twilio signs them: one session per CallSid however
// often (and however concurrently) Twilio asks, an outbound call's answer telling the call's
// workflow its session, a machine hung up on under `amd=disconnect` (and talked to under
// `continue`), the deployment a connection's endpoint slug pins, and a call's end ending its session.
import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter } from '@temporalio/common';
import { voiceSessionId } from '../../../core/telephony/voice';
import { outboundCallWorkflowId } from '../../../workflows/definitions';
import { client } from '../../support/http';
import { publishAgent } from '../../support/agents';
import { eventually } from '../../support/eventually';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { callForm, insertConnection, postSigned, webhookPath } from '../../support/voice';

jest.setTimeout(120_000);

const GREETING = 'Hello, this is the front desk.';
const desk = (name: string, greeting: string) => `AGENT: ${name}
GOAL: "Answer the phone."
FLOW:
  steps: [listen]
  listen:
    REASONING: false
    RESPOND: "${greeting}"
    ON_INPUT:
      - ELSE:
        THEN: listen
`;

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;
let connectionId: string;

beforeAll(async () => {
  // No real-time voice here: a `realtime` connection's calls fall back to TwiML turns.
  stack = await startTestStack({ worker: true, liveKit: false });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await publishAgent(api, t, 'Front_Desk', desk('Front_Desk', GREETING));
  connectionId = await insertConnection(stack, t, { agentId: 'Front_Desk' });
});
afterAll(async () => {
  await stack?.close();
});

const newCallSid = () => 'CA' + randomBytes(16).toString('hex');
const voiceSessions = () => stack.ctx.models.Session.countDocuments({ tenantId: t.tenantId, channel: 'voice' });

it('the same CallSid, asked for three times at once and once more later, starts one session and greets each time', async () => {
  const callSid = newCallSid();
  const before = await voiceSessions();
  const answers = await Promise.all([1, 2, 3].map(() => postSigned(stack, webhookPath(connectionId, 'voice'), callForm(callSid))));
  const again = await postSigned(stack, webhookPath(connectionId, 'voice'), callForm(callSid));
  for (const a of [...answers, again]) {
    expect(a.status).toBe(200);
    expect(a.text).toContain(`<Say>${GREETING}</Say>`);
    expect(a.text).toContain(`gather?sessionId=${voiceSessionId(connectionId, callSid)}&amp;turn=1`);
  }
  expect(await voiceSessions()).toBe(before + 1);
  const session = await stack.ctx.models.Session.findOne({ _id: voiceSessionId(connectionId, callSid) }).lean();
  expect(session).toMatchObject({ channel: 'voice', status: 'active', agentName: 'Front_Desk' });
  // The greeting ran once: one assistant message.
  const res = await eventually(
    () => api.get(`/api/v1/sessions/${session!._id}/transcripts`, { key: t.adminKey }),
    (r) => (r.body.messages as unknown[] | undefined)?.length === 1,
    20_000,
    200,
  );
  expect(res.body.messages).toHaveLength(1);
});

it('a turn Twilio sends twice is one turn of the session', async () => {
  const callSid = newCallSid();
  const answered = await postSigned(stack, webhookPath(connectionId, 'voice'), callForm(callSid));
  const action = /<Gather[^>]* action="([^"]+)"/.exec(answered.text)![1]!.replace(/&amp;/g, '&');
  const path = action.slice(stack.baseUrl.length);
  const form = callForm(callSid, { SpeechResult: 'I would like a table', Confidence: '0.9' });
  const [a, b] = await Promise.all([postSigned(stack, path, form), postSigned(stack, path, form)]);
  expect(a.text).toContain(`<Say>${GREETING}</Say>`);
  // The same answer both times (but for when it was sent).
  const sent = (x: string) => x.replace(/at=\d+/g, 'at=');
  expect(sent(b.text)).toBe(sent(a.text));
  const sessionId = voiceSessionId(connectionId, callSid);
  const transcript = await eventually(
    () => api.get(`/api/v1/sessions/${sessionId}/transcripts`, { key: t.adminKey }),
    (r) => (r.body.messages as unknown[] | undefined)?.length === 3,
    20_000,
    200,
  );
  expect((transcript.body.messages as { role: string }[]).map((m) => m.role)).toEqual(['assistant', 'user', 'assistant']);
});

describe('outbound calls', () => {
  it('tells the outbound call\'s workflow the session its answered call became', async () => {
    const outboundCallId = 'oc_' + randomBytes(8).toString('hex');
    // A stand-in for the call's workflow (nobody runs it): the signal lands in its history.
    const temporal = await stack.ctx.temporal.client();
    const handle = await temporal.workflow.start('probeWorkflow', { workflowId: outboundCallWorkflowId(outboundCallId), taskQueue: 'no-worker-voice' });
    try {
      const callSid = newCallSid();
      const path = webhookPath(connectionId, 'voice', `outboundCallId=${outboundCallId}&amd=continue`);
      const res = await postSigned(stack, path, callForm(callSid, { Direction: 'outbound-api', AnsweredBy: 'human' }));
      expect(res.status).toBe(200);
      expect(res.text).toContain(GREETING);
      const history = await handle.fetchHistory();
      const signals = (history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'outboundCallSession');
      expect(signals).toHaveLength(1);
      const payload = signals[0]!.workflowExecutionSignaledEventAttributes!.input!.payloads![0]!;
      // Payloads are encrypted at rest in Temporal: decoded with the API's own codec.
      const [decoded] = await stack.ctx.payloadCodec!.decode([payload]);
      expect(defaultPayloadConverter.fromPayload(decoded!)).toEqual({ sessionId: voiceSessionId(connectionId, callSid) });
    } finally {
      await handle.terminate('test over');
    }
  });

  it('answers a call whose workflow does not exist (yet) all the same', async () => {
    const callSid = newCallSid();
    const res = await postSigned(stack, webhookPath(connectionId, 'voice', 'outboundCallId=oc_nowhere&amd=off'), callForm(callSid, { Direction: 'outbound-api' }));
    expect(res.status).toBe(200);
    expect(res.text).toContain(GREETING);
  });

  it('hangs up on a machine under amd=disconnect and starts nothing, but talks to one under continue', async () => {
    const before = await voiceSessions();
    for (const answeredBy of ['machine_end_beep', 'machine_start', 'fax']) {
      const callSid = newCallSid();
      const res = await postSigned(stack, webhookPath(connectionId, 'voice', 'outboundCallId=oc_machine&amd=disconnect'), callForm(callSid, { AnsweredBy: answeredBy }));
      expect(res.status).toBe(200);
      expect(res.text).toBe('<?xml version="1.0" encoding="UTF-8"?><Response><Hangup/></Response>');
      const ended = await stack.ctx.models.VoiceEvent.findOne({ callSid, type: 'voice.call_ended' }).lean();
      expect(ended).toMatchObject({ sessionId: null, data: { outcome: 'machine', answeredBy } });
    }
    expect(await voiceSessions()).toBe(before);
    const human = await postSigned(stack, webhookPath(connectionId, 'voice', 'outboundCallId=oc_machine&amd=disconnect'), callForm(newCallSid(), { AnsweredBy: 'human' }));
    expect(human.text).toContain(GREETING);
    const kept = await postSigned(stack, webhookPath(connectionId, 'voice', 'outboundCallId=oc_machine&amd=continue'), callForm(newCallSid(), { AnsweredBy: 'machine_end_beep' }));
    expect(kept.text).toContain(GREETING);
    expect(await voiceSessions()).toBe(before + 2);
  });
});

it('a connection pinned to a deployment by its endpoint slug runs that deployment', async () => {
  await publishAgent(api, t, 'Night_Desk', desk('Night_Desk', 'The night desk speaks.'));
  // In staging, so the dev calls of the other tests keep running the latest versions.
  const created = await api.post(`/api/projects/${t.projectId}/deployments`, {
    key: t.adminKey,
    json: { environment: 'staging', agentVersionManifest: { Night_Desk: 'auto' }, entryAgentName: 'Night_Desk' },
  });
  expect(created.status).toBe(201);
  const deployment = await stack.ctx.models.Deployment.findOne({ _id: created.body.deployment.id }).lean();
  expect(deployment).not.toBeNull();
  const pinned = await insertConnection(stack, t, { environment: 'staging', endpointSlug: deployment!.endpointSlug });
  const callSid = newCallSid();
  const res = await postSigned(stack, webhookPath(pinned, 'voice'), callForm(callSid));
  expect(res.text).toContain('The night desk speaks.');
  const session = await stack.ctx.models.Session.findOne({ _id: voiceSessionId(pinned, callSid) }).lean();
  expect(session).toMatchObject({ deploymentId: deployment!._id, agentName: 'Night_Desk' });
});

it('a terminal call status ends the session; an earlier status does not', async () => {
  const callSid = newCallSid();
  await postSigned(stack, webhookPath(connectionId, 'voice'), callForm(callSid));
  const sessionId = voiceSessionId(connectionId, callSid);
  const ringing = await postSigned(stack, webhookPath(connectionId, 'voice-status'), callForm(callSid, { CallStatus: 'in-progress' }));
  expect(ringing.status).toBe(200);
  expect((await stack.ctx.models.Session.findOne({ _id: sessionId }).lean())?.status).toBe('active');
  const done = await postSigned(stack, webhookPath(connectionId, 'voice-status'), callForm(callSid, { CallStatus: 'completed', CallDuration: '42' }));
  expect(done.status).toBe(200);
  expect(done.text).toBe('<?xml version="1.0" encoding="UTF-8"?><Response/>');
  await eventually(() => stack.ctx.models.Session.findOne({ _id: sessionId }).lean(), (s) => s?.status === 'ended', 30_000, 200);
  const ended = await stack.ctx.models.VoiceEvent.findOne({ callSid, type: 'voice.call_ended' }).lean();
  expect(ended?.data).toMatchObject({ outcome: 'caller_hung_up', callStatus: 'completed', durationSec: 42 });
  // A webhook for the ended call (sent again late) starts nothing.
  const late = await postSigned(stack, webhookPath(connectionId, 'voice'), callForm(callSid));
  expect(late.text).toContain('<Hangup/>');
  expect((await stack.ctx.models.Session.findOne({ _id: sessionId }).lean())?.status).toBe('ended');
  // Deleting the session deletes the call's metrics events with it.
  const deleted = await api.delete(`/api/projects/${t.projectId}/sessions/${sessionId}`, { key: t.adminKey });
  expect(deleted.status).toBe(200);
  expect(await stack.ctx.models.VoiceEvent.countDocuments({ sessionId })).toBe(0);
});

it('/chat/agent answers voiceConfig for a voice-enabled agent, where the session waits, and not for a text agent', async () => {
  await publishAgent(
    api,
    t,
    'Voice_Desk',
    `AGENT: Voice_Desk
GOAL: "Answer the phone."
VOICE:
  voice: alice
  language: es-MX
  silence_timeout: 8s
FLOW:
  steps: [listen]
  listen:
    REASONING: false
    RESPOND: "Hola."
    VOICE:
      barge_in: false
    ON_INPUT:
      - ELSE:
        THEN: listen
`,
  );
  const voiced = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId: 'Voice_Desk', message: 'hola' } });
  expect(voiced.status).toBe(200);
  expect(voiced.body.voiceConfig).toEqual({ voice: 'alice', language: 'es-MX', silenceTimeout: 8, bargeIn: false });
  const plain = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId: 'Front_Desk', message: 'hello' } });
  expect(plain.status).toBe(200);
  expect(plain.body).not.toHaveProperty('voiceConfig');
});

it('a realtime connection on a deployment without real-time voice answers its calls turn by turn, as gather', async () => {
  // Set before LiveKit was unconfigured (the API refuses `realtime` without it): written directly.
  const realtime = await insertConnection(stack, t, { agentId: 'Front_Desk', voiceMode: 'realtime' });
  const callSid = newCallSid();
  const answer = await postSigned(stack, webhookPath(realtime, 'voice'), callForm(callSid));
  expect(answer.status).toBe(200);
  expect(answer.text).toContain(`<Say>${GREETING}</Say>`);
  expect(answer.text).toContain('<Gather');
  expect(answer.text).not.toContain('<Connect>');
  expect(await stack.ctx.models.VoiceRoom.countDocuments({ _id: voiceSessionId(realtime, callSid) })).toBe(0);
});
