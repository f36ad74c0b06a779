// The write-time rules for a URL the platform will POST callbacks to (HTTP-async subscriptions,
// async agentic-app runs): a URL the parser takes, http(s) without credentials, https in
// production, and a public destination by resolution. Each route maps a refusal to its own status.
import { BlockedDestinationError, UnresolvableDestinationError, assertDestinationResolved, type DestinationPolicy } from './destination';

export type CallbackUrlCheck = { ok: true; url: string } | { ok: false; message: string };

/**
 * The URL as stored (normalised by the parser), or why it is refused; messages start with `field`.
 * Delivery goes through the destination guard again, so a name that later resolves elsewhere is
 * still refused then.
 */
export async function checkCallbackUrlRules(raw: string, rules: { production: boolean; policy: DestinationPolicy; field?: string }): Promise<CallbackUrlCheck> {
  const field = rules.field ?? 'body.callbackUrl';
  const refuse = (why: string): CallbackUrlCheck => ({ ok: false, message: `${field}: ${why}` });
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse('is not a URL the platform can call');
  }
  // A schema may already refuse other schemes and credentials (which would be stored and shown in
  // clear); the parser is asked again because it, not a pattern, decides what is sent.
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password) {
    return refuse('must be an http:// or https:// URL without a user name or password');
  }
  if (rules.production && url.protocol !== 'https:') return refuse('must use https://');
  try {
    await assertDestinationResolved(url, rules.policy);
  } catch (err) {
    if (err instanceof BlockedDestinationError) return refuse(`private, loopback, link-local and other non-public destinations are refused (${err.host})`);
    if (err instanceof UnresolvableDestinationError) return refuse(`the host ${err.host} does not resolve`);
    throw err;
  }
  return { ok: true, url: url.toString() };
}
