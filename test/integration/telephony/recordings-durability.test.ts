// The recording fetch outlives its worker: the worker process copying a recording is killed in
// the middle of the download (the provider has sent half the file), and another worker started
// afterwards completes the copy. One stored object remains, with the provider's bytes.
import { startTestStack, seedTenant, type TestStack, type SeededTenant } from '../../support/stack';
import { client } from '../../support/http';
import { eventually } from '../../support/eventually';
import { FAST_FAILOVER_ENV, startWorkerProcess } from '../../support/worker-process';
import { recordingMediaBucket, RECORDING_MEDIA_BUCKET } from '../../../db/recording';
import { accountSid, callSid, hex, makeWav, postRecordingStatus, recordingSid, scopedKey, seedConnection, seedSession, startMediaServer, statusForm, type MediaServer } from './recording-fixtures';

let stack: TestStack;
let media: MediaServer;
let t: SeededTenant;
const account = { accountSid: accountSid(), authToken: hex(16) };

beforeAll(async () => {
  media = await startMediaServer();
  stack = await startTestStack({ env: { ...FAST_FAILOVER_ENV, TWILIO_API_BASE_URL: media.url } });
  t = await seedTenant(stack.ctx);
}, 120_000);

afterAll(async () => {
  await stack?.close();
  await media?.close();
});

it('completes a copy whose worker was killed mid-download on another worker', async () => {
  const connectionId = await seedConnection(stack.ctx, t, account);
  const sessionId = await seedSession(stack.ctx, t);
  const { key } = await scopedKey(stack.ctx, t, ['recordings.read']);
  const sid = recordingSid();
  const wav = makeWav(600_000);
  media.put(account, sid, wav);
  media.stallOnce(sid);

  const first = await startWorkerProcess(stack.config);
  let second: Awaited<ReturnType<typeof startWorkerProcess>> | null = null;
  try {
    const res = await postRecordingStatus(stack.baseUrl, connectionId, `sessionId=${sessionId}`, statusForm({ account: account.accountSid, recording: sid, call: callSid(), status: 'completed' }), account);
    expect(res.status).toBe(200);
    // The first attempt has half the file and is waiting for the rest; some of it is in GridFS.
    const chunks = stack.ctx.models.connection.db!.collection(`${RECORDING_MEDIA_BUCKET}.chunks`);
    await eventually(() => Promise.resolve(media.requests.filter((r) => r.path.includes(sid)).length), (n) => n === 1, 30_000, 50);
    await eventually(() => chunks.countDocuments({}), (n) => n > 0, 30_000, 100);
    first.child.kill('SIGKILL');
    await first.exited;

    second = await startWorkerProcess(stack.config);
    const api = client(stack.baseUrl);
    const listed = await eventually(
      () => api.get(`/api/public/recordings/projects/${t.projectId}/sessions/${sessionId}/recordings`, { headers: { 'x-api-key': key } }),
      (r) => r.body?.data?.status === 'success',
      120_000,
      500,
    );
    expect(listed.body.data.status).toBe('success');
    expect(media.requests.filter((r) => r.path.includes(sid)).length).toBe(2);

    const served = await fetch(stack.baseUrl + listed.body.data.recordings[0].files[0].url);
    expect(Buffer.from(await served.arrayBuffer()).equals(wav)).toBe(true);
    // The half-written object of the killed attempt is gone: one file, and only its chunks.
    const recordingId = listed.body.data.recordings[0].recordingId;
    const files = await recordingMediaBucket(stack.ctx.models.connection).find({ 'metadata.recordingId': recordingId }).toArray();
    expect(files).toHaveLength(1);
    expect(await chunks.countDocuments({ files_id: { $ne: files[0]!._id } })).toBe(0);
  } finally {
    if (first.child.exitCode === null) first.child.kill('SIGKILL');
    await second?.stop();
  }
}, 240_000);
