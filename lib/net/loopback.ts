// Whether a host name or a peer address is this machine's loopback: for settings that only make
// sense when everything runs on one machine (CODEC_TRUST_LOCAL_UI).
import ipaddr from 'ipaddr.js';

/** A socket's peer address (`127.0.0.1`, `::1`, `::ffff:127.0.0.1`) in the loopback range. */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (!address || !ipaddr.isValid(address)) return false;
  return ipaddr.process(address).range() === 'loopback';
}

/**
 * A URL host name (as `new URL(...).hostname` gives it) that can only mean this machine:
 * `localhost`, an address in 127.0.0.0/8, or `[::1]`. Other names may resolve anywhere.
 */
export function isLoopbackName(hostname: string): boolean {
  if (hostname === 'localhost') return true;
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return ipaddr.isValid(bare) && isLoopbackAddress(bare);
}

/** A Host header naming this machine (`localhost:3000`, `127.0.0.1:3000`, `[::1]:3000`); nothing else around it. */
export function isLoopbackHostHeader(host: string | undefined): boolean {
  const match = /^(localhost|\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-f:.]+\])(?::\d{1,5})?$/i.exec(host ?? '');
  return match !== null && isLoopbackName(match[1]!.toLowerCase());
}
