// Phone numbers as the platform takes and shows them: E.164 (`+` and up to 15 digits, no leading
// zero) is the only accepted form, and a number is shown masked (its first digit and last two
// visible, every other digit a `*`: `+15551234523` → `+1********23`) wherever it leaves the API.

export const E164_PATTERN = /^\+[1-9]\d{1,14}$/;

export function isE164(value: string): boolean {
  return E164_PATTERN.test(value);
}

/** The number with all but its first digit and last two replaced by `*`, one per digit. */
export function maskPhoneNumber(number: string): string {
  const digits = number.replace(/^\+/, '');
  if (digits.length <= 3) return '+' + '*'.repeat(digits.length);
  return '+' + digits[0] + '*'.repeat(digits.length - 3) + digits.slice(-2);
}

// SIP destinations of outbound calls. A SIP URI handed to the provider can carry headers (`?…`)
// and parameters that change where and how the call is placed, or break the SIP message outright
// (CR/LF, `<>`), so only a plain `sip:`/`sips:` URI of a user at a host is taken, with at most the
// parameters in SAFE_SIP_PARAMS; anything else is refused as a whole, never cleaned up.

/** URI parameters a destination may carry, with the values each may take. */
export const SAFE_SIP_PARAMS: Readonly<Record<string, RegExp>> = {
  transport: /^(udp|tcp|tls|ws|wss)$/i,
  user: /^(phone|ip)$/i,
};
export const SIP_URI_MAX_LENGTH = 256;

const SIP_USER = /^[A-Za-z0-9._~+-]{1,64}$/;
const SIP_HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\d{1,3}(?:\.\d{1,3}){3}|\[[0-9A-Fa-f:.]{2,45}\])$/;

export interface ParsedSipUri {
  scheme: 'sip' | 'sips';
  user: string;
  host: string;
  port: string | null;
  params: Record<string, string>;
}

/** Why a SIP destination is refused, or null when it is a plain, safe `sip:user@host[:port][;param=value]`. */
export function sipUriRefusal(uri: string): string | null {
  return parseSafeSipUri(uri).refusal;
}

export function parseSafeSipUri(uri: string): { refusal: string; parsed: null } | { refusal: null; parsed: ParsedSipUri } {
  const refuse = (refusal: string) => ({ refusal, parsed: null });
  if (uri.length > SIP_URI_MAX_LENGTH) return refuse(`a SIP URI is at most ${SIP_URI_MAX_LENGTH} characters`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0020\u007f<>"'`\\]/.test(uri)) return refuse('a SIP URI may not contain spaces, control characters (CR, LF), quotes, backslashes or angle brackets');
  if (uri.includes('?')) return refuse('a SIP URI may not carry headers (`?`)');
  const m = /^(sips?):([^@;:]+)@([^;]+?)(?::(\d{1,5}))?((?:;[^;]*)*)$/i.exec(uri);
  if (!m) return refuse('expected sip:user@host[:port][;transport=…]');
  const [, scheme, user, host, port, paramText] = m;
  if (!SIP_USER.test(user!)) return refuse('the SIP user part may hold only letters, digits and . _ ~ + -');
  if (!SIP_HOST.test(host!)) return refuse('the SIP host must be a host name or an IP address');
  if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) return refuse('the SIP port must be 1-65535');
  const params: Record<string, string> = {};
  for (const part of (paramText ?? '').split(';').slice(1)) {
    const eq = part.indexOf('=');
    const name = (eq < 0 ? part : part.slice(0, eq)).toLowerCase();
    const value = eq < 0 ? '' : part.slice(eq + 1);
    const allowed = SAFE_SIP_PARAMS[name];
    if (!allowed || !allowed.test(value) || name in params) return refuse(`the SIP URI parameter "${name.slice(0, 32)}" is not allowed (only ${Object.keys(SAFE_SIP_PARAMS).join(', ')})`);
    params[name] = value.toLowerCase();
  }
  return { refusal: null, parsed: { scheme: scheme!.toLowerCase() as 'sip' | 'sips', user: user!, host: host!.toLowerCase(), port: port ?? null, params } };
}

/** The one spelling of a destination that its blind index is computed over. */
export function normalizedDestination(type: 'phone' | 'sip', destination: string): string {
  if (type === 'phone') return `phone:${destination}`;
  const parsed = parseSafeSipUri(destination).parsed;
  if (!parsed) return `sip:${destination}`;
  return `sip:${parsed.user}@${parsed.host}${parsed.port ? `:${parsed.port}` : ''}`;
}

/** A SIP URI shown masked: its user part like a number (first character and last two), the host kept, parameters dropped. */
export function maskSipUri(uri: string): string {
  const parsed = parseSafeSipUri(uri).parsed;
  if (!parsed) return 'sip:***';
  const u = parsed.user;
  const masked = u.length <= 3 ? '*'.repeat(u.length) : u[0] + '*'.repeat(u.length - 3) + u.slice(-2);
  return `${parsed.scheme}:${masked}@${parsed.host}`;
}

/** A provider call id shown masked (`CA` + its last four characters). */
export function maskCallSid(sid: string): string {
  return sid.length <= 6 ? '*'.repeat(sid.length) : sid.slice(0, 2) + '*'.repeat(sid.length - 6) + sid.slice(-4);
}
