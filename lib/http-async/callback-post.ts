// One signed POST of an HTTP-async callback to a receiver, through the destination guard: the
// test message sends it once, the delivery activity once per attempt. It never throws for the
// receiver's sake; the outcome (status, latency, error) is what recent deliveries record.
// postCallback is the same POST with the caller's own headers (async agentic-app runs use it).
import { performance } from 'node:perf_hooks';
import { blockedDestinationOf } from '../net/destination';
import { EVENT_HEADER, signatureHeaders } from './signing';

/** A receiver has this long to answer (headers) before the attempt counts as failed. */
export const CALLBACK_TIMEOUT_MS = 10_000;

export interface CallbackPostInput {
  url: string;
  secret: string;
  event: string;
  body: unknown;
  /** The guarded fetch (lib/net/destination.ts) for the subscription's destination rules. */
  fetch: typeof globalThis.fetch;
  timeoutMs?: number;
}

export interface CallbackPostOutcome {
  /** A 2xx answer. */
  ok: boolean;
  /** The receiver's status, or null when none came (refused, timed out, network error). */
  statusCode: number | null;
  latencyMs: number;
  /** Why it is not ok, for people; null when ok. Never contains the secret or the body. */
  error: string | null;
  /** The destination rules refused the connection (a name that now resolves to a private address). */
  blocked: boolean;
}

/** By name, not instanceof: the abort reason is a DOMException, possibly of another realm. */
function isTimeout(err: unknown): boolean {
  const name = (err as { name?: unknown } | null)?.name;
  return name === 'TimeoutError' || name === 'AbortError';
}

export async function postSignedCallback(input: CallbackPostInput): Promise<CallbackPostOutcome> {
  const rawBody = JSON.stringify(input.body);
  const headers = { 'content-type': 'application/json', 'user-agent': 'Switchboard-Webhooks/1', [EVENT_HEADER]: input.event, ...signatureHeaders(input.secret, rawBody) };
  return postCallback({ url: input.url, headers, rawBody, fetch: input.fetch, ...(input.timeoutMs !== undefined ? { timeoutMs: input.timeoutMs } : {}) });
}

export interface RawCallbackPostInput {
  url: string;
  /** Every header sent, signature included. */
  headers: Record<string, string>;
  rawBody: string;
  /** The guarded fetch (lib/net/destination.ts) for the destination's rules. */
  fetch: typeof globalThis.fetch;
  timeoutMs?: number;
}

/** One POST through the guard, redirects not followed; never throws for the receiver's sake. */
export async function postCallback(input: RawCallbackPostInput): Promise<CallbackPostOutcome> {
  const timeoutMs = input.timeoutMs ?? CALLBACK_TIMEOUT_MS;
  const { headers, rawBody } = input;
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  try {
    // Redirects are not followed: the guard checks each hop, but a receiver that moved should be
    // updated in the subscription, not chased.
    const res = await input.fetch(input.url, { method: 'POST', headers, body: rawBody, redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) });
    const latencyMs = elapsed();
    // The body is not used; drop it so the connection can be reused.
    await res.body?.cancel().catch(() => undefined);
    const ok = res.status >= 200 && res.status < 300;
    const error = ok ? null : res.status >= 300 && res.status < 400 ? `receiver answered ${res.status} (redirects are not followed)` : `receiver answered ${res.status}`;
    return { ok, statusCode: res.status, latencyMs, error, blocked: false };
  } catch (err) {
    const latencyMs = elapsed();
    const blocked = blockedDestinationOf(err);
    if (blocked) return { ok: false, statusCode: null, latencyMs, error: blocked.message, blocked: true };
    if (isTimeout(err)) return { ok: false, statusCode: null, latencyMs, error: `no answer within ${timeoutMs / 1000} s`, blocked: false };
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    const detail = cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
    return { ok: false, statusCode: null, latencyMs, error: `could not reach the receiver (${detail})`, blocked: false };
  }
}
