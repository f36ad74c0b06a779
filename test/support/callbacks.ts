// The async tool's side of a callback: the signature a tool service puts on the result it sends to
// the callback URL it was given, and the signed request itself.
import { createHmac } from 'node:crypto';

/** `x-callback-signature` for `body`: `sha256=` and the hex HMAC-SHA256 of the body with the callback secret. */
export const signCallback = (secret: string, body: string): string => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

/** Posts `body` (JSON text) to a callback URL, signed with `secret`. */
export const sendCallback = (url: string, secret: string, body: string): Promise<Response> =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-callback-signature': signCallback(secret, body) }, body });
