// The one way the platform talks to Twilio: the official `twilio` SDK, for a connection's account.
// With `apiBaseUrl` set (the dev stack and the tests set it to the Twilio fake, infra/twilio-fake/)
// the SDK's own HTTP client is given in place of the default one and sends every request to that
// base URL instead of https://*.twilio.com, path unchanged, so the SDK's code path runs for real.
// Webhook signatures are checked with the SDK's validator (constant-time comparison).
import type twilio from 'twilio';
import type RequestClient from 'twilio/lib/base/RequestClient';
import { getExpectedTwilioSignature, validateRequest } from 'twilio/lib/webhooks/webhooks';
import { lazyModule } from '../../lib/lazy-module';

export type TwilioClient = ReturnType<typeof twilio>;

// The REST client (hundreds of modules) loads on the first call; webhook signatures need only the validator.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const twilioSdk = lazyModule(() => require('twilio') as typeof twilio);

export interface TwilioAccount {
  accountSid: string;
  authToken: string;
}

export interface TwilioClientOptions {
  /** Where Twilio's REST API is served instead of https://api.twilio.com (the fake); unset: Twilio itself. */
  apiBaseUrl?: string;
  /** Per-request timeout (ms). @default 10000 */
  timeoutMs?: number;
}

const TWILIO_HOST = /^https:\/\/[a-z0-9.-]+\.twilio\.com(?=\/|$)/i;

/**
 * A Twilio URL (REST resource or recording media) as it is reached: unchanged without
 * `apiBaseUrl`, else on that base with the same path and query.
 */
export function twilioUrl(url: string, apiBaseUrl: string | undefined): string {
  if (!apiBaseUrl) return url;
  return url.replace(TWILIO_HOST, apiBaseUrl.replace(/\/+$/, ''));
}

/** The SDK's request client, and one sending every request to `apiBaseUrl` instead of Twilio's hosts. */
const requestClients = lazyModule(() => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const Base = require('twilio/lib/base/RequestClient') as typeof RequestClient;
  class RedirectingRequestClient extends Base {
    constructor(
      private readonly apiBaseUrl: string,
      timeoutMs: number,
    ) {
      super({ timeout: timeoutMs, keepAlive: true });
    }

    override request<TData>(opts: RequestClient.RequestOptions<TData>) {
      return super.request({ ...opts, uri: twilioUrl(opts.uri, this.apiBaseUrl) });
    }
  }
  return { Base, RedirectingRequestClient };
});

/** An SDK client for one account. Cheap to build; build one per call rather than caching tokens. */
export function twilioClient(account: TwilioAccount, options: TwilioClientOptions = {}): TwilioClient {
  const timeout = options.timeoutMs ?? 10_000;
  const { Base, RedirectingRequestClient } = requestClients();
  const httpClient = options.apiBaseUrl ? new RedirectingRequestClient(options.apiBaseUrl, timeout) : new Base({ timeout, keepAlive: true });
  return twilioSdk()(account.accountSid, account.authToken, { httpClient });
}

/**
 * Whether `signature` (the `X-Twilio-Signature` header) is Twilio's signature of a webhook
 * request to `url` with form `params`, under the account's auth token.
 */
export function isValidTwilioSignature(authToken: string, signature: string | undefined, url: string, params: Record<string, string>): boolean {
  if (!signature) return false;
  return validateRequest(authToken, signature, url, params);
}

/** The signature Twilio puts in `X-Twilio-Signature` for a request to `url` with form `params` (the fake signs with it). */
export function twilioSignature(authToken: string, url: string, params: Record<string, string>): string {
  return getExpectedTwilioSignature(authToken, url, params);
}
