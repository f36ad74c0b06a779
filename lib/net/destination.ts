// Destination rules for outbound requests written by tenants (HTTP tools, per-project LLM base
// URLs): which addresses are public, and a fetch whose every connection goes to an address that
// was checked by the same name resolution it connects with, so DNS rebinding cannot slip past.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent, buildConnector, fetch as undiciFetch } from 'undici';

type Address = ipaddr.IPv4 | ipaddr.IPv6;
type Cidr = [Address, number];

const cidr = (text: string): Cidr => ipaddr.parseCIDR(text) as Cidr;

/**
 * IPv4 ranges that are not globally reachable (IANA special-purpose registry), in the order they
 * are reported: broadcast before the reserved /4 that contains it.
 */
const V4_RANGES: ReadonlyArray<[string, Cidr]> = [
  ['unspecified', cidr('0.0.0.0/8')],
  ['private', cidr('10.0.0.0/8')],
  ['carrierGradeNat', cidr('100.64.0.0/10')],
  ['loopback', cidr('127.0.0.0/8')],
  ['linkLocal', cidr('169.254.0.0/16')],
  ['private', cidr('172.16.0.0/12')],
  ['reserved', cidr('192.0.0.0/24')],
  ['documentation', cidr('192.0.2.0/24')],
  ['reserved', cidr('192.88.99.0/24')],
  ['private', cidr('192.168.0.0/16')],
  ['benchmarking', cidr('198.18.0.0/15')],
  ['documentation', cidr('198.51.100.0/24')],
  ['documentation', cidr('203.0.113.0/24')],
  ['multicast', cidr('224.0.0.0/4')],
  ['broadcast', cidr('255.255.255.255/32')],
  ['reserved', cidr('240.0.0.0/4')],
];

/** IPv6 ranges that are not globally reachable, checked after the forms that embed IPv4. */
const V6_RANGES: ReadonlyArray<[string, Cidr]> = [
  ['unspecified', cidr('::/128')],
  ['loopback', cidr('::1/128')],
  ['discard', cidr('100::/64')],
  ['nat64Local', cidr('64:ff9b:1::/48')],
  ['benchmarking', cidr('2001:2::/48')],
  ['orchid', cidr('2001:10::/28')],
  ['documentation', cidr('2001:db8::/32')],
  ['documentation', cidr('3fff::/20')],
  ['uniqueLocal', cidr('fc00::/7')],
  ['linkLocal', cidr('fe80::/10')],
  ['siteLocal', cidr('fec0::/10')],
  ['multicast', cidr('ff00::/8')],
];

/** Only 2000::/3 is allocated for global unicast; everything else is reserved by the IETF. */
const V6_GLOBAL_UNICAST = cidr('2000::/3');

const v4 = (high: number, low: number): ipaddr.IPv4 => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);

/** Whether `address` lies in `range` (an address never lies in a range of the other family). */
function inRange(address: Address, range: Cidr): boolean {
  return address.kind() === range[0].kind() && (address as ipaddr.IPv6).match(range as [ipaddr.IPv6, number]);
}

const MAPPED = cidr('::ffff:0:0/96');
const TRANSLATED = cidr('::ffff:0:0:0/96');
const COMPATIBLE = cidr('::/96');
const UNSPECIFIED_OR_LOOPBACK = cidr('::/127');
const NAT64 = cidr('64:ff9b::/96');
const SIX_TO_FOUR = cidr('2002::/16');
const TEREDO = cidr('2001::/32');

/** IPv6 forms that carry an IPv4 address; that address decides, whatever the IPv6 spelling. */
function embeddedV4(address: ipaddr.IPv6): { form: string; addresses: ipaddr.IPv4[] } | null {
  const p = address.parts;
  const last = v4(p[6]!, p[7]!);
  if (inRange(address, MAPPED)) return { form: 'ipv4Mapped', addresses: [last] };
  if (inRange(address, TRANSLATED)) return { form: 'ipv4Translated', addresses: [last] };
  // IPv4-compatible (deprecated); :: and ::1 are classified by name below.
  if (inRange(address, COMPATIBLE) && !inRange(address, UNSPECIFIED_OR_LOOPBACK)) return { form: 'ipv4Compatible', addresses: [last] };
  if (inRange(address, NAT64)) return { form: 'nat64', addresses: [last] };
  if (inRange(address, SIX_TO_FOUR)) return { form: '6to4', addresses: [v4(p[1]!, p[2]!)] };
  // Teredo: the server's address in clear, the client's with every bit inverted.
  if (inRange(address, TEREDO)) return { form: 'teredo', addresses: [v4(p[2]!, p[3]!), v4(~p[6]! & 0xffff, ~p[7]! & 0xffff)] };
  return null;
}

function firstRange(address: Address, ranges: ReadonlyArray<[string, Cidr]>): string | null {
  for (const [name, range] of ranges) {
    if (inRange(address, range)) return name;
  }
  return null;
}

const stripBrackets = (host: string): string => (host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host);

export type AddressVerdict = { public: true } | { public: false; range: string };

/**
 * Whether an IP address (no brackets) is globally reachable. Anything that does not parse, and
 * every special-purpose range of either family, is not; IPv6 spellings of an IPv4 address are
 * judged by the IPv4 address they carry.
 */
export function classifyAddress(ip: string): AddressVerdict {
  const family = isIP(ip);
  if (!family) return { public: false, range: 'invalid' };
  // The URL parser rewrites every IPv6 spelling (dotted tails included) into plain hex groups,
  // which is the form ipaddr.js 1.x parses.
  let address: Address;
  try {
    address = ipaddr.parse(family === 6 ? stripBrackets(new URL(`http://[${ip}]/`).hostname) : ip) as Address;
  } catch {
    return { public: false, range: 'invalid' };
  }
  if (address.kind() === 'ipv4') {
    const range = firstRange(address, V4_RANGES);
    return range ? { public: false, range } : { public: true };
  }
  const v6 = address as ipaddr.IPv6;
  const embedded = embeddedV4(v6);
  if (embedded) {
    for (const inner of embedded.addresses) {
      const range = firstRange(inner, V4_RANGES);
      if (range) return { public: false, range: `${embedded.form}:${range}` };
    }
    return { public: true };
  }
  const range = firstRange(v6, V6_RANGES) ?? (inRange(v6, V6_GLOBAL_UNICAST) ? null : 'reserved');
  return range ? { public: false, range } : { public: true };
}

export function isPublicAddress(ip: string): boolean {
  return classifyAddress(ip).public;
}

export const DESTINATION_BLOCKED = 'DESTINATION_BLOCKED';

/** A request whose destination is not public and not allowed by the operator. */
export class BlockedDestinationError extends Error {
  readonly code = DESTINATION_BLOCKED;

  constructor(
    readonly host: string,
    /** Which special-purpose range refused it; for logs (it can name internal facts). */
    readonly range: string,
  ) {
    super(`Requests to private, loopback and other non-public addresses are refused (${host})`);
    this.name = 'BlockedDestinationError';
  }
}

/** The BlockedDestinationError somewhere in `err`'s cause chain (fetch wraps it in a TypeError). */
export function blockedDestinationOf(err: unknown): BlockedDestinationError | null {
  let current: unknown = err;
  for (let depth = 0; depth < 6 && typeof current === 'object' && current !== null; depth++) {
    if ((current as { code?: unknown }).code === DESTINATION_BLOCKED && current instanceof Error) return current as BlockedDestinationError;
    current = (current as { cause?: unknown }).cause;
  }
  return null;
}

function defaultPort(protocol: string): string {
  return protocol === 'https:' ? '443' : '80';
}

/** `host:port` as a URL spells its host (lower case, IPv6 compressed in brackets), port explicit. */
export function destinationKey(hostname: string, port: string, protocol: string): string {
  const host = hostname.toLowerCase();
  const bracketed = isIP(host) === 6 ? `[${host}]` : host;
  return `${bracketed}:${port || defaultPort(protocol)}`;
}

/**
 * Parses a comma-separated list of `host:port` entries into their canonical keys.
 * @throws Error naming the first entry that is not `host:port`.
 */
export function parseDestinationList(value: string): string[] {
  return value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry) => {
      const bad = new Error(`"${entry}" is not host:port (e.g. 127.0.0.1:4010, [::1]:4010, billing.internal:8443)`);
      const match = /^([^/?#@\s]+):(\d{1,5})$/.exec(entry);
      const port = Number(match?.[2]);
      if (!match || port < 1 || port > 65535) throw bad;
      let url: URL;
      try {
        url = new URL(`http://${match[1]}/`);
      } catch {
        throw bad;
      }
      // A host with a port of its own ("a:1:2") parses as host "a" and port 1.
      if (url.port !== '' || url.pathname !== '/') throw bad;
      return destinationKey(stripBrackets(url.hostname), String(port), 'http:');
    });
}

/** A resolver with the shape of `dns.lookup(host, { all: true })`; tests inject their own. */
export type Resolve = (hostname: string) => Promise<LookupAddress[]>;

const systemResolve: Resolve = (hostname) =>
  new Promise((resolve, reject) => dnsLookup(hostname, { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))));

export interface DestinationPolicy {
  /** Every destination allowed: development and tests only (refused in production by config). */
  allowPrivateNetworks: boolean;
  /** Canonical `host:port` keys (parseDestinationList) exempt from the refusal. */
  allowedPrivateDestinations: readonly string[];
  /** Name resolution for the checked connections. @default dns.lookup */
  resolve?: Resolve;
}

function isExempt(policy: DestinationPolicy, key: string): boolean {
  return policy.allowPrivateNetworks || policy.allowedPrivateDestinations.includes(key);
}

/** Reserved names that always mean this machine (RFC 6761), refused before any resolution. */
function isLocalhostName(host: string): boolean {
  const lower = host.toLowerCase().replace(/\.$/, '');
  return lower === 'localhost' || lower.endsWith('.localhost');
}

/**
 * The check that needs no resolution: a URL whose host is a non-public IP literal (or
 * `localhost`) and not exempt. Used when a destination is written; names are judged when used.
 * @throws BlockedDestinationError
 */
export function assertDestinationLiteral(url: URL, policy: DestinationPolicy): void {
  if (isExempt(policy, destinationKey(stripBrackets(url.hostname), url.port, url.protocol))) return;
  const host = stripBrackets(url.hostname);
  if (isLocalhostName(host)) throw new BlockedDestinationError(host, 'loopback');
  if (!isIP(host)) return;
  const verdict = classifyAddress(host);
  if (!verdict.public) throw new BlockedDestinationError(host, verdict.range);
}

/**
 * A `lookup` for net/tls.connect that answers only when every address of the name is public, so
 * the socket connects to an address this very resolution checked.
 */
export function checkingLookup(resolve: Resolve): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (all) => {
        const blocked = all.map((a) => classifyAddress(a.address)).find((v) => !v.public);
        if (blocked && !blocked.public) return callback(new BlockedDestinationError(hostname, blocked.range), '', 0);
        const usable = options.family ? all.filter((a) => a.family === options.family) : all;
        const first = usable[0];
        if (!first) {
          const err: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
          err.code = 'ENOTFOUND';
          return callback(err, '', 0);
        }
        if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, usable);
        return callback(null, first.address, first.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, '', 0),
    );
  };
}

export interface DestinationGuard {
  /** Every connection of this dispatcher is checked (literals directly, names by their resolution). */
  dispatcher: Agent;
  /** `fetch` through the dispatcher: each hop, redirects included, opens checked connections only. */
  fetch: typeof globalThis.fetch;
}

export function createDestinationGuard(policy: DestinationPolicy): DestinationGuard {
  const plain = buildConnector({});
  const checked = buildConnector({ lookup: checkingLookup(policy.resolve ?? systemResolve) });
  const connect: buildConnector.connector = (options, callback) => {
    const host = stripBrackets(options.hostname);
    if (isExempt(policy, destinationKey(host, options.port, options.protocol))) return plain(options, callback);
    if (isIP(host)) {
      // Literal addresses are never looked up, so they are judged here.
      const verdict = classifyAddress(host);
      if (!verdict.public) return callback(new BlockedDestinationError(host, verdict.range), null);
      return plain(options, callback);
    }
    return checked(options, callback);
  };
  const dispatcher = new Agent({ connect });
  const guardedFetch = ((input: Parameters<typeof undiciFetch>[0], init?: Parameters<typeof undiciFetch>[1]) =>
    undiciFetch(input, { ...init, dispatcher })) as unknown as typeof globalThis.fetch;
  return { dispatcher, fetch: guardedFetch };
}

const guards = new Map<string, DestinationGuard>();

/** One guard per policy and process (its dispatcher keeps the connection pools). */
export function destinationGuard(policy: DestinationPolicy): DestinationGuard {
  if (policy.resolve) return createDestinationGuard(policy);
  const key = JSON.stringify([policy.allowPrivateNetworks, [...policy.allowedPrivateDestinations].sort()]);
  let guard = guards.get(key);
  if (!guard) {
    guard = createDestinationGuard(policy);
    guards.set(key, guard);
  }
  return guard;
}

/** The rules for HTTP tools, from configuration. */
export function toolDestinationPolicy(config: { TOOL_ALLOW_PRIVATE_NETWORKS: boolean; TOOL_ALLOWED_PRIVATE_DESTINATIONS: readonly string[] }): DestinationPolicy {
  return { allowPrivateNetworks: config.TOOL_ALLOW_PRIVATE_NETWORKS, allowedPrivateDestinations: config.TOOL_ALLOWED_PRIVATE_DESTINATIONS };
}

/** The rules for per-project LLM base URLs, from configuration (no blanket opt-out). */
export function llmDestinationPolicy(config: { LLM_ALLOWED_PRIVATE_DESTINATIONS: readonly string[] }): DestinationPolicy {
  return { allowPrivateNetworks: false, allowedPrivateDestinations: config.LLM_ALLOWED_PRIVATE_DESTINATIONS };
}

/** Why a destination cannot be written: refused by the rules, or its name does not resolve. */
export class UnresolvableDestinationError extends Error {
  constructor(readonly host: string) {
    super(`The host ${host} does not resolve`);
    this.name = 'UnresolvableDestinationError';
  }
}

/**
 * The write-time check for a destination the platform itself will call (webhook callback URLs):
 * the literal check, then every address the name resolves to must be public (the guarded fetch
 * checks again on every connection, so a name that changes later is still refused then).
 * @throws BlockedDestinationError, or UnresolvableDestinationError when the name has no address.
 */
export async function assertDestinationResolved(url: URL, policy: DestinationPolicy): Promise<void> {
  assertDestinationLiteral(url, policy);
  const host = stripBrackets(url.hostname);
  if (isIP(host) || isExempt(policy, destinationKey(host, url.port, url.protocol))) return;
  let all: LookupAddress[];
  try {
    all = await (policy.resolve ?? systemResolve)(host);
  } catch {
    throw new UnresolvableDestinationError(host);
  }
  if (all.length === 0) throw new UnresolvableDestinationError(host);
  for (const { address } of all) {
    const verdict = classifyAddress(address);
    if (!verdict.public) throw new BlockedDestinationError(host, verdict.range);
  }
}

/** The rules for HTTP-async webhook callback URLs, from configuration (no blanket opt-out). */
export function httpAsyncDestinationPolicy(config: { HTTP_ASYNC_ALLOWED_PRIVATE_DESTINATIONS: readonly string[] }): DestinationPolicy {
  return { allowPrivateNetworks: false, allowedPrivateDestinations: config.HTTP_ASYNC_ALLOWED_PRIVATE_DESTINATIONS };
}

/** The rules for async agentic-app run callback URLs, from configuration (no blanket opt-out). */
export function appRunCallbackDestinationPolicy(config: { APP_RUN_CALLBACK_ALLOWED_PRIVATE_DESTINATIONS: readonly string[] }): DestinationPolicy {
  return { allowPrivateNetworks: false, allowedPrivateDestinations: config.APP_RUN_CALLBACK_ALLOWED_PRIVATE_DESTINATIONS };
}
