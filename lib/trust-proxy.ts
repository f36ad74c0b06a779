// TRUST_PROXY: whose X-Forwarded-For the API believes for the client's address (Express's
// `trust proxy`). Checked at start, so a typo stops the process instead of trusting nobody.
import { isIPv4, isIPv6 } from 'node:net';
import { z } from 'zod';

/** What Express's `trust proxy` setting is given: all or nothing, a hop count, or addresses. */
export type TrustProxy = boolean | number | string[];

/** The names Express (proxy-addr) knows for address ranges. */
const RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** An IPv4 or IPv6 address, optionally with a prefix length Express accepts (1 to 32 or 128). */
function isAddressOrRange(item: string): boolean {
  const slash = item.lastIndexOf('/');
  const address = slash === -1 ? item : item.slice(0, slash);
  const v4 = isIPv4(address);
  // A zone index (`fe80::1%eth0`) names an interface, not a peer.
  const v6 = !address.includes('%') && isIPv6(address);
  if (!v4 && !v6) return false;
  if (slash === -1) return true;
  const prefix = item.slice(slash + 1);
  if (!/^[0-9]{1,3}$/.test(prefix)) return false;
  const bits = Number(prefix);
  return bits >= 1 && bits <= (v4 ? 32 : 128);
}

/**
 * `false`, `true`, a hop count (`1`: the address the nearest proxy saw), or a comma-separated
 * list of addresses, CIDR ranges and the names `loopback`, `linklocal`, `uniquelocal`; null
 * for anything else. A subset of what Express takes (no netmask notation), each form meaning
 * what it means to Express.
 */
export function parseTrustProxy(value: string): TrustProxy | null {
  const trimmed = value.trim();
  if (trimmed === 'false') return false;
  if (trimmed === 'true') return true;
  if (/^[0-9]{1,3}$/.test(trimmed)) return Number(trimmed);
  const items = trimmed.split(',').map((item) => item.trim());
  return items.every((item) => RANGE_NAMES.has(item) || isAddressOrRange(item)) ? items : null;
}

export const TrustProxySchema = z
  .string()
  .transform((value, ctx) => {
    const parsed = parseTrustProxy(value);
    if (parsed !== null) return parsed;
    ctx.addIssue({
      code: 'custom',
      message: 'must be false, true, a hop count, or a comma-separated list of IP addresses, CIDR ranges, loopback, linklocal, uniquelocal',
    });
    return z.NEVER;
  })
  .default(['loopback']);
