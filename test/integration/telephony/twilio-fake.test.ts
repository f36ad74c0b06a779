// The Twilio fake, driven with the real `twilio` SDK (pointed at the fake through its request
// client) against a small HTTP server standing in for the platform's webhooks, which checks the
// X-Twilio-Signature of every request it gets: each special number's status sequence, a spoken
// exchange that follows the TwiML, cancel before answer, hang-ups, redirects, recordings and
// their media, inbound calls, Media Streams (<Connect><Stream>), and Twilio's errors.
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { SPECIAL_NUMBERS, startTwilioFake, type TwilioFake } from '../../../infra/twilio-fake';
import { isValidTwilioSignature, twilioClient, twilioUrl, type TwilioClient } from '../../../providers/telephony/twilio-client';
import { WebSocketServer, type WebSocket } from 'ws';
import { mediaMessage } from '../../../providers/telephony/media-stream';
import { mulawDecode, mulawEncode } from '../../../providers/telephony/mulaw';
import { eventually } from '../../support/eventually';

const ACCOUNT = 'AC' + 'a1'.repeat(16);
const TOKEN = 'fake-auth-token-1';
const CALLER_ID = '+15550001111';
const CUSTOMER = '+15557654321';

const CALLBACK_PATHS = ['/status', '/recording-status', '/amd'];

interface Hit {
  path: string;
  method: string;
  params: Record<string, string>;
  /** The URL as signed (with its query). */
  url: string;
  signature: string | undefined;
  signedCorrectly: boolean;
}

/** The application's side: answers TwiML per path, and logs every request with its signature check. */
interface App {
  base: string;
  hits: Hit[];
  twiml: Map<string, (params: Record<string, string>) => string>;
  close(): Promise<void>;
}

async function startApp(): Promise<App> {
  const app: App = { base: '', hits: [], twiml: new Map(), close: async () => undefined };
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', app.base);
      const method = req.method ?? 'GET';
      // POST: the form is signed with the URL; GET: the URL alone (its query holds the params).
      const params = method === 'POST' ? Object.fromEntries(new URLSearchParams(raw)) : Object.fromEntries(url.searchParams);
      const signature = req.headers['x-twilio-signature'] as string | undefined;
      const signedCorrectly = isValidTwilioSignature(TOKEN, signature, app.base + (req.url ?? ''), method === 'POST' ? params : {});
      app.hits.push({ path: url.pathname, method, params, url: app.base + (req.url ?? ''), signature, signedCorrectly });
      const answer = app.twiml.get(url.pathname);
      if (answer) {
        res.writeHead(200, { 'content-type': 'text/xml' });
        res.end(answer(params));
      } else {
        // Callbacks are acknowledged with no body; any other path is not the application's.
        res.writeHead(CALLBACK_PATHS.includes(url.pathname) ? 204 : 404);
        res.end();
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  app.base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  app.close = async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  };
  return app;
}

let fake: TwilioFake;
let app: App;
let sdk: TwilioClient;

beforeAll(async () => {
  // A TwiML second lasts 50 ms here: a <Gather timeout="1"> gives up quickly, timeout="600" waits 30 s.
  fake = await startTwilioFake({ settings: { secondMs: 50 } });
  app = await startApp();
  sdk = twilioClient({ accountSid: ACCOUNT, authToken: TOKEN }, { apiBaseUrl: fake.url });
  app.twiml.set('/voice', () => '<?xml version="1.0" encoding="UTF-8"?><Response><Say>Hello, this is the clinic.</Say><Hangup/></Response>');
});

afterAll(async () => {
  await fake.close();
  await app.close();
});

const ALL_EVENTS = ['initiated', 'ringing', 'answered', 'completed'];

function place(to: string, extra: Record<string, unknown> = {}) {
  return sdk.calls.create({
    to,
    from: CALLER_ID,
    url: `${app.base}/voice`,
    statusCallback: `${app.base}/status?tag=${encodeURIComponent(to)}`,
    statusCallbackEvent: ALL_EVENTS,
    ...extra,
  });
}

/** The status callbacks the application got for a call, in arrival order. */
const statusHits = (callSid: string) => app.hits.filter((h) => h.path === '/status' && h.params.CallSid === callSid);
const hitsFor = (callSid: string, path: string) => app.hits.filter((h) => h.path === path && h.params.CallSid === callSid);

async function finished(callSid: string) {
  const call = await fake.waitForStatus(callSid);
  await fake.settled();
  return call;
}

/** The Twilio error code of a REST answer. */
async function errorCode(response: Response | Promise<Response>): Promise<number> {
  return ((await (await response).json()) as { code: number }).code;
}

const RFC_2822 = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} \+0000$/;

describe('status callbacks by destination', () => {
  it('a person answers: initiated, ringing, in-progress, completed, signed, numbered, and the TwiML runs', async () => {
    const created = await place(CUSTOMER);
    expect(created.sid).toMatch(/^CA[0-9a-f]{32}$/);
    expect(created.status).toBe('queued');
    expect(created.direction).toBe('outbound-api');
    expect(created.accountSid).toBe(ACCOUNT);

    const call = await finished(created.sid);
    expect(call.status).toBe('completed');
    expect(call.said).toEqual(['Hello, this is the clinic.']);

    const hits = statusHits(created.sid);
    expect(hits.map((h) => h.params.CallStatus)).toEqual(['initiated', 'ringing', 'in-progress', 'completed']);
    expect(hits.map((h) => h.params.SequenceNumber)).toEqual(['0', '1', '2', '3']);
    for (const hit of hits) {
      expect(hit.signedCorrectly).toBe(true);
      expect(hit.params).toMatchObject({ AccountSid: ACCOUNT, From: CALLER_ID, To: CUSTOMER, Direction: 'outbound-api', ApiVersion: '2010-04-01', CallbackSource: 'call-progress-events' });
      expect(hit.params.Timestamp).toMatch(RFC_2822);
    }
    expect(hits[3]!.params.CallDuration).toMatch(/^\d+$/);
    expect(hits[3]!.params.SipResponseCode).toBe('200');
    expect(hits[0]!.params.CallDuration).toBeUndefined();

    const voice = hitsFor(created.sid, '/voice');
    expect(voice).toHaveLength(1);
    expect(voice[0]!.signedCorrectly).toBe(true);
    expect(voice[0]!.params).toMatchObject({ CallStatus: 'in-progress', Direction: 'outbound-api', To: CUSTOMER, From: CALLER_ID });
    expect(voice[0]!.params.AnsweredBy).toBeUndefined();

    const fetched = await sdk.calls(created.sid).fetch();
    expect(fetched.status).toBe('completed');
    expect(fetched.startTime).toBeInstanceOf(Date);
    expect(fetched.endTime).toBeInstanceOf(Date);
    expect(fetched.duration).toBe(String(call.durationSec));
  });

  it('a signature under another token does not verify (the check above can fail)', async () => {
    const created = await place(CUSTOMER, { statusCallbackEvent: ['completed'] });
    await finished(created.sid);
    const hit = statusHits(created.sid)[0]!;
    expect(hit.signedCorrectly).toBe(true);
    expect(isValidTwilioSignature('another-token', hit.signature, hit.url, hit.params)).toBe(false);
    expect(isValidTwilioSignature(TOKEN, hit.signature, hit.url, { ...hit.params, CallStatus: 'busy' })).toBe(false);
  });

  it('sends a status callback again on request, unchanged and signed: a duplicate or a late delivery', async () => {
    const created = await place(CUSTOMER);
    await finished(created.sid);
    const resent = await fake.resendStatusCallback(created.sid, 1);
    expect(resent).toMatchObject({ resent: true, responseStatus: 204, callStatus: 'ringing' });
    const hits = statusHits(created.sid);
    expect(hits.map((h) => h.params.SequenceNumber)).toEqual(['0', '1', '2', '3', '1']);
    expect(hits[4]!.params).toEqual(hits[1]!.params);
    expect(hits[4]!.signedCorrectly).toBe(true);
    const missing = await fetch(`${fake.url}/__fake/calls/${created.sid}/status-callbacks/9/resend`, { method: 'POST' });
    expect(missing.status).toBe(404);
  });

  it.each([
    ['busy', SPECIAL_NUMBERS.busy, ['initiated', 'busy'], '486'],
    ['no-answer', SPECIAL_NUMBERS.noAnswer, ['initiated', 'ringing', 'no-answer'], '487'],
    ['failed', SPECIAL_NUMBERS.failed, ['initiated', 'failed'], '404'],
    ['rejected', SPECIAL_NUMBERS.rejected, ['initiated', 'ringing', 'busy'], '603'],
  ])('%s: the status sequence and SIP code, and no TwiML is asked', async (_name, to, statuses, sip) => {
    const created = await place(to);
    const call = await finished(created.sid);
    expect(call.status).toBe(statuses[statuses.length - 1]);
    const hits = statusHits(created.sid);
    expect(hits.map((h) => h.params.CallStatus)).toEqual(statuses);
    expect(hits.every((h) => h.signedCorrectly)).toBe(true);
    expect(hits[hits.length - 1]!.params.SipResponseCode).toBe(sip);
    expect(hits[hits.length - 1]!.params.CallDuration).toBe('0');
    expect(hitsFor(created.sid, '/voice')).toEqual([]);
    expect((await sdk.calls(created.sid).fetch()).status).toBe(call.status);
  });

  it('only the completed callback without StatusCallbackEvent (Twilio’s default)', async () => {
    const created = await sdk.calls.create({ to: SPECIAL_NUMBERS.busy, from: CALLER_ID, url: `${app.base}/voice`, statusCallback: `${app.base}/status` });
    await finished(created.sid);
    expect(statusHits(created.sid).map((h) => [h.params.CallStatus, h.params.SequenceNumber])).toEqual([['busy', '0']]);
  });

  it.each([
    ['Enable', 'machine_start'],
    ['DetectMessageEnd', 'machine_end_beep'],
  ])('a machine answers with MachineDetection=%s: AnsweredBy %s in the TwiML request and the callbacks', async (mode, answeredBy) => {
    const created = await place(SPECIAL_NUMBERS.machine, { machineDetection: mode });
    const call = await finished(created.sid);
    expect(call.answeredBy).toBe(answeredBy);
    expect(hitsFor(created.sid, '/voice')[0]!.params.AnsweredBy).toBe(answeredBy);
    const hits = statusHits(created.sid);
    expect(hits.map((h) => h.params.CallStatus)).toEqual(['initiated', 'ringing', 'in-progress', 'completed']);
    expect(hits.slice(2).map((h) => h.params.AnsweredBy)).toEqual([answeredBy, answeredBy]);
    expect((await sdk.calls(created.sid).fetch()).answeredBy).toBe(answeredBy);
  });

  it('a person answers with MachineDetection: AnsweredBy human', async () => {
    const created = await place(CUSTOMER, { machineDetection: 'Enable' });
    await finished(created.sid);
    expect(hitsFor(created.sid, '/voice')[0]!.params.AnsweredBy).toBe('human');
  });

  it('AsyncAmd: the TwiML runs at once without AnsweredBy, and the verdict is posted, signed, to AsyncAmdStatusCallback', async () => {
    app.twiml.set('/listen', () => '<Response><Gather input="speech" timeout="600"/></Response>');
    const created = await place(SPECIAL_NUMBERS.machine, { url: `${app.base}/listen`, machineDetection: 'Enable', asyncAmd: 'true', asyncAmdStatusCallback: `${app.base}/amd` });
    await fake.waitForCall((c) => c.sid === created.sid && c.answeredBy !== null);
    fake.hangup(created.sid);
    await finished(created.sid);
    expect(hitsFor(created.sid, '/listen')[0]!.params.AnsweredBy).toBeUndefined();
    const [amd] = hitsFor(created.sid, '/amd');
    expect(amd).toMatchObject({ signedCorrectly: true, params: { AnsweredBy: 'machine_start', AccountSid: ACCOUNT } });
  });

  it('StatusCallbackMethod=GET: the params in the query, the signature over that URL', async () => {
    const created = await place(SPECIAL_NUMBERS.busy, { statusCallbackMethod: 'GET' });
    await finished(created.sid);
    const hits = statusHits(created.sid);
    expect(hits.map((h) => [h.method, h.params.CallStatus])).toEqual([
      ['GET', 'initiated'],
      ['GET', 'busy'],
    ]);
    expect(hits.every((h) => h.signedCorrectly && h.params.tag === SPECIAL_NUMBERS.busy)).toBe(true);
  });

  it('rings until canceled: cancel before answer ends it canceled (487); a later update is refused with 21220', async () => {
    const created = await place(SPECIAL_NUMBERS.ringsForever);
    await fake.waitForStatus(created.sid, 'ringing');
    // settled() waits for the callbacks in flight, not for a phone that rings on.
    await fake.settled();
    expect(statusHits(created.sid).map((h) => h.params.CallStatus)).toEqual(['initiated', 'ringing']);
    const canceled = await sdk.calls(created.sid).update({ status: 'canceled' });
    expect(canceled.status).toBe('canceled');
    await fake.settled();
    const hits = statusHits(created.sid);
    expect(hits.map((h) => h.params.CallStatus)).toEqual(['initiated', 'ringing', 'canceled']);
    expect(hits[2]!.params.SipResponseCode).toBe('487');
    expect(hitsFor(created.sid, '/voice')).toEqual([]);
    await expect(sdk.calls(created.sid).update({ status: 'completed' })).rejects.toMatchObject({ status: 400, code: 21220 });
  });
});

describe('REST create refusals', () => {
  it('+15005550001: 400 with code 21211, and no call exists', async () => {
    await expect(place(SPECIAL_NUMBERS.invalid)).rejects.toMatchObject({ status: 400, code: 21211, moreInfo: 'https://www.twilio.com/docs/errors/21211' });
    expect(fake.calls({ to: SPECIAL_NUMBERS.invalid })).toEqual([]);
  });

  it('+15005550002: 500 (code 20500), and no call exists', async () => {
    await expect(place(SPECIAL_NUMBERS.providerError)).rejects.toMatchObject({ status: 500, code: 20500 });
    expect(fake.calls({ to: SPECIAL_NUMBERS.providerError })).toEqual([]);
  });

  it('+15005550003: the answer never comes before the client’s timeout, but the call exists and a fetch finds it', async () => {
    const impatient = twilioClient({ accountSid: ACCOUNT, authToken: TOKEN }, { apiBaseUrl: fake.url, timeoutMs: 300 });
    await expect(
      impatient.calls.create({ to: SPECIAL_NUMBERS.createTimeout, from: CALLER_ID, url: `${app.base}/voice`, statusCallback: `${app.base}/status`, statusCallbackEvent: ALL_EVENTS }),
    ).rejects.toThrow(/timeout/i);
    // Found as a client that lost the answer would look for it: by destination and start time.
    const since = new Date(Date.now() - 60_000);
    const [listed, ...more] = await sdk.calls.list({ to: SPECIAL_NUMBERS.createTimeout, startTimeAfter: since });
    expect(listed).toBeDefined();
    expect(more).toEqual([]);
    expect(await sdk.calls.list({ to: SPECIAL_NUMBERS.createTimeout, startTimeAfter: new Date(Date.now() + 60_000) })).toEqual([]);
    const call = await finished(listed!.sid);
    expect(call.status).toBe('completed');
    expect((await sdk.calls(listed!.sid).fetch()).status).toBe('completed');
    expect(statusHits(listed!.sid).map((h) => h.params.CallStatus)).toEqual(['initiated', 'ringing', 'in-progress', 'completed']);
  });

  it('a missing To, a bad Url and a bad From are refused in Twilio’s error shape', async () => {
    const post = (form: Record<string, string>) =>
      fetch(`${fake.url}/2010-04-01/Accounts/${ACCOUNT}/Calls.json`, {
        method: 'POST',
        headers: { authorization: `Basic ${Buffer.from(`${ACCOUNT}:${TOKEN}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(form).toString(),
      });
    const noTo = await post({ From: CALLER_ID, Url: `${app.base}/voice` });
    expect(noTo.status).toBe(400);
    expect(await noTo.json()).toEqual({ code: 21201, message: "No 'To' number is specified", more_info: 'https://www.twilio.com/docs/errors/21201', status: 400 });
    expect(await errorCode(post({ To: CUSTOMER, From: CALLER_ID, Url: 'not a url' }))).toBe(21205);
    expect(await errorCode(post({ To: CUSTOMER, From: 'nobody', Url: `${app.base}/voice` }))).toBe(21212);
  });

  it('refuses missing credentials and another account’s path with 401 (20003)', async () => {
    const url = `${fake.url}/2010-04-01/Accounts/${ACCOUNT}/Calls.json`;
    const anonymous = await fetch(url);
    expect(anonymous.status).toBe(401);
    expect(await errorCode(anonymous)).toBe(20003);
    const other = twilioClient({ accountSid: 'AC' + 'b2'.repeat(16), authToken: TOKEN }, { apiBaseUrl: fake.url });
    const created = await place(CUSTOMER, { statusCallbackEvent: ['completed'] });
    await expect(other.calls(created.sid).fetch()).rejects.toMatchObject({ status: 404, code: 20404 });
    const crossed = await fetch(`${fake.url}/2010-04-01/Accounts/${ACCOUNT}/Calls/${created.sid}.json`, {
      headers: { authorization: `Basic ${Buffer.from(`AC${'b2'.repeat(16)}:${TOKEN}`).toString('base64')}` },
    });
    expect(crossed.status).toBe(401);
    await finished(created.sid);
  });
});

describe('a spoken exchange follows the TwiML', () => {
  beforeAll(() => {
    app.twiml.set(
      '/talk',
      () => '<Response><Say voice="Polly.Joanna">How can I help?</Say><Gather input="speech" action="/talk/turn?step=1" method="POST" timeout="600"/></Response>',
    );
    app.twiml.set('/talk/turn', (p) => `<Response><Gather input="speech" action="/talk/turn" timeout="600"><Say>You said: ${p.SpeechResult}</Say></Gather></Response>`);
  });

  it('three scripted turns, each SpeechResult posted to the Gather action, then the caller hangs up', async () => {
    const to = '+15550002001';
    fake.script(to, ['I want to book a table', 'Tomorrow at eight', 'Four people'], { hangupAfter: true });
    const created = await place(to, { url: `${app.base}/talk` });
    const call = await finished(created.sid);
    expect(call.status).toBe('completed');
    expect(call.heard).toEqual(['I want to book a table', 'Tomorrow at eight', 'Four people']);
    expect(call.said).toEqual(['How can I help?', 'You said: I want to book a table', 'You said: Tomorrow at eight', 'You said: Four people']);
    const turns = hitsFor(created.sid, '/talk/turn');
    expect(turns.map((h) => h.params.SpeechResult)).toEqual(['I want to book a table', 'Tomorrow at eight', 'Four people']);
    expect(turns.every((h) => h.signedCorrectly && h.params.Confidence !== undefined && h.params.CallStatus === 'in-progress')).toBe(true);
    // The first action's query is part of the signed URL.
    expect(call.twimlRequests[1]!.url).toBe(`${app.base}/talk/turn?step=1`);
    expect(call.events).toContain('completed: the caller hung up');
  });

  it('an utterance said while the Gather listens is heard; a hang-up ends the call with its duration', async () => {
    const created = await place('+15550002002', { url: `${app.base}/talk` });
    await fake.waitForCall((c) => c.sid === created.sid && c.events.includes('gathering speech'));
    fake.say(created.sid, 'Is anyone there?');
    await fake.waitForCall((c) => c.sid === created.sid && c.said.includes('You said: Is anyone there?'));
    fake.hangup(created.sid);
    const call = await finished(created.sid);
    expect(call.heard).toEqual(['Is anyone there?']);
    const completed = statusHits(created.sid).at(-1)!;
    expect(completed.params.CallStatus).toBe('completed');
    expect(completed.params.CallDuration).toBe(String(call.durationSec));
  });

  it('a Gather with nothing said falls through to the next verb after its timeout; Pause, Play and Dial are followed', async () => {
    app.twiml.set(
      '/quiet',
      () =>
        '<Response><Gather input="speech" timeout="1" action="/never"><Say>Anything?</Say></Gather><Pause length="1"/><Play>https://example.com/tone.mp3</Play>' +
        '<Say>Connecting you.</Say><Dial callerId="+15550001111"><Number>+15550009999</Number></Dial></Response>',
    );
    const created = await place('+15550002003', { url: `${app.base}/quiet` });
    const call = await finished(created.sid);
    expect(call.said).toEqual(['Anything?', 'Connecting you.']);
    expect(call.heard).toEqual([]);
    expect(call.played).toEqual(['https://example.com/tone.mp3']);
    expect(call.dialed).toBe('+15550009999');
    expect(call.dials[0]!.attributes.callerId).toBe('+15550001111');
    expect(call.events).toContain('gather timed out');
    expect(hitsFor(created.sid, '/never')).toEqual([]);
    expect(call.status).toBe('completed');
  });

  it('a Dial with an action posts DialCallStatus there and follows its TwiML', async () => {
    app.twiml.set('/transfer', () => '<Response><Dial action="/after-dial">+15550008888</Dial></Response>');
    app.twiml.set('/after-dial', (p) => `<Response><Say>Transfer ${p.DialCallStatus}</Say></Response>`);
    const created = await place('+15550002004', { url: `${app.base}/transfer` });
    const call = await finished(created.sid);
    expect(call.dialed).toBe('+15550008888');
    expect(call.said).toEqual(['Transfer completed']);
    expect(hitsFor(created.sid, '/after-dial')[0]!.params.DialCallSid).toMatch(/^CA/);
  });

  it('<Redirect> fetches the next document (relative to the current one) with the call’s params', async () => {
    app.twiml.set('/hop', () => '<Response><Say>One</Say><Redirect method="POST">/hop/two</Redirect><Say>never said</Say></Response>');
    app.twiml.set('/hop/two', () => '<Response><Say>Two</Say></Response>');
    const created = await place('+15550002005', { url: `${app.base}/hop` });
    const call = await finished(created.sid);
    expect(call.said).toEqual(['One', 'Two']);
    expect(hitsFor(created.sid, '/hop/two')[0]!.signedCorrectly).toBe(true);
  });

  it('a REST redirect (Url or Twiml) interrupts a listening Gather; a REST hang-up ends an answered call', async () => {
    app.twiml.set('/elsewhere', () => '<Response><Say>Moved.</Say><Gather input="speech" timeout="600"/></Response>');
    const created = await place('+15550002006', { url: `${app.base}/talk` });
    await fake.waitForCall((c) => c.sid === created.sid && c.events.includes('gathering speech'));
    await sdk.calls(created.sid).update({ url: `${app.base}/elsewhere` });
    await fake.waitForCall((c) => c.sid === created.sid && c.said.includes('Moved.') && c.events.filter((e) => e === 'gathering speech').length === 2);
    await sdk.calls(created.sid).update({ twiml: '<Response><Say>Inline now.</Say><Gather input="speech" timeout="600"/></Response>' });
    await fake.waitForCall((c) => c.sid === created.sid && c.said.includes('Inline now.'));
    const hungUp = await sdk.calls(created.sid).update({ status: 'completed' });
    expect(hungUp.status).toBe('completed');
    const call = await finished(created.sid);
    expect(call.said).toEqual(['How can I help?', 'Moved.', 'Inline now.']);
    expect(statusHits(created.sid).at(-1)!.params.CallStatus).toBe('completed');
  });

  it('keyed digits answer a dtmf Gather; <Record> records the next utterance and posts its RecordingUrl', async () => {
    app.twiml.set('/menu', () => '<Response><Gather input="dtmf" numDigits="1" action="/menu/choice" timeout="600"><Say>Press 1.</Say></Gather></Response>');
    app.twiml.set('/menu/choice', (p) => `<Response><Say>Pressed ${p.Digits}.</Say><Record action="/menu/recorded" timeout="600"/></Response>`);
    app.twiml.set('/menu/recorded', (p) => `<Response><Say>Got ${p.RecordingDuration} seconds.</Say></Response>`);
    const created = await place('+15550002009', { url: `${app.base}/menu` });
    await fake.waitForCall((c) => c.sid === created.sid && c.events.includes('gathering dtmf'));
    fake.say(created.sid, 'not keys');
    fake.digits(created.sid, '1');
    await fake.waitForCall((c) => c.sid === created.sid && c.said.includes('Pressed 1.') && c.recordings.length === 1);
    const call = await finished(created.sid);
    expect(call.heard).toEqual(['not keys']);
    const recorded = hitsFor(created.sid, '/menu/recorded')[0]!;
    expect(recorded.params.RecordingUrl).toBe(`https://api.twilio.com/2010-04-01/Accounts/${ACCOUNT}/Recordings/${recorded.params.RecordingSid}`);
    expect(call.said.at(-1)).toBe(`Got ${recorded.params.RecordingDuration} seconds.`);
    expect(call.recordings[0]!.source).toBe('RecordVerb');
  });

  it('a TwiML URL that fails, or answers something else than TwiML, ends the call as Twilio does (application error)', async () => {
    app.twiml.set('/broken', () => '<Html>nope</Html>');
    const broken = await place('+15550002007', { url: `${app.base}/broken` });
    const missing = await place('+15550002008', { url: `${app.base}/does-not-exist` });
    const [a, b] = await Promise.all([finished(broken.sid), finished(missing.sid)]);
    expect(a.status).toBe('completed');
    expect(a.errors[0]).toMatch(/^12100 /);
    expect(b.status).toBe('completed');
    expect(b.errors[0]).toMatch(/^11200 /);
  });
});

describe('recordings', () => {
  const recordingHits = (callSid: string) => app.hits.filter((h) => h.path === '/recording-status' && h.params.CallSid === callSid);

  it('Record=true with dual channels: a signed callback at the end, the resource through the SDK, and WAV media through twilioUrl', async () => {
    const created = await place('+15550003001', { record: true, recordingChannels: 'dual', recordingStatusCallback: `${app.base}/recording-status` });
    await finished(created.sid);
    await fake.waitForCall((c) => c.sid === created.sid && c.recordings[0]?.status === 'completed' && c.recordings[0].callbacks[0]?.responseStatus !== null);
    await fake.settled();
    const [hit] = recordingHits(created.sid);
    expect(hit).toBeDefined();
    expect(hit!.signedCorrectly).toBe(true);
    expect(hit!.params).toMatchObject({ AccountSid: ACCOUNT, RecordingStatus: 'completed', RecordingChannels: '2', RecordingSource: 'OutboundAPI' });
    expect(hit!.params.RecordingSid).toMatch(/^RE[0-9a-f]{32}$/);
    expect(hit!.params.RecordingUrl).toBe(`https://api.twilio.com/2010-04-01/Accounts/${ACCOUNT}/Recordings/${hit!.params.RecordingSid}`);
    expect(hit!.params.RecordingDuration).toMatch(/^[1-9]\d*$/);
    expect(hit!.params.RecordingStartTime).toMatch(RFC_2822);

    const listed = await sdk.calls(created.sid).recordings.list();
    expect(listed.map((r) => r.sid)).toEqual([hit!.params.RecordingSid]);
    const rec = await sdk.recordings(hit!.params.RecordingSid!).fetch();
    expect(rec).toMatchObject({ callSid: created.sid, status: 'completed', channels: 2, source: 'OutboundAPI', duration: hit!.params.RecordingDuration });

    const dual = await fetch(twilioUrl(`${hit!.params.RecordingUrl}.wav?RequestedChannels=2`, fake.url));
    expect(dual.status).toBe(200);
    expect(dual.headers.get('content-type')).toBe('audio/x-wav');
    const wav = Buffer.from(await dual.arrayBuffer());
    expect(wav.toString('ascii', 0, 4)).toBe('RIFF');
    expect(wav.toString('ascii', 8, 12)).toBe('WAVE');
    expect(wav.readUInt16LE(22)).toBe(2);
    expect(wav.readUInt32LE(40)).toBe(8000 * 2 * 2 * Number(hit!.params.RecordingDuration));
    const mixed = Buffer.from(await (await fetch(twilioUrl(hit!.params.RecordingUrl!, fake.url))).arrayBuffer());
    expect(mixed.readUInt16LE(22)).toBe(1);
    const mp3 = await fetch(twilioUrl(`${hit!.params.RecordingUrl}.mp3`, fake.url));
    expect(mp3.headers.get('content-type')).toBe('audio/mpeg');
    expect([...Buffer.from(await mp3.arrayBuffer()).subarray(0, 2)]).toEqual([0xff, 0xfb]);
  });

  it('a recording started through the REST API and one by <Start><Recording> both call back when the call ends', async () => {
    app.twiml.set(
      '/recorded',
      () =>
        `<Response><Start><Recording channels="dual" recordingStatusCallback="/recording-status" recordingStatusCallbackEvent="in-progress completed"/></Start>` +
        '<Say>This call is recorded.</Say><Gather input="speech" timeout="600"/></Response>',
    );
    const created = await place('+15550003002', { url: `${app.base}/recorded` });
    await fake.waitForCall((c) => c.sid === created.sid && c.events.includes('gathering speech'));
    const started = await sdk.calls(created.sid).recordings.create({ recordingStatusCallback: `${app.base}/recording-status`, recordingChannels: 'mono' });
    expect(started.status).toBe('in-progress');
    expect(started.source).toBe('StartCallRecordingAPI');
    fake.hangup(created.sid);
    await finished(created.sid);
    await fake.waitForCall((c) => c.sid === created.sid && c.recordings.length === 2 && c.recordings.every((r) => r.status === 'completed'));
    await fake.settled();
    const hits = recordingHits(created.sid);
    expect(hits.every((h) => h.signedCorrectly)).toBe(true);
    expect(hits.map((h) => `${h.params.RecordingSource} ${h.params.RecordingStatus} ${h.params.RecordingChannels}`).sort()).toEqual([
      'StartCallRecordingAPI completed 1',
      'StartCallRecordingTwiML completed 2',
      'StartCallRecordingTwiML in-progress 2',
    ]);
  });

  it('a recording stopped through the REST API completes while the call goes on; a deleted one is gone', async () => {
    app.twiml.set('/hold', () => '<Response><Gather input="speech" timeout="600"/></Response>');
    const created = await place('+15550003004', { url: `${app.base}/hold` });
    await fake.waitForCall((c) => c.sid === created.sid && c.events.includes('gathering speech'));
    const started = await sdk.calls(created.sid).recordings.create({ recordingStatusCallback: `${app.base}/recording-status` });
    const stopped = await sdk.calls(created.sid).recordings(started.sid).update({ status: 'stopped' });
    expect(stopped.status).toBe('processing');
    await fake.waitForCall((c) => c.sid === created.sid && c.recordings[0]?.status === 'completed');
    expect(fake.call(created.sid).status).toBe('in-progress');
    expect(await sdk.recordings(started.sid).remove()).toBe(true);
    await expect(sdk.recordings(started.sid).fetch()).rejects.toMatchObject({ status: 404, code: 20404 });
    fake.hangup(created.sid);
    await finished(created.sid);
  });

  it('media is 404 while the recording is still running', async () => {
    app.twiml.set('/long', () => '<Response><Gather input="speech" timeout="600"/></Response>');
    const created = await place('+15550003003', { url: `${app.base}/long`, record: true });
    const [rec] = (await fake.waitForCall((c) => c.sid === created.sid && c.recordings.length === 1)).recordings;
    const res = await fetch(twilioUrl(rec!.mediaUrl, fake.url));
    expect(res.status).toBe(404);
    expect(await errorCode(res)).toBe(20404);
    fake.hangup(created.sid);
    await finished(created.sid);
  });
});

describe('inbound calls and the control API', () => {
  it('an inbound call asks the voice URL (CallStatus ringing, Direction inbound), follows it, and reports completed', async () => {
    app.twiml.set('/inbound', () => '<Response><Say>Thanks for calling.</Say><Gather input="speech" action="/inbound/turn" timeout="600"/></Response>');
    app.twiml.set('/inbound/turn', (p) => `<Response><Say>Noted: ${p.SpeechResult}</Say><Hangup/></Response>`);
    const view = fake.inbound({
      accountSid: ACCOUNT,
      authToken: TOKEN,
      from: CUSTOMER,
      to: CALLER_ID,
      url: `${app.base}/inbound`,
      statusCallback: `${app.base}/status`,
      utterances: ['My order is late'],
    });
    expect(view.direction).toBe('inbound');
    const call = await finished(view.sid);
    expect(call.said).toEqual(['Thanks for calling.', 'Noted: My order is late']);
    const [first, turn] = [hitsFor(view.sid, '/inbound')[0]!, hitsFor(view.sid, '/inbound/turn')[0]!];
    expect(first).toMatchObject({ signedCorrectly: true, params: { CallStatus: 'ringing', Direction: 'inbound', From: CUSTOMER, To: CALLER_ID } });
    expect(turn).toMatchObject({ signedCorrectly: true, params: { CallStatus: 'in-progress', SpeechResult: 'My order is late' } });
    expect(statusHits(view.sid).map((h) => h.params.CallStatus)).toEqual(['completed']);
    expect((await sdk.calls(view.sid).fetch()).direction).toBe('inbound');
  });

  it('an inbound call turned away by <Reject reason="busy"> ends busy without an answer', async () => {
    app.twiml.set('/closed', () => '<Response><Reject reason="busy"/></Response>');
    const view = fake.inbound({ accountSid: ACCOUNT, from: CUSTOMER, to: CALLER_ID, url: `${app.base}/closed`, statusCallback: `${app.base}/status` });
    const call = await finished(view.sid);
    expect(call).toMatchObject({ status: 'busy', answeredAt: null, said: [] });
    // No authToken given: the one the account last used on the REST API signs.
    expect(statusHits(view.sid).map((h) => [h.params.CallStatus, h.signedCorrectly])).toEqual([['busy', true]]);
  });

  it('drives a call over HTTP: script, list, get, say, hangup, settings', async () => {
    const json = async (path: string, body?: unknown) => {
      const res = await fetch(`${fake.url}${path}`, body === undefined ? {} : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const to = '+15550004001';
    expect((await json('/__fake/script', { to, utterances: ['Hello from the script'] })).status).toBe(200);
    const created = await place(to, { url: `${app.base}/talk` });
    await fake.waitForCall((c) => c.sid === created.sid && c.said.includes('You said: Hello from the script'));
    const listed = await json(`/__fake/calls?to=${encodeURIComponent(to)}`);
    expect((listed.body.calls as { sid: string }[]).map((c) => c.sid)).toEqual([created.sid]);
    expect((await json(`/__fake/calls/${created.sid}/say`, { text: 'And another thing' })).status).toBe(200);
    await fake.waitForCall((c) => c.sid === created.sid && c.heard.length === 2);
    expect((await json(`/__fake/calls/${created.sid}/say`, { text: '' })).status).toBe(400);
    expect((await json(`/__fake/calls/${created.sid}/hangup`, {})).status).toBe(200);
    await finished(created.sid);
    const got = await json(`/__fake/calls/${created.sid}`);
    expect(got.body).toMatchObject({ status: 'completed', heard: ['Hello from the script', 'And another thing'] });
    expect((await json('/__fake/calls/CA0000/hangup', {})).status).toBe(404);
    expect((await json('/__fake/settings', { ringMs: 25 })).body.ringMs).toBe(25);
    expect((await json('/__fake/settings', { ringMs: -1 })).status).toBe(400);
  });
});

describe('Media Streams (<Connect><Stream>)', () => {
  interface StreamServer {
    url: string;
    upgrades: { signature: string | undefined; path: string }[];
    messages: Record<string, unknown>[];
    sockets: WebSocket[];
    close(): Promise<void>;
  }

  /** A stand-in for a Media Streams server: refuses upgrades to /refuse with 403, keeps every message. */
  async function startStreamServer(onMessage: (ws: WebSocket, message: Record<string, unknown>) => void): Promise<StreamServer> {
    const server = createServer();
    const wss = new WebSocketServer({ noServer: true });
    const out: StreamServer = { url: '', upgrades: [], messages: [], sockets: [], close: async () => undefined };
    server.on('upgrade', (req, socket, head) => {
      out.upgrades.push({ signature: req.headers['x-twilio-signature'] as string | undefined, path: req.url ?? '' });
      if (req.url?.startsWith('/refuse')) {
        socket.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n');
        return;
      }
      wss.handleUpgrade(req, socket, head, (ws) => {
        out.sockets.push(ws);
        ws.on('message', (data: Buffer) => {
          const message = JSON.parse(data.toString()) as Record<string, unknown>;
          out.messages.push(message);
          onMessage(ws, message);
        });
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    out.url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
    out.close = async () => {
      for (const ws of out.sockets) ws.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    };
    return out;
  }

  it('opens a signed stream, sends start with the parameters and the caller\'s audio as μ-law, echoes marks, and goes on when the server closes', async () => {
    const tone = Int16Array.from({ length: 4000 }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 400 * i) / 8000)));
    let streamSid = '';
    const server = await startStreamServer((ws, message) => {
      if (message.event === 'start') {
        streamSid = message.streamSid as string;
        // 200 ms of loud audio back, a mark after it, and a clear.
        for (let i = 0; i < 10; i++) ws.send(mediaMessage(streamSid, mulawEncode(tone.subarray(i * 160, (i + 1) * 160))));
        ws.send(JSON.stringify({ event: 'mark', streamSid, mark: { name: 'after-audio' } }));
        ws.send(JSON.stringify({ event: 'clear', streamSid }));
      }
      if (message.event === 'mark') ws.close(1000, 'done');
    });
    try {
      app.twiml.set('/stream', () => `<Response><Connect><Stream url="${server.url}/media/one"><Parameter name="sessionId" value="s-1"/></Stream></Connect><Say>After the stream.</Say></Response>`);
      const created = await place('+15550003001', { url: `${app.base}/stream` });
      fake.play(created.sid, { sampleRate: 8000, samples: tone });
      const call = await finished(created.sid);
      const url = `${server.url}/media/one`;
      // Signed as Twilio signs a stream: the URL as the TwiML wrote it, no parameters.
      expect(isValidTwilioSignature(TOKEN, server.upgrades[0]!.signature, url, {})).toBe(true);
      const events = server.messages.map((m) => m.event);
      expect(events.slice(0, 2)).toEqual(['connected', 'start']);
      expect(server.messages[1]).toMatchObject({
        streamSid: expect.stringMatching(/^MZ[0-9a-f]{32}$/),
        start: { callSid: created.sid, accountSid: ACCOUNT, customParameters: { sessionId: 's-1' }, mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 } },
      });
      // The caller's audio went out as μ-law in 20 ms frames: the tone's first frame is among them.
      const media = server.messages.filter((m) => m.event === 'media') as { media: { payload: string } }[];
      expect(media.every((m) => Buffer.from(m.media.payload, 'base64').length === 160)).toBe(true);
      const sent = media.map((m) => mulawDecode(Buffer.from(m.media.payload, 'base64')));
      expect(sent.some((frame) => Math.max(...frame) > 6000)).toBe(true);
      expect(events).toContain('mark');
      expect(call.streams[0]).toMatchObject({ url, status: 'closed', closeCode: 1000, customParameters: { sessionId: 's-1' }, marks: ['after-audio'], clears: 1, receivedMs: 200, loudMs: 200 });
      expect(call.said).toEqual(['After the stream.']);
      expect(Math.max(...fake.streamAudio(call.streams[0]!.streamSid).samples)).toBeGreaterThan(6000);
    } finally {
      await server.close();
    }
  });

  it('a server that drops the socket (no close frame) ends the <Connect> too: the <Redirect> after it is followed, and a stream nobody listens for is refused', async () => {
    const server = await startStreamServer((ws, message) => {
      // The server's process dies: its socket goes without a close frame.
      if (message.event === 'start' && (message.start as { customParameters: { n: string } }).customParameters.n === '1') ws.terminate();
      if (message.event === 'start' && (message.start as { customParameters: { n: string } }).customParameters.n === '2') ws.close(1000, 'done');
    });
    try {
      const deadUrl = 'ws://127.0.0.1:1/nobody';
      app.twiml.set('/drop', () => `<Response><Connect><Stream url="${server.url}/media/drop"><Parameter name="n" value="1"/></Stream></Connect><Redirect>/again</Redirect></Response>`);
      app.twiml.set('/again', () => `<Response><Connect><Stream url="${deadUrl}"/></Connect><Redirect>/third</Redirect></Response>`);
      app.twiml.set('/third', () => `<Response><Connect><Stream url="${server.url}/media/third"><Parameter name="n" value="2"/></Stream></Connect><Say>Over.</Say></Response>`);
      const call = await finished((await place('+15550003004', { url: `${app.base}/drop` })).sid);
      expect(call.streams.map((s) => ({ url: s.url, status: s.status, closeCode: s.closeCode }))).toEqual([
        { url: `${server.url}/media/drop`, status: 'closed', closeCode: 1006 },
        { url: deadUrl, status: 'refused', closeCode: null },
        { url: `${server.url}/media/third`, status: 'closed', closeCode: 1000 },
      ]);
      expect(call.twimlRequests.map((r) => new URL(r.url).pathname)).toEqual(['/drop', '/again', '/third']);
      expect(call.errors).toEqual([expect.stringContaining('31920')]);
      expect(call.said).toEqual(['Over.']);
    } finally {
      await server.close();
    }
  });

  it('a refused upgrade is error 31920 and the next verb runs; a hang-up sends stop', async () => {
    const server = await startStreamServer(() => undefined);
    try {
      app.twiml.set('/refused', () => `<Response><Connect><Stream url="${server.url}/refuse"/></Connect><Say>No stream.</Say></Response>`);
      const refused = await finished((await place('+15550003002', { url: `${app.base}/refused` })).sid);
      expect(refused.streams[0]).toMatchObject({ status: 'refused', refusedStatus: 403 });
      expect(refused.errors).toEqual([expect.stringContaining('31920')]);
      expect(refused.said).toEqual(['No stream.']);

      app.twiml.set('/held', () => `<Response><Connect><Stream url="${server.url}/held"/></Connect></Response>`);
      const created = await place('+15550003003', { url: `${app.base}/held` });
      await fake.waitForCall((c) => c.sid === created.sid && c.streams[0]?.status === 'open');
      fake.hangup(created.sid);
      const held = await fake.waitForCall((c) => c.sid === created.sid && c.streams[0]?.status === 'closed');
      expect(held.status).toBe('completed');
      await eventually(() => Promise.resolve(server.messages.at(-1)?.event), (e) => e === 'stop', 5000, 20);
      expect(server.messages.at(-1)).toMatchObject({ event: 'stop', stop: { callSid: created.sid, accountSid: ACCOUNT } });
    } finally {
      await server.close();
    }
  });
});
