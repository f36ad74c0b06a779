// The recordings list's limits and the media route's 404s: more recordings or files than one
// answer lists (413), a recording or stored object that is gone, retention, the URL lifetime
// setting, and the routes as the OpenAPI document gives them.
import { startTestStack, seedTenant, type TestStack, type SeededTenant } from '../../support/stack';
import { client } from '../../support/http';
import { loadConfig } from '../../../lib/config';
import { recordingMediaBucket } from '../../../db/recording';
import { makeWav, scopedKey, seedSession, storeRecording } from './recording-fixtures';

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;
let key: string;

beforeAll(async () => {
  stack = await startTestStack({ env: { RECORDING_PUBLIC_MEDIA_URL_TTL_SECONDS: '120' } });
  api = client(stack.baseUrl);
  t = await seedTenant(stack.ctx);
  key = (await scopedKey(stack.ctx, t, ['recordings.read'])).key;
}, 120_000);

afterAll(async () => {
  await stack?.close();
});

const list = (sessionId: string) => api.get(`/api/public/recordings/projects/${t.projectId}/sessions/${sessionId}/recordings`, { headers: { 'x-api-key': key } });
const place = (sessionId: string) => ({ ...t, sessionId, channelConnectionId: 'cc_test' });

it('caps the URL lifetime at 3600 s and defaults it to 900 s', () => {
  const base = { MONGODB_URI: 'mongodb://x/y', TEMPORAL_ADDRESS: 'x:1', JWT_SECRET: 'x'.repeat(32) };
  expect(loadConfig(base).RECORDING_PUBLIC_MEDIA_URL_TTL_SECONDS).toBe(900);
  expect(loadConfig({ ...base, RECORDING_PUBLIC_MEDIA_URL_TTL_SECONDS: '86400' }).RECORDING_PUBLIC_MEDIA_URL_TTL_SECONDS).toBe(3600);
});

it('issues URLs that live RECORDING_PUBLIC_MEDIA_URL_TTL_SECONDS', async () => {
  const sessionId = await seedSession(stack.ctx, t);
  await storeRecording(stack.ctx, place(sessionId), makeWav(10));
  const res = await list(sessionId);
  expect(res.body.data.recordings[0].files[0].expiresIn).toBe(120);
  const token = /\/content\/([^?]+)/.exec(res.body.data.recordings[0].files[0].url)![1]!;
  const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString());
  expect(claims.exp - claims.iat).toBe(120);
});

it('answers 413 RECORDING_QUERY_LIMIT_EXCEEDED past 64 recordings of a session, and lists 64', async () => {
  const sessionId = await seedSession(stack.ctx, t);
  const body = makeWav(10);
  for (let i = 0; i < 64; i++) await storeRecording(stack.ctx, place(sessionId), body);
  const full = await list(sessionId);
  expect(full.status).toBe(200);
  expect(full.body.data.recordings).toHaveLength(64);
  await storeRecording(stack.ctx, place(sessionId), body);
  const over = await list(sessionId);
  expect(over.status).toBe(413);
  expect(over.body.error.code).toBe('RECORDING_QUERY_LIMIT_EXCEEDED');
});

it('answers 413 RECORDING_OBJECT_LIMIT_EXCEEDED for a recording of more than 32 files', async () => {
  const sessionId = await seedSession(stack.ctx, t);
  const { recordingId } = await storeRecording(stack.ctx, place(sessionId), makeWav(10));
  const rec = await stack.ctx.models.Recording.findOne({ _id: recordingId }).lean();
  const files = Array.from({ length: 33 }, (_, i) => ({ ...rec!.files[0]!, objectIndex: i }));
  await stack.ctx.models.Recording.updateOne({ _id: recordingId }, { $set: { files: files.slice(0, 32) } });
  expect((await list(sessionId)).status).toBe(200);
  await stack.ctx.models.Recording.updateOne({ _id: recordingId }, { $set: { files } });
  const over = await list(sessionId);
  expect(over.status).toBe(413);
  expect(over.body.error.code).toBe('RECORDING_OBJECT_LIMIT_EXCEEDED');
});

it('answers 404 RECORDING_NOT_FOUND and RECORDING_MEDIA_NOT_FOUND for what is gone since the URL was issued', async () => {
  const sessionId = await seedSession(stack.ctx, t);
  const gone = await storeRecording(stack.ctx, place(sessionId), makeWav(10));
  const objectless = await storeRecording(stack.ctx, place(sessionId), makeWav(10));
  const urls: string[] = (await list(sessionId)).body.data.recordings.map((r: { files: { url: string }[] }) => r.files[0]!.url);
  await stack.ctx.models.Recording.deleteOne({ _id: gone.recordingId });
  await recordingMediaBucket(stack.ctx.models.connection).delete(objectless.gridFsId);
  const missingRecording = await api.get(urls[0]!);
  expect(missingRecording.status).toBe(404);
  expect(missingRecording.body.error.code).toBe('RECORDING_NOT_FOUND');
  const missingObject = await api.get(urls[1]!);
  expect(missingObject.status).toBe(404);
  expect(missingObject.body.error.code).toBe('RECORDING_MEDIA_NOT_FOUND');
});

it('stops listing and serving a recording past its retention, unless it is on legal hold', async () => {
  const sessionId = await seedSession(stack.ctx, t);
  const expired = await storeRecording(stack.ctx, place(sessionId), makeWav(10));
  const held = await storeRecording(stack.ctx, place(sessionId), makeWav(10), { immutable: true });
  const urls: string[] = (await list(sessionId)).body.data.recordings.map((r: { files: { url: string }[] }) => r.files[0]!.url);
  const past = new Date(Date.now() - 1000);
  await stack.ctx.models.Recording.updateMany({ _id: { $in: [expired.recordingId, held.recordingId] } }, { $set: { retentionExpiresAt: past } });
  const res = await list(sessionId);
  expect(res.body.data.status).toBe('partial');
  const byId = Object.fromEntries(res.body.data.recordings.map((r: { recordingId: string }) => [r.recordingId, r]));
  expect(byId[expired.recordingId]).toMatchObject({ availability: 'unavailable', unavailableReason: 'retention_expired', retryable: false });
  expect(byId[held.recordingId]).toMatchObject({ availability: 'available', immutable: true });
  const refused = await api.get(urls[0]!);
  expect(refused.status).toBe(404);
  expect(refused.body.error.code).toBe('RECORDING_MEDIA_NOT_FOUND');
  expect((await api.get(urls[1]!)).status).toBe(200);
});

it("lists a recording reported before its outbound call knew the session, once the call's projection names it", async () => {
  const sessionId = await seedSession(stack.ctx, t);
  const outboundCallId = `oc_${Date.now()}`;
  const { recordingId } = await storeRecording(stack.ctx, place(sessionId), makeWav(10), { sessionId: null, outboundCallId });
  expect((await list(sessionId)).body.data.recordings).toEqual([]);
  const outbound = stack.ctx.models.connection.db!.collection<{ _id: string; tenantId: string; projectId: string; sessionId: string }>('outbound_calls');
  // Another project's call naming the session changes nothing; the project's own call does.
  await outbound.insertOne({ _id: `${outboundCallId}-x`, tenantId: t.tenantId, projectId: t.otherProjectId, sessionId });
  await stack.ctx.models.Recording.updateOne({ _id: recordingId }, { $set: { outboundCallId: `${outboundCallId}-x` } });
  expect((await list(sessionId)).body.data.recordings).toEqual([]);
  await stack.ctx.models.Recording.updateOne({ _id: recordingId }, { $set: { outboundCallId } });
  await outbound.insertOne({ _id: outboundCallId, tenantId: t.tenantId, projectId: t.projectId, sessionId });
  const res = await list(sessionId);
  expect(res.body.data.recordings.map((r: { recordingId: string }) => r.recordingId)).toEqual([recordingId]);
  expect(res.body.data.status).toBe('success');
});

it('answers HEAD with the headers of the file and no body', async () => {
  const sessionId = await seedSession(stack.ctx, t);
  const body = makeWav(500);
  await storeRecording(stack.ctx, place(sessionId), body);
  const url: string = (await list(sessionId)).body.data.recordings[0].files[0].url;
  const res = await fetch(stack.baseUrl + url, { method: 'HEAD' });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-length')).toBe(String(body.length));
  expect(res.headers.get('accept-ranges')).toBe('bytes');
  expect((await res.arrayBuffer()).byteLength).toBe(0);
});

it('documents both routes with the statuses they answer', async () => {
  const doc = (await api.get('/openapi.json')).body;
  const listOp = doc.paths['/api/public/recordings/projects/{projectId}/sessions/{sessionId}/recordings'].get;
  expect(Object.keys(listOp.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '403', '404', '413']));
  const mediaOp = doc.paths['/api/projects/{projectId}/recordings/{recordingId}/media/content/{mediaToken}'].get;
  expect(Object.keys(mediaOp.responses)).toEqual(expect.arrayContaining(['200', '206', '400', '401', '404', '409', '416', '504']));
  expect(mediaOp.security).toEqual([]);
  const webhook = doc.paths['/api/telephony/twilio/{channelConnectionId}/recording-status'].post;
  expect(Object.keys(webhook.responses)).toEqual(expect.arrayContaining(['200', '400', '403', '404']));
});
