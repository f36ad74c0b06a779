// Callback signing for async tool services (Node): the `x-callback-signature` a service puts on the
// result it posts to the callback URL it was given (docs/callbacks.md), and the signed request.
import { createHmac } from 'node:crypto';

/** The header the callback route checks. */
export const CALLBACK_SIGNATURE_HEADER = 'x-callback-signature';

/** `sha256=` and the hex HMAC-SHA256 of `body` (the exact bytes sent) keyed with the callback secret. */
export function signCallback(callbackSecret: string, body: string | Uint8Array): string {
  return `sha256=${createHmac('sha256', callbackSecret).update(body).digest('hex')}`;
}

/** What the callback route answered (docs/callbacks.md: 200 `ok`, or `already_processed` for a repeat). */
export interface CallbackDelivery {
  status: number;
  /** 200: this delivery resumed the session or an earlier one already had. */
  ok: boolean;
  /** True when an earlier delivery already resumed the session: safe to ignore. */
  alreadyProcessed: boolean;
  /** 503: nothing was used up, send the same body again later. */
  retryable: boolean;
  body: unknown;
}

/**
 * Posts `result` as JSON to `callbackUrl`, signed with `callbackSecret` (both came in the tool
 * request's body). The body is serialised once and those exact bytes are signed and sent.
 */
export async function sendCallback(
  callbackUrl: string,
  callbackSecret: string,
  result: Record<string, unknown>,
  options: { fetch?: typeof fetch; signal?: AbortSignal } = {},
): Promise<CallbackDelivery> {
  const body = JSON.stringify(result);
  const res = await (options.fetch ?? fetch)(callbackUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', [CALLBACK_SIGNATURE_HEADER]: signCallback(callbackSecret, body) },
    body,
    signal: options.signal,
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? (JSON.parse(text) as unknown) : null;
  } catch {
    // Not JSON (a proxy's page): keep the text.
  }
  const alreadyProcessed = res.status === 200 && (parsed as { status?: unknown } | null)?.status === 'already_processed';
  return { status: res.status, ok: res.status === 200, alreadyProcessed, retryable: res.status === 503, body: parsed };
}
