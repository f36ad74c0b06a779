// A recorded call through the Twilio fake: the call is placed with the real SDK (record on, two
// channels, our recording-status URL), the fake posts its signed recording callbacks when the call
// ends, the worker fetches the WAV from the fake's media endpoint (reached by rewriting the
// api.twilio.com RecordingUrl) into GridFS, and the list's URL downloads the very bytes.
import { startTestStack, seedTenant, type TestStack, type SeededTenant } from '../../support/stack';
import { client } from '../../support/http';
import { eventually } from '../../support/eventually';
import { startTwilioFake, type TwilioFake } from '../../../infra/twilio-fake';
import { twilioClient } from '../../../providers/telephony/twilio-client';
import { accountSid, hex, scopedKey, seedConnection, seedSession } from './recording-fixtures';

let stack: TestStack;
let fake: TwilioFake;
let t: SeededTenant;
const account = { accountSid: accountSid(), authToken: hex(16) };

beforeAll(async () => {
  fake = await startTwilioFake();
  stack = await startTestStack({ worker: true, env: { TWILIO_API_BASE_URL: fake.url } });
  t = await seedTenant(stack.ctx);
}, 120_000);

afterAll(async () => {
  await stack?.close();
  await fake?.close();
});

it('stores a dual-channel call recording from the fake and serves the bytes it recorded', async () => {
  const connectionId = await seedConnection(stack.ctx, t, account);
  const sessionId = await seedSession(stack.ctx, t, 'active');
  const { key } = await scopedKey(stack.ctx, t, ['recordings.read']);
  const twilio = twilioClient(account, { apiBaseUrl: fake.url });
  const call = await twilio.calls.create({
    to: '+15551230001',
    from: '+15550001111',
    twiml: '<Response><Say>Hello</Say><Pause length="30"/></Response>',
    record: true,
    recordingChannels: 'dual',
    recordingStatusCallback: `${stack.baseUrl}/api/telephony/twilio/${connectionId}/recording-status?sessionId=${sessionId}`,
    recordingStatusCallbackEvent: ['in-progress', 'completed'],
  });
  await fake.waitForStatus(call.sid, 'in-progress');
  fake.hangup(call.sid);
  await fake.waitForStatus(call.sid);

  const api = client(stack.baseUrl);
  const listed = await eventually(
    () => api.get(`/api/public/recordings/projects/${t.projectId}/sessions/${sessionId}/recordings`, { headers: { 'x-api-key': key } }),
    (r) => r.body?.data?.status === 'success',
    60_000,
    200,
  );
  expect(listed.body.data.status).toBe('success');
  const [recording] = fake.recordings(call.sid);
  expect(recording).toBeDefined();
  // Every callback the fake sent was taken.
  await fake.settled();
  const stored = await stack.ctx.models.Recording.findOne({ tenantId: t.tenantId, providerRecordingSid: recording!.sid }).lean();
  expect(stored).toMatchObject({ sessionId, callSid: call.sid, channels: 2, availability: 'available' });

  const file = listed.body.data.recordings[0].files[0];
  const ours = await fetch(stack.baseUrl + file.url);
  expect(ours.status).toBe(200);
  const served = Buffer.from(await ours.arrayBuffer());
  const theirs = await fetch(`${fake.url}/2010-04-01/Accounts/${account.accountSid}/Recordings/${recording!.sid}.wav?RequestedChannels=2`, {
    headers: { authorization: `Basic ${Buffer.from(`${account.accountSid}:${account.authToken}`).toString('base64')}` },
  });
  const original = Buffer.from(await theirs.arrayBuffer());
  expect(served.length).toBe(original.length);
  expect(served.equals(original)).toBe(true);
  expect(file.bytes).toBe(original.length);
  // Two channels, stored as given.
  expect(served.readUInt16LE(22)).toBe(2);
});
