// Whether the API's dependencies (MongoDB, Temporal) answer, with the reason when one does not,
// and whether LiveKit does when real-time voice is configured: voice is optional, so an
// unreachable LiveKit is reported (and logged) but leaves the API ready for everything else.
// The reasons name internal hosts, so they go to the logs and the operator's route only. The public
// probe shares its checks: one in flight at a time, its outcome reused for a second, so anonymous
// probes cost the dependencies at most about one check a second however many arrive.
import { RoomServiceClient } from 'livekit-server-sdk';
import { pingMongo } from '../../db/connection';
import { liveKitConfigured } from '../../lib/config';
import { liveKitHttpUrl } from '../../core/voice/livekit';
import { type AppContext } from '../context';

export interface DependencyCheck {
  ok: boolean;
  /** The first line of the failure (at most 200 characters); absent when ok. */
  error?: string;
}

export interface Readiness {
  /** MongoDB and Temporal answer; LiveKit's check does not count. */
  ready: boolean;
  /** `livekit` only when LIVEKIT_URL (and its key pair) is set. */
  checks: { mongodb: DependencyCheck; temporal: DependencyCheck; livekit?: DependencyCheck };
}

/** How long the LiveKit probe may take (s), like the other checks' bounds. */
const LIVEKIT_PROBE_TIMEOUT_SECONDS = 2;

/**
 * One authenticated call to LiveKit's server API (listing a room name no room has), so a wrong key
 * pair fails the check as an unreachable server does; it answers an empty list and costs nothing.
 */
async function pingLiveKit(ctx: AppContext): Promise<void> {
  const { LIVEKIT_URL, LIVEKIT_API_KEY, LIVEKIT_API_SECRET } = ctx.config;
  const rooms = new RoomServiceClient(liveKitHttpUrl(LIVEKIT_URL!), LIVEKIT_API_KEY!, LIVEKIT_API_SECRET!, { requestTimeout: LIVEKIT_PROBE_TIMEOUT_SECONDS });
  try {
    await rooms.listRooms(['switchboard-readiness-probe']);
  } catch (err) {
    // fetch says only "fetch failed"; its cause says why (refused, timed out, name not found).
    const cause = err instanceof Error && err.cause instanceof Error ? err.cause : null;
    const causeText = cause ? [(cause as { code?: string }).code, cause.message].filter(Boolean).join(' ') : '';
    throw new Error(`LiveKit at ${liveKitHttpUrl(LIVEKIT_URL!)}: ${err instanceof Error ? err.message : String(err)}${causeText ? ` (${causeText})` : ''}`);
  }
}

async function check(probe: () => Promise<void>): Promise<DependencyCheck> {
  try {
    await probe();
    return { ok: true };
  } catch (err) {
    return { ok: false, error: err instanceof Error ? err.message.split('\n')[0]!.slice(0, 200) : 'unreachable' };
  }
}

/** What this process last logged about its readiness, so a probe every few seconds logs only changes. */
const lastLogged = new WeakMap<AppContext, string>();

function logChange(ctx: AppContext, readiness: Readiness): void {
  const summary = JSON.stringify(readiness.checks);
  const previous = lastLogged.get(ctx);
  if (summary === previous) return;
  lastLogged.set(ctx, summary);
  if (!readiness.ready) ctx.logger.warn({ checks: readiness.checks }, 'API not ready: a dependency does not answer');
  else if (readiness.checks.livekit?.ok === false) ctx.logger.warn({ checks: readiness.checks }, 'LiveKit does not answer: real-time voice is unavailable, the API is ready for the rest');
  else if (previous !== undefined) ctx.logger.info({ checks: readiness.checks }, 'API ready again');
}

/**
 * How long the public probe answers from the last finished check. Load balancers probe every few
 * seconds, so an outage shows within a second of the next probe; an anonymous flood of probes
 * becomes about one check of each dependency a second.
 */
export const PUBLIC_READINESS_REUSE_MS = 1_000;

/** The public probe's check in flight (settledAt null) or finished at settledAt, per process context. */
const sharedChecks = new WeakMap<AppContext, { result: Promise<Readiness>; settledAt: number | null }>();

/**
 * Readiness for the public probe: the check in flight when there is one, the last one when it
 * finished within PUBLIC_READINESS_REUSE_MS, a new one otherwise. The operator's report always checks anew.
 */
export function sharedReadiness(ctx: AppContext): Promise<Readiness> {
  const last = sharedChecks.get(ctx);
  if (last && (last.settledAt === null || Date.now() - last.settledAt < PUBLIC_READINESS_REUSE_MS)) return last.result;
  const entry: { result: Promise<Readiness>; settledAt: number | null } = { result: checkReadiness(ctx), settledAt: null };
  sharedChecks.set(ctx, entry);
  // checkReadiness never rejects (each check answers ok or not), so the entry always settles.
  const settled = () => {
    entry.settledAt = Date.now();
  };
  entry.result.then(settled, settled);
  return entry.result;
}

/** Probes the dependencies together; logs when the outcome changes. */
export async function checkReadiness(ctx: AppContext): Promise<Readiness> {
  const voice = liveKitConfigured(ctx.config);
  const [mongodb, temporal, livekit] = await Promise.all([
    check(() => pingMongo(ctx.models.connection)),
    check(() => ctx.temporal.ping()),
    voice ? check(() => pingLiveKit(ctx)) : Promise.resolve(null),
  ]);
  const readiness: Readiness = { ready: mongodb.ok && temporal.ok, checks: { mongodb, temporal, ...(livekit ? { livekit } : {}) } };
  logChange(ctx, readiness);
  return readiness;
}
