// Whether the API's dependencies (MongoDB, Temporal) answer, with the reason when one does not.
// The reasons name internal hosts, so they go to the logs and the operator's route only.
import { pingMongo } from '../../db/connection';
import { type AppContext } from '../context';

export interface DependencyCheck {
  ok: boolean;
  /** The first line of the failure (at most 200 characters); absent when ok. */
  error?: string;
}

export interface Readiness {
  ready: boolean;
  checks: { mongodb: DependencyCheck; temporal: DependencyCheck };
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
  else if (previous !== undefined) ctx.logger.info({ checks: readiness.checks }, 'API ready again');
}

/** Probes both dependencies together; logs when the outcome changes. */
export async function checkReadiness(ctx: AppContext): Promise<Readiness> {
  const [mongodb, temporal] = await Promise.all([check(() => pingMongo(ctx.models.connection)), check(() => ctx.temporal.ping())]);
  const readiness = { ready: mongodb.ok && temporal.ok, checks: { mongodb, temporal } };
  logChange(ctx, readiness);
  return readiness;
}
