// The Twilio fake's control side (not Twilio's API): what a test or a developer does as the
// person on the phone (say something, key digits, hang up, call in), what they look at (a call
// with its log, the list of calls, recordings), scripts for the next call to a number, and the
// timing settings. The same operations back the typed helpers of startTwilioFake() and the
// JSON routes under /__fake/.
import { type CallSimulator } from './calls';
import { type FakeSettings, type FakeState, type HttpMethod, type StatusCallbackLog, type Utterance } from './state';
import { callView, type FakeCallView, type FakeRecordingView, recordingView } from './views';
import { playIntoCall, streamAudio } from './media-streams';
import { type PcmAudio } from '../../providers/voice/types';

export class ControlError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface CallFilter {
  to?: string;
  from?: string;
  status?: string;
  direction?: 'outbound-api' | 'inbound';
}

export interface InboundOptions {
  /** The account whose number is called; its webhooks are signed with `authToken`. */
  accountSid: string;
  /** @default the token last used by this account on the REST API */
  authToken?: string;
  from: string;
  to: string;
  /** The number's voice URL (Twilio asks it for TwiML with CallStatus ringing). */
  url: string;
  method?: HttpMethod;
  statusCallback?: string;
  statusCallbackMethod?: HttpMethod;
  /** @default ['completed'] */
  statusCallbackEvents?: string[];
  /** The caller's utterances, in order. */
  utterances?: string[];
  /** Hang up at the first <Gather> once the utterances have run out. */
  hangupAfter?: boolean;
}

export interface ScriptOptions {
  /** The next call to this number. */
  to: string;
  utterances: string[];
  /** The caller hangs up at the first <Gather> after the last utterance. @default false */
  hangupAfter?: boolean;
}

const SETTING_NAMES: (keyof FakeSettings)[] = ['initiateMs', 'ringMs', 'answerMs', 'secondMs', 'dialMs', 'recordingProcessMs', 'webhookTimeoutMs', 'createHangMs'];

export class FakeControl {
  constructor(
    private readonly state: FakeState,
    private readonly sim: CallSimulator,
  ) {}

  private live(callSid: string) {
    const call = this.state.calls.get(callSid);
    if (!call) throw new ControlError(404, `no call ${callSid}`);
    return call;
  }

  call(callSid: string): FakeCallView {
    return callView(this.state, this.live(callSid));
  }

  calls(filter: CallFilter = {}): FakeCallView[] {
    return [...this.state.calls.values()]
      .filter(
        (c) =>
          (!filter.to || c.to === filter.to) &&
          (!filter.from || c.from === filter.from) &&
          (!filter.status || c.status === filter.status) &&
          (!filter.direction || c.direction === filter.direction),
      )
      .map((c) => callView(this.state, c));
  }

  say(callSid: string, text: string): FakeCallView {
    if (typeof text !== 'string' || text.trim() === '') throw new ControlError(400, 'text must be a non-empty string');
    return this.utter(callSid, { speech: text });
  }

  digits(callSid: string, digits: string): FakeCallView {
    if (typeof digits !== 'string' || !/^[0-9*#w]+$/.test(digits)) throw new ControlError(400, 'digits must be made of 0-9, * and #');
    return this.utter(callSid, { digits });
  }

  /** The caller's audio (16-bit mono PCM at `sampleRate`) into the call's Media Stream, after what is queued. */
  audio(callSid: string, audio: PcmAudio): FakeCallView {
    if (!Number.isInteger(audio.sampleRate) || audio.sampleRate < 8000 || audio.sampleRate > 48000) throw new ControlError(400, 'sampleRate must be an integer from 8000 to 48000');
    const call = this.live(callSid);
    playIntoCall(call, audio);
    this.state.changed();
    return callView(this.state, call);
  }

  private utter(callSid: string, utterance: Utterance): FakeCallView {
    const call = this.live(callSid);
    this.sim.callerSays(call, utterance);
    return callView(this.state, call);
  }

  async resendStatusCallback(callSid: string, sequenceNumber: number): Promise<StatusCallbackLog> {
    const call = this.live(callSid);
    try {
      return await this.sim.resendStatusCallback(call, sequenceNumber);
    } catch (err) {
      if (err instanceof RangeError) throw new ControlError(404, err.message);
      throw err;
    }
  }

  hangup(callSid: string): FakeCallView {
    const call = this.live(callSid);
    this.sim.callerHangsUp(call);
    return callView(this.state, call);
  }

  script(options: ScriptOptions): void {
    if (typeof options.to !== 'string' || !Array.isArray(options.utterances) || !options.utterances.every((u) => typeof u === 'string')) {
      throw new ControlError(400, 'a script is { to, utterances: string[], hangupAfter? }');
    }
    this.state.scripts.set(options.to, { utterances: options.utterances.map((speech) => ({ speech })), hangupAfter: options.hangupAfter === true });
  }

  inbound(options: InboundOptions): FakeCallView {
    for (const name of ['accountSid', 'from', 'to', 'url'] as const) {
      if (typeof options[name] !== 'string' || options[name] === '') throw new ControlError(400, `${name} is required`);
    }
    try {
      new URL(options.url);
    } catch {
      throw new ControlError(400, `url is not a valid URL: ${options.url}`);
    }
    const authToken = options.authToken ?? this.state.tokens.get(options.accountSid);
    if (!authToken) throw new ControlError(400, `authToken is required: the fake has not seen account ${options.accountSid} yet`);
    const call = this.sim.createInbound({ ...options, authToken, statusCallback: options.statusCallback ?? null });
    return callView(this.state, call);
  }

  recordings(callSid?: string): FakeRecordingView[] {
    return [...this.state.recordings.values()].filter((rec) => !callSid || rec.callSid === callSid).map(recordingView);
  }

  settings(changes: Partial<FakeSettings> = {}): FakeSettings {
    for (const [name, value] of Object.entries(changes)) {
      if (!SETTING_NAMES.includes(name as keyof FakeSettings)) throw new ControlError(400, `unknown setting ${name}; known: ${SETTING_NAMES.join(', ')}`);
      if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw new ControlError(400, `${name} must be a number ≥ 0`);
    }
    Object.assign(this.state.settings, changes);
    return { ...this.state.settings };
  }

  /** Forgets every call, recording and script (settings stay). */
  reset(): void {
    for (const call of this.state.calls.values()) call.generation++;
    this.state.calls.clear();
    this.state.recordings.clear();
    this.state.scripts.clear();
    this.state.changed();
  }

  /** Answers a request under /__fake/ (JSON in and out). */
  async handle(method: string, path: string, query: URLSearchParams, body: Record<string, unknown>): Promise<{ status: number; json: unknown }> {
    try {
      return { status: 200, json: await this.route(method, path, query, body) };
    } catch (err) {
      if (err instanceof ControlError) return { status: err.status, json: { error: { message: err.message } } };
      throw err;
    }
  }

  private async route(method: string, path: string, query: URLSearchParams, body: Record<string, unknown>): Promise<unknown> {
    const route = `${method} ${path}`;
    let m: RegExpExecArray | null;
    if (route === 'GET /__fake/calls') {
      const direction = query.get('direction');
      return {
        calls: this.calls({
          to: query.get('to') ?? undefined,
          from: query.get('from') ?? undefined,
          status: query.get('status') ?? undefined,
          direction: direction === 'inbound' || direction === 'outbound-api' ? direction : undefined,
        }),
      };
    }
    if ((m = /^GET \/__fake\/calls\/([^/]+)$/.exec(route))) return this.call(m[1]!);
    if ((m = /^POST \/__fake\/calls\/([^/]+)\/say$/.exec(route))) return this.say(m[1]!, body.text as string);
    if ((m = /^POST \/__fake\/calls\/([^/]+)\/digits$/.exec(route))) return this.digits(m[1]!, body.digits as string);
    if ((m = /^POST \/__fake\/calls\/([^/]+)\/hangup$/.exec(route))) return this.hangup(m[1]!);
    if ((m = /^POST \/__fake\/calls\/([^/]+)\/audio$/.exec(route))) {
      if (typeof body.pcm !== 'string' || typeof body.sampleRate !== 'number') throw new ControlError(400, 'pcm (base64 16-bit little-endian mono) and sampleRate are required');
      const bytes = Buffer.from(body.pcm, 'base64');
      return this.audio(m[1]!, { sampleRate: body.sampleRate, samples: new Int16Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + (bytes.length & ~1))) });
    }
    if ((m = /^GET \/__fake\/streams\/([^/]+)\/audio$/.exec(route))) {
      const audio = streamAudio(m[1]!);
      return { sampleRate: audio.sampleRate, pcm: Buffer.from(audio.samples.buffer).toString('base64') };
    }
    if ((m = /^POST \/__fake\/calls\/([^/]+)\/status-callbacks\/(\d+)\/resend$/.exec(route))) return this.resendStatusCallback(m[1]!, Number(m[2]));
    if (route === 'POST /__fake/script') {
      this.script(body as unknown as ScriptOptions);
      return { scripted: body.to };
    }
    if (route === 'POST /__fake/inbound') return this.inbound(body as unknown as InboundOptions);
    if (route === 'GET /__fake/recordings') return { recordings: this.recordings(query.get('callSid') ?? undefined) };
    if (route === 'GET /__fake/settings') return this.settings();
    if (route === 'POST /__fake/settings') return this.settings(body as Partial<FakeSettings>);
    if (route === 'POST /__fake/reset') {
      this.reset();
      return { reset: true };
    }
    throw new ControlError(404, `no control route ${route}`);
  }
}
