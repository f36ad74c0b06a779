// What the recordings tests share: a channel connection and a session inserted directly, a
// scoped platform key, Twilio's recording-status form signed as Twilio signs it, a stand-in for
// Twilio's recording media endpoint (reached through TWILIO_API_BASE_URL, as the SDK and the fake
// are), and stored recordings written straight into GridFS for the media tests.
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { type AppContext } from '../../../api/context';
import { sealConnectionToken, newChannelConnectionId } from '../../../db/channel-connection';
import { recordingMediaBucket, newRecordingId } from '../../../db/recording';
import { requireMasterKeys } from '../../../core/tool-secrets/secrets';
import { createScope } from '../../../core/platform-keys/scopes';
import { createApiKey } from '../../../core/tenancy/accounts';
import { twilioSignature } from '../../../providers/telephony/twilio-client';

export const hex = (n: number) => randomBytes(n).toString('hex');
export const accountSid = () => `AC${hex(16)}`;
export const recordingSid = () => `RE${hex(16)}`;
export const callSid = () => `CA${hex(16)}`;

/** A small valid PCM WAV of `dataBytes` bytes of audio (deterministic content), `channels` channels. */
export function makeWav(dataBytes: number, channels = 1): Buffer {
  const header = Buffer.alloc(44);
  const rate = 8000;
  header.write('RIFF', 0);
  header.writeUInt32LE(36 + dataBytes, 4);
  header.write('WAVE', 8);
  header.write('fmt ', 12);
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(channels, 22);
  header.writeUInt32LE(rate, 24);
  header.writeUInt32LE(rate * channels * 2, 28);
  header.writeUInt16LE(channels * 2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36);
  header.writeUInt32LE(dataBytes, 40);
  const data = Buffer.alloc(dataBytes);
  for (let i = 0; i < dataBytes; i++) data[i] = (i * 31 + (i >> 8)) & 0xff;
  return Buffer.concat([header, data]);
}

export async function seedConnection(ctx: AppContext, place: { tenantId: string; projectId: string }, account: { accountSid: string; authToken: string }) {
  const _id = newChannelConnectionId();
  const sealed = await sealConnectionToken(ctx.models.TenantDataKey, requireMasterKeys(ctx), { _id, ...place }, account.authToken);
  await ctx.models.ChannelConnection.create({
    _id,
    ...place,
    provider: 'twilio',
    name: `line ${_id}`,
    accountSid: account.accountSid,
    authToken: sealed,
    callerNumber: '+15550001111',
    environment: 'dev',
    agentId: null,
    endpointSlug: null,
    amdMode: 'off',
    recordingEnabled: true,
    transferNumber: null,
    status: 'active',
  });
  return _id;
}

export async function seedSession(ctx: AppContext, place: { tenantId: string; projectId: string }, status: 'active' | 'ended' = 'ended') {
  const _id = `s-${hex(8)}`;
  const now = new Date();
  await ctx.models.Session.create({
    _id,
    ...place,
    agentName: 'Voice',
    currentAgent: 'Voice',
    status,
    channel: 'voice',
    runtimeSessionId: `session/${_id}`,
    createdAt: now,
    lastActivityAt: now,
    endedAt: status === 'ended' ? now : null,
  });
  return _id;
}

/** A platform key of a new scope of the project granting `grants` (e.g. `recordings.read`). */
export async function scopedKey(ctx: AppContext, place: { tenantId: string; projectId: string }, grants: string[], environments?: string[]) {
  const scope = await createScope(ctx.models, { _id: place.projectId, tenantId: place.tenantId }, {
    name: `rec-${hex(4)}`,
    permissions: Object.fromEntries(grants.map((g) => [g, 'YES' as const])),
  });
  const { key, apiKey } = await createApiKey(ctx.models, place.tenantId, { name: 'recordings', scopeId: scope._id, ...(environments ? { environments } : {}) });
  return { key, keyId: apiKey._id, scopeId: scope._id };
}

export function recordingUrl(account: string, sid: string, host = 'https://api.twilio.com') {
  return `${host}/2010-04-01/Accounts/${account}/Recordings/${sid}`;
}

/** Twilio's recording-status form for one recording. */
export function statusForm(input: { account: string; recording: string; call: string; status: string; url?: string; channels?: number; duration?: number }) {
  return {
    AccountSid: input.account,
    CallSid: input.call,
    RecordingSid: input.recording,
    RecordingUrl: input.url ?? recordingUrl(input.account, input.recording),
    RecordingStatus: input.status,
    RecordingDuration: String(input.duration ?? (input.status === 'in-progress' ? -1 : 7)),
    RecordingChannels: String(input.channels ?? 1),
    RecordingSource: 'OutboundAPI',
    RecordingStartTime: 'Sun, 06 Dec 2026 10:00:00 +0000',
    ErrorCode: '0',
  };
}

/** POSTs a recording-status form to the API, signed under `authToken` as Twilio signs it (or with `signature`). */
export async function postRecordingStatus(baseUrl: string, connectionId: string, query: string, form: Record<string, string>, sign: { authToken: string } | { signature: string }) {
  const path = `/api/telephony/twilio/${connectionId}/recording-status?${query}`;
  const signature = 'signature' in sign ? sign.signature : twilioSignature(sign.authToken, baseUrl + path, form);
  const res = await fetch(baseUrl + path, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': signature },
    body: new URLSearchParams(form).toString(),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

export interface MediaServer {
  url: string;
  /** Every request received: path and whether its Basic credentials matched the account's token. */
  requests: { path: string; authorized: boolean }[];
  /** Serves `body` for the recording (`.wav`), to the account's credentials only. */
  put(account: { accountSid: string; authToken: string }, recording: string, body: Buffer): void;
  /** Answers `status` for the recording instead. */
  fail(recording: string, status: number): void;
  /** Serves the recording again after `fail`. */
  heal(recording: string): void;
  /** The recording's next request gets its headers and half its body, then nothing more (the connection stays open). */
  stallOnce(recording: string): void;
  close(): Promise<void>;
}

/** Twilio's recording media endpoint as the platform reaches it through TWILIO_API_BASE_URL. */
export async function startMediaServer(): Promise<MediaServer> {
  const tokens = new Map<string, string>();
  const media = new Map<string, Buffer>();
  const failures = new Map<string, number>();
  const stalls = new Set<string>();
  const requests: MediaServer['requests'] = [];
  const server: Server = createServer((req, res) => {
    const match = /^\/2010-04-01\/Accounts\/(AC\w+)\/Recordings\/(RE\w+)\.wav(?:\?RequestedChannels=2)?$/.exec(req.url ?? '');
    const [user, pass] = Buffer.from((req.headers.authorization ?? '').replace(/^Basic /, ''), 'base64').toString().split(':');
    const authorized = !!match && user === match[1] && tokens.get(match[1]!) === pass;
    requests.push({ path: req.url ?? '', authorized });
    if (!match) return void res.writeHead(404).end();
    if (!authorized) return void res.writeHead(401, { 'content-type': 'application/json' }).end('{"code":20003,"message":"Authenticate","status":401}');
    const failure = failures.get(match[2]!);
    if (failure) return void res.writeHead(failure).end();
    const body = media.get(match[2]!);
    if (!body) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'audio/x-wav', 'content-length': String(body.length) });
    if (stalls.delete(match[2]!)) return void res.write(body.subarray(0, body.length >> 1));
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    put(account, recording, body) {
      tokens.set(account.accountSid, account.authToken);
      media.set(recording, body);
    },
    fail(recording, status) {
      failures.set(recording, status);
    },
    heal(recording) {
      failures.delete(recording);
    },
    stallOnce(recording) {
      stalls.add(recording);
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A recording stored as the fetch leaves one (its media in GridFS), for the media tests. */
export async function storeRecording(
  ctx: AppContext,
  place: { tenantId: string; projectId: string; sessionId: string; channelConnectionId: string },
  body: Buffer,
  overrides: Record<string, unknown> = {},
) {
  const _id = newRecordingId();
  const sid = recordingSid();
  const upload = recordingMediaBucket(ctx.models.connection).openUploadStream(`${sid}.wav`, { metadata: { tenantId: place.tenantId, recordingId: _id } });
  await new Promise<void>((resolve, reject) => upload.end(body, (err?: Error | null) => (err ? reject(err) : resolve())));
  await ctx.models.Recording.create({
    _id,
    ...place,
    outboundCallId: null,
    callSid: callSid(),
    provider: 'twilio',
    providerRecordingSid: sid,
    providerStatus: 'completed',
    mediaUrl: null,
    availability: 'available',
    unavailableReason: null,
    retryable: false,
    channels: 1,
    durationSeconds: 7,
    files: [
      {
        objectIndex: 0,
        fileName: `${sid}.wav`,
        channel: 'mixed',
        audioChannels: 1,
        recordingType: 'external',
        contentType: 'audio/wav',
        bytes: body.length,
        recordingStartTime: null,
        recordingEndTime: null,
        gridFsId: upload.id,
      },
    ],
    retentionExpiresAt: new Date(Date.now() + 86_400_000),
    ...overrides,
  });
  return { recordingId: _id, gridFsId: upload.id };
}
