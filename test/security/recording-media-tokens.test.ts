// A recording's media is reachable only with a media token the recordings list signed, unaltered
// and unexpired, for exactly the URL's project, recording, file index and disposition, while the
// key that asked for it still stands. Credential headers sent with it grant nothing.
import { SignJWT } from 'jose';
import { startTestStack, seedTenant, type TestStack, type SeededTenant } from '../support/stack';
import { client } from '../support/http';
import { signMediaToken, type MediaTokenClaims } from '../../core/telephony/recording-media-tokens';
import { revokeApiKey, deleteApiKey } from '../../core/tenancy/accounts';
import { issueUserToken } from '../../api/middleware/auth';
import { makeWav, scopedKey, seedSession, storeRecording } from '../integration/telephony/recording-fixtures';

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;
const wav = makeWav(2000);

beforeAll(async () => {
  stack = await startTestStack();
  api = client(stack.baseUrl);
  t = await seedTenant(stack.ctx);
}, 120_000);

afterAll(async () => {
  await stack?.close();
});

/** A stored recording of the project, a key with recordings.read, and the URL the list gives for its file. */
async function listed(place: { tenantId: string; projectId: string } = t, disposition = 'attachment') {
  const sessionId = await seedSession(stack.ctx, place);
  const { recordingId } = await storeRecording(stack.ctx, { ...place, sessionId, channelConnectionId: 'cc_test' }, wav);
  const key = await scopedKey(stack.ctx, place, ['recordings.read']);
  const res = await api.get(`/api/public/recordings/projects/${place.projectId}/sessions/${sessionId}/recordings?disposition=${disposition}`, { headers: { 'x-api-key': key.key } });
  expect(res.status).toBe(200);
  const url: string = res.body.data.recordings[0].files[0].url;
  const token = /\/media\/content\/([^?]+)\?/.exec(url)![1]!;
  return { url, token, recordingId, key, sessionId };
}

const mediaPath = (projectId: string, recordingId: string, token: string, query = 'objectIndex=0&disposition=attachment') =>
  `/api/projects/${projectId}/recordings/${recordingId}/media/content/${token}?${query}`;

function expectRefused(res: { status: number; body: { error?: { code?: string } } }) {
  expect(res.status).toBe(401);
  expect(res.body.error?.code).toBe('INVALID_RECORDING_MEDIA_TOKEN');
}

it('serves the file for the token as issued', async () => {
  const { url } = await listed();
  const res = await fetch(stack.baseUrl + url);
  expect(res.status).toBe(200);
  expect(Buffer.from(await res.arrayBuffer()).equals(wav)).toBe(true);
});

it('refuses an altered token', async () => {
  const { token, recordingId } = await listed();
  const [header, payload, signature] = token.split('.');
  const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
  const widened = Buffer.from(JSON.stringify({ ...claims, exp: claims.exp + 86_400 })).toString('base64url');
  const flipped = signature!.slice(0, -2) + (signature!.endsWith('AA') ? 'AB' : 'AA');
  for (const bad of [`${header}.${widened}.${signature}`, `${header}.${payload}.${flipped}`, `${header}.${payload}.`, 'not-a-token']) {
    expectRefused(await api.get(mediaPath(t.projectId, recordingId, bad)));
  }
});

it('refuses an expired token', async () => {
  const { recordingId, key } = await listed();
  const claims: MediaTokenClaims = { tenantId: t.tenantId, projectId: t.projectId, recordingId, objectIndex: 0, disposition: 'attachment', keyId: key.keyId };
  const expired = await signMediaToken(stack.config, claims, -1);
  expectRefused(await api.get(mediaPath(t.projectId, recordingId, expired)));
  // The same claims, alive, pass: what refused it is the expiry.
  const alive = await signMediaToken(stack.config, claims, 60);
  expect((await api.get(mediaPath(t.projectId, recordingId, alive))).status).toBe(200);
});

it('refuses a token not signed with the media key: a user JWT, or claims signed with another secret', async () => {
  const { recordingId, key } = await listed();
  const { token: userToken } = await issueUserToken(stack.ctx, 'u-1', t.tenantId);
  expectRefused(await api.get(mediaPath(t.projectId, recordingId, userToken)));
  const forged = await new SignJWT({ ten: t.tenantId, prj: t.projectId, rec: recordingId, idx: 0, dis: 'attachment' })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(stack.config.JWT_ISSUER)
    .setAudience('recording-media')
    .setSubject(key.keyId)
    .setExpirationTime('5m')
    .sign(new TextEncoder().encode(stack.config.JWT_SECRET));
  expectRefused(await api.get(mediaPath(t.projectId, recordingId, forged)));
});

it('answers 400 for a file index or disposition other than the token\'s', async () => {
  const { token, recordingId } = await listed();
  const index = await api.get(mediaPath(t.projectId, recordingId, token, 'objectIndex=1&disposition=attachment'));
  expect(index.status).toBe(400);
  const disposition = await api.get(mediaPath(t.projectId, recordingId, token, 'objectIndex=0&disposition=inline'));
  expect(disposition.status).toBe(400);
  const junk = await api.get(mediaPath(t.projectId, recordingId, token, 'objectIndex=-1&disposition=attachment'));
  expect(junk.status).toBe(400);
});

it("refuses a token on another project's or another recording's URL", async () => {
  const mine = await listed();
  const neighbour = await listed({ tenantId: t.tenantId, projectId: t.otherProjectId });
  // Another project's token, on its own recording id but under this project's path, and the reverse.
  expectRefused(await api.get(mediaPath(t.projectId, neighbour.recordingId, neighbour.token)));
  expectRefused(await api.get(mediaPath(t.otherProjectId, mine.recordingId, mine.token)));
  // This project's token for one recording, on the URL of another of its recordings.
  const second = await listed();
  expectRefused(await api.get(mediaPath(t.projectId, second.recordingId, mine.token)));
  // Another tenant's token, on its own URL shape but this tenant's project.
  const stranger = await seedTenant(stack.ctx);
  const theirs = await listed(stranger);
  expectRefused(await api.get(mediaPath(t.projectId, theirs.recordingId, theirs.token)));
});

it('stops serving once the issuing key is revoked or deleted, or its scope loses recordings.read', async () => {
  const revoked = await listed();
  expect((await fetch(stack.baseUrl + revoked.url)).status).toBe(200);
  await revokeApiKey(stack.ctx.models, t.tenantId, revoked.key.keyId, 0);
  expectRefused(await api.get(revoked.url));

  const deleted = await listed();
  await deleteApiKey(stack.ctx.models, t.tenantId, deleted.key.keyId, 0);
  expectRefused(await api.get(deleted.url));

  const narrowed = await listed();
  await stack.ctx.models.ApiScope.updateOne({ _id: narrowed.key.scopeId }, { $pull: { grants: 'recordings.read' } });
  expectRefused(await api.get(narrowed.url));
});

it('grants nothing for credential headers sent along: the token alone decides', async () => {
  const { url, recordingId } = await listed();
  const withKey = await fetch(stack.baseUrl + url, { headers: { 'x-api-key': t.adminKey, authorization: `Bearer ${t.adminKey}` } });
  expect(withKey.status).toBe(200);
  const noToken = await api.get(mediaPath(t.projectId, recordingId, 'x'), { headers: { 'x-api-key': t.adminKey } });
  expectRefused(noToken);
});
