// The hosts a tool secret may be sent to (docs/secrets.md, "Where a secret may be sent"): each
// entry is a host (its scheme's default port: 443 for https, 80 for http) or host:port, matched
// exactly against the URL a request goes to. No wildcards: each host is listed. Host names are
// ASCII (an IDN in its xn-- form) and IP literals IPv4, so the pattern below is the whole rule and
// the API document can state it.
/** At most this many entries per secret. */
export const ALLOWED_HOSTS_MAX = 32;

/** Lower case, without a trailing dot (the same host to DNS), IPv6 in brackets as the URL parser spells it. */
function canonicalHost(hostname: string): string {
  return hostname.toLowerCase().replace(/\.$/, '');
}

const LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?';
const OCTET = '(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])';
const PORT = '(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])';
/** A host name (its last label starts with a letter, so it is never read as an IPv4 address) or an IPv4 address, then an optional :port. */
export const ALLOWED_HOST_PATTERN = new RegExp(`^(?:(?:${LABEL}\\.)*[A-Za-z](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.?|(?:${OCTET}\\.){3}${OCTET})(?::${PORT})?$`);
const ENTRY = /^([^:]+)(?::(\d+))?$/;

/**
 * The canonical form of one entry (`billing.example.com`, `api.example.com:8443`, `[2001:db8::1]:443`).
 * @throws Error saying why the entry is not a host or host:port.
 */
export function parseAllowedHost(entry: string): string {
  const trimmed = entry.trim();
  const bad = (why: string) => new Error(`"${entry}" ${why}`);
  if (trimmed === '') throw bad('is empty');
  if (trimmed.includes('*')) throw bad('is a wildcard; list each host (e.g. api.example.com)');
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(trimmed)) throw bad('is a URL; give only its host or host:port (e.g. api.example.com, api.example.com:8443)');
  const match = ENTRY.exec(trimmed);
  if (!match || !ALLOWED_HOST_PATTERN.test(trimmed)) {
    if (match?.[2] !== undefined && (Number(match[2]) < 1 || Number(match[2]) > 65535)) throw bad('has a port outside 1-65535');
    throw bad('is not a host name or IPv4 address with an optional :port (e.g. api.example.com, api.example.com:8443, 203.0.113.7)');
  }
  const port = match[2];
  let url: URL;
  try {
    url = new URL(`http://${match[1]}/`);
  } catch {
    throw bad('is not a host name or IP address');
  }
  if (url.pathname !== '/' || url.username || url.password || url.port) throw bad('is not a host or host:port');
  const host = canonicalHost(url.hostname);
  if (host === '') throw bad('is not a host name or IP address');
  return port === undefined ? host : `${host}:${Number(port)}`;
}

/** Canonical entries, each once, in the order given. @throws Error naming the first bad entry. */
export function parseAllowedHosts(entries: readonly string[]): string[] {
  return [...new Set(entries.map(parseAllowedHost))];
}

const defaultPort = (protocol: string): string => (protocol === 'https:' ? '443' : '80');

/** `host:port` of the URL as people write it (the port always shown), for messages. */
export function destinationOf(url: URL): string {
  // The URL parser already writes an IPv6 host in brackets.
  return `${canonicalHost(url.hostname)}:${url.port || defaultPort(url.protocol)}`;
}

/** Whether `url` is one of `allowed`: the same host and the entry's port, or the scheme's default port for a bare host. */
export function isAllowedHost(allowed: readonly string[], url: URL): boolean {
  const host = canonicalHost(url.hostname);
  const port = url.port || defaultPort(url.protocol);
  return allowed.some((entry) => {
    const withPort = /^(.*):(\d+)$/.exec(entry);
    // A bracketed IPv6 address without a port ends in "]", so it never matches the pattern above.
    if (withPort && !entry.endsWith(']')) return withPort[1] === host && withPort[2] === port;
    return entry === host && port === defaultPort(url.protocol);
  });
}
