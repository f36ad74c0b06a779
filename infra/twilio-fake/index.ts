// A fake of Twilio's Programmable Voice REST API for tests and the dev stack (docs/telephony.md):
// point the SDK at `fake.url` (providers/telephony/twilio-client.ts, `apiBaseUrl`) and it places
// simulated calls that call the application's status, TwiML and recording webhooks the way
// Twilio does, signed. The handle drives the person on the phone and shows what happened.
import { CallSimulator, SPECIAL_NUMBERS } from './calls';
import { type CallFilter, ControlError, FakeControl, type InboundOptions, type ScriptOptions } from './control';
import { TwilioRest } from './rest';
import { listen } from './server';
import { type CallStatus, type FakeCall, FakeState, type FakeSettings, type StatusCallbackLog, TERMINAL_STATUSES } from './state';
import { callView, type FakeCallView, type FakeRecordingView, liveCallView } from './views';
import { streamAudio } from './media-streams';
import { type PcmAudio } from '../../providers/voice/types';

export { SPECIAL_NUMBERS, TERMINAL_STATUSES, ControlError };
export { DEFAULT_SETTINGS } from './state';
export { TWILIO_API_ORIGIN } from './resources';
export type { CallFilter, CallStatus, FakeCallView, FakeRecordingView, FakeSettings, InboundOptions, ScriptOptions };
export type { DialLog, StatusCallbackLog, TwimlRequestLog, WebhookLog } from './state';
export type { StreamLog } from './media-streams';
export { STREAM_LOUD_RMS } from './media-streams';

export interface TwilioFakeOptions {
  /** @default 0 (any free port), on 127.0.0.1 */
  port?: number;
  settings?: Partial<FakeSettings>;
}

export interface TwilioFake {
  /** `http://127.0.0.1:<port>`: the SDK's `apiBaseUrl`, and TWILIO_API_BASE_URL. */
  url: string;
  port: number;
  /** A call with its log; throws when the fake has no such call. */
  call(callSid: string): FakeCallView;
  calls(filter?: CallFilter): FakeCallView[];
  /** The caller's next utterance, heard by the next <Gather input="speech">. */
  say(callSid: string, text: string): FakeCallView;
  /** The caller keys digits, for the next <Gather input="dtmf">. */
  digits(callSid: string, digits: string): FakeCallView;
  /** The caller hangs up. */
  hangup(callSid: string): FakeCallView;
  /** The caller's audio, sent on the call's Media Stream (<Connect><Stream>) after what is queued. */
  play(callSid: string, audio: PcmAudio): FakeCallView;
  /** The audio a Media Stream's server sent the caller, 8 kHz PCM. */
  streamAudio(streamSid: string): PcmAudio;
  /**
   * Sends the call's status callback with this SequenceNumber again, unchanged and signed: a
   * duplicate, or (after newer ones) an out-of-order delivery. Resolves once it was answered.
   */
  resendStatusCallback(callSid: string, sequenceNumber: number): Promise<StatusCallbackLog>;
  /** Utterances for the next call to `to` (and, with hangupAfter, a hang-up once they run out). */
  script(to: string, utterances: string[], options?: { hangupAfter?: boolean }): void;
  /** Someone calls one of the application's numbers. */
  inbound(options: InboundOptions): FakeCallView;
  recordings(callSid?: string): FakeRecordingView[];
  /** Changes timings (and returns them all). */
  settings(changes?: Partial<FakeSettings>): FakeSettings;
  /**
   * The first call (in creation order) for which `predicate` holds, as soon as it does (checked
   * at every change, on a view that is not a copy: keep nothing from it), as a snapshot.
   * Rejects after `timeoutMs` (default 30 s) naming the calls it saw.
   */
  waitForCall(predicate: (call: FakeCallView) => boolean, timeoutMs?: number): Promise<FakeCallView>;
  /** The call once its status is one of `statuses` (default: any terminal status). */
  waitForStatus(callSid: string, statuses?: CallStatus | CallStatus[], timeoutMs?: number): Promise<FakeCallView>;
  /**
   * Resolves once no webhook is in flight (status callbacks, TwiML requests, recording callbacks,
   * and recordings still processing towards theirs); calls still ringing or listening do not count.
   */
  settled(): Promise<void>;
  /** Forgets every call, recording and script. */
  reset(): void;
  close(): Promise<void>;
}

export async function startTwilioFake(options: TwilioFakeOptions = {}): Promise<TwilioFake> {
  const state = new FakeState(options.settings);
  const sim = new CallSimulator(state);
  const control = new FakeControl(state, sim);
  const server = await listen(new TwilioRest(state, sim), control, options.port ?? 0);

  const waitForCall = async (predicate: (call: FakeCallView) => boolean, timeoutMs = 30_000, only?: string): Promise<FakeCallView> => {
    let found: FakeCall | undefined;
    const candidates = () => (only ? [state.calls.get(only)].filter((c): c is FakeCall => c !== undefined) : [...state.calls.values()]);
    const ok = await state.waitUntil(() => {
      found = candidates().find((c) => predicate(liveCallView(state, c)));
      return found !== undefined;
    }, timeoutMs);
    if (!ok || !found) {
      const seen = control.calls().map((c) => `${c.sid} to ${c.to}: ${c.status} [${c.events.join('; ')}]`);
      throw new Error(`no call of the Twilio fake matched within ${timeoutMs} ms; calls: ${seen.join(' | ') || 'none'}`);
    }
    return callView(state, found);
  };

  return {
    url: server.url,
    port: server.port,
    call: (sid) => control.call(sid),
    calls: (filter) => control.calls(filter),
    say: (sid, text) => control.say(sid, text),
    digits: (sid, digits) => control.digits(sid, digits),
    hangup: (sid) => control.hangup(sid),
    play: (sid, audio) => control.audio(sid, audio),
    streamAudio: (streamSid) => streamAudio(streamSid),
    resendStatusCallback: (sid, sequenceNumber) => control.resendStatusCallback(sid, sequenceNumber),
    script: (to, utterances, opts = {}) => control.script({ to, utterances, hangupAfter: opts.hangupAfter }),
    inbound: (opts) => control.inbound(opts),
    recordings: (callSid) => control.recordings(callSid),
    settings: (changes) => control.settings(changes),
    waitForCall,
    waitForStatus: (sid, statuses = [...TERMINAL_STATUSES], timeoutMs) => {
      const wanted: CallStatus[] = Array.isArray(statuses) ? statuses : [statuses];
      return waitForCall((c) => wanted.includes(c.status), timeoutMs, sid);
    },
    settled: async () => {
      while (state.pending.size > 0) await Promise.allSettled([...state.pending]);
    },
    reset: () => control.reset(),
    close: async () => {
      state.close();
      await server.close();
      await Promise.allSettled([...state.pending, ...state.running]);
    },
  };
}
