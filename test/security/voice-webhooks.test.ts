// The voice webhooks take no credential but Twilio's X-Twilio-Signature under the connection's own
// auth token, over the full URL with its query: anything unsigned, signed with another token,
// signed for another URL (a changed query, another connection), or naming another account is
// 403 and starts, says and ends nothing. A correctly signed <Gather> post drives only the session
// of its own call: a sessionId of another call in the URL is 403.
import { randomBytes } from 'node:crypto';
import { voiceSessionId } from '../../core/telephony/voice';
import { twilioSignature } from '../../providers/telephony/twilio-client';
import { client } from '../support/http';
import { flushProjection } from '../support/projection';
import { publishAgent } from '../support/agents';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../support/stack';
import { AUTH_TOKEN, callForm, insertConnection, postSigned, webhookPath } from '../support/voice';

jest.setTimeout(120_000);

const AGENT = `AGENT: Guarded_Desk
GOAL: "Answer the phone."
FLOW:
  steps: [listen]
  listen:
    REASONING: false
    RESPOND: "Hello there."
    ON_INPUT:
      - ELSE:
        THEN: listen
`;

let stack: TestStack;
let t: SeededTenant;
let connectionId: string;
let otherConnectionId: string;

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  t = await seedTenant(stack.ctx);
  await publishAgent(client(stack.baseUrl), t, 'Guarded_Desk', AGENT);
  connectionId = await insertConnection(stack, t, { agentId: 'Guarded_Desk' });
  otherConnectionId = await insertConnection(stack, t, { agentId: 'Guarded_Desk' });
});
afterAll(async () => {
  await stack?.close();
});

const newCallSid = () => 'CA' + randomBytes(16).toString('hex');
const nothingStarted = async (callSid: string) => {
  expect(await stack.ctx.models.Session.countDocuments({ _id: { $in: [voiceSessionId(connectionId, callSid), voiceSessionId(otherConnectionId, callSid)] } })).toBe(0);
  expect(await stack.ctx.models.VoiceEvent.countDocuments({ callSid })).toBe(0);
};

function expectRefused(res: { status: number; text: string }): void {
  expect(res.status).toBe(403);
  expect(JSON.parse(res.text)).toMatchObject({ success: false, error: { code: 'FORBIDDEN' } });
}

it('an unsigned request, or one signed with another token, is 403 and starts no session', async () => {
  const callSid = newCallSid();
  expectRefused(await postSigned(stack, webhookPath(connectionId, 'voice'), callForm(callSid), null));
  expectRefused(await postSigned(stack, webhookPath(connectionId, 'voice'), callForm(callSid), 'not-the-token'));
  await nothingStarted(callSid);
});

it('a signature for another URL (a changed query, another connection) is 403', async () => {
  const callSid = newCallSid();
  const form = callForm(callSid, { AnsweredBy: 'human' });
  // Signed for amd=disconnect, sent with amd=continue.
  const signedFor = stack.baseUrl + webhookPath(connectionId, 'voice', 'outboundCallId=oc_x&amd=disconnect');
  const sent = await fetch(stack.baseUrl + webhookPath(connectionId, 'voice', 'outboundCallId=oc_x&amd=continue'), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(AUTH_TOKEN, signedFor, form) },
    body: new URLSearchParams(form).toString(),
  });
  expectRefused({ status: sent.status, text: await sent.text() });
  // Signed for one connection's URL, sent to another's (both under the same token).
  const toOther = await fetch(stack.baseUrl + webhookPath(otherConnectionId, 'voice'), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(AUTH_TOKEN, stack.baseUrl + webhookPath(connectionId, 'voice'), form) },
    body: new URLSearchParams(form).toString(),
  });
  expectRefused({ status: toOther.status, text: await toOther.text() });
  await nothingStarted(callSid);
});

it('an unknown connection and another account\'s call are refused alike', async () => {
  const callSid = newCallSid();
  expectRefused(await postSigned(stack, webhookPath('cc_doesnotexist', 'voice'), callForm(callSid)));
  expectRefused(await postSigned(stack, webhookPath(connectionId, 'voice'), callForm(callSid, { AccountSid: 'AC' + 'ff'.repeat(16) })));
  await nothingStarted(callSid);
});

it('a signed <Gather> post drives only its own call\'s session', async () => {
  const victimCall = newCallSid();
  await postSigned(stack, webhookPath(connectionId, 'voice'), callForm(victimCall));
  const victim = voiceSessionId(connectionId, victimCall);
  // Another call of the same connection names the victim's session in its gather URL.
  const res = await postSigned(stack, webhookPath(connectionId, 'gather', `sessionId=${victim}&turn=1`), callForm(newCallSid(), { SpeechResult: 'transfer all my money' }));
  expectRefused(res);
  // The victim's session heard nothing: no user message, once everything it did is written.
  await flushProjection(stack.ctx, victim);
  expect(await stack.ctx.models.TranscriptMessage.countDocuments({ sessionId: victim, role: 'user' })).toBe(0);
  expect(await stack.ctx.models.TranscriptMessage.countDocuments({ sessionId: victim, role: 'assistant' })).toBe(1);
  expect((await stack.ctx.models.Session.findOne({ _id: victim }).lean())?.status).toBe('active');
});

it('a forged stream-ended post neither connects a stream nor ends the session', async () => {
  const callSid = newCallSid();
  await postSigned(stack, webhookPath(connectionId, 'voice'), callForm(callSid));
  const path = webhookPath(connectionId, 'stream-ended', `sessionId=${voiceSessionId(connectionId, callSid)}&reconnects=99`);
  expectRefused(await postSigned(stack, path, callForm(callSid), null));
  expectRefused(await postSigned(stack, path, callForm(callSid), 'guessed-token'));
  expect((await stack.ctx.models.Session.findOne({ _id: voiceSessionId(connectionId, callSid) }).lean())?.status).toBe('active');
});

it('a forged status callback does not end the session', async () => {
  const callSid = newCallSid();
  await postSigned(stack, webhookPath(connectionId, 'voice'), callForm(callSid));
  expectRefused(await postSigned(stack, webhookPath(connectionId, 'voice-status'), callForm(callSid, { CallStatus: 'completed' }), null));
  expectRefused(await postSigned(stack, webhookPath(connectionId, 'voice-status'), callForm(callSid, { CallStatus: 'completed' }), 'guessed-token'));
  expect((await stack.ctx.models.Session.findOne({ _id: voiceSessionId(connectionId, callSid) }).lean())?.status).toBe('active');
});
