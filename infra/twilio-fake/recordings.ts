// Recordings in the Twilio fake: started by `Record=true` on a call, `<Start><Recording>`,
// `<Record>` or `POST Calls/{Sid}/Recordings.json`; stopped at the call's end (or by a REST
// update); then `processing` → `completed` with the RecordingStatusCallback (signed) carrying
// RecordingSid, RecordingUrl (on api.twilio.com, as Twilio gives it), RecordingStatus,
// RecordingDuration, RecordingChannels, RecordingSource, RecordingStartTime, CallSid, AccountSid.
// The media is made on demand: a WAV (8 kHz, 16-bit PCM, a quiet tone per channel, as long as
// the recording) or a silent MP3 of the same length; a dual recording is mixed to one channel
// unless `RequestedChannels=2`, as Twilio does.
import { newSid, recordingMediaUrl, rfc2822 } from './resources';
import { type FakeCall, type FakeRecording, type FakeState, type HttpMethod, type RecordingSource, type WebhookLog } from './state';
import { sendWebhook } from './webhooks';

export interface RecordingOptions {
  source: RecordingSource;
  channels: 1 | 2;
  statusCallback: string | null;
  statusCallbackMethod: HttpMethod;
  /** Which RecordingStatus values are posted (Twilio's default: completed only). */
  statusCallbackEvents: Set<string>;
  track?: string;
}

/** `mono`/`dual` (and Twilio's `1`/`2`) → channel count. */
export function channelsOf(value: string | undefined): 1 | 2 {
  return value === 'dual' || value === '2' ? 2 : 1;
}

/** RecordingStatusCallbackEvent values (repeated or space-separated), `completed` when none. */
export function recordingEvents(values: string[]): Set<string> {
  const events = values.flatMap((v) => v.split(/[\s,]+/)).filter(Boolean);
  return new Set(events.length > 0 ? events : ['completed']);
}

function recordingCallbackParams(rec: FakeRecording): Record<string, string> {
  const params: Record<string, string> = {
    AccountSid: rec.accountSid,
    CallSid: rec.callSid,
    RecordingSid: rec.sid,
    RecordingUrl: recordingMediaUrl(rec),
    RecordingStatus: rec.status,
    RecordingChannels: String(rec.channels),
    RecordingSource: rec.source,
    RecordingStartTime: rfc2822(rec.startTime),
    RecordingTrack: rec.track,
    ErrorCode: '0',
  };
  if (rec.durationSec !== null) params.RecordingDuration = String(rec.durationSec);
  return params;
}

function postRecordingStatus(state: FakeState, rec: FakeRecording): void {
  if (!rec.statusCallback || !rec.statusCallbackEvents.has(rec.status)) return;
  const params = recordingCallbackParams(rec);
  const log: WebhookLog = { url: rec.statusCallback, method: rec.statusCallbackMethod, params, responseStatus: null };
  rec.callbacks.push(log);
  state.changed();
  void state
    .track(sendWebhook({ url: rec.statusCallback, method: rec.statusCallbackMethod, params, authToken: rec.authToken, timeoutMs: state.settings.webhookTimeoutMs }, log))
    .then(() => state.changed());
}

export function startRecording(state: FakeState, call: FakeCall, options: RecordingOptions): FakeRecording {
  const now = new Date();
  const rec: FakeRecording = {
    sid: newSid('RE'),
    accountSid: call.accountSid,
    callSid: call.sid,
    authToken: call.authToken,
    channels: options.channels,
    source: options.source,
    track: options.track ?? 'both',
    status: 'in-progress',
    dateCreated: now,
    dateUpdated: now,
    startTime: now,
    endTime: null,
    durationSec: null,
    statusCallback: options.statusCallback,
    statusCallbackMethod: options.statusCallbackMethod,
    statusCallbackEvents: options.statusCallbackEvents,
    callbacks: [],
    deleted: false,
  };
  state.recordings.set(rec.sid, rec);
  call.recordingSids.push(rec.sid);
  call.events.push(`recording ${rec.sid} started (${rec.source}, ${rec.channels} channel${rec.channels === 2 ? 's' : ''})`);
  postRecordingStatus(state, rec);
  state.changed();
  return rec;
}

/** Stops a running recording: `processing` now, `completed` (with its callback) a moment later. */
export function stopRecording(state: FakeState, rec: FakeRecording): void {
  if (rec.status !== 'in-progress' && rec.status !== 'paused') return;
  const now = new Date();
  rec.endTime = now;
  rec.durationSec = Math.max(1, Math.round((now.getTime() - rec.startTime.getTime()) / state.settings.secondMs));
  rec.status = 'processing';
  rec.dateUpdated = now;
  state.changed();
  void state.track(
    state.sleep(state.settings.recordingProcessMs, () => state.closed).then(() => {
      if (state.closed) return;
      rec.status = 'completed';
      rec.dateUpdated = new Date();
      postRecordingStatus(state, rec);
      state.changed();
    }),
  );
}

/** Stops every running recording of the call (its end). */
export function stopCallRecordings(state: FakeState, call: FakeCall): void {
  for (const sid of call.recordingSids) {
    const rec = state.recordings.get(sid);
    if (rec) stopRecording(state, rec);
  }
}

const SAMPLE_RATE = 8000;

/** A WAV file of the recording: 8 kHz 16-bit PCM, `channels` channels, a quiet tone in each. */
export function recordingWav(rec: FakeRecording, channels: 1 | 2): Buffer {
  const frames = SAMPLE_RATE * (rec.durationSec ?? 1);
  const blockAlign = channels * 2;
  const dataSize = frames * blockAlign;
  const buf = Buffer.alloc(44 + dataSize);
  buf.write('RIFF', 0, 'ascii');
  buf.writeUInt32LE(36 + dataSize, 4);
  buf.write('WAVE', 8, 'ascii');
  buf.write('fmt ', 12, 'ascii');
  buf.writeUInt32LE(16, 16);
  buf.writeUInt16LE(1, 20); // PCM
  buf.writeUInt16LE(channels, 22);
  buf.writeUInt32LE(SAMPLE_RATE, 24);
  buf.writeUInt32LE(SAMPLE_RATE * blockAlign, 28);
  buf.writeUInt16LE(blockAlign, 32);
  buf.writeUInt16LE(16, 34);
  buf.write('data', 36, 'ascii');
  buf.writeUInt32LE(dataSize, 40);
  // A different pitch per channel (caller 440 Hz, agent 660 Hz) so the two are told apart.
  for (let i = 0; i < frames; i++) {
    for (let c = 0; c < channels; c++) {
      const hz = c === 0 ? 440 : 660;
      buf.writeInt16LE(Math.round(2000 * Math.sin((2 * Math.PI * hz * i) / SAMPLE_RATE)), 44 + i * blockAlign + c * 2);
    }
  }
  return buf;
}

/**
 * A silent MP3 of the recording's length: MPEG-1 Layer III frames at 128 kbit/s, 44.1 kHz
 * (417 bytes, 1152 samples each), whose side information and main data are all zero.
 */
export function recordingMp3(rec: FakeRecording, channels: 1 | 2): Buffer {
  const frameBytes = 417;
  const frames = Math.ceil(((rec.durationSec ?? 1) * 44_100) / 1152);
  const frame = Buffer.alloc(frameBytes);
  frame[0] = 0xff;
  frame[1] = 0xfb; // MPEG-1, Layer III, no CRC
  frame[2] = 0x90; // 128 kbit/s, 44.1 kHz, no padding
  frame[3] = channels === 1 ? 0xc0 : 0x00; // mono, or stereo
  return Buffer.concat(Array.from({ length: frames }, () => frame));
}
