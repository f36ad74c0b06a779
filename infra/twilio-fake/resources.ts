// The Twilio fake's wire shapes: SIDs, RFC 2822 dates, the Call and Recording resources as
// Twilio's REST API returns them (snake_case JSON, API version 2010-04-01) and its error body
// `{ code, message, more_info, status }`.
import { randomBytes } from 'node:crypto';
import { type FakeCall, type FakeRecording } from './state';

export const API_VERSION = '2010-04-01';
/** Where real Twilio serves its REST API and recording media; the fake hands out URLs on this host. */
export const TWILIO_API_ORIGIN = 'https://api.twilio.com';

/** A Twilio SID: two letters and 32 hex digits (`CA…` calls, `RE…` recordings). */
export function newSid(prefix: 'CA' | 'RE'): string {
  return prefix + randomBytes(16).toString('hex');
}

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const pad = (n: number) => String(n).padStart(2, '0');

/** `Mon, 16 Aug 2010 03:45:01 +0000`, as Twilio writes dates in resources and `Timestamp`. */
export function rfc2822(date: Date): string {
  return (
    `${DAYS[date.getUTCDay()]}, ${pad(date.getUTCDate())} ${MONTHS[date.getUTCMonth()]} ${date.getUTCFullYear()} ` +
    `${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())} +0000`
  );
}

const rfc2822OrNull = (date: Date | null) => (date ? rfc2822(date) : null);

/** `+15005550006` → `(500) 555-0006` for NANP numbers, else unchanged (Twilio's `*_formatted`). */
function formatted(number: string): string {
  const m = /^\+1(\d{3})(\d{3})(\d{4})$/.exec(number);
  return m ? `(${m[1]}) ${m[2]}-${m[3]}` : number;
}

export const accountPath = (accountSid: string) => `/${API_VERSION}/Accounts/${accountSid}`;
export const callPath = (call: { accountSid: string; sid: string }) => `${accountPath(call.accountSid)}/Calls/${call.sid}`;
export const recordingPath = (rec: { accountSid: string; sid: string }) => `${accountPath(rec.accountSid)}/Recordings/${rec.sid}`;
/** The recording's media URL as Twilio gives it (`RecordingUrl`, `media_url`): on Twilio's host, no extension. */
export const recordingMediaUrl = (rec: { accountSid: string; sid: string }) => `${TWILIO_API_ORIGIN}${recordingPath(rec)}`;

/** The Call resource (GET/POST `Calls/{Sid}.json`). */
export function callResource(call: FakeCall): Record<string, unknown> {
  const base = callPath(call);
  return {
    sid: call.sid,
    date_created: rfc2822(call.dateCreated),
    date_updated: rfc2822(call.dateUpdated),
    parent_call_sid: null,
    account_sid: call.accountSid,
    to: call.to,
    to_formatted: formatted(call.to),
    from: call.from,
    from_formatted: formatted(call.from),
    phone_number_sid: null,
    status: call.status,
    start_time: rfc2822OrNull(call.startTime),
    end_time: rfc2822OrNull(call.endTime),
    duration: call.endTime ? String(call.durationSec) : null,
    price: null,
    price_unit: 'USD',
    direction: call.direction,
    answered_by: call.answeredBy,
    api_version: API_VERSION,
    forwarded_from: null,
    group_sid: null,
    caller_name: null,
    queue_time: '0',
    trunk_sid: null,
    uri: `${base}.json`,
    subresource_uris: {
      notifications: `${base}/Notifications.json`,
      recordings: `${base}/Recordings.json`,
      payments: `${base}/Payments.json`,
      events: `${base}/Events.json`,
      siprec: `${base}/Siprec.json`,
      streams: `${base}/Streams.json`,
      transcriptions: `${base}/Transcriptions.json`,
      user_defined_message_subscriptions: `${base}/UserDefinedMessageSubscriptions.json`,
      user_defined_messages: `${base}/UserDefinedMessages.json`,
    },
  };
}

/** The Recording resource (`Recordings/{Sid}.json`, and the items of the list pages). */
export function recordingResource(rec: FakeRecording): Record<string, unknown> {
  const base = recordingPath(rec);
  return {
    account_sid: rec.accountSid,
    api_version: API_VERSION,
    call_sid: rec.callSid,
    conference_sid: null,
    date_created: rfc2822(rec.dateCreated),
    date_updated: rfc2822(rec.dateUpdated),
    start_time: rfc2822(rec.startTime),
    duration: rec.durationSec === null ? null : String(rec.durationSec),
    sid: rec.sid,
    price: null,
    price_unit: 'USD',
    status: rec.status,
    channels: rec.channels,
    source: rec.source,
    error_code: null,
    track: rec.track,
    uri: `${base}.json`,
    encryption_details: null,
    subresource_uris: {
      add_on_results: `${base}/AddOnResults.json`,
      transcriptions: `${base}/Transcriptions.json`,
    },
    media_url: recordingMediaUrl(rec),
  };
}

/** A list page as Twilio's 2010 API returns it: the items under `key`, and the paging fields. */
export function listPage(key: string, uri: string, items: unknown[]): Record<string, unknown> {
  return {
    [key]: items,
    uri,
    first_page_uri: uri,
    next_page_uri: null,
    previous_page_uri: null,
    page: 0,
    page_size: Math.max(50, items.length),
    start: 0,
    end: Math.max(0, items.length - 1),
  };
}

/** An error as Twilio's REST API answers it. */
export class TwilioApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: number,
    message: string,
  ) {
    super(message);
  }

  body(): Record<string, unknown> {
    return { code: this.code, message: this.message, more_info: `https://www.twilio.com/docs/errors/${this.code}`, status: this.status };
  }
}
