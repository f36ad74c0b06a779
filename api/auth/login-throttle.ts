// Login throttling that an attacker cannot turn against a victim: failures are counted per
// client address and email, with a larger budget per client address alone, never per email
// alone, so failures sent from one address never block the owner of the email logging in from
// another. The policy is in docs/auth-and-tenancy.md.
import { type Request } from 'express';
import { isIPv6 } from 'node:net';
import { RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { ApiError } from '../../lib/errors';
import { sha256Hex } from '../../lib/crypto';
import { type AppContext } from '../context';

/** An attempt under way: settled once its outcome is known. */
export interface LoginAttempt {
  /** The password was right: the address's failures with this email are forgiven. */
  succeeded(): Promise<void>;
}

/**
 * Who is counted as one client: an IPv4 address, or an IPv6 client's /64 (one customer's
 * network; counting single IPv6 addresses would hand an attacker 2^64 budgets). `req.ip` is
 * the client address as TRUST_PROXY lets Express read it.
 */
export function clientNetwork(ip: string | undefined): string {
  if (!ip) return 'unknown';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1]!;
  if (!isIPv6(ip)) return ip;
  const [head = '', tail = ''] = ip.split('%')[0]!.split('::');
  // An embedded IPv4 tail (`64:ff9b::192.0.2.1`) stands for two groups.
  const groups = (part: string) => (part === '' ? [] : part.split(':').flatMap((group) => (group.includes('.') ? ['0', '0'] : [group])));
  const missing = 8 - groups(head).length - groups(tail).length;
  const expanded = [...groups(head), ...Array<string>(Math.max(0, missing)).fill('0'), ...groups(tail)];
  return `${expanded
    .slice(0, 4)
    .map((group) => parseInt(group, 16).toString(16))
    .join(':')}::/64`;
}

function keys(req: Request, email: string) {
  const network = clientNetwork(req.ip);
  // The email is hashed: the counters need no address book.
  return { network, pair: `${network}:${sha256Hex(email.toLowerCase())}` };
}

function tooMany(retryAfterMs: number): ApiError {
  const ms = Math.max(1, retryAfterMs);
  return new ApiError('RATE_LIMIT_EXCEEDED', {
    message: 'Too many failed login attempts from this address; retry later',
    extraBody: { retryAfterMs: ms },
    headers: { 'Retry-After': String(Math.ceil(ms / 1000)) },
  });
}

/**
 * Charges the attempt to both budgets before the password is checked, so concurrent guesses
 * are counted too; a right password gives the charges back. Throws 429 with Retry-After when
 * either budget is spent (a refused attempt costs neither). If the counter store fails, the
 * attempt goes ahead, as for every other rate limit.
 */
export async function beginLoginAttempt(ctx: AppContext, req: Request, email: string): Promise<LoginAttempt> {
  const { network, pair } = keys(req, email);
  const budgets: [RateLimiterAbstract, string][] = [
    [ctx.loginIpLimiter, network],
    [ctx.loginLimiter, pair],
  ];
  const charges = await Promise.allSettled(budgets.map(([limiter, key]) => limiter.consume(key)));
  const refusals = charges.flatMap((charge) => (charge.status === 'rejected' && charge.reason instanceof RateLimiterRes ? [charge.reason] : []));
  const storeFailure = charges.find((charge) => charge.status === 'rejected' && !(charge.reason instanceof RateLimiterRes));
  if (storeFailure) ctx.logger.warn({ err: (storeFailure as PromiseRejectedResult).reason }, 'Login rate-limit store failed; the attempt is not counted');
  const giveBack = (limiter: RateLimiterAbstract, key: string) => limiter.reward(key, 1).catch(() => undefined);
  if (refusals.length > 0) {
    await Promise.all(budgets.map(([limiter, key], i) => (charges[i]!.status === 'fulfilled' ? giveBack(limiter, key) : undefined)));
    throw tooMany(Math.max(...refusals.map((refusal) => refusal.msBeforeNext)));
  }
  return {
    async succeeded() {
      await Promise.all([giveBack(ctx.loginIpLimiter, network), ctx.loginLimiter.delete(pair).catch(() => undefined)]);
    },
  };
}
