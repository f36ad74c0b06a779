// Bounds what of a tool result enters a session (TOOL_RESULT_HISTORY_MAX_BYTES): the result of a
// tool call (the activity's return value) or of an async one (a callback's or resume's body, the
// session's signal), so it is written to workflow history and from there reaches the agent's
// variables, trace events and the remembered turns. A larger result keeps its shape, with long
// strings, arrays and objects cut and a marker where something was cut; the full body is dropped.
import type { Json } from '../abl/ir';

/** Every cut leaves a marker that starts with this, e.g. `…[truncated: 1200 more characters]`. */
export const TRUNCATION_MARKER = '…[truncated';

/** The key a cut object gets, holding how many keys were dropped. */
export const TRUNCATED_KEYS_KEY = '…[truncated]';

const sizeOf = (value: Json): number => Buffer.byteLength(JSON.stringify(value), 'utf8');

/** The value with every string cut to `limit` characters and every array and object to `limit` entries. */
function cutTo(value: Json, limit: number): Json {
  if (typeof value === 'string') {
    return value.length > limit ? `${value.slice(0, limit)}${TRUNCATION_MARKER}: ${value.length - limit} more characters]` : value;
  }
  if (Array.isArray(value)) {
    const kept = value.slice(0, limit).map((v) => cutTo(v, limit));
    return value.length > limit ? [...kept, `${TRUNCATION_MARKER}: ${value.length - limit} more items]`] : kept;
  }
  if (value && typeof value === 'object') {
    const entries = Object.entries(value);
    const kept: Record<string, Json> = Object.fromEntries(entries.slice(0, limit).map(([k, v]) => [k, cutTo(v, limit)]));
    if (entries.length > limit) kept[TRUNCATED_KEYS_KEY] = `${entries.length - limit} more keys`;
    return kept;
  }
  return value;
}

/** The longest string, array or object (in characters or entries) in the value. */
function largestPart(value: Json): number {
  if (typeof value === 'string') return value.length;
  if (Array.isArray(value)) return value.reduce<number>((max, v) => Math.max(max, largestPart(v)), value.length);
  if (value && typeof value === 'object') return Object.values(value).reduce<number>((max, v) => Math.max(max, largestPart(v)), Object.keys(value).length);
  return 0;
}

export interface CappedResult {
  value: Json;
  truncated: boolean;
  /** The result's size before capping, in bytes of JSON. */
  originalBytes: number;
}

/**
 * The result when its JSON is at most `maxBytes` bytes; otherwise the largest cut of it (one
 * length limit for every string, array and object, found by bisection) that fits. The smallest
 * cut (limit 0: every string, array and object reduced to its marker) takes a few dozen bytes,
 * so any cap of 1 KiB or more (the configuration's minimum) is met.
 */
export function capToolResult(value: Json, maxBytes: number): CappedResult {
  const originalBytes = sizeOf(value);
  if (originalBytes <= maxBytes) return { value, truncated: false, originalBytes };
  let low = 0;
  let high = largestPart(value);
  let best: Json | null = null;
  while (low <= high) {
    const limit = Math.floor((low + high) / 2);
    const cut = cutTo(value, limit);
    if (sizeOf(cut) <= maxBytes) {
      best = cut;
      low = limit + 1;
    } else {
      high = limit - 1;
    }
  }
  return { value: best ?? cutTo(value, 0), truncated: true, originalBytes };
}
