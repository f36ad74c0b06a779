// The one way analytics events are written: a batch at a time, unordered, through the driver, a
// duplicate id (a retried batch) skipped. Callers batch: the turn's events are written by the
// activity that records the turn, never one write per event on a request path.
import { randomBytes } from 'node:crypto';
import { type Models } from '../../db/models';
import { driverCollection } from '../../db/driver-collection';
import { type AnalyticsCategory, type AnalyticsEventDoc } from '../../db/analytics-event';
import { type Logger } from '../../lib/logger';
import { isOnlyDuplicateKeys } from '../../db/duplicate-key';
import { hourOf, invalidateRollups, minuteOf } from './rollups';
import { noteWrittenHours } from './rollup-warmer';

export type NewAnalyticsEvent = Omit<AnalyticsEventDoc, '_id' | 'hour' | 'minute' | 'agentName' | 'sessionId' | 'channel' | 'durationMs' | 'error' | 'tokens' | 'cost' | 'metadata'> & {
  /** A deterministic id when the source has one (retries then insert nothing twice). */
  id?: string;
  category: AnalyticsCategory;
  agentName?: string | null;
  sessionId?: string | null;
  channel?: string | null;
  durationMs?: number | null;
  error?: string | null;
  tokens?: number;
  cost?: number;
  metadata?: Record<string, unknown>;
};

/** A fresh analytics event id, for events whose source has no id of its own. */
export const newAnalyticsEventId = (): string => `ae_${randomBytes(12).toString('base64url')}`;

export function toAnalyticsDoc(e: NewAnalyticsEvent): AnalyticsEventDoc {
  return {
    _id: e.id ?? newAnalyticsEventId(),
    tenantId: e.tenantId,
    projectId: e.projectId,
    category: e.category,
    eventType: e.eventType,
    agentName: e.agentName ?? null,
    sessionId: e.sessionId ?? null,
    channel: e.channel ?? null,
    timestamp: e.timestamp,
    hour: hourOf(e.timestamp),
    minute: minuteOf(e.timestamp),
    durationMs: e.durationMs ?? null,
    error: e.error ?? null,
    tokens: e.tokens ?? 0,
    cost: e.cost ?? 0,
    metadata: e.metadata ?? {},
  };
}

/**
 * Writes a batch of analytics events; an id already written is skipped, not an error. An event of
 * an hour or minute whose rollup may already be built marks that rollup stale (one more write,
 * only then: a late or retried batch), so an event is never missing from the metrics
 * (core/analytics/rollups.ts).
 */
export async function recordAnalyticsEvents(models: Models, events: readonly NewAnalyticsEvent[]): Promise<void> {
  if (events.length === 0) return;
  const docs = events.map(toAnalyticsDoc);
  await driverCollection(models.AnalyticsEvent)
    .insertMany(docs, { ordered: false })
    .catch((err: unknown) => {
      if (!isOnlyDuplicateKeys(err)) throw err;
    });
  await invalidateRollups(models, docs);
  noteWrittenHours(models, docs);
}

let failedWrites = 0;

/** Batches of analytics events this process failed to write (each also logged). */
export const analyticsWriteFailures = (): number => failedWrites;

/**
 * `recordAnalyticsEvents` for an emitter whose own operation must not fail with it (a turn's
 * recording, a deployment, a key change): a failed write is logged and counted, never thrown. The
 * log names the categories and the error, not the events' contents.
 */
export async function emitAnalyticsEvents(models: Models, logger: Pick<Logger, 'warn'>, events: readonly NewAnalyticsEvent[]): Promise<void> {
  try {
    await recordAnalyticsEvents(models, events);
  } catch (err) {
    failedWrites++;
    logger.warn(
      { err: err instanceof Error ? err.message : String(err), events: events.length, categories: [...new Set(events.map((e) => e.category))], failedWrites },
      'Analytics events were not written',
    );
  }
}
