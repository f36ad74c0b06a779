// The Twilio fake's call simulation: an outbound call goes queued → initiated → ringing →
// answered (or busy, no-answer, failed, a 603 rejection, a machine, or rings until canceled, by
// its destination number), with signed status callbacks as Twilio sends them; an answered call
// fetches its TwiML and follows it (<Say>, <Gather input="speech"> fed from the caller's queue,
// <Pause>, <Redirect>, <Hangup>, <Dial>, <Record>, <Start><Recording>, <Play>), until it hangs
// up, the caller hangs up, the REST API ends or redirects it, or the document runs out.
import {
  type CallStatus,
  type FakeCall,
  type FakeState,
  type HttpMethod,
  isEnded,
  type StatusCallbackLog,
  type TwimlRequestLog,
  type Utterance,
} from './state';
import { API_VERSION, newSid, recordingMediaUrl, rfc2822, TwilioApiError } from './resources';
import { channelsOf, recordingEvents, startRecording, stopCallRecordings, stopRecording } from './recordings';
import { methodOf, parseTwiml, seconds, TwimlError, type TwimlNode } from './twiml';
import { sendWebhook } from './webhooks';
import { runStream } from './media-streams';

/** Destination numbers with a fixed fate (docs/telephony.md); every other number is answered by a person. */
export const SPECIAL_NUMBERS = {
  /** REST create refused: 400, Twilio code 21211 (invalid 'To' number). */
  invalid: '+15005550001',
  /** REST create answers 500 (Twilio code 20500): a provider failure, safe to retry; no call exists. */
  providerError: '+15005550002',
  /** REST create accepted, but its HTTP answer is held past the client's timeout; the call exists. */
  createTimeout: '+15005550003',
  /** Busy (SipResponseCode 486). */
  busy: '+15005550010',
  /** Rings, then no-answer (SipResponseCode 487). */
  noAnswer: '+15005550011',
  /** Failed (SipResponseCode 404). */
  failed: '+15005550012',
  /** Rings, then rejected: busy with SipResponseCode 603. */
  rejected: '+15005550013',
  /** Answered by an answering machine (AnsweredBy machine_start, or machine_end_beep with DetectMessageEnd). */
  machine: '+15005550014',
  /** Rings until canceled; never answered. */
  ringsForever: '+15005550015',
} as const;

type Outcome = 'human' | 'machine' | 'busy' | 'no-answer' | 'failed' | 'rejected' | 'never';

function outcomeFor(to: string): Outcome {
  switch (to) {
    case SPECIAL_NUMBERS.busy:
      return 'busy';
    case SPECIAL_NUMBERS.noAnswer:
      return 'no-answer';
    case SPECIAL_NUMBERS.failed:
      return 'failed';
    case SPECIAL_NUMBERS.rejected:
      return 'rejected';
    case SPECIAL_NUMBERS.machine:
      return 'machine';
    case SPECIAL_NUMBERS.ringsForever:
      return 'never';
    default:
      return 'human';
  }
}

export interface CreateCallInput {
  accountSid: string;
  authToken: string;
  to: string;
  from: string;
  url: string | null;
  method: HttpMethod;
  twiml: string | null;
  statusCallback: string | null;
  statusCallbackMethod: HttpMethod;
  statusCallbackEvents: string[];
  machineDetection: string | null;
  asyncAmd: boolean;
  asyncAmdStatusCallback: string | null;
  record: boolean;
  recordingChannels: string | undefined;
  recordingStatusCallback: string | null;
  recordingStatusCallbackMethod: HttpMethod;
  recordingStatusCallbackEvents: string[];
}

export interface InboundCallInput {
  accountSid: string;
  authToken: string;
  from: string;
  to: string;
  /** The number's voice URL. */
  url: string;
  method?: HttpMethod;
  statusCallback?: string | null;
  statusCallbackMethod?: HttpMethod;
  /** Default for a number's status callback: completed only. */
  statusCallbackEvents?: string[];
  utterances?: string[];
  hangupAfter?: boolean;
}

export interface UpdateCallInput {
  status?: string;
  url?: string;
  method?: HttpMethod;
  twiml?: string;
  statusCallback?: string;
  statusCallbackMethod?: HttpMethod;
}

/** A TwiML document to run: fetched from a URL (with extra params, e.g. SpeechResult) or given inline. */
type Source = { url: string; method: HttpMethod; extra?: Record<string, string> } | { twiml: string; baseUrl: string | null };

/** StatusCallbackEvent values (repeated or space-separated), `completed` when none. */
function callbackEvents(values: string[]): Set<string> {
  const events = values.flatMap((v) => v.split(/[\s,]+/)).filter(Boolean);
  return new Set(events.length > 0 ? events : ['completed']);
}

function resolveUrl(target: string, base: string | null): string | null {
  try {
    return new URL(target, base ?? undefined).toString();
  } catch {
    return null;
  }
}

export class CallSimulator {
  constructor(private readonly state: FakeState) {}

  private newCall(input: Omit<CreateCallInput, 'recordingChannels'> & { direction: FakeCall['direction']; status: CallStatus; recordingChannels: 1 | 2 }): FakeCall {
    const now = new Date();
    const call: FakeCall = {
      sid: newSid('CA'),
      accountSid: input.accountSid,
      authToken: input.authToken,
      to: input.to,
      from: input.from,
      direction: input.direction,
      status: input.status,
      answeredBy: null,
      dateCreated: now,
      dateUpdated: now,
      startTime: input.direction === 'inbound' ? now : null,
      answeredAt: null,
      endTime: null,
      durationSec: 0,
      url: input.url,
      method: input.method,
      twiml: input.twiml,
      statusCallback: input.statusCallback,
      statusCallbackMethod: input.statusCallbackMethod,
      statusCallbackEvents: callbackEvents(input.statusCallbackEvents),
      machineDetection: input.machineDetection,
      asyncAmd: input.asyncAmd,
      asyncAmdStatusCallback: input.asyncAmdStatusCallback,
      record: input.record,
      recordingChannels: input.recordingChannels,
      recordingStatusCallback: input.recordingStatusCallback,
      recordingStatusCallbackMethod: input.recordingStatusCallbackMethod,
      recordingStatusCallbackEvents: recordingEvents(input.recordingStatusCallbackEvents),
      sipResponseCode: null,
      sequenceNumber: 0,
      queue: [],
      hangupWhenQueueEmpty: false,
      generation: 0,
      redirect: null,
      said: [],
      heard: [],
      dialed: null,
      dials: [],
      played: [],
      statusCallbacks: [],
      twimlRequests: [],
      streams: [],
      recordingSids: [],
      events: [],
      errors: [],
      callbackChain: Promise.resolve(),
    };
    this.state.calls.set(call.sid, call);
    const script = this.state.scripts.get(input.to);
    if (script) {
      this.state.scripts.delete(input.to);
      call.queue.push(...script.utterances);
      call.hangupWhenQueueEmpty = script.hangupAfter;
    }
    return call;
  }

  /** REST create: the call is `queued`, and runs on its own from here. */
  createOutbound(input: CreateCallInput): FakeCall {
    const call = this.newCall({ ...input, direction: 'outbound-api', status: 'queued', recordingChannels: channelsOf(input.recordingChannels) });
    call.events.push(`queued: to ${call.to} from ${call.from}`);
    this.state.changed();
    void this.state.run(this.runOutbound(call, outcomeFor(call.to)));
    return call;
  }

  /** A call to one of the application's numbers: its voice URL is asked for TwiML (CallStatus ringing), which answers it. */
  createInbound(input: InboundCallInput): FakeCall {
    const call = this.newCall({
      accountSid: input.accountSid,
      authToken: input.authToken,
      to: input.to,
      from: input.from,
      url: input.url,
      method: input.method ?? 'POST',
      twiml: null,
      statusCallback: input.statusCallback ?? null,
      statusCallbackMethod: input.statusCallbackMethod ?? 'POST',
      statusCallbackEvents: input.statusCallbackEvents ?? [],
      machineDetection: null,
      asyncAmd: false,
      asyncAmdStatusCallback: null,
      record: false,
      recordingStatusCallback: null,
      recordingStatusCallbackMethod: 'POST',
      recordingStatusCallbackEvents: [],
      direction: 'inbound',
      status: 'ringing',
      recordingChannels: 1,
    });
    if (input.utterances) call.queue.push(...input.utterances.map((speech) => ({ speech })));
    if (input.hangupAfter !== undefined) call.hangupWhenQueueEmpty = input.hangupAfter;
    call.events.push(`ringing: inbound from ${call.from} to ${call.to}`);
    this.state.changed();
    this.statusEvent(call, 'ringing', 'ringing');
    void this.state.run(this.runTwiml(call, { url: input.url, method: call.method }));
    return call;
  }

  /** REST update: cancel, hang up, or redirect to new TwiML. */
  update(call: FakeCall, input: UpdateCallInput): void {
    if (isEnded(call)) throw new TwilioApiError(400, 21220, 'Call is not in-progress. Cannot redirect.');
    if (input.statusCallback !== undefined) call.statusCallback = input.statusCallback;
    if (input.statusCallbackMethod) call.statusCallbackMethod = input.statusCallbackMethod;
    if (input.status !== undefined) {
      if (input.status === 'canceled') {
        // Canceling reaches a queued or ringing call only; an answered call goes on.
        if (call.status !== 'in-progress') this.end(call, 'canceled', 487, 'canceled through the REST API');
      } else if (input.status === 'completed') {
        if (call.status === 'in-progress') this.end(call, 'completed', 200, 'hung up through the REST API');
        else this.end(call, 'canceled', 487, 'ended through the REST API before it was answered');
      } else {
        throw new TwilioApiError(400, 21218, `Invalid Status: ${input.status}. Status can be canceled or completed`);
      }
      return;
    }
    if (input.twiml !== undefined || input.url !== undefined) {
      if (call.status !== 'in-progress') throw new TwilioApiError(400, 21220, 'Call is not in-progress. Cannot redirect.');
      call.redirect = input.twiml !== undefined ? { twiml: input.twiml } : { url: input.url!, method: input.method ?? 'POST' };
      call.generation++;
      call.events.push(`redirected through the REST API${input.url ? ` to ${input.url}` : ' to inline TwiML'}`);
      call.dateUpdated = new Date();
      this.state.changed();
    }
  }

  /** The caller's next utterance (or keys). */
  callerSays(call: FakeCall, utterance: Utterance): void {
    call.queue.push(utterance);
    call.events.push('speech' in utterance ? `caller queued: ${utterance.speech}` : `caller queued digits: ${utterance.digits}`);
    this.state.changed();
  }

  /** The caller (or, before an outbound call is answered, the callee) hangs up. */
  callerHangsUp(call: FakeCall): void {
    if (isEnded(call)) return;
    if (call.status === 'in-progress') this.end(call, 'completed', 200, 'the caller hung up');
    else if (call.direction === 'inbound') this.end(call, 'canceled', 487, 'the caller hung up before an answer');
    else this.end(call, 'busy', 486, 'the callee declined');
  }

  /**
   * Sends a status callback of the call again, as it was (same params, SequenceNumber and
   * Timestamp, signed again): a duplicate, or a late delivery once newer ones went out.
   */
  async resendStatusCallback(call: FakeCall, sequenceNumber: number): Promise<StatusCallbackLog> {
    const original = call.statusCallbacks.find((c) => c.sequenceNumber === sequenceNumber && !c.resent);
    if (!original) throw new RangeError(`call ${call.sid} sent no status callback with SequenceNumber ${sequenceNumber}`);
    const log: StatusCallbackLog = { ...original, params: { ...original.params }, responseStatus: null, resent: true };
    delete log.error;
    call.statusCallbacks.push(log);
    this.state.changed();
    await this.state.track(sendWebhook({ url: log.url, method: log.method, params: log.params, authToken: call.authToken, timeoutMs: this.state.settings.webhookTimeoutMs }, log));
    this.state.changed();
    return log;
  }

  // ---- the call's life ----

  private stopped(call: FakeCall): boolean {
    return isEnded(call) || this.state.closed;
  }

  /** Waits `ms`; false when the call ended (or the fake closed) meanwhile. */
  private async hold(call: FakeCall, ms: number): Promise<boolean> {
    await this.state.sleep(ms, () => this.stopped(call));
    return !this.stopped(call);
  }

  private async runOutbound(call: FakeCall, outcome: Outcome): Promise<void> {
    const s = this.state.settings;
    if (!(await this.hold(call, s.initiateMs))) return;
    call.startTime = new Date();
    call.events.push('initiated');
    this.statusEvent(call, 'initiated', 'initiated');
    if (!(await this.hold(call, s.ringMs))) return;
    if (outcome === 'busy') return this.end(call, 'busy', 486, 'the line is busy');
    if (outcome === 'failed') return this.end(call, 'failed', 404, 'the number could not be reached');
    this.setStatus(call, 'ringing');
    this.statusEvent(call, 'ringing', 'ringing');
    if (outcome === 'never') return; // rings until canceled
    if (!(await this.hold(call, s.answerMs))) return;
    if (outcome === 'no-answer') return this.end(call, 'no-answer', 487, 'nobody answered');
    if (outcome === 'rejected') return this.end(call, 'busy', 603, 'the callee rejected the call (603 Decline)');
    this.answer(call, outcome === 'machine');
    await this.runTwiml(call, call.twiml !== null ? { twiml: call.twiml, baseUrl: null } : { url: call.url!, method: call.method });
  }

  private setStatus(call: FakeCall, status: CallStatus): void {
    call.status = status;
    call.dateUpdated = new Date();
    call.events.push(status);
    this.state.changed();
  }

  private answer(call: FakeCall, byMachine: boolean): void {
    call.answeredAt = new Date();
    call.startTime ??= call.answeredAt;
    if (call.machineDetection) {
      const answeredBy = byMachine ? (call.machineDetection === 'DetectMessageEnd' ? 'machine_end_beep' : 'machine_start') : 'human';
      if (call.asyncAmd) void this.state.run(this.asyncAmdResult(call, answeredBy));
      else call.answeredBy = answeredBy;
    }
    this.setStatus(call, 'in-progress');
    call.events[call.events.length - 1] = `in-progress: answered${byMachine ? ' by a machine' : ''}${call.answeredBy ? ` (AnsweredBy ${call.answeredBy})` : ''}`;
    this.statusEvent(call, 'answered', 'in-progress');
    if (call.record) {
      startRecording(this.state, call, {
        source: 'OutboundAPI',
        channels: call.recordingChannels,
        statusCallback: call.recordingStatusCallback,
        statusCallbackMethod: call.recordingStatusCallbackMethod,
        statusCallbackEvents: call.recordingStatusCallbackEvents,
      });
    }
  }

  /** AsyncAmd: the call goes on at once, and the verdict is posted to AsyncAmdStatusCallback. */
  private async asyncAmdResult(call: FakeCall, answeredBy: string): Promise<void> {
    if (!(await this.hold(call, this.state.settings.answerMs))) return;
    call.answeredBy = answeredBy;
    call.events.push(`AnsweredBy ${answeredBy} (async)`);
    this.state.changed();
    if (!call.asyncAmdStatusCallback) return;
    const params = { AccountSid: call.accountSid, CallSid: call.sid, AnsweredBy: answeredBy, MachineDetectionDuration: String(this.state.settings.answerMs) };
    await this.state.track(sendWebhook({ url: call.asyncAmdStatusCallback, method: 'POST', params, authToken: call.authToken, timeoutMs: this.state.settings.webhookTimeoutMs }));
  }

  /** Ends the call (once): its status, its recordings, and the `completed` status callback. */
  private end(call: FakeCall, status: CallStatus, sipResponseCode: number, why: string): void {
    if (isEnded(call)) return;
    const now = new Date();
    call.status = status;
    call.endTime = now;
    call.dateUpdated = now;
    call.sipResponseCode = sipResponseCode;
    call.durationSec = call.answeredAt ? Math.round((now.getTime() - call.answeredAt.getTime()) / this.state.settings.secondMs) : 0;
    call.generation++;
    call.redirect = null;
    call.events.push(`${status}: ${why}`);
    stopCallRecordings(this.state, call);
    this.statusEvent(call, 'completed', status);
    this.state.changed();
  }

  /** The params of every request about the call (TwiML fetches and status callbacks alike). */
  private callParams(call: FakeCall, callStatus: string): Record<string, string> {
    const params: Record<string, string> = {
      AccountSid: call.accountSid,
      ApiVersion: API_VERSION,
      CallSid: call.sid,
      CallStatus: callStatus,
      Called: call.to,
      Caller: call.from,
      Direction: call.direction,
      From: call.from,
      To: call.to,
    };
    if (call.answeredBy && call.machineDetection) params.AnsweredBy = call.answeredBy;
    return params;
  }

  /** Posts a status callback when the call subscribed to `event`; callbacks go out one after another. */
  private statusEvent(call: FakeCall, event: 'initiated' | 'ringing' | 'answered' | 'completed', callStatus: string): void {
    if (!call.statusCallback || !call.statusCallbackEvents.has(event)) return;
    const params: Record<string, string> = {
      ...this.callParams(call, callStatus),
      Timestamp: rfc2822(new Date()),
      SequenceNumber: String(call.sequenceNumber++),
      CallbackSource: 'call-progress-events',
    };
    if (event === 'completed') {
      params.CallDuration = String(call.durationSec);
      params.Duration = String(Math.ceil(call.durationSec / 60));
      if (call.sipResponseCode !== null) params.SipResponseCode = String(call.sipResponseCode);
    }
    const log: StatusCallbackLog = { event, callStatus, sequenceNumber: Number(params.SequenceNumber), url: call.statusCallback, method: call.statusCallbackMethod, params, responseStatus: null };
    call.statusCallbacks.push(log);
    const request = { url: call.statusCallback, method: call.statusCallbackMethod, params, authToken: call.authToken, timeoutMs: this.state.settings.webhookTimeoutMs };
    call.callbackChain = this.state.track(
      call.callbackChain.then(async () => {
        await sendWebhook(request, log);
        this.state.changed();
      }),
    );
  }

  // ---- TwiML ----

  private fail(call: FakeCall, message: string): void {
    call.errors.push(message);
    call.events.push(`error: ${message}`);
    this.state.changed();
  }

  /** Runs documents one after another (each verb's result may name the next) until the call ends. */
  private async runTwiml(call: FakeCall, first: Source): Promise<void> {
    let next: Source | null = first;
    while (next && !this.stopped(call)) {
      const generation = call.generation;
      const doc = await this.load(call, next);
      if (this.stopped(call)) return;
      if (call.generation !== generation) {
        next = this.takeRedirect(call);
        continue;
      }
      if (!doc) {
        // Twilio says "an application error has occurred" and hangs up.
        this.end(call, 'completed', 200, 'application error');
        return;
      }
      if (call.status === 'ringing') {
        // An inbound call is answered by its first TwiML, or turned away by <Reject>.
        const reject = doc.verbs[0]?.name === 'Reject' ? doc.verbs[0] : null;
        if (reject) {
          this.end(call, reject.attributes.reason === 'busy' ? 'busy' : 'no-answer', reject.attributes.reason === 'busy' ? 486 : 603, 'rejected by <Reject>');
          return;
        }
        this.answer(call, false);
      }
      next = await this.execute(call, doc.verbs, doc.baseUrl, generation);
      if (this.stopped(call)) return;
      if (call.generation !== generation) next = this.takeRedirect(call);
    }
    if (!this.stopped(call)) this.end(call, 'completed', 200, 'the TwiML ran out');
  }

  private takeRedirect(call: FakeCall): Source | null {
    const redirect = call.redirect;
    call.redirect = null;
    if (!redirect) return null;
    return 'twiml' in redirect ? { twiml: redirect.twiml, baseUrl: null } : { url: redirect.url, method: redirect.method };
  }

  /** Fetches (or takes) a document and parses it; null on a failed fetch or bad TwiML (logged). */
  private async load(call: FakeCall, source: Source): Promise<{ verbs: TwimlNode[]; baseUrl: string | null } | null> {
    let xml: string;
    let baseUrl: string | null;
    if ('twiml' in source) {
      xml = source.twiml;
      baseUrl = source.baseUrl;
      call.events.push('TwiML given inline');
    } else {
      const params = { ...this.callParams(call, call.status), ...source.extra };
      const log: TwimlRequestLog = { url: source.url, method: source.method, params, responseStatus: null, twiml: null };
      call.twimlRequests.push(log);
      this.state.changed();
      const res = await this.state.track(sendWebhook({ url: source.url, method: source.method, params, authToken: call.authToken, timeoutMs: this.state.settings.webhookTimeoutMs }, log));
      log.twiml = res.body;
      this.state.changed();
      if (res.status < 200 || res.status >= 300) {
        this.fail(call, `11200 HTTP retrieval failure: ${source.method} ${source.url} answered ${res.status || res.error}`);
        return null;
      }
      xml = res.body;
      baseUrl = source.url;
    }
    try {
      return { verbs: parseTwiml(xml), baseUrl };
    } catch (err) {
      this.fail(call, `12100 ${err instanceof TwimlError ? err.message : String(err)}`);
      return null;
    }
  }

  private say(call: FakeCall, verb: TwimlNode): void {
    call.said.push(verb.text);
    call.events.push(`said: ${verb.text}`);
    this.state.changed();
  }

  private play(call: FakeCall, verb: TwimlNode): void {
    call.played.push(verb.text);
    call.events.push(`played: ${verb.text}`);
    this.state.changed();
  }

  /** Runs a document's verbs; returns the next document to fetch, or null when the call should end. */
  private async execute(call: FakeCall, verbs: TwimlNode[], baseUrl: string | null, generation: number): Promise<Source | null> {
    const live = () => !this.stopped(call) && call.generation === generation;
    const secondMs = this.state.settings.secondMs;
    for (const verb of verbs) {
      if (!live()) return null;
      switch (verb.name) {
        case 'Say':
          this.say(call, verb);
          break;
        case 'Play':
          this.play(call, verb);
          break;
        case 'Pause':
          await this.state.sleep(seconds(verb, 'length', 1) * secondMs, () => !live());
          break;
        case 'Gather': {
          const next = await this.gather(call, verb, baseUrl, live);
          if (next !== 'continue') return next;
          break;
        }
        case 'Redirect': {
          const url = resolveUrl(verb.text, baseUrl);
          if (!url) {
            this.fail(call, `<Redirect> to an invalid URL: ${verb.text}`);
            return null;
          }
          call.events.push(`redirect: ${url}`);
          return { url, method: methodOf(verb.attributes.method) };
        }
        case 'Hangup':
        case 'Reject':
          this.end(call, 'completed', 200, `<${verb.name}>`);
          return null;
        case 'Dial': {
          const next = await this.dial(call, verb, baseUrl, live);
          if (next !== 'continue') return next;
          break;
        }
        case 'Record': {
          const next = await this.recordVerb(call, verb, baseUrl, live);
          if (next !== 'continue') return next;
          break;
        }
        case 'Start':
          this.start(call, verb, baseUrl);
          break;
        case 'Connect': {
          // <Connect><Stream>: the call's audio on a Media Stream until the server ends it.
          if ((await runStream(this.state, call, verb, live)) === null) return null;
          break;
        }
        case 'Stop':
          for (const noun of verb.children) {
            if (noun.name !== 'Recording') continue;
            for (const sid of call.recordingSids) {
              const rec = this.state.recordings.get(sid);
              if (rec?.source === 'StartCallRecordingTwiML') stopRecording(this.state, rec);
            }
          }
          break;
        default:
          call.events.push(`<${verb.name}> is not simulated; skipped`);
          this.state.changed();
      }
    }
    return null;
  }

  /**
   * <Gather>: says its nested verbs, then takes the caller's next utterance that fits its
   * `input` (speech and/or dtmf, dtmf by default) and posts it to `action` (the document's own
   * URL by default) as SpeechResult + Confidence, or Digits. Nothing within `timeout` seconds
   * (5 by default): the next verb, or `action` with no result when actionOnEmptyResult="true".
   * A scripted caller whose utterances have run out hangs up here.
   */
  private async gather(call: FakeCall, verb: TwimlNode, baseUrl: string | null, live: () => boolean): Promise<Source | null | 'continue'> {
    for (const child of verb.children) {
      if (!live()) return null;
      if (child.name === 'Say') this.say(call, child);
      else if (child.name === 'Play') this.play(call, child);
      else if (child.name === 'Pause') await this.state.sleep(seconds(child, 'length', 1) * this.state.settings.secondMs, () => !live());
    }
    if (!live()) return null;
    const inputs = (verb.attributes.input ?? 'dtmf').split(/\s+/);
    const fits = (u: Utterance) => ('speech' in u ? inputs.includes('speech') : inputs.includes('dtmf'));
    if (!call.queue.some(fits) && call.hangupWhenQueueEmpty) {
      this.callerHangsUp(call);
      return null;
    }
    call.events.push(`gathering ${inputs.join(' ')}`);
    this.state.changed();
    await this.state.waitUntil(() => !live() || call.queue.some(fits), seconds(verb, 'timeout', 5) * this.state.settings.secondMs);
    if (!live()) return null;
    const action = verb.attributes.action ? resolveUrl(verb.attributes.action, baseUrl) : baseUrl;
    const method = methodOf(verb.attributes.method);
    const index = call.queue.findIndex(fits);
    if (index < 0) {
      call.events.push('gather timed out');
      this.state.changed();
      if (verb.attributes.actionOnEmptyResult === 'true' && action) return { url: action, method };
      return 'continue';
    }
    const [utterance] = call.queue.splice(index, 1) as [Utterance];
    let extra: Record<string, string>;
    if ('speech' in utterance) {
      call.heard.push(utterance.speech);
      call.events.push(`heard: ${utterance.speech}`);
      extra = { SpeechResult: utterance.speech, Confidence: '0.92' };
    } else {
      call.events.push(`keyed: ${utterance.digits}`);
      extra = { Digits: utterance.digits, FinishedOnKey: '' };
    }
    this.state.changed();
    if (!action) {
      this.fail(call, '<Gather> has no action and the TwiML has no URL to post to');
      return 'continue';
    }
    return { url: action, method, extra };
  }

  /** <Dial>: logged; the dialed leg stays up `dialMs`, then `action` (with DialCallStatus) or the next verb. */
  private async dial(call: FakeCall, verb: TwimlNode, baseUrl: string | null, live: () => boolean): Promise<Source | null | 'continue'> {
    const number = verb.children.find((c) => c.name === 'Number' || c.name === 'Sip' || c.name === 'Client')?.text ?? verb.text;
    call.dialed = number;
    call.dials.push({ number, attributes: verb.attributes, at: new Date().toISOString() });
    call.events.push(`dialed: ${number}`);
    const record = verb.attributes.record ?? '';
    if (record.startsWith('record-from')) {
      startRecording(this.state, call, {
        source: 'DialVerb',
        channels: record.endsWith('dual') ? 2 : 1,
        statusCallback: verb.attributes.recordingStatusCallback ? resolveUrl(verb.attributes.recordingStatusCallback, baseUrl) : null,
        statusCallbackMethod: methodOf(verb.attributes.recordingStatusCallbackMethod),
        statusCallbackEvents: recordingEvents(verb.attributes.recordingStatusCallbackEvent ? [verb.attributes.recordingStatusCallbackEvent] : []),
      });
    }
    this.state.changed();
    await this.state.sleep(this.state.settings.dialMs, () => !live());
    if (!live()) return null;
    call.events.push(`dial to ${number} ended`);
    const action = verb.attributes.action ? resolveUrl(verb.attributes.action, baseUrl) : null;
    if (!action) return 'continue';
    const extra = {
      DialCallStatus: 'completed',
      DialCallSid: newSid('CA'),
      DialCallDuration: String(Math.round(this.state.settings.dialMs / this.state.settings.secondMs)),
      DialBridged: 'true',
    };
    return { url: action, method: methodOf(verb.attributes.method), extra };
  }

  /** <Record>: records the caller's next utterance (or silence until `timeout`), then posts RecordingUrl to `action`. */
  private async recordVerb(call: FakeCall, verb: TwimlNode, baseUrl: string | null, live: () => boolean): Promise<Source | null | 'continue'> {
    const rec = startRecording(this.state, call, {
      source: 'RecordVerb',
      channels: 1,
      track: 'inbound',
      statusCallback: verb.attributes.recordingStatusCallback ? resolveUrl(verb.attributes.recordingStatusCallback, baseUrl) : null,
      statusCallbackMethod: methodOf(verb.attributes.recordingStatusCallbackMethod),
      statusCallbackEvents: recordingEvents(verb.attributes.recordingStatusCallbackEvent ? [verb.attributes.recordingStatusCallbackEvent] : []),
    });
    const speaks = () => call.queue.some((u) => 'speech' in u);
    await this.state.waitUntil(() => !live() || speaks(), seconds(verb, 'timeout', 5) * this.state.settings.secondMs);
    if (!live()) return null;
    const index = call.queue.findIndex((u) => 'speech' in u);
    if (index >= 0) {
      const [utterance] = call.queue.splice(index, 1) as [{ speech: string }];
      call.heard.push(utterance.speech);
      call.events.push(`recorded: ${utterance.speech}`);
    }
    stopRecording(this.state, rec);
    const action = verb.attributes.action ? resolveUrl(verb.attributes.action, baseUrl) : baseUrl;
    if (!action) return 'continue';
    const extra = { RecordingUrl: recordingMediaUrl(rec), RecordingSid: rec.sid, RecordingDuration: String(rec.durationSec ?? 0), Digits: 'hangup' };
    return { url: action, method: methodOf(verb.attributes.method), extra };
  }

  /** <Start><Recording>: recording starts and the document goes on; other nouns (<Stream>, …) are logged. */
  private start(call: FakeCall, verb: TwimlNode, baseUrl: string | null): void {
    for (const noun of verb.children) {
      if (noun.name !== 'Recording') {
        call.events.push(`<Start><${noun.name}> is not simulated; skipped`);
        continue;
      }
      startRecording(this.state, call, {
        source: 'StartCallRecordingTwiML',
        channels: channelsOf(noun.attributes.channels),
        track: noun.attributes.track ?? 'both',
        statusCallback: noun.attributes.recordingStatusCallback ? resolveUrl(noun.attributes.recordingStatusCallback, baseUrl) : null,
        statusCallbackMethod: methodOf(noun.attributes.recordingStatusCallbackMethod),
        statusCallbackEvents: recordingEvents(noun.attributes.recordingStatusCallbackEvent ? [noun.attributes.recordingStatusCallbackEvent] : []),
      });
    }
    this.state.changed();
  }
}
