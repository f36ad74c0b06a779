// What the Twilio fake shows tests and the control API of a call and a recording: plain JSON
// snapshots (copies), so a test keeps what it saw while the call goes on.
import { recordingMediaUrl } from './resources';
import { type StreamLog } from './media-streams';
import {
  type CallStatus,
  type DialLog,
  type FakeCall,
  type FakeRecording,
  type FakeState,
  type RecordingSource,
  type RecordingStatus,
  type StatusCallbackLog,
  type TwimlRequestLog,
  type WebhookLog,
} from './state';

export interface FakeRecordingView {
  sid: string;
  accountSid: string;
  callSid: string;
  status: RecordingStatus;
  channels: 1 | 2;
  source: RecordingSource;
  durationSec: number | null;
  /** The media as Twilio names it (api.twilio.com; reach it through `twilioUrl`). */
  mediaUrl: string;
  deleted: boolean;
  callbacks: WebhookLog[];
}

export interface FakeCallView {
  sid: string;
  accountSid: string;
  direction: 'outbound-api' | 'inbound';
  to: string;
  from: string;
  status: CallStatus;
  answeredBy: string | null;
  /** ISO 8601. */
  createdAt: string;
  answeredAt: string | null;
  endedAt: string | null;
  durationSec: number;
  sipResponseCode: number | null;
  /** What the application's TwiML said (<Say>), in order. */
  said: string[];
  /** What the caller said that was sent as SpeechResult, in order. */
  heard: string[];
  /** The number of the last <Dial>, or null. */
  dialed: string | null;
  dials: DialLog[];
  played: string[];
  /** The caller's utterances not heard yet (speech, or digits). */
  queue: string[];
  statusCallbacks: StatusCallbackLog[];
  twimlRequests: TwimlRequestLog[];
  /** Media Streams opened by <Connect><Stream>: state, parameters, audio sent and received, marks, clears. */
  streams: StreamLog[];
  recordings: FakeRecordingView[];
  events: string[];
  errors: string[];
}

export function recordingView(rec: FakeRecording): FakeRecordingView {
  return structuredClone({
    sid: rec.sid,
    accountSid: rec.accountSid,
    callSid: rec.callSid,
    status: rec.status,
    channels: rec.channels,
    source: rec.source,
    durationSec: rec.durationSec,
    mediaUrl: recordingMediaUrl(rec),
    deleted: rec.deleted,
    callbacks: rec.callbacks,
  });
}

/** A snapshot of the call (a copy: it does not change as the call goes on). */
export function callView(state: FakeState, call: FakeCall): FakeCallView {
  return structuredClone(liveCallView(state, call));
}

/** The call as a view without copying its logs: cheap, for predicates evaluated at every change. */
export function liveCallView(state: FakeState, call: FakeCall): FakeCallView {
  const iso = (d: Date | null) => (d ? d.toISOString() : null);
  return {
    sid: call.sid,
    accountSid: call.accountSid,
    direction: call.direction,
    to: call.to,
    from: call.from,
    status: call.status,
    answeredBy: call.answeredBy,
    createdAt: call.dateCreated.toISOString(),
    answeredAt: iso(call.answeredAt),
    endedAt: iso(call.endTime),
    durationSec: call.durationSec,
    sipResponseCode: call.sipResponseCode,
    said: call.said,
    heard: call.heard,
    dialed: call.dialed,
    dials: call.dials,
    played: call.played,
    queue: call.queue.map((u) => ('speech' in u ? u.speech : u.digits)),
    statusCallbacks: call.statusCallbacks,
    twimlRequests: call.twimlRequests,
    streams: call.streams,
    recordings: call.recordingSids.flatMap((sid) => {
      const rec = state.recordings.get(sid);
      return rec ? [recordingView(rec)] : [];
    }),
    events: call.events,
    errors: call.errors,
  };
}
