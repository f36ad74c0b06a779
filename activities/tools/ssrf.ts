// Refuses tool requests to private, loopback and link-local addresses (SSRF protection), after
// DNS resolution so a public name pointing inside the network is refused too.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';

function isPrivateV4(ip: string): boolean {
  const [a = 0, b = 0] = ip.split('.').map(Number);
  return (
    a === 10 ||
    a === 127 ||
    a === 0 ||
    (a === 169 && b === 254) ||
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168) ||
    (a === 100 && b >= 64 && b <= 127) ||
    a >= 224
  );
}

function isPrivateV6(ip: string): boolean {
  const lower = ip.toLowerCase();
  if (lower === '::1' || lower === '::') return true;
  if (lower.startsWith('::ffff:')) return isPrivateV4(lower.slice(7));
  return lower.startsWith('fc') || lower.startsWith('fd') || lower.startsWith('fe80') || lower.startsWith('ff');
}

export function isPrivateAddress(ip: string): boolean {
  return isIP(ip) === 6 ? isPrivateV6(ip) : isPrivateV4(ip);
}

export class BlockedDestinationError extends Error {
  constructor(host: string) {
    super(`Tool requests to private or loopback addresses are refused (${host})`);
    this.name = 'BlockedDestinationError';
  }
}

/** Throws BlockedDestinationError unless every address of the URL's host is public. */
export async function assertPublicDestination(url: URL): Promise<void> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host) ? [host] : (await lookup(host, { all: true })).map((a) => a.address);
  if (addresses.length === 0 || addresses.some(isPrivateAddress)) throw new BlockedDestinationError(host);
}
