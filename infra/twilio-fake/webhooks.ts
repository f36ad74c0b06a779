// The Twilio fake's requests to the application: status callbacks, TwiML fetches and recording
// callbacks, signed as Twilio signs them (`X-Twilio-Signature`: HMAC-SHA1 of the full URL and the
// sorted form params under the account's auth token, through the SDK's own algorithm).
// A POST sends the params as a form; a GET puts them in the query and signs that URL alone.
import { randomUUID } from 'node:crypto';
import { twilioSignature } from '../../providers/telephony/twilio-client';
import { type HttpMethod, type WebhookLog } from './state';

export interface WebhookResult {
  status: number;
  body: string;
  contentType: string;
  error?: string;
}

export interface WebhookRequest {
  url: string;
  method: HttpMethod;
  params: Record<string, string>;
  authToken: string;
  timeoutMs: number;
}

/** Sends one webhook and fills `log` (when given) with what came back. Never throws. */
export async function sendWebhook(request: WebhookRequest, log?: WebhookLog): Promise<WebhookResult> {
  let url = request.url;
  let body: string | undefined;
  let signed: Record<string, string> = request.params;
  if (request.method === 'GET') {
    const target = new URL(url);
    for (const [name, value] of Object.entries(request.params)) target.searchParams.append(name, value);
    url = target.toString();
    signed = {};
  } else {
    body = new URLSearchParams(request.params).toString();
  }
  const headers: Record<string, string> = {
    'user-agent': 'TwilioProxy/1.1',
    accept: '*/*',
    'x-twilio-signature': twilioSignature(request.authToken, url, signed),
    'i-twilio-idempotency-token': randomUUID(),
  };
  if (body !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded; charset=utf-8';
  let result: WebhookResult;
  try {
    const res = await fetch(url, { method: request.method, headers, body, signal: AbortSignal.timeout(request.timeoutMs), redirect: 'manual' });
    result = { status: res.status, body: await res.text(), contentType: res.headers.get('content-type') ?? '' };
  } catch (err) {
    result = { status: 0, body: '', contentType: '', error: err instanceof Error ? err.message : String(err) };
  }
  if (log) {
    log.responseStatus = result.status;
    if (result.error) log.error = result.error;
  }
  return result;
}
