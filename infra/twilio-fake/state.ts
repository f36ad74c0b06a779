// The Twilio fake's state: its settings, the calls and recordings it holds, the auth token last
// seen per account, the scripted callers, and the one change signal that every wait (a ringing
// phone, a <Gather> listening, a test's waitForCall) wakes on.
import { EventEmitter } from 'node:events';
import type { StreamLog } from './media-streams';

export interface FakeSettings {
  /** From the REST create (`queued`) to `initiated`. @default 10 */
  initiateMs: number;
  /** From `initiated` to `ringing` (and to `busy`/`failed` for those numbers). @default 20 */
  ringMs: number;
  /** From `ringing` to answered (and to `no-answer`, or a 603 rejection). @default 40 */
  answerMs: number;
  /** How long one TwiML second lasts: `<Pause length>`, `<Gather timeout>`, call and recording durations. @default 1000 */
  secondMs: number;
  /** How long a `<Dial>`ed leg stays connected before it hangs up. @default 50 */
  dialMs: number;
  /** From a call's end to its recordings' `completed` (Twilio processes the media first). @default 20 */
  recordingProcessMs: number;
  /** Timeout of each webhook request (Twilio's is 15 s). @default 15000 */
  webhookTimeoutMs: number;
  /** How long the REST create for +15005550003 holds its answer when the client does not give up first. @default 60000 */
  createHangMs: number;
}

export const DEFAULT_SETTINGS: FakeSettings = {
  initiateMs: 10,
  ringMs: 20,
  answerMs: 40,
  secondMs: 1000,
  dialMs: 50,
  recordingProcessMs: 20,
  webhookTimeoutMs: 15_000,
  createHangMs: 60_000,
};

export type CallStatus = 'queued' | 'ringing' | 'in-progress' | 'canceled' | 'completed' | 'failed' | 'busy' | 'no-answer';
export const TERMINAL_STATUSES: readonly CallStatus[] = ['canceled', 'completed', 'failed', 'busy', 'no-answer'];
export type HttpMethod = 'GET' | 'POST';

/** What the caller says or keys in next, consumed by `<Gather>` (and `<Record>`). */
export type Utterance = { speech: string } | { digits: string };

/** A webhook the fake sent, with what came back. */
export interface WebhookLog {
  url: string;
  method: HttpMethod;
  params: Record<string, string>;
  /** The HTTP status of the answer; null while in flight, 0 when no answer came (refused, timed out). */
  responseStatus: number | null;
  error?: string;
}

export interface StatusCallbackLog extends WebhookLog {
  /** The StatusCallbackEvent it belongs to: initiated, ringing, answered or completed. */
  event: string;
  callStatus: string;
  sequenceNumber: number;
  /** Set on a copy sent again on request (a duplicate or late delivery), not by the call itself. */
  resent?: true;
}

export interface TwimlRequestLog extends WebhookLog {
  /** The TwiML that came back (or was given inline). */
  twiml: string | null;
}

export interface DialLog {
  number: string;
  attributes: Record<string, string>;
  at: string;
}

export interface FakeCall {
  sid: string;
  accountSid: string;
  /** The auth token the call was created with (inbound: the one given); it signs the call's webhooks. */
  authToken: string;
  to: string;
  from: string;
  direction: 'outbound-api' | 'inbound';
  status: CallStatus;
  answeredBy: string | null;
  dateCreated: Date;
  dateUpdated: Date;
  /** When it started (dialing, for an outbound call; Twilio's start_time). */
  startTime: Date | null;
  /** When it was answered: the call's duration counts from here. */
  answeredAt: Date | null;
  endTime: Date | null;
  durationSec: number;
  url: string | null;
  method: HttpMethod;
  twiml: string | null;
  statusCallback: string | null;
  statusCallbackMethod: HttpMethod;
  statusCallbackEvents: Set<string>;
  machineDetection: string | null;
  asyncAmd: boolean;
  asyncAmdStatusCallback: string | null;
  record: boolean;
  recordingChannels: 1 | 2;
  recordingStatusCallback: string | null;
  recordingStatusCallbackMethod: HttpMethod;
  recordingStatusCallbackEvents: Set<string>;
  sipResponseCode: number | null;
  sequenceNumber: number;
  /** The caller's next utterances. */
  queue: Utterance[];
  /** The caller hangs up at the first <Gather> that finds the queue empty. */
  hangupWhenQueueEmpty: boolean;
  /** Bumped by every redirect and by the end of the call: a running TwiML document stops when it changes. */
  generation: number;
  redirect: { url: string; method: HttpMethod } | { twiml: string } | null;
  said: string[];
  heard: string[];
  dialed: string | null;
  dials: DialLog[];
  played: string[];
  statusCallbacks: StatusCallbackLog[];
  twimlRequests: TwimlRequestLog[];
  /** The Media Streams <Connect><Stream> opened, in order (media-streams.ts). */
  streams: StreamLog[];
  recordingSids: string[];
  /** What happened, in order, one line each. */
  events: string[];
  errors: string[];
  /** Status callbacks are delivered one after another, in order. */
  callbackChain: Promise<void>;
}

export type RecordingStatus = 'in-progress' | 'paused' | 'stopped' | 'processing' | 'completed' | 'absent';
export type RecordingSource = 'OutboundAPI' | 'StartCallRecordingAPI' | 'StartCallRecordingTwiML' | 'RecordVerb' | 'DialVerb';

export interface FakeRecording {
  sid: string;
  accountSid: string;
  callSid: string;
  authToken: string;
  channels: 1 | 2;
  source: RecordingSource;
  track: string;
  status: RecordingStatus;
  dateCreated: Date;
  dateUpdated: Date;
  startTime: Date;
  endTime: Date | null;
  durationSec: number | null;
  statusCallback: string | null;
  statusCallbackMethod: HttpMethod;
  statusCallbackEvents: Set<string>;
  callbacks: WebhookLog[];
  deleted: boolean;
}

export interface CallScript {
  utterances: Utterance[];
  hangupAfter: boolean;
}

export class FakeState {
  readonly settings: FakeSettings;
  readonly calls = new Map<string, FakeCall>();
  readonly recordings = new Map<string, FakeRecording>();
  /** The auth token last used per account. */
  readonly tokens = new Map<string, string>();
  /** Scripted callers for the next call to a number. */
  readonly scripts = new Map<string, CallScript>();
  /** Webhooks in flight, and the short waits that lead to one (settled() and close() wait for them). */
  readonly pending = new Set<Promise<unknown>>();
  /** Calls being simulated (close() ends them and waits). */
  readonly running = new Set<Promise<unknown>>();
  private readonly changes = new EventEmitter();
  private readonly timers = new Set<NodeJS.Timeout>();
  closed = false;

  constructor(settings: Partial<FakeSettings> = {}) {
    this.settings = { ...DEFAULT_SETTINGS, ...settings };
    this.changes.setMaxListeners(0);
  }

  /** Something changed: wake every wait. */
  changed(): void {
    this.changes.emit('change');
  }

  /**
   * Resolves with true once `done()` holds (checked now and at every change), or false after
   * `ms` (never, when ms is Infinity) or when the fake closes.
   */
  waitUntil(done: () => boolean, ms: number): Promise<boolean> {
    if (done()) return Promise.resolve(true);
    if (this.closed) return Promise.resolve(false);
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const finish = (value: boolean) => {
        this.changes.off('change', check);
        if (timer) {
          clearTimeout(timer);
          this.timers.delete(timer);
        }
        resolve(value);
      };
      const check = () => {
        if (done()) finish(true);
        else if (this.closed) finish(false);
      };
      this.changes.on('change', check);
      if (Number.isFinite(ms)) {
        timer = setTimeout(() => finish(done()), Math.max(0, ms));
        this.timers.add(timer);
      }
    });
  }

  /** `ms` of simulated time, cut short (false) when `interrupted()` becomes true. */
  async sleep(ms: number, interrupted: () => boolean): Promise<boolean> {
    return !(await this.waitUntil(interrupted, ms));
  }

  /** Keeps track of a webhook (or a short wait before one) so settled() and close() can wait for it. */
  track<T>(work: Promise<T>): Promise<T> {
    return this.keep(this.pending, work);
  }

  /** Keeps track of a call's simulation, which may wait for a long time, so close() can wait for it. */
  run<T>(work: Promise<T>): Promise<T> {
    return this.keep(this.running, work);
  }

  private keep<T>(set: Set<Promise<unknown>>, work: Promise<T>): Promise<T> {
    set.add(work);
    void work.finally(() => set.delete(work)).catch(() => undefined);
    return work;
  }

  close(): void {
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.changed();
  }
}

export const isEnded = (call: FakeCall) => TERMINAL_STATUSES.includes(call.status);
