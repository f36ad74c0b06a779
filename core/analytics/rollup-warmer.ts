// Builds hour rollups ahead of the reads that need them: each process notes the project-hours it
// wrote analytics events in, and once such an hour is old enough to be read from its rollup
// (isRollupUnit: an hour after its start, plus its delay) builds that rollup in the background.
// Without it the first read of a day after a busy hour paid for the scan; a read still builds what
// is missing (after a restart, or events written by another process), so this only moves work
// off the read, and two processes building one rollup write the same document.
import { type Models } from '../../db/models';
import { runPeriodically } from '../../lib/periodic';
import { type CoreContext } from '../context';
import { HOUR_GRAIN, isRollupUnit, rollupCells, type ProjectScope } from './rollups';

/** How often closed hours are looked for. */
export const ROLLUP_WARM_EVERY_MS = 60_000;
/** Project-hours kept per store at most (the oldest go first: their reads build them instead). */
const NOTED_MAX = 10_000;

const noted = new WeakMap<Models, Map<string, ProjectScope & { hour: Date }>>();

/** Notes the project-hours of events just written (called by the write path). */
export function noteWrittenHours(models: Models, events: readonly (ProjectScope & { hour: Date })[]): void {
  let hours = noted.get(models);
  if (!hours) noted.set(models, (hours = new Map()));
  for (const e of events) {
    const key = `${e.tenantId}\u0000${e.projectId}\u0000${e.hour.getTime()}`;
    if (hours.has(key)) continue;
    hours.set(key, { tenantId: e.tenantId, projectId: e.projectId, hour: e.hour });
    if (hours.size > NOTED_MAX) hours.delete(hours.keys().next().value!);
  }
}

/** Builds the rollups of the noted hours that have closed, one project at a time; returns how many. */
export async function warmClosedHours(models: Models, now = new Date()): Promise<number> {
  const hours = noted.get(models);
  if (!hours) return 0;
  const due = new Map<string, ProjectScope & { starts: Date[] }>();
  for (const [key, h] of hours) {
    if (!isRollupUnit(HOUR_GRAIN, h.hour, now)) continue;
    hours.delete(key);
    const project = `${h.tenantId}\u0000${h.projectId}`;
    const entry = due.get(project) ?? { tenantId: h.tenantId, projectId: h.projectId, starts: [] };
    entry.starts.push(h.hour);
    due.set(project, entry);
  }
  let built = 0;
  for (const { starts, ...scope } of due.values()) {
    await rollupCells(models, scope, HOUR_GRAIN, starts);
    built += starts.length;
  }
  return built;
}

/** Runs warmClosedHours every ROLLUP_WARM_EVERY_MS in this process; returns its stop. */
export function startRollupWarmer(ctx: Pick<CoreContext, 'models' | 'logger'>): () => void {
  return runPeriodically(ROLLUP_WARM_EVERY_MS, ROLLUP_WARM_EVERY_MS, () => warmClosedHours(ctx.models), (err) =>
    ctx.logger.warn({ err }, 'analytics rollups could not be built ahead; reads build them'),
  );
}
