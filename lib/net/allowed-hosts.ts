// The hosts a tool secret may be sent to (docs/secrets.md, "Where a secret may be sent"): each
// entry is a host (its scheme's default port: 443 for https, 80 for http) or host:port, matched
// exactly against the URL a request goes to. No wildcards: each host is listed.
/** At most this many entries per secret. */
export const ALLOWED_HOSTS_MAX = 32;

/** Lower case, without a trailing dot (the same host to DNS), IPv6 in brackets as the URL parser spells it. */
function canonicalHost(hostname: string): string {
  return hostname.toLowerCase().replace(/\.$/, '');
}

const ENTRY = /^(\[[0-9A-Fa-f:.]+\]|[^\s:/?#@[\]*\\%]+)(?::(\d{1,5}))?$/;

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
  if (!match) throw bad('is not a host or host:port (e.g. api.example.com, api.example.com:8443, [2001:db8::1]:443)');
  const port = match[2];
  if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) throw bad('has a port outside 1-65535');
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
