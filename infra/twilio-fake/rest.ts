// The Twilio fake's REST API, under /2010-04-01/Accounts/{AccountSid}/ with HTTP Basic auth
// (AccountSid : AuthToken; any token is taken, and remembered as the one that signs the calls it
// creates): Calls (create, list, fetch, update, delete), a call's Recordings (start, list, fetch,
// stop/pause/resume, delete), the account's Recordings and their media (.wav, .mp3, none: WAV).
// Forms in, snake_case JSON out, errors as Twilio's `{ code, message, more_info, status }`.
import { type CallSimulator, SPECIAL_NUMBERS } from './calls';
import { channelsOf, recordingEvents, recordingMp3, recordingWav, startRecording, stopRecording } from './recordings';
import { accountPath, API_VERSION, callResource, listPage, recordingResource, TwilioApiError } from './resources';
import { type FakeCall, type FakeRecording, type FakeState, type HttpMethod } from './state';

export interface RestRequest {
  method: string;
  /** The path without its query. */
  path: string;
  query: URLSearchParams;
  form: URLSearchParams;
  authorization: string | undefined;
  /** Aborted when the client goes away before the answer. */
  closed: AbortSignal;
}

export type Reply = { status: number; json?: unknown; body?: Buffer; contentType?: string; headers?: Record<string, string> };

const ADDRESS = /^(\+[1-9]\d{1,14}|client:[\w.@-]+|sip:\S+)$/;

const first = (form: URLSearchParams, name: string) => form.get(name) ?? undefined;
const methodParam = (value: string | undefined): HttpMethod => (value?.toUpperCase() === 'GET' ? 'GET' : 'POST');

function notFound(path: string): TwilioApiError {
  return new TwilioApiError(404, 20404, `The requested resource ${path} was not found`);
}

function absoluteUrl(value: string | undefined, param: string, code: number): string | null {
  if (value === undefined || value === '') return null;
  try {
    const url = new URL(value);
    if (url.protocol === 'http:' || url.protocol === 'https:') return value;
  } catch {
    // falls through
  }
  throw new TwilioApiError(400, code, `${param} is not a valid URL: ${value}`);
}

/** The account of a `Basic` header, which must be the account of the path; its token is remembered. */
function authenticate(state: FakeState, authorization: string | undefined, accountSid: string, required: boolean): string | null {
  const m = /^Basic\s+(\S+)$/i.exec(authorization ?? '');
  if (!m) {
    if (!required) return null;
    throw new TwilioApiError(401, 20003, 'Authenticate');
  }
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  const user = colon < 0 ? decoded : decoded.slice(0, colon);
  const token = colon < 0 ? '' : decoded.slice(colon + 1);
  if (user !== accountSid || token === '') throw new TwilioApiError(401, 20003, 'Authenticate');
  state.tokens.set(accountSid, token);
  return token;
}

/**
 * `StartTime>=…`, `StartTime<=…` (as the SDK sends them: `StartTime>`, `StartTime<`) and
 * `StartTime=…` (a day, or an instant): whether a call's start time is within them. A call not
 * started yet has no start time and matches none.
 */
function startTimeFilter(query: URLSearchParams): (start: Date | null) => boolean {
  const bound = (name: string) => {
    const value = query.get(name);
    if (value === null) return null;
    const at = new Date(value);
    if (Number.isNaN(at.getTime())) throw new TwilioApiError(400, 20001, `Invalid ${name}: ${value}`);
    return { value, at };
  };
  const after = bound('StartTime>');
  const before = bound('StartTime<');
  const exact = bound('StartTime');
  if (!after && !before && !exact) return () => true;
  return (start) => {
    if (!start) return false;
    if (after && start < after.at) return false;
    if (before && start > before.at) return false;
    if (exact) {
      const day = /^\d{4}-\d{2}-\d{2}$/.test(exact.value);
      if (day ? start.toISOString().slice(0, 10) !== exact.value : start.getTime() !== exact.at.getTime()) return false;
    }
    return true;
  };
}

export class TwilioRest {
  constructor(
    private readonly state: FakeState,
    private readonly sim: CallSimulator,
  ) {}

  /** Answers a request under /2010-04-01/. */
  async handle(req: RestRequest): Promise<Reply> {
    try {
      return await this.route(req);
    } catch (err) {
      if (err instanceof TwilioApiError) return { status: err.status, json: err.body(), headers: err.status === 401 ? { 'www-authenticate': 'Basic realm="Twilio API"' } : undefined };
      const message = err instanceof Error ? err.message : String(err);
      return { status: 500, json: new TwilioApiError(500, 20500, `An internal server error has occurred: ${message}`).body() };
    }
  }

  private async route(req: RestRequest): Promise<Reply> {
    const m = /^\/2010-04-01\/Accounts\/([^/]+)\/(.+)$/.exec(req.path);
    if (!m) throw notFound(req.path);
    const accountSid = decodeURIComponent(m[1]!);
    const rest = m[2]!;
    const media = /^Recordings\/(RE[0-9a-f]{32})(\.wav|\.mp3)?$/.exec(rest);
    if (media && req.method === 'GET') {
      // Twilio serves media without credentials unless the account asks for them.
      authenticate(this.state, req.authorization, accountSid, false);
      return this.media(req, accountSid, media[1]!, media[2] === '.mp3' ? 'mp3' : 'wav');
    }
    const token = authenticate(this.state, req.authorization, accountSid, true)!;
    const route = `${req.method} ${rest}`;
    let r: RegExpExecArray | null;
    if (route === 'POST Calls.json') return this.createCall(req, accountSid, token);
    if (route === 'GET Calls.json') return this.listCalls(req, accountSid);
    if ((r = /^(GET|POST|DELETE) Calls\/([^/]+)\.json$/.exec(route))) {
      const call = this.call(req, accountSid, r[2]!);
      if (r[1] === 'GET') return { status: 200, json: callResource(call) };
      if (r[1] === 'DELETE') {
        this.state.calls.delete(call.sid);
        this.state.changed();
        return { status: 204 };
      }
      return this.updateCall(req, call);
    }
    if ((r = /^(GET|POST) Calls\/([^/]+)\/Recordings\.json$/.exec(route))) {
      const call = this.call(req, accountSid, r[2]!);
      if (r[1] === 'GET') return this.listRecordings(req, accountSid, (rec) => rec.callSid === call.sid);
      return this.startRecording(req, call);
    }
    if ((r = /^(GET|POST|DELETE) Calls\/([^/]+)\/Recordings\/([^/]+)\.json$/.exec(route))) {
      const call = this.call(req, accountSid, r[2]!);
      const rec = this.recording(req, accountSid, r[3]!);
      if (rec.callSid !== call.sid) throw notFound(req.path);
      return this.recordingAction(req, r[1]!, rec);
    }
    if (route === 'GET Recordings.json') {
      const callSid = req.query.get('CallSid');
      return this.listRecordings(req, accountSid, (rec) => !callSid || rec.callSid === callSid);
    }
    if ((r = /^(GET|DELETE) Recordings\/([^/]+)\.json$/.exec(route))) return this.recordingAction(req, r[1]!, this.recording(req, accountSid, r[2]!));
    throw notFound(req.path);
  }

  private call(req: RestRequest, accountSid: string, sid: string): FakeCall {
    const call = this.state.calls.get(sid);
    if (!call || call.accountSid !== accountSid) throw notFound(req.path);
    return call;
  }

  private recording(req: RestRequest, accountSid: string, sid: string): FakeRecording {
    const rec = this.state.recordings.get(sid);
    if (!rec || rec.accountSid !== accountSid || rec.deleted) throw notFound(req.path);
    return rec;
  }

  private async createCall(req: RestRequest, accountSid: string, authToken: string): Promise<Reply> {
    const form = req.form;
    const to = first(form, 'To');
    const from = first(form, 'From');
    if (!to) throw new TwilioApiError(400, 21201, "No 'To' number is specified");
    if (!from) throw new TwilioApiError(400, 21603, "A 'From' phone number is required.");
    if (to === SPECIAL_NUMBERS.invalid || !ADDRESS.test(to)) throw new TwilioApiError(400, 21211, `Invalid 'To' Phone Number: ${to}`);
    if (!ADDRESS.test(from) || from.startsWith('sip:')) throw new TwilioApiError(400, 21212, `Invalid 'From' Phone Number: ${from}`);
    if (to === SPECIAL_NUMBERS.providerError) throw new TwilioApiError(500, 20500, 'An internal server error has occurred');
    const twiml = first(form, 'Twiml') ?? null;
    const url = absoluteUrl(first(form, 'Url'), 'Url', 21205);
    if (!url && twiml === null) {
      if (first(form, 'ApplicationSid')) throw new TwilioApiError(400, 21205, 'ApplicationSid is not simulated by this fake: give Url or Twiml');
      throw new TwilioApiError(400, 21205, 'Either Url, Twiml or ApplicationSid parameter is required');
    }
    const machineDetection = first(form, 'MachineDetection') ?? null;
    if (machineDetection !== null && machineDetection !== 'Enable' && machineDetection !== 'DetectMessageEnd') {
      throw new TwilioApiError(400, 21626, `Invalid MachineDetection: ${machineDetection}. Use Enable or DetectMessageEnd`);
    }
    const call = this.sim.createOutbound({
      accountSid,
      authToken,
      to,
      from,
      url,
      method: methodParam(first(form, 'Method')),
      twiml,
      statusCallback: absoluteUrl(first(form, 'StatusCallback'), 'StatusCallback', 21609),
      statusCallbackMethod: methodParam(first(form, 'StatusCallbackMethod')),
      statusCallbackEvents: form.getAll('StatusCallbackEvent'),
      machineDetection,
      asyncAmd: first(form, 'AsyncAmd') === 'true',
      asyncAmdStatusCallback: absoluteUrl(first(form, 'AsyncAmdStatusCallback'), 'AsyncAmdStatusCallback', 21609),
      record: first(form, 'Record') === 'true',
      recordingChannels: first(form, 'RecordingChannels'),
      recordingStatusCallback: absoluteUrl(first(form, 'RecordingStatusCallback'), 'RecordingStatusCallback', 21609),
      recordingStatusCallbackMethod: methodParam(first(form, 'RecordingStatusCallbackMethod')),
      recordingStatusCallbackEvents: form.getAll('RecordingStatusCallbackEvent'),
    });
    if (to === SPECIAL_NUMBERS.createTimeout) {
      // The call exists and goes on; the answer is held until the client gives up (or createHangMs).
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.state.settings.createHangMs);
        req.closed.addEventListener('abort', () => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return { status: 201, json: callResource(call) };
  }

  private listCalls(req: RestRequest, accountSid: string): Reply {
    const to = req.query.get('To');
    const from = req.query.get('From');
    const status = req.query.get('Status');
    const startedWithin = startTimeFilter(req.query);
    const calls = [...this.state.calls.values()]
      .filter((c) => c.accountSid === accountSid && (!to || c.to === to) && (!from || c.from === from) && (!status || c.status === status) && startedWithin(c.startTime))
      .reverse();
    return { status: 200, json: listPage('calls', `${accountPath(accountSid)}/Calls.json`, calls.map(callResource)) };
  }

  private updateCall(req: RestRequest, call: FakeCall): Reply {
    const form = req.form;
    this.sim.update(call, {
      status: first(form, 'Status'),
      url: absoluteUrl(first(form, 'Url'), 'Url', 21205) ?? undefined,
      method: methodParam(first(form, 'Method')),
      twiml: first(form, 'Twiml'),
      statusCallback: absoluteUrl(first(form, 'StatusCallback'), 'StatusCallback', 21609) ?? undefined,
      statusCallbackMethod: first(form, 'StatusCallbackMethod') ? methodParam(first(form, 'StatusCallbackMethod')) : undefined,
    });
    return { status: 200, json: callResource(call) };
  }

  private startRecording(req: RestRequest, call: FakeCall): Reply {
    if (call.status !== 'in-progress') throw new TwilioApiError(400, 21220, 'Call is not in-progress. Cannot start a recording.');
    const form = req.form;
    const rec = startRecording(this.state, call, {
      source: 'StartCallRecordingAPI',
      channels: channelsOf(first(form, 'RecordingChannels')),
      track: first(form, 'RecordingTrack') ?? 'both',
      statusCallback: absoluteUrl(first(form, 'RecordingStatusCallback'), 'RecordingStatusCallback', 21609),
      statusCallbackMethod: methodParam(first(form, 'RecordingStatusCallbackMethod')),
      statusCallbackEvents: recordingEvents(form.getAll('RecordingStatusCallbackEvent')),
    });
    return { status: 201, json: recordingResource(rec) };
  }

  private listRecordings(req: RestRequest, accountSid: string, keep: (rec: FakeRecording) => boolean): Reply {
    const recs = [...this.state.recordings.values()].filter((rec) => rec.accountSid === accountSid && !rec.deleted && keep(rec)).reverse();
    return { status: 200, json: listPage('recordings', `/${API_VERSION}${req.path.slice(API_VERSION.length + 1)}`, recs.map(recordingResource)) };
  }

  private recordingAction(req: RestRequest, method: string, rec: FakeRecording): Reply {
    if (method === 'GET') return { status: 200, json: recordingResource(rec) };
    if (method === 'DELETE') {
      rec.deleted = true;
      this.state.changed();
      return { status: 204 };
    }
    const status = first(req.form, 'Status');
    if (status === 'stopped') stopRecording(this.state, rec);
    else if (status === 'paused' && rec.status === 'in-progress') rec.status = 'paused';
    else if (status === 'in-progress' && rec.status === 'paused') rec.status = 'in-progress';
    else if (status !== 'paused' && status !== 'in-progress') throw new TwilioApiError(400, 21218, `Invalid Status: ${status}. Status can be stopped, paused or in-progress`);
    rec.dateUpdated = new Date();
    this.state.changed();
    return { status: 200, json: recordingResource(rec) };
  }

  private media(req: RestRequest, accountSid: string, sid: string, format: 'wav' | 'mp3'): Reply {
    const rec = this.recording(req, accountSid, sid);
    if (rec.status !== 'completed') throw notFound(req.path);
    // A dual recording is mixed down to one channel unless RequestedChannels=2, as Twilio does.
    const channels = rec.channels === 2 && req.query.get('RequestedChannels') === '2' ? 2 : 1;
    const body = format === 'mp3' ? recordingMp3(rec, channels) : recordingWav(rec, channels);
    return { status: 200, body, contentType: format === 'mp3' ? 'audio/mpeg' : 'audio/x-wav' };
  }
}
