// Session traces as CSV, streamed: a cursor over the project's sessions and, for each, a cursor
// over its trace events, turned into rows batch by batch, so an export never holds more than a
// batch of either in memory (docs/sessions-api.md, "GET .../sessions/export").
import { type FilterQuery } from 'mongoose';
import { type Models } from '../../db/models';
import { type SessionDoc } from '../../db/session';
import { type TraceEventDoc } from '../../db/trace-event';
import { csvRow } from '../../lib/csv';
import { spanDurationMs } from './analysis';
import { requireListedSession, sessionsInWindow, timestampFilter, type SessionWindow } from './filters';
import { type SessionScope } from './scope';

/** The export's columns, in order (the header row). */
export const EXPORT_COLUMNS = [
  'session_id',
  'session_agent',
  'environment',
  'channel',
  'seq',
  'turn',
  'timestamp',
  'type',
  'span_id',
  'parent_span_id',
  'agent',
  'model',
  'tool',
  'duration_ms',
  'input_tokens',
  'output_tokens',
  'error',
  'data',
] as const;

/** Documents a cursor fetches per round trip (sessions and trace events alike). */
export const EXPORT_BATCH_SIZE = 500;
/** Rows are handed to the response in pieces of about this many characters. */
export const EXPORT_CHUNK_CHARS = 64 * 1024;

export interface ExportQuery extends SessionWindow {
  /** Sessions started with this agent. */
  agentName?: string;
}

const str = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v : null);
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

function errorOf(e: Pick<TraceEventDoc, 'type' | 'data'>): string | null {
  const d = e.data ?? {};
  const err = d.error;
  if (typeof err === 'string') return err;
  if (err && typeof err === 'object') return str((err as Record<string, unknown>).message) ?? JSON.stringify(err);
  return e.type === 'error' ? str(d.message) : null;
}

type SessionColumns = Pick<SessionDoc, '_id' | 'agentName' | 'environment' | 'channel'>;

/** One trace event as a CSV row of EXPORT_COLUMNS. */
export function exportRow(s: SessionColumns, e: Pick<TraceEventDoc, 'seq' | 'turn' | 'timestamp' | 'type' | 'spanId' | 'parentSpanId' | 'data'>): string {
  const d = (e.data ?? {}) as Record<string, unknown>;
  const usage = (d.usage && typeof d.usage === 'object' ? d.usage : {}) as Record<string, unknown>;
  const duration = spanDurationMs({ type: e.type, spanId: e.spanId, turn: e.turn, timestamp: e.timestamp, data: d }) ?? num(d.durationMs) ?? num(d.duration_ms);
  return csvRow([
    s._id,
    s.agentName,
    s.environment,
    s.channel,
    e.seq,
    e.turn,
    new Date(e.timestamp).toISOString(),
    e.type,
    e.spanId,
    e.parentSpanId,
    str(d.agent) ?? str(d.fromAgent),
    str(d.model),
    str(d.tool),
    duration,
    num(usage.inputTokens),
    num(usage.outputTokens),
    errorOf(e),
    JSON.stringify(d),
  ]);
}

/**
 * Checks the filters (a named session must be the caller's: 404 otherwise) and returns the CSV
 * as text chunks, produced as they are read: nothing is read before the first chunk is asked for.
 */
export async function prepareSessionExport(
  models: Models,
  scope: SessionScope,
  query: ExportQuery,
  environments?: readonly string[] | null,
): Promise<AsyncGenerator<string>> {
  if (query.sessionId) await requireListedSession(models, scope, query.sessionId, environments);
  const sessionFilter: FilterQuery<SessionDoc> = {
    ...scope,
    ...(environments?.length ? { environment: { $in: [...environments] } } : {}),
    ...(query.agentName ? { agentName: query.agentName } : {}),
    ...(query.sessionId ? { _id: query.sessionId } : {}),
    ...sessionsInWindow(query),
  };
  return exportChunks(models, scope, sessionFilter, query);
}

async function* exportChunks(models: Models, scope: SessionScope, sessionFilter: FilterQuery<SessionDoc>, window: SessionWindow): AsyncGenerator<string> {
  let chunk = csvRow(EXPORT_COLUMNS);
  const sessions = models.Session.find(sessionFilter)
    .select({ _id: 1, agentName: 1, environment: 1, channel: 1 })
    .sort({ createdAt: 1, _id: 1 })
    .batchSize(EXPORT_BATCH_SIZE)
    .lean()
    .cursor();
  try {
    for await (const session of sessions) {
      const events = models.TraceEvent.find({ tenantId: scope.tenantId, projectId: scope.projectId, sessionId: session._id, ...timestampFilter(window) })
        .select({ seq: 1, turn: 1, timestamp: 1, type: 1, spanId: 1, parentSpanId: 1, data: 1 })
        .sort({ seq: 1 })
        .batchSize(EXPORT_BATCH_SIZE)
        .lean()
        .cursor();
      try {
        for await (const event of events) {
          chunk += exportRow(session as SessionColumns, event);
          if (chunk.length >= EXPORT_CHUNK_CHARS) {
            yield chunk;
            chunk = '';
          }
        }
      } finally {
        await events.close();
      }
    }
  } finally {
    await sessions.close();
  }
  if (chunk) yield chunk;
}
