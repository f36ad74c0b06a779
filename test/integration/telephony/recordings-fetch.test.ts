// A recording from Twilio's callback to a download: the signed recording-status callback, the fetch
// workflow copying the media into GridFS (through TWILIO_API_BASE_URL, with the connection's
// credentials), the session's recordings list and its statuses, and full and ranged downloads.
import { startTestStack, seedTenant, type TestStack, type SeededTenant } from '../../support/stack';
import { client } from '../../support/http';
import { eventually } from '../../support/eventually';
import { recordingMediaBucket } from '../../../db/recording';
import { reconcileClosedWorkflows } from '../../../core/sessions/closed-reconciler';
import {
  accountSid,
  callSid,
  hex,
  makeWav,
  postRecordingStatus,
  recordingSid,
  scopedKey,
  seedConnection,
  seedSession,
  startMediaServer,
  statusForm,
  type MediaServer,
} from './recording-fixtures';

let stack: TestStack;
let media: MediaServer;
let t: SeededTenant;
let api: ReturnType<typeof client>;
const account = { accountSid: accountSid(), authToken: hex(16) };
let connectionId: string;
let key: string;

beforeAll(async () => {
  media = await startMediaServer();
  stack = await startTestStack({ worker: true, env: { TWILIO_API_BASE_URL: media.url } });
  api = client(stack.baseUrl);
  t = await seedTenant(stack.ctx);
  connectionId = await seedConnection(stack.ctx, t, account);
  key = (await scopedKey(stack.ctx, t, ['recordings.read'])).key;
}, 120_000);

afterAll(async () => {
  await stack?.close();
  await media?.close();
});

const list = (sessionId: string, query = '') => api.get(`/api/public/recordings/projects/${t.projectId}/sessions/${sessionId}/recordings${query}`, { headers: { 'x-api-key': key } });
const untilStatus = (sessionId: string, status: string) => eventually(() => list(sessionId), (r) => r.body?.data?.status === status, 60_000, 200);

async function download(url: string, headers: Record<string, string> = {}) {
  const res = await fetch(stack.baseUrl + url, { headers });
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
}

describe('a completed recording', () => {
  const wav = makeWav(300_000); // more than one GridFS chunk (255 KiB)
  const sid = recordingSid();
  const call = callSid();
  let sessionId: string;

  beforeAll(async () => {
    sessionId = await seedSession(stack.ctx, t, 'active');
    media.put(account, sid, wav);
  });

  it('is listed as the call in progress while Twilio records', async () => {
    const res = await postRecordingStatus(stack.baseUrl, connectionId, `sessionId=${sessionId}`, statusForm({ account: account.accountSid, recording: sid, call, status: 'in-progress' }), account);
    expect(res.status).toBe(200);
    const listed = await list(sessionId);
    expect(listed.status).toBe(200);
    expect(listed.body.data).toMatchObject({ sessionId, projectId: t.projectId, status: 'call_in_progress', unavailableReason: 'call_in_progress', retryable: true });
    expect(listed.body.data.recordings).toHaveLength(1);
    expect(listed.body.data.recordings[0]).toMatchObject({ callId: call, availability: 'media_in_progress', unavailableReason: 'call_in_progress', retryable: true, files: [] });
    expect(media.requests.filter((r) => r.path.includes(sid))).toHaveLength(0);
  });

  it('is fetched with the connection credentials into GridFS once completed, the bytes as Twilio has them', async () => {
    const res = await postRecordingStatus(stack.baseUrl, connectionId, `sessionId=${sessionId}`, statusForm({ account: account.accountSid, recording: sid, call, status: 'completed' }), account);
    expect(res.status).toBe(200);
    const listed = await untilStatus(sessionId, 'success');
    expect(listed.body.data.status).toBe('success');
    expect(media.requests.filter((r) => r.path.includes(sid)).every((r) => r.authorized)).toBe(true);

    const rec = await stack.ctx.models.Recording.findOne({ tenantId: t.tenantId, providerRecordingSid: sid }).lean();
    expect(rec).toMatchObject({ sessionId, availability: 'available', channels: 1, durationSeconds: 7 });
    expect(rec!.files).toHaveLength(1);
    const chunks: Buffer[] = [];
    for await (const chunk of recordingMediaBucket(stack.ctx.models.connection).openDownloadStream(rec!.files[0]!.gridFsId)) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).equals(wav)).toBe(true);
  });

  it('lists the stored file with a proxied URL and no-store headers', async () => {
    const listed = await list(sessionId);
    expect(listed.headers.get('cache-control')).toBe('no-store');
    expect(listed.headers.get('pragma')).toBe('no-cache');
    expect(listed.headers.get('referrer-policy')).toBe('no-referrer');
    const [rec] = listed.body.data.recordings;
    expect(rec).toMatchObject({ callId: call, availability: 'available', unavailableReason: null, retryable: false, durationSeconds: 7, immutable: false });
    expect(Date.parse(rec.retentionExpiresAt)).toBeGreaterThan(Date.parse(rec.createdAt));
    expect(rec.files).toEqual([
      expect.objectContaining({
        recordingId: rec.recordingId,
        objectIndex: 0,
        fileName: `${sid}.wav`,
        channel: 'mixed',
        recordingType: 'external',
        bytes: wav.length,
        availability: 'available',
        urlKind: 'proxied',
        expiresIn: 900,
        unavailableReason: null,
        retryable: false,
      }),
    ]);
    expect(rec.files[0].url).toMatch(new RegExp(`^/api/projects/${t.projectId}/recordings/${rec.recordingId}/media/content/[^/?]+\\?objectIndex=0&disposition=attachment$`));
  });

  it('downloads whole, equal to what Twilio served', async () => {
    const url = (await list(sessionId)).body.data.recordings[0].files[0].url;
    const res = await download(url);
    expect(res.status).toBe(200);
    expect(res.body.equals(wav)).toBe(true);
    expect(res.headers.get('content-type')).toBe('audio/wav');
    expect(res.headers.get('content-length')).toBe(String(wav.length));
    expect(res.headers.get('accept-ranges')).toBe('bytes');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="${sid}.wav"`);
  });

  it('answers single byte ranges with 206, across a chunk boundary, open-ended and as a suffix', async () => {
    const url = (await list(sessionId)).body.data.recordings[0].files[0].url;
    const middle = await download(url, { range: 'bytes=261000-262199' });
    expect(middle.status).toBe(206);
    expect(middle.headers.get('content-range')).toBe(`bytes 261000-262199/${wav.length}`);
    expect(middle.headers.get('content-length')).toBe('1200');
    expect(middle.body.equals(wav.subarray(261000, 262200))).toBe(true);

    const tail = await download(url, { range: `bytes=${wav.length - 10}-` });
    expect(tail.status).toBe(206);
    expect(tail.body.equals(wav.subarray(wav.length - 10))).toBe(true);

    const suffix = await download(url, { range: 'bytes=-44' });
    expect(suffix.status).toBe(206);
    expect(suffix.headers.get('content-range')).toBe(`bytes ${wav.length - 44}-${wav.length - 1}/${wav.length}`);
    expect(suffix.body.equals(wav.subarray(wav.length - 44))).toBe(true);
  });

  it('answers 416 with the size for a range outside the file, and the whole file for several ranges', async () => {
    const url = (await list(sessionId)).body.data.recordings[0].files[0].url;
    const outside = await download(url, { range: `bytes=${wav.length}-${wav.length + 10}` });
    expect(outside.status).toBe(416);
    expect(outside.headers.get('content-range')).toBe(`bytes */${wav.length}`);
    expect(JSON.parse(outside.body.toString())).toMatchObject({ success: false, error: { code: 'RANGE_NOT_SATISFIABLE' } });

    const several = await download(url, { range: 'bytes=0-9,100-109' });
    expect(several.status).toBe(200);
    expect(several.body.equals(wav)).toBe(true);
  });

  it('issues inline URLs when asked', async () => {
    const listed = await list(sessionId, '?disposition=inline');
    const url: string = listed.body.data.recordings[0].files[0].url;
    expect(url.endsWith('disposition=inline')).toBe(true);
    const res = await download(url, { range: 'bytes=0-3' });
    expect(res.status).toBe(206);
    expect(res.headers.get('content-disposition')).toBe(`inline; filename="${sid}.wav"`);
    expect(res.body.toString()).toBe('RIFF');
  });

  it('keeps one recording and one stored object when Twilio repeats or reorders its callbacks', async () => {
    const form = statusForm({ account: account.accountSid, recording: sid, call, status: 'completed' });
    expect((await postRecordingStatus(stack.baseUrl, connectionId, `sessionId=${sessionId}`, form, account)).status).toBe(200);
    const late = await postRecordingStatus(stack.baseUrl, connectionId, `sessionId=${sessionId}`, { ...form, RecordingStatus: 'in-progress' }, account);
    expect(late.status).toBe(200);
    expect(late.body.data.availability).toBe('available');
    expect(await stack.ctx.models.Recording.countDocuments({ tenantId: t.tenantId, providerRecordingSid: sid })).toBe(1);
    const stored = await recordingMediaBucket(stack.ctx.models.connection).find({ 'metadata.recordingId': late.body.data.recordingId }).toArray();
    expect(stored).toHaveLength(1);
    expect((await list(sessionId)).body.data.status).toBe('success');
  });
});

describe('recordings that cannot be downloaded', () => {
  it('lists a failed recording as media_unavailable, and beside an available one as partial', async () => {
    const sessionId = await seedSession(stack.ctx, t);
    const failed = recordingSid();
    const res = await postRecordingStatus(stack.baseUrl, connectionId, `sessionId=${sessionId}`, statusForm({ account: account.accountSid, recording: failed, call: callSid(), status: 'failed' }), account);
    expect(res.status).toBe(200);
    const alone = await list(sessionId);
    expect(alone.body.data).toMatchObject({ status: 'media_unavailable', unavailableReason: 'media_not_available', retryable: false });
    expect(alone.body.data.recordings[0]).toMatchObject({ availability: 'unavailable', unavailableReason: 'media_not_available', retryable: false, files: [] });

    const good = recordingSid();
    media.put(account, good, makeWav(1000, 2));
    await postRecordingStatus(stack.baseUrl, connectionId, `sessionId=${sessionId}`, statusForm({ account: account.accountSid, recording: good, call: callSid(), status: 'completed', channels: 2 }), account);
    const partial = await untilStatus(sessionId, 'partial');
    expect(partial.body.data).toMatchObject({ status: 'partial', unavailableReason: 'media_not_available', retryable: false });
    const stored = await stack.ctx.models.Recording.findOne({ tenantId: t.tenantId, providerRecordingSid: good }).lean();
    expect(stored).toMatchObject({ channels: 2, availability: 'available' });
    expect(stored!.files[0]).toMatchObject({ channel: 'mixed', audioChannels: 2 });
  });

  it('lists a session with no recording by whether its call still runs', async () => {
    const running = await seedSession(stack.ctx, t, 'active');
    expect((await list(running)).body.data).toMatchObject({ status: 'call_in_progress', retryable: true, recordings: [] });
    const over = await seedSession(stack.ctx, t, 'ended');
    expect((await list(over)).body.data).toMatchObject({ status: 'media_unavailable', unavailableReason: 'media_not_available', retryable: false, recordings: [] });
  });

  it('marks a recording whose media Twilio refuses to the connection as auth_failed', async () => {
    const sessionId = await seedSession(stack.ctx, t);
    const sid = recordingSid();
    media.put(account, sid, makeWav(100));
    media.fail(sid, 403);
    await postRecordingStatus(stack.baseUrl, connectionId, `sessionId=${sessionId}`, statusForm({ account: account.accountSid, recording: sid, call: callSid(), status: 'completed' }), account);
    const listed = await untilStatus(sessionId, 'media_unavailable');
    expect(listed.body.data).toMatchObject({ status: 'media_unavailable', unavailableReason: 'auth_failed', retryable: false });
  });

  it('answers 409 RECORDING_NOT_READY for a recording still being fetched', async () => {
    const sessionId = await seedSession(stack.ctx, t);
    const sid = recordingSid();
    media.put(account, sid, makeWav(100));
    media.fail(sid, 503);
    await postRecordingStatus(stack.baseUrl, connectionId, `sessionId=${sessionId}`, statusForm({ account: account.accountSid, recording: sid, call: callSid(), status: 'completed' }), account);
    const listed = await list(sessionId);
    expect(listed.body.data).toMatchObject({ status: 'media_in_progress', unavailableReason: 'media_in_progress', retryable: true });
    // A URL for it cannot be had from the list yet; one issued before it was ready would meet 409.
    const rec = await stack.ctx.models.Recording.findOne({ tenantId: t.tenantId, providerRecordingSid: sid }).lean();
    const { signMediaToken } = await import('../../../core/telephony/recording-media-tokens');
    const { keyId } = await scopedKey(stack.ctx, t, ['recordings.read']);
    const token = await signMediaToken(stack.config, { tenantId: t.tenantId, projectId: t.projectId, recordingId: rec!._id, objectIndex: 0, disposition: 'attachment', keyId }, 60);
    const res = await api.get(`/api/projects/${t.projectId}/recordings/${rec!._id}/media/content/${token}?objectIndex=0&disposition=attachment`);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('RECORDING_NOT_READY');
  });
});

describe('a fetch whose workflow an operator terminated in Temporal', () => {
  it('is started again by the reconciliation while its recording waits for its media, and completes', async () => {
    const sessionId = await seedSession(stack.ctx, t);
    const sid = recordingSid();
    const since = new Date(Date.now() - 60_000);
    media.put(account, sid, makeWav(2_000));
    media.fail(sid, 503);
    await postRecordingStatus(stack.baseUrl, connectionId, `sessionId=${sessionId}`, statusForm({ account: account.accountSid, recording: sid, call: callSid(), status: 'completed' }), account);
    const rec = await stack.ctx.models.Recording.findOne({ tenantId: t.tenantId, providerRecordingSid: sid }).lean();
    const temporal = await stack.ctx.temporal.client();
    await temporal.workflow.getHandle(`recording-fetch/${rec!._id}`).terminate('operator: stuck fetch');
    media.heal(sid);
    expect((await list(sessionId)).body.data).toMatchObject({ status: 'media_in_progress', retryable: true });
    const deps = { models: stack.ctx.models, config: stack.ctx.config, logger: stack.ctx.logger, temporalClient: temporal };
    // Visibility lists a close a moment after it: looked at again until the fetch is in.
    await eventually(() => reconcileClosedWorkflows(deps, since), (r) => r.fetchesRestarted === 1, 30_000, 250);
    expect((await untilStatus(sessionId, 'success')).body.data.recordings[0]).toMatchObject({ availability: 'available' });
    expect((await reconcileClosedWorkflows(deps, since)).fetchesRestarted).toBe(0);
  });
});
