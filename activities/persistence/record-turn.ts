// Writes what people look up after each turn: transcript messages, trace events and the session
// summary. Ids are deterministic and the summary holds absolute values, so a retried activity
// writes nothing twice. Short MongoDB work: the session workflow runs it as a local activity.
// A local activity runs before its workflow task is recorded, so a task that is lost (its worker
// killed) may have written rows that the task's next attempt, seeing messages that came in
// meanwhile, numbers differently: each row carries the history length its attempt ran at, and a
// row of a later attempt replaces one of an earlier attempt under the same number.
// The writes stay sequential: on FerretDB (SQLite) concurrent writes measured no faster. They go
// through the driver's collections (the input is already typed; mongoose's document building and
// validation cost more CPU than the writes). The summary update's filter carries the session's
// tenant and project next to its id, as every query on tenant data does.
import { type mongo } from 'mongoose';
import { type Models } from '../../db/models';
import { driverCollection } from '../../db/driver-collection';
import { releaseSessionSlot } from '../../db/session-capacity';
import { type SessionDoc } from '../../db/session';
import { type TraceEventDoc } from '../../db/trace-event';
import { type TranscriptMessageDoc } from '../../db/transcript-message';
import { storable } from '../../lib/storable-text';
import { isOnlyDuplicateKeys } from '../../db/duplicate-key';
import { type Logger } from '../../lib/logger';
import { emitAnalyticsEvents } from '../../core/analytics/ingest';
import { analyticsEventsOfTurn } from '../../core/analytics/from-turn';
import { deleteSessionStores } from '../../core/memory-stores/stores';

/**
 * Inserts rows whose ids are fixed by their numbers. Ids already there are a retry's (the same
 * rows, left alone) or an abandoned task attempt's (earlier `historyLength`, replaced).
 */
async function writeNumberedRows<T extends { _id: string; tenantId: string; historyLength?: number }>(collection: mongo.Collection<T>, docs: T[]): Promise<void> {
  try {
    await collection.insertMany(docs as mongo.OptionalUnlessRequiredId<T>[], { ordered: false });
  } catch (err) {
    if (!isOnlyDuplicateKeys(err)) throw err;
    const version = docs[0]?.historyLength;
    if (version === undefined) return;
    const older = { $or: [{ historyLength: { $lt: version } }, { historyLength: { $exists: false } }] };
    await collection.bulkWrite(
      docs.map((doc) => ({ replaceOne: { filter: { _id: doc._id, tenantId: doc.tenantId, ...older } as mongo.Filter<T>, replacement: doc as mongo.WithoutId<T> } })),
      { ordered: false },
    );
  }
}

export interface RecordTurnInput {
  tenantId: string;
  projectId: string;
  sessionId: string;
  /** The turn of rows that do not name their own (a write may hold several turns' rows). */
  turn: number;
  /**
   * The session history's length when the workflow task that asked for the write ran
   * (`workflowInfo().historyLength`): rows of a later attempt replace those of an earlier one.
   */
  historyLength?: number;
  messages: { seq: number; turn?: number; role: 'user' | 'assistant' | 'system'; agent: string | null; content: string; timestamp: string }[];
  traceEvents: { seq: number; turn?: number; type: string; spanId: string; parentSpanId: string | null; timestamp: string; data: Record<string, unknown> }[];
  summary: Partial<Omit<SessionDoc, '_id' | 'tenantId' | 'projectId' | 'createdAt' | 'lastActivityAt' | 'endedAt'>> & {
    lastActivityAt: string;
    endedAt?: string | null;
  };
}

export function createRecordTurn(deps: { models: Models; logger?: Pick<Logger, 'warn'> }) {
  return async function recordTurn(input: RecordTurnInput): Promise<void> {
    const { models } = deps;
    const base = { tenantId: input.tenantId, projectId: input.projectId, sessionId: input.sessionId, turn: input.turn, ...(input.historyLength !== undefined ? { historyLength: input.historyLength } : {}) };
    if (input.messages.length > 0) {
      const docs: TranscriptMessageDoc[] = input.messages.map((m) => ({ ...base, _id: `${input.sessionId}:m${m.seq}`, ...m, content: storable(m.content), turn: m.turn ?? input.turn, timestamp: new Date(m.timestamp) }));
      await writeNumberedRows(driverCollection(models.TranscriptMessage), docs);
    }
    if (input.traceEvents.length > 0) {
      const docs: TraceEventDoc[] = input.traceEvents.map((e) => ({ ...base, _id: `${input.sessionId}:${e.seq}`, ...e, data: storable(e.data), turn: e.turn ?? input.turn, timestamp: new Date(e.timestamp) }));
      await writeNumberedRows(driverCollection(models.TraceEvent), docs);
    }
    const { lastActivityAt, endedAt, ...rest } = input.summary;
    const session = await driverCollection(models.Session).updateOne(
      { _id: input.sessionId, tenantId: input.tenantId, projectId: input.projectId },
      {
        $set: {
          ...rest,
          lastActivityAt: new Date(lastActivityAt),
          ...(endedAt !== undefined ? { endedAt: endedAt ? new Date(endedAt) : null } : {}),
        },
      },
    );
    // The rows' analytics events, one batch after the session's own writes (none when the session is
    // not this tenant's and project's): deterministic ids, so a retry inserts nothing twice; a
    // failed analytics write is logged and counted, never fails the turn's recording.
    if (session.matchedCount > 0) await emitAnalyticsEvents(models, deps.logger ?? console, analyticsEventsOfTurn({
      ...input,
      channel: input.summary.channel ?? null,
      currentAgent: input.summary.currentAgent ?? null,
    }));
    // The session's last write: its place in the tenant's active-session count goes back. Only
    // the call that deletes the session's slot decrements, so a retried write changes nothing.
    if (input.summary.status === 'ended') {
      await releaseSessionSlot(models, { tenantId: input.tenantId, sessionId: input.sessionId });
      // Its memory stores go, after the end is recorded: a store write that saw the session active
      // is deleted here, and any later one finds it ended (core/memory-stores/stores.ts).
      await deleteSessionStores(models, { tenantId: input.tenantId, sessionId: input.sessionId });
    }
  };
}
