// A caller's number as sessions keep it: never in clear, only as the keyed blind index outbound
// calls use for their destinations (db/outbound-call.ts `destinationIndex`, same key), over one
// spelling of the number whatever the provider's format, so the analytics API can find a
// caller's sessions by any spelling of the number (docs/session-analytics.md).
import { destinationIndex } from '../../db/outbound-call';
import { normalizedDestination } from '../../lib/phone';
import { type CoreContext } from '../context';
import { destinationIndexKey } from './outbound-calls';

/**
 * The one spelling a caller number is indexed by: a SIP address as outbound destinations spell it;
 * `client:<name>` for a provider's app client; otherwise its digits alone with a `+` (so
 * `+1 (415) 555-0100`, `14155550100` and `tel:+14155550100` agree; a number without its country
 * code is another number).
 */
export function normalizedCallerNumber(value: string): string {
  const text = value.trim();
  if (/^sips?:/i.test(text) || text.includes('@')) return normalizedDestination('sip', /^sips?:/i.test(text) ? text : `sip:${text}`);
  if (/^client:/i.test(text)) return `client:${text.slice('client:'.length).toLowerCase()}`;
  const digits = text.replace(/\D/g, '');
  return digits ? normalizedDestination('phone', `+${digits}`) : `other:${text.toLowerCase()}`;
}

/** The blind index of a caller number in the tenant; null without a number or without the index key. */
export function callerNumberIndexOf(ctx: CoreContext, tenantId: string, value: string | undefined | null): string | null {
  if (!value || !value.trim()) return null;
  try {
    return destinationIndex(destinationIndexKey(ctx.config, ctx), tenantId, normalizedCallerNumber(value));
  } catch (err) {
    // Production without OUTBOUND_DESTINATION_INDEX_KEY: the call goes on, unfindable by number.
    ctx.logger.warn({ err: { message: (err as Error).message } }, 'caller number not indexed: no blind index key');
    return null;
  }
}

/** The index of each number asked for, for a filter (throws 503 without the key, as outbound search does). */
export function callerNumberIndexes(ctx: CoreContext, tenantId: string, values: readonly string[]): string[] {
  const key = destinationIndexKey(ctx.config, ctx);
  return [...new Set(values.map((v) => destinationIndex(key, tenantId, normalizedCallerNumber(v))))];
}
