// Real-time voice sessions against the real stack: the shared LiveKit server (livekit-server from
// .tools/bin), Temporal, the store and the main worker, with no voice agent running. A create makes
// the session (channel voice_realtime), a room that exists on LiveKit and a token for that room
// only; the deployment-wide cap answers 429 at N+1 and frees a place when a room closes; ending
// the session (its DELETE, or the voice session's) closes the room and ends its record, the
// unanswered attend activity cancelled, and so does deleting the project; another tenant's project
// or session is 404 and a bad body 400, both changing nothing. A realtime call's stream-ended
// webhook connects the stream again while the room is open (counting, bounded: then an apology and
// the session ends), and hangs up without a word once the room has closed.
import { temporal } from '@temporalio/proto';
import { RoomServiceClient, TokenVerifier } from 'livekit-server-sdk';
import { client } from '../../support/http';
import { publishAgent } from '../../support/agents';
import { eventually } from '../../support/eventually';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { liveKitHttpUrl } from '../../../core/voice/livekit';
import { acquireVoiceRoomPlace, openVoiceRooms, setOpenVoiceRooms } from '../../../db/voice-room';
import { reconcileVoiceRooms, type ReconcilerMemory } from '../../../core/voice/room-reconciler';
import { scopedKey } from '../telephony/recording-fixtures';
import { voiceSessionId } from '../../../core/telephony/voice';
import { callForm, insertConnection, postSigned, webhookPath } from '../../support/voice';

jest.setTimeout(120_000);

const MAX_ROOMS = 2;
const SHOP = 'https://shop.example.com';
const AGENT = `AGENT: Concierge
GOAL: "Help callers."
VOICE:
  voice: "en-us"
  language: en-US
  silence_timeout: 6
FLOW:
  steps: [listen]
  listen:
    REASONING: false
    RESPOND: "Go ahead."
    ON_INPUT:
      - ELSE:
        THEN: listen
`;

let stack: TestStack;
let t: SeededTenant;
let other: SeededTenant;
let api: ReturnType<typeof client>;
let rooms: RoomServiceClient;
let verifier: TokenVerifier;

beforeAll(async () => {
  stack = await startTestStack({ worker: true, env: { VOICE_MAX_ROOMS: String(MAX_ROOMS), VOICE_TOKEN_TTL_SECONDS: '120', VOICE_EMPTY_ROOM_TIMEOUT_SECONDS: '45', VOICE_STREAM_MAX_RECONNECTS: '2' } });
  [t, other] = await Promise.all([seedTenant(stack.ctx), seedTenant(stack.ctx)]);
  api = client(stack.baseUrl);
  await Promise.all([publishAgent(api, t, 'Concierge', AGENT), publishAgent(api, other, 'Concierge', AGENT)]);
  const { LIVEKIT_URL, LIVEKIT_API_KEY, LIVEKIT_API_SECRET } = stack.config;
  rooms = new RoomServiceClient(liveKitHttpUrl(LIVEKIT_URL!), LIVEKIT_API_KEY, LIVEKIT_API_SECRET);
  verifier = new TokenVerifier(LIVEKIT_API_KEY!, LIVEKIT_API_SECRET!);
});
afterAll(async () => {
  // Rooms this file left open are closed on the shared server.
  for (const room of await stack.ctx.models.VoiceRoom.find({ status: 'active' }).lean()) await rooms.deleteRoom(room.roomName).catch(() => undefined);
  await stack.close();
});

const scopedKeyOf = (grants: string[]) => scopedKey(stack.ctx, t, grants);
const create = (key: string, json: unknown, headers: Record<string, string> = {}) => api.post('/api/v1/voice/sessions', { key, json, headers });
const roomExists = async (name: string) => (await rooms.listRooms([name])).some((r) => r.name === name);
const roomRecord = (sessionId: string) => stack.ctx.models.VoiceRoom.findById(sessionId).lean();

/** What a refused request must leave as it was. */
async function footprint() {
  const [sessions, records, open, live] = await Promise.all([
    stack.ctx.models.Session.countDocuments({}),
    stack.ctx.models.VoiceRoom.countDocuments({}),
    openVoiceRooms(stack.ctx.models),
    rooms.listRooms(),
  ]);
  return { sessions, records, open, live: live.length };
}

it('makes the session, a room on LiveKit and a token that joins that room only', async () => {
  const res = await create(t.adminKey, { projectId: t.projectId, participantName: 'Ada' });
  expect(res.status).toBe(201);
  const body = res.body;
  expect(body).toMatchObject({
    success: true,
    room: `voice-${body.sessionId}`,
    url: stack.config.LIVEKIT_URL,
    agentName: 'Concierge',
    environment: 'dev',
    voiceConfig: { voice: 'en-us', language: 'en-US', silenceTimeout: 6 },
    recording: false,
  });
  expect(body.identity).toMatch(/^caller-[0-9a-f]{16}$/);

  const [live] = await rooms.listRooms([body.room]);
  expect(live).toMatchObject({ name: body.room, emptyTimeout: 45, departureTimeout: 45 });
  expect(JSON.parse(live!.metadata)).toEqual({ sessionId: body.sessionId, projectId: t.projectId, agentName: 'Concierge' });

  const claims = await verifier.verify(body.token);
  expect(claims.sub).toBe(body.identity);
  expect(claims.name).toBe('Ada');
  expect(claims.video).toEqual({ roomJoin: true, room: body.room, canPublish: true, canSubscribe: true, canPublishData: true });
  expect(claims.exp).toBe(Math.floor(Date.parse(body.expiresAt) / 1000));
  expect(Date.parse(body.expiresAt) - Date.now()).toBeLessThanOrEqual(120_000);
  // Signed with the deployment's secret: another secret does not verify it.
  await expect(new TokenVerifier(stack.config.LIVEKIT_API_KEY!, 'x'.repeat(40)).verify(body.token)).rejects.toThrow();

  const session = await stack.ctx.models.Session.findById(body.sessionId).lean();
  expect(session).toMatchObject({ tenantId: t.tenantId, projectId: t.projectId, channel: 'voice_realtime', status: 'active' });
  const voiceListed = await api.get(`/api/projects/${t.projectId}/sessions?channel=voice`, { key: t.adminKey });
  expect(voiceListed.body.sessions.map((s: { id: string }) => s.id)).toContain(body.sessionId);

  const read = await api.get(`/api/v1/voice/sessions/${body.sessionId}`, { key: t.adminKey });
  expect(read.status).toBe(200);
  expect(read.body.voiceSession).toMatchObject({ sessionId: body.sessionId, room: body.room, status: 'active', endReason: null, participants: 0 });

  // The same Idempotency-Key answers the same session (a fresh token), and makes nothing more.
  const first = await create(t.adminKey, { projectId: t.projectId }, { 'idempotency-key': 'call-1' });
  const before = await footprint();
  const again = await create(t.adminKey, { projectId: t.projectId }, { 'idempotency-key': 'call-1' });
  expect([first.status, again.status]).toEqual([201, 201]);
  expect(again.body).toMatchObject({ sessionId: first.body.sessionId, room: first.body.room, identity: first.body.identity });
  expect(await footprint()).toEqual(before);

  // Both end through the sessions API, which closes their rooms (next test looks at how).
  for (const id of [body.sessionId, first.body.sessionId]) expect((await api.delete(`/api/projects/${t.projectId}/sessions/${id}`, { key: t.adminKey })).status).toBe(200);
  await eventually(() => openVoiceRooms(stack.ctx.models), (n) => n === 0, 20_000, 100);
});

it('closes the room when the session ends, with no voice agent in it', async () => {
  // Deleting the session through the sessions API.
  const deleted = await create(t.adminKey, { projectId: t.projectId });
  expect(await roomExists(deleted.body.room)).toBe(true);
  expect((await api.delete(`/api/projects/${t.projectId}/sessions/${deleted.body.sessionId}`, { key: t.adminKey })).status).toBe(200);
  const closed = await eventually(() => roomRecord(deleted.body.sessionId), (r) => r?.status === 'ended', 20_000, 100);
  expect(closed).toMatchObject({ status: 'ended', endReason: 'deleted', endedAt: expect.any(Date) });
  expect(await roomExists(deleted.body.room)).toBe(false);

  // Ending the voice session: its session ends, then its room closes; the attend activity no voice agent took is cancelled.
  const ended = await create(t.adminKey, { projectId: t.projectId });
  const res = await api.post(`/api/v1/voice/sessions/${ended.body.sessionId}/end`, { key: t.adminKey });
  expect(res.status).toBe(200);
  expect(res.body.voiceSession).toMatchObject({ sessionId: ended.body.sessionId, status: 'ended', endReason: 'session_ended', participants: null });
  expect(await roomExists(ended.body.room)).toBe(false);
  expect(await stack.ctx.models.Session.findById(ended.body.sessionId).lean()).toMatchObject({ status: 'ended' });
  const client = await stack.ctx.temporal.client();
  const history = await client.workflow.getHandle(`voice-room/${ended.body.sessionId}`).fetchHistory();
  const { EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, EVENT_TYPE_ACTIVITY_TASK_STARTED, EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED } = temporal.api.enums.v1.EventType;
  const scheduled = history.events!.filter((e) => e.eventType === EVENT_TYPE_ACTIVITY_TASK_SCHEDULED).map((e) => e.activityTaskScheduledEventAttributes!.activityType!.name);
  expect(scheduled).toEqual(['attendVoiceRoom', 'closeVoiceRoom']);
  expect(history.events!.filter((e) => e.eventType === EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED)).toHaveLength(1);
  // Never taken by a voice agent: only the close activity started.
  expect(history.events!.filter((e) => e.eventType === EVENT_TYPE_ACTIVITY_TASK_STARTED)).toHaveLength(1);
  expect(await openVoiceRooms(stack.ctx.models)).toBe(0);
  // The session ending on its own (its end signal, as an idle timeout or COMPLETE end it): its workflow tells the room.
  const own = await create(t.adminKey, { projectId: t.projectId });
  await client.workflow.getHandle(`session/${own.body.sessionId}`).signal('end', { reason: 'idle_timeout' });
  expect(await eventually(() => roomRecord(own.body.sessionId), (r) => r?.status === 'ended', 20_000, 100)).toMatchObject({ endReason: 'session_ended' });
  expect(await roomExists(own.body.room)).toBe(false);
  // Ending it again answers it unchanged.
  expect((await api.post(`/api/v1/voice/sessions/${ended.body.sessionId}/end`, { key: t.adminKey })).body.voiceSession).toMatchObject({ status: 'ended', endReason: 'session_ended' });
  // An operator's cancellation request on the room's workflow (Web UI, CLI) closes it the same way.
  const cancelled = await create(t.adminKey, { projectId: t.projectId });
  const room = client.workflow.getHandle(`voice-room/${cancelled.body.sessionId}`);
  await room.cancel();
  expect(await room.result()).toMatchObject({ reason: 'workflow_canceled' });
  expect(await roomRecord(cancelled.body.sessionId)).toMatchObject({ status: 'ended', endReason: 'workflow_canceled' });
  expect(await roomExists(cancelled.body.room)).toBe(false);
  expect(await openVoiceRooms(stack.ctx.models)).toBe(0);
});

it(`refuses room ${MAX_ROOMS + 1} with 429 until one closes`, async () => {
  const open = await Promise.all(Array.from({ length: MAX_ROOMS }, () => create(t.adminKey, { projectId: t.projectId })));
  expect(open.map((r) => r.status)).toEqual(Array(MAX_ROOMS).fill(201));
  const before = await footprint();
  // Another tenant counts against the same cap: it is the deployment's.
  const refused = await create(other.adminKey, { projectId: other.projectId });
  expect(refused.status).toBe(429);
  expect(refused.body).toEqual({ success: false, error: { code: 'RATE_LIMIT_EXCEEDED', message: 'Concurrent voice room limit exceeded' }, retryAfterMs: 30_000 });
  expect(refused.headers.get('retry-after')).toBe('30');
  expect(await footprint()).toEqual(before);

  expect((await api.post(`/api/v1/voice/sessions/${open[0]!.body.sessionId}/end`, { key: t.adminKey })).body.voiceSession.status).toBe('ended');
  const admitted = await create(t.adminKey, { projectId: t.projectId });
  expect(admitted.status).toBe(201);
  for (const r of [open[1]!, admitted]) await api.post(`/api/v1/voice/sessions/${r.body.sessionId}/end`, { key: t.adminKey });
  expect(await openVoiceRooms(stack.ctx.models)).toBe(0);
});

it("answers 404 for another tenant's project or voice session, and 400 for a bad body, changing nothing", async () => {
  const mine = await create(t.adminKey, { projectId: t.projectId });
  const before = await footprint();
  const cross = await create(other.adminKey, { projectId: t.projectId });
  expect(cross.status).toBe(404);
  expect(cross.body.error.code).toBe('NOT_FOUND');
  expect((await create(t.adminKey, { projectId: t.projectId, agentId: 'Nobody' })).status).toBe(404);
  expect((await api.get(`/api/v1/voice/sessions/${mine.body.sessionId}`, { key: other.adminKey })).status).toBe(404);
  expect((await api.post(`/api/v1/voice/sessions/${mine.body.sessionId}/end`, { key: other.adminKey })).status).toBe(404);
  // A key bound to the tenant's other project does not see it either.
  expect((await api.get(`/api/v1/voice/sessions/${mine.body.sessionId}`, { key: await t.keyWith(['admin'], t.otherProjectId) })).status).toBe(404);

  for (const bad of [
    {},
    { projectId: t.projectId, extra: 1 },
    { projectId: t.projectId, participantName: 'x'.repeat(129) },
    { projectId: t.projectId, environment: 'qa' },
    { projectId: 42 },
    { projectId: t.projectId, recording: 'yes' },
    { projectId: t.projectId, recording: 1 },
  ]) {
    const res = await create(t.adminKey, bad);
    expect([res.status, res.body.success, res.body.error?.code]).toEqual([400, false, 'VALIDATION_ERROR']);
  }
  expect((await create(t.adminKey, { projectId: t.projectId }, { 'idempotency-key': 'not a key!' })).status).toBe(400);
  expect(await footprint()).toEqual(before);
  expect(await roomExists(mine.body.room)).toBe(true);
  await api.post(`/api/v1/voice/sessions/${mine.body.sessionId}/end`, { key: t.adminKey });
});

it("gives a widget's end user a room as itself, and only its own voice sessions", async () => {
  const pk = await api.post(`/api/projects/${t.projectId}/public-keys`, { key: t.adminKey, json: { name: 'Shop', allowedOrigins: [SHOP], environment: 'dev' } });
  const init = async () => (await api.post('/api/v1/sdk/init', { headers: { 'x-public-key': pk.body.publicKey.key, origin: SHOP }, json: { projectId: t.projectId } })).body;
  const [alice, bob] = [await init(), await init()];
  // A page's visitor cannot turn recording on: 403, and nothing is made.
  const before = await footprint();
  const recorded = await api.post('/api/v1/voice/sessions', { headers: { 'x-sdk-token': alice.token, origin: SHOP }, json: { projectId: t.projectId, recording: true } });
  expect([recorded.status, recorded.body.error?.code]).toEqual([403, 'FORBIDDEN']);
  // Nor start with an agent the key does not offer (the entry agent is Concierge), or pick a deployment.
  await publishAgent(api, t, 'Cashier', AGENT.replace(/Concierge/g, 'Cashier'));
  for (const json of [{ agentId: 'Cashier' }, { deploymentId: 'dep-anything' }]) {
    const refused = await api.post('/api/v1/voice/sessions', { headers: { 'x-sdk-token': alice.token, origin: SHOP }, json: { projectId: t.projectId, ...json } });
    expect([refused.status, refused.body.error?.code]).toEqual([403, 'FORBIDDEN']);
  }
  expect(await footprint()).toEqual(before);
  const res = await api.post('/api/v1/voice/sessions', { headers: { 'x-sdk-token': alice.token, origin: SHOP }, json: { projectId: t.projectId } });
  expect(res.status).toBe(201);
  expect(res.headers.get('access-control-allow-origin')).toBe(SHOP);
  expect(res.body.identity).toBe(alice.endUserId);
  expect(res.body.recording).toBe(false);
  expect((await verifier.verify(res.body.token)).sub).toBe(alice.endUserId);
  expect((await api.get(`/api/v1/voice/sessions/${res.body.sessionId}`, { headers: { 'x-sdk-token': alice.token, origin: SHOP } })).status).toBe(200);
  expect((await api.get(`/api/v1/voice/sessions/${res.body.sessionId}`, { headers: { 'x-sdk-token': bob.token, origin: SHOP } })).status).toBe(404);
  const ended = await api.post(`/api/v1/voice/sessions/${res.body.sessionId}/end`, { headers: { 'x-sdk-token': alice.token, origin: SHOP } });
  expect(ended.body.voiceSession.status).toBe('ended');
});

it("closes a project's open rooms when the project is deleted, giving their places back", async () => {
  const open = await create(other.adminKey, { projectId: other.projectId });
  expect(open.status).toBe(201);
  const res = await api.delete(`/api/projects/${other.projectId}`, { key: other.adminKey });
  expect(res.status).toBe(202);
  const deletion = await eventually(
    () => api.get(`/api/deletions/${res.body.deletion.id}`, { key: other.adminKey }),
    (r) => r.body.deletion?.status === 'completed',
    60_000,
    200,
  );
  expect(deletion.body.deletion.deleted).toMatchObject({ voice_rooms: 1 });
  expect(await roomExists(open.body.room)).toBe(false);
  expect(await openVoiceRooms(stack.ctx.models)).toBe(0);
  expect(await roomRecord(open.body.sessionId)).toBeNull();
});

it('records a room only when asked, and says so; a room no voice agent attended has no recording to list', async () => {
  const { key } = await scopedKeyOf(['recordings.read']);
  const list = (sessionId: string) => api.get(`/api/public/recordings/projects/${t.projectId}/sessions/${sessionId}/recordings`, { headers: { 'x-api-key': key } });
  const plain = await create(t.adminKey, { projectId: t.projectId });
  const recorded = await create(t.adminKey, { projectId: t.projectId, recording: true });
  expect([plain.body.recording, recorded.body.recording]).toEqual([false, true]);
  expect(await roomRecord(plain.body.sessionId)).toMatchObject({ recording: false });
  expect(await roomRecord(recorded.body.sessionId)).toMatchObject({ recording: true });
  expect((await api.get(`/api/v1/voice/sessions/${recorded.body.sessionId}`, { key: t.adminKey })).body.voiceSession).toMatchObject({ recording: true });
  for (const r of [plain, recorded]) await api.post(`/api/v1/voice/sessions/${r.body.sessionId}/end`, { key: t.adminKey });
  // The recorded room's workflow finished its recording after closing the room: no voice agent came, so nothing was recorded.
  const temporalClient = await stack.ctx.temporal.client();
  await temporalClient.workflow.getHandle(`voice-room/${recorded.body.sessionId}`).result();
  const history = await temporalClient.workflow.getHandle(`voice-room/${recorded.body.sessionId}`).fetchHistory();
  const scheduled = history.events!.filter((e) => e.activityTaskScheduledEventAttributes).map((e) => e.activityTaskScheduledEventAttributes!.activityType!.name);
  expect(scheduled).toEqual(['attendVoiceRoom', 'closeVoiceRoom', 'finishVoiceRoomRecording']);
  for (const r of [plain, recorded]) {
    const res = await list(r.body.sessionId);
    expect(res.body.data).toMatchObject({ status: 'media_unavailable', recordings: [] });
  }
  expect(await stack.ctx.models.Recording.countDocuments({ tenantId: t.tenantId })).toBe(0);
});

it("answers a realtime connection's call with a Media Stream to the phone bridge, one room per CallSid, closed with the call", async () => {
  const connectionId = await insertConnection(stack, t, { agentId: 'Concierge', voiceMode: 'realtime' });
  const callSid = 'CA' + 'c3'.repeat(16);
  const sessionId = voiceSessionId(connectionId, callSid);
  // Twilio asking three times at once, and once more later: one session, one room, one place.
  const answers = await Promise.all([1, 2, 3].map(() => postSigned(stack, webhookPath(connectionId, 'voice'), callForm(callSid))));
  answers.push(await postSigned(stack, webhookPath(connectionId, 'voice'), callForm(callSid)));
  const bridge = stack.baseUrl.replace('http://', 'ws://');
  for (const answer of answers) {
    expect(answer.status).toBe(200);
    expect(answer.text).toContain(`<Connect><Stream url="${bridge}/media-stream/${connectionId}/${sessionId}"><Parameter name="sessionId" value="${sessionId}"/></Stream></Connect>`);
    // The voice agent greets in the room: the call's TwiML says nothing itself.
    expect(answer.text).not.toContain('<Say>');
  }
  const room = await roomRecord(sessionId);
  expect(room).toMatchObject({ status: 'active', identity: `phone:${callSid}`, agentName: 'Concierge' });
  expect(await roomExists(room!.roomName)).toBe(true);
  expect(await openVoiceRooms(stack.ctx.models)).toBe(1);
  expect(await stack.ctx.models.Session.findOne({ _id: sessionId }).lean()).toMatchObject({ channel: 'voice', status: 'active' });

  // The call's end ends the session and closes the room, giving its place back.
  const status = await postSigned(stack, webhookPath(connectionId, 'voice-status'), callForm(callSid, { CallStatus: 'completed', CallDuration: '12' }));
  expect(status.status).toBe(200);
  const closed = await eventually(() => roomRecord(sessionId), (r) => r?.status === 'ended', 30_000, 200);
  expect(closed!.endReason).toBe('session_ended');
  expect(await roomExists(room!.roomName)).toBe(false);
  await eventually(() => openVoiceRooms(stack.ctx.models), (n) => n === 0, 10_000, 100);
  // Twilio asking again for the ended call starts nothing.
  const late = await postSigned(stack, webhookPath(connectionId, 'voice'), callForm(callSid));
  expect(late.text).toContain('<Hangup/>');
  expect(await openVoiceRooms(stack.ctx.models)).toBe(0);
});

it('sets the open-room count right and closes a room a stopped process left half made, never a live one', async () => {
  const temporalClient = await stack.ctx.temporal.client();
  const deps = { config: stack.config, models: stack.ctx.models, temporalClient };
  const memory: ReconcilerMemory = { seen: null };
  const live = await create(t.adminKey, { projectId: t.projectId });
  expect(live.status).toBe(201);
  // The live room looks old enough to be an orphan, but its workflow runs.
  await stack.ctx.models.VoiceRoom.updateOne({ _id: live.body.sessionId, tenantId: t.tenantId }, { $set: { createdAt: new Date(Date.now() - 10 * 60_000) } });
  const records = await stack.ctx.models.VoiceRoom.countDocuments({ status: 'active' });
  const counted = await openVoiceRooms(stack.ctx.models);
  expect(counted).toBe(records);

  // A place taken by a create whose process stopped before writing its record.
  expect(await acquireVoiceRoomPlace(stack.ctx.models, MAX_ROOMS + 5)).toBe(true);
  // One seen once may be a room being made: left alone.
  expect(await reconcileVoiceRooms(deps, memory)).toMatchObject({ orphansClosed: 0, count: { before: counted + 1, after: counted + 1 }, activeRooms: records });
  // Seen the same twice: set right.
  expect(await reconcileVoiceRooms(deps, memory)).toMatchObject({ orphansClosed: 0, count: { before: counted + 1, after: counted }, activeRooms: records });
  expect(await openVoiceRooms(stack.ctx.models)).toBe(counted);

  // A record (with its place) whose process stopped before starting the room's workflow.
  const orphanId = '5a1d6c1e-0000-4000-8000-00000000abcd';
  expect(await acquireVoiceRoomPlace(stack.ctx.models, MAX_ROOMS + 5)).toBe(true);
  await stack.ctx.models.VoiceRoom.create({
    _id: orphanId, tenantId: t.tenantId, projectId: t.projectId, sessionId: orphanId, roomName: `voice-${orphanId}`, agentId: 'a', agentName: 'Concierge',
    environment: 'dev', identity: 'caller', status: 'active', endReason: null, createdAt: new Date(Date.now() - 10 * 60_000), endedAt: null, recording: false,
  });
  expect(await reconcileVoiceRooms(deps, memory)).toMatchObject({ orphansClosed: 1, count: { after: counted }, activeRooms: records });
  expect(await roomRecord(orphanId)).toMatchObject({ status: 'ended', endReason: 'abandoned' });
  expect(await roomRecord(live.body.sessionId)).toMatchObject({ status: 'active' });
  expect(await roomExists(live.body.room)).toBe(true);

  // Several processes at once: the count is only set from the value a run saw.
  expect(await setOpenVoiceRooms(stack.ctx.models, { from: counted + 7, to: 0 })).toBe(false);
  expect(await openVoiceRooms(stack.ctx.models)).toBe(counted);
  await api.post(`/api/v1/voice/sessions/${live.body.sessionId}/end`, { key: t.adminKey });
  await eventually(() => openVoiceRooms(stack.ctx.models), (n) => n === 0, 20_000, 100);
});

it("connects a realtime call's dropped stream again while its room is open, at most VOICE_STREAM_MAX_RECONNECTS times, and never once the room has closed", async () => {
  const connectionId = await insertConnection(stack, t, { agentId: 'Concierge', voiceMode: 'realtime' });
  const streamEnded = (sessionId: string, reconnects: number) => webhookPath(connectionId, 'stream-ended', `sessionId=${sessionId}&reconnects=${reconnects}`);
  const callSid = 'CA' + 'd4'.repeat(16);
  const sessionId = voiceSessionId(connectionId, callSid);
  const answer = await postSigned(stack, webhookPath(connectionId, 'voice'), callForm(callSid));
  const stream = `<Connect><Stream url="${stack.baseUrl.replace('http://', 'ws://')}/media-stream/${connectionId}/${sessionId}">`;
  expect(answer.text).toContain(`</Connect><Redirect method="POST">${stack.baseUrl}${streamEnded(sessionId, 0).replace('&', '&amp;')}</Redirect>`);

  // Another call's session in the URL is refused; so is a bad count; neither changes anything.
  expect((await postSigned(stack, streamEnded(sessionId, 0), callForm('CA' + 'e5'.repeat(16)))).status).toBe(403);
  expect((await postSigned(stack, webhookPath(connectionId, 'stream-ended', `sessionId=${sessionId}&reconnects=-1`), callForm(callSid))).status).toBe(400);

  // The stream dropped with the room open: connected again at once, then after a pause, each time counted.
  const first = await postSigned(stack, streamEnded(sessionId, 0), callForm(callSid));
  expect(first.status).toBe(200);
  expect(first.text).toContain(`<Response>${stream}`);
  expect(first.text).toContain(`${streamEnded(sessionId, 1).replace('&', '&amp;')}</Redirect>`);
  expect(first.text).not.toContain('<Start>');
  const second = await postSigned(stack, streamEnded(sessionId, 1), callForm(callSid));
  expect(second.text).toContain(`<Response><Pause length="1"/>${stream}`);
  expect(second.text).toContain(`${streamEnded(sessionId, 2).replace('&', '&amp;')}</Redirect>`);
  expect(await stack.ctx.models.Session.findOne({ _id: sessionId }).lean()).toMatchObject({ status: 'active' });

  // Past the bound: an apology and a hang-up, the session ends, and the call's end closes the room.
  const lost = await postSigned(stack, streamEnded(sessionId, 2), callForm(callSid));
  expect(lost.text).toContain('<Say>Sorry, we lost the connection to the assistant. Please call again later.</Say><Hangup/>');
  expect(lost.text).not.toContain('<Connect>');
  expect(await stack.ctx.models.Session.findOne({ _id: sessionId }).lean()).toMatchObject({ status: 'ended', endReason: 'voice_stream_lost' });
  const event = await eventually(() => stack.ctx.models.VoiceEvent.findOne({ sessionId, type: 'voice.error' }).lean(), (e) => e !== null, 10_000, 100);
  expect(event!.data).toMatchObject({ reason: 'stream_lost', reconnects: 2 });
  await postSigned(stack, webhookPath(connectionId, 'voice-status'), callForm(callSid, { CallStatus: 'completed', CallDuration: '30' }));
  await eventually(() => roomRecord(sessionId), (r) => r?.status === 'ended', 30_000, 200);
  // The room gives its place back in the write after its record's: wait for that one too.
  await eventually(() => openVoiceRooms(stack.ctx.models), (n) => n === 0, 10_000, 100);

  // A call whose room closed first (here: deleted on LiveKit, its record still active, as the bridge
  // sees it when the room closes): the stream's end is the call's, a bare hang-up.
  const otherSid = 'CA' + 'f6'.repeat(16);
  const otherSession = voiceSessionId(connectionId, otherSid);
  await postSigned(stack, webhookPath(connectionId, 'voice'), callForm(otherSid));
  const otherRoom = await roomRecord(otherSession);
  await rooms.deleteRoom(otherRoom!.roomName);
  expect((await roomRecord(otherSession))!.status).toBe('active');
  const over = await postSigned(stack, streamEnded(otherSession, 0), callForm(otherSid));
  expect(over.status).toBe(200);
  expect(over.text).toBe('<?xml version="1.0" encoding="UTF-8"?><Response><Hangup/></Response>');
  // And once the session has ended (the call's end), the same.
  await postSigned(stack, webhookPath(connectionId, 'voice-status'), callForm(otherSid, { CallStatus: 'completed', CallDuration: '5' }));
  await eventually(() => roomRecord(otherSession), (r) => r?.status === 'ended', 30_000, 200);
  expect((await postSigned(stack, streamEnded(otherSession, 0), callForm(otherSid))).text).toContain('<Response><Hangup/></Response>');
  await eventually(() => openVoiceRooms(stack.ctx.models), (n) => n === 0, 10_000, 100);
});
