// Analytics events of request paths that write nothing else of their own (an LLM completion
// call): held in the process and written as one batch every ANALYTICS_FLUSH_MS or at
// ANALYTICS_BATCH_MAX events, never one write per request. Written before the store connection
// closes (closeAppContext); a process that dies loses what it held, at most one interval's.
import { type Models } from '../../db/models';
import { type Logger } from '../../lib/logger';
import { emitAnalyticsEvents, type NewAnalyticsEvent } from './ingest';

const ANALYTICS_FLUSH_MS = 500;
const ANALYTICS_BATCH_MAX = 500;

class AnalyticsBatcher {
  private pending: NewAnalyticsEvent[] = [];
  private timer: NodeJS.Timeout | null = null;
  private writes: Promise<void> = Promise.resolve();

  constructor(private readonly ctx: { models: Models; logger: Pick<Logger, 'warn'> }) {}

  add(event: NewAnalyticsEvent): void {
    this.pending.push(event);
    if (this.pending.length >= ANALYTICS_BATCH_MAX) void this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), ANALYTICS_FLUSH_MS);
      this.timer.unref();
    }
  }

  /** Writes what is held (one batch), after any write under way. Never throws. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.pending.splice(0);
    this.writes = this.writes.then(() => emitAnalyticsEvents(this.ctx.models, this.ctx.logger, batch));
    return this.writes;
  }
}

const batchers = new WeakMap<Models, AnalyticsBatcher>();

/** Holds an event for the process's next batch (per store connection). */
export function holdAnalyticsEvent(ctx: { models: Models; logger: Pick<Logger, 'warn'> }, event: NewAnalyticsEvent): void {
  let batcher = batchers.get(ctx.models);
  if (!batcher) batchers.set(ctx.models, (batcher = new AnalyticsBatcher(ctx)));
  batcher.add(event);
}

/** Writes the events held for this store connection now (before it closes, and for tests). */
export async function flushHeldAnalyticsEvents(models: Models): Promise<void> {
  await batchers.get(models)?.flush();
}
