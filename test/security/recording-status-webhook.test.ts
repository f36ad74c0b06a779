// The recording-status webhook believes only Twilio: a form not signed with the connection's own
// auth token is 403 and changes nothing; a signed form cannot make the platform fetch anything but
// the recording's URL on Twilio's API host, nor attach a recording to a session of another tenant
// or project.
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { startTestStack, seedTenant, type TestStack, type SeededTenant } from '../support/stack';
import { accountSid, callSid, hex, makeWav, postRecordingStatus, recordingSid, recordingUrl, seedConnection, seedSession, startMediaServer, statusForm, type MediaServer } from '../integration/telephony/recording-fixtures';

let stack: TestStack;
let media: MediaServer;
let canary: Server;
let canaryUrl: string;
const canaryHits: string[] = [];
let t: SeededTenant;
const account = { accountSid: accountSid(), authToken: hex(16) };
let connectionId: string;

beforeAll(async () => {
  media = await startMediaServer();
  canary = createServer((req, res) => {
    canaryHits.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'audio/wav' }).end(makeWav(64));
  });
  await new Promise<void>((resolve) => canary.listen(0, '127.0.0.1', resolve));
  canaryUrl = `http://127.0.0.1:${(canary.address() as AddressInfo).port}`;
  stack = await startTestStack({ worker: true, env: { TWILIO_API_BASE_URL: media.url } });
  t = await seedTenant(stack.ctx);
  connectionId = await seedConnection(stack.ctx, t, account);
}, 120_000);

afterAll(async () => {
  await stack?.close();
  await media?.close();
  canary?.closeAllConnections();
  await new Promise<void>((resolve) => (canary ? canary.close(() => resolve()) : resolve()));
});

const recordingsOf = (sid: string) => stack.ctx.models.Recording.countDocuments({ providerRecordingSid: sid });

it('refuses a form with a forged or missing signature (403) and records nothing', async () => {
  const sessionId = await seedSession(stack.ctx, t);
  const sid = recordingSid();
  media.put(account, sid, makeWav(100));
  const form = statusForm({ account: account.accountSid, recording: sid, call: callSid(), status: 'completed' });
  const forged = await postRecordingStatus(stack.baseUrl, connectionId, `sessionId=${sessionId}`, form, { signature: 'bm90IGEgc2lnbmF0dXJl' });
  expect(forged.status).toBe(403);
  expect(forged.body.error.code).toBe('FORBIDDEN');
  // Signed, but under another account's token.
  const otherToken = await postRecordingStatus(stack.baseUrl, connectionId, `sessionId=${sessionId}`, form, { authToken: hex(16) });
  expect(otherToken.status).toBe(403);
  // Signed for another URL (the query changed after signing).
  const { twilioSignature } = await import('../../providers/telephony/twilio-client');
  const signedElsewhere = twilioSignature(account.authToken, `${stack.baseUrl}/api/telephony/twilio/${connectionId}/recording-status?sessionId=other`, form);
  const moved = await postRecordingStatus(stack.baseUrl, connectionId, `sessionId=${sessionId}`, form, { signature: signedElsewhere });
  expect(moved.status).toBe(403);
  expect(await recordingsOf(sid)).toBe(0);
  expect(media.requests.filter((r) => r.path.includes(sid))).toHaveLength(0);
});

it('refuses a RecordingUrl off Twilio\'s API host (400): nothing is recorded and nothing fetched', async () => {
  const sessionId = await seedSession(stack.ctx, t);
  const hosts = [
    `${canaryUrl}`,
    'https://evil.example.com',
    'https://api.twilio.com.evil.example.com',
    'http://api.twilio.com',
    'https://user:pass@api.twilio.com',
  ];
  for (const host of hosts) {
    const sid = recordingSid();
    const form = statusForm({ account: account.accountSid, recording: sid, call: callSid(), status: 'completed', url: recordingUrl(account.accountSid, sid, host) });
    const res = await postRecordingStatus(stack.baseUrl, connectionId, `sessionId=${sessionId}`, form, account);
    expect({ host, status: res.status, code: res.body?.error?.code }).toEqual({ host, status: 400, code: 'VALIDATION_ERROR' });
    expect(await recordingsOf(sid)).toBe(0);
  }
  // On Twilio's host, but another recording's (or another account's) media.
  const sid = recordingSid();
  for (const url of [recordingUrl(accountSid(), sid), recordingUrl(account.accountSid, recordingSid()), `${recordingUrl(account.accountSid, sid)}?x=1`]) {
    const res = await postRecordingStatus(stack.baseUrl, connectionId, `sessionId=${sessionId}`, statusForm({ account: account.accountSid, recording: sid, call: callSid(), status: 'completed', url }), account);
    expect(res.status).toBe(400);
  }
  expect(await recordingsOf(sid)).toBe(0);
  // A fetch would have come by now had one been started: give the worker its chance, then look.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  expect(canaryHits).toEqual([]);
});

it("cannot attach a recording to another tenant's or another project's session (404), and records nothing", async () => {
  const other = await seedTenant(stack.ctx);
  const theirs = await seedSession(stack.ctx, other);
  const otherProject = await seedSession(stack.ctx, { tenantId: t.tenantId, projectId: t.otherProjectId });
  for (const sessionId of [theirs, otherProject, 'no-such-session']) {
    const sid = recordingSid();
    media.put(account, sid, makeWav(100));
    const res = await postRecordingStatus(stack.baseUrl, connectionId, `sessionId=${sessionId}`, statusForm({ account: account.accountSid, recording: sid, call: callSid(), status: 'completed' }), account);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('SESSION_NOT_FOUND');
    expect(await recordingsOf(sid)).toBe(0);
  }
  expect(await stack.ctx.models.Recording.countDocuments({ sessionId: { $in: [theirs, otherProject] } })).toBe(0);
});

it("never moves another connection's recording, even with the same recording SID", async () => {
  const sessionId = await seedSession(stack.ctx, t, 'active');
  const sid = recordingSid();
  const call = callSid();
  const first = await postRecordingStatus(stack.baseUrl, connectionId, `sessionId=${sessionId}`, statusForm({ account: account.accountSid, recording: sid, call, status: 'in-progress' }), account);
  expect(first.status).toBe(200);
  // Another connection of the same tenant, its own account, reporting the same SID as failed.
  const intruder = { accountSid: accountSid(), authToken: hex(16) };
  const intruderId = await seedConnection(stack.ctx, t, intruder);
  const res = await postRecordingStatus(stack.baseUrl, intruderId, `sessionId=${sessionId}`, statusForm({ account: intruder.accountSid, recording: sid, call, status: 'failed' }), intruder);
  expect(res.status).toBe(409);
  const rec = await stack.ctx.models.Recording.findOne({ providerRecordingSid: sid }).lean();
  expect(rec).toMatchObject({ channelConnectionId: connectionId, providerStatus: 'in-progress', availability: 'media_in_progress' });
});

it("takes the session of an outboundCallId only from the connection's own tenant and project", async () => {
  const outbound = stack.ctx.models.connection.db!.collection<{ _id: string; tenantId: string; projectId: string; sessionId: string }>('outbound_calls');
  const mine = await seedSession(stack.ctx, t);
  const other = await seedTenant(stack.ctx);
  const theirs = await seedSession(stack.ctx, other);
  const [ownCall, foreignCall, neighbourCall] = [`oc_${hex(8)}`, `oc_${hex(8)}`, `oc_${hex(8)}`];
  await outbound.insertMany([
    { _id: ownCall, tenantId: t.tenantId, projectId: t.projectId, sessionId: mine },
    { _id: foreignCall, tenantId: other.tenantId, projectId: other.projectId, sessionId: theirs },
    { _id: neighbourCall, tenantId: t.tenantId, projectId: t.otherProjectId, sessionId: mine },
  ]);
  const report = async (outboundCallId: string) => {
    const sid = recordingSid();
    const res = await postRecordingStatus(stack.baseUrl, connectionId, `outboundCallId=${outboundCallId}`, statusForm({ account: account.accountSid, recording: sid, call: callSid(), status: 'in-progress' }), account);
    expect(res.status).toBe(200);
    return stack.ctx.models.Recording.findOne({ providerRecordingSid: sid }).lean();
  };
  expect(await report(ownCall)).toMatchObject({ sessionId: mine, outboundCallId: ownCall, tenantId: t.tenantId });
  expect(await report(foreignCall)).toMatchObject({ sessionId: null, tenantId: t.tenantId });
  expect(await report(neighbourCall)).toMatchObject({ sessionId: null, tenantId: t.tenantId });
  expect(await stack.ctx.models.Recording.countDocuments({ sessionId: theirs })).toBe(0);
});
