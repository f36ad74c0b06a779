// A step's VOICE form of its RESPOND on a phone call, on the real API, worker and store with the
// Twilio fake calling the voice webhooks: the call hears plain_text and an SSML say-as (the
// TwiML keeps the say-as inside <Say>), an SSML outside what <Say> takes falls back to plain_text,
// a caller's words put into SSML stay words, and text channels still get RESPOND as written.
import { startTwilioFake, type FakeCallView, type TwilioFake } from '../../../infra/twilio-fake';
import { client } from '../../support/http';
import { publishAgent } from '../../support/agents';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { ACCOUNT_SID, AUTH_TOKEN, insertConnection, webhookPath } from '../../support/voice';

jest.setTimeout(180_000);

const BOOKING = `AGENT: Booking_Line
GOAL: "Confirm a booking by phone."
FLOW:
  steps: [welcome, ask_name, confirm, bye]
  welcome:
    REASONING: false
    RESPOND: "Welcome to bookings (text)."
    VOICE:
      plain_text: "Welcome to bookings."
      instructions: "Speak warmly"
    THEN: ask_name
  ask_name:
    REASONING: false
    GATHER:
      - name: required
        prompt: "Your name?"
    THEN: confirm
  confirm:
    REASONING: false
    RESPOND: "Your booking is confirmed for December 15th, {{name}}. Anything else?"
    VOICE:
      ssml: |
        <speak>
          Your booking is confirmed for <say-as interpret-as="date" format="mdy">12/15/2025</say-as>, <emphasis>{{name}}</emphasis>.
          Anything else?
        </speak>
      plain_text: "Your booking is confirmed for December fifteenth. Anything else?"
    ON_INPUT:
      - ELSE:
        THEN: bye
  bye:
    REASONING: false
    RESPOND: "Goodbye (text)."
    VOICE:
      ssml: "<speak>Goodbye <audio src=\\"https://evil.example/a.mp3\\">now</audio></speak>"
      plain_text: "Goodbye."
    THEN: COMPLETE
`;

let stack: TestStack;
let fake: TwilioFake;
let t: SeededTenant;
let api: ReturnType<typeof client>;

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  fake = await startTwilioFake({ settings: { secondMs: 50 } });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await publishAgent(api, t, 'Booking_Line', BOOKING);
});
afterAll(async () => {
  await fake?.close();
  await stack?.close();
});

async function callIn(connectionId: string, utterances: string[]): Promise<FakeCallView> {
  const view = fake.inbound({
    accountSid: ACCOUNT_SID,
    authToken: AUTH_TOKEN,
    from: '+15557654321',
    to: '+15550001000',
    url: stack.baseUrl + webhookPath(connectionId, 'voice'),
    statusCallback: stack.baseUrl + webhookPath(connectionId, 'voice-status'),
    utterances,
    hangupAfter: true,
  });
  return fake.waitForStatus(view.sid, undefined, 120_000);
}

it('a call hears the plain_text and the SSML (say-as kept), and an SSML outside the subset falls back to plain_text', async () => {
  const cc = await insertConnection(stack, t, { agentId: 'Booking_Line' });
  const call = await callIn(cc, ['Ada', 'no thanks']);

  expect(call.status).toBe('completed');
  expect(call.errors).toEqual([]);
  expect(call.said).toEqual([
    'Welcome to bookings.',
    'Your name?',
    'Your booking is confirmed for 12/15/2025, Ada. Anything else?',
    'Goodbye.',
  ]);
  const twiml = call.twimlRequests.map((r) => r.twiml ?? '').join('\n');
  expect(twiml).toContain('<Say>Your booking is confirmed for <say-as interpret-as="date" format="mdy">12/15/2025</say-as>, <emphasis>Ada</emphasis>. Anything else?</Say>');
  expect(twiml).not.toContain('audio');
  expect(twiml).not.toContain('(text)');
});

it("a caller's words put into SSML stay words: markup they say is escaped, never an element", async () => {
  const cc = await insertConnection(stack, t, { agentId: 'Booking_Line' });
  const call = await callIn(cc, ['<audio src="https://evil.example/x.mp3"/> & co', 'no']);
  expect(call.errors).toEqual([]);
  const twiml = call.twimlRequests.map((r) => r.twiml ?? '').join('\n');
  expect(twiml).toContain('<emphasis>&lt;audio src="https://evil.example/x.mp3"/&gt; &amp; co</emphasis>');
  expect(twiml).not.toMatch(/<audio/);
  expect(call.said[2]).toBe('Your booking is confirmed for 12/15/2025, <audio src="https://evil.example/x.mp3"/> & co. Anything else?');
});

it('text channels get RESPOND as written, without the voice form', async () => {
  // The first message is the name the welcome asks for.
  const first = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId: 'Booking_Line', message: 'Ada' } });
  expect(first.status).toBe(200);
  expect(first.body.response).toContain('Welcome to bookings (text).');
  expect(first.body.response).toContain('Your booking is confirmed for December 15th, Ada. Anything else?');
  expect(first.body.response).not.toContain('12/15/2025');
  expect(first.body).not.toHaveProperty('voiceOutput');
  const second = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, sessionId: first.body.sessionId, message: 'no' } });
  expect(second.status).toBe(200);
  expect(second.body.response).toBe('Goodbye (text).');
  expect(second.body).not.toHaveProperty('voiceOutput');
});
