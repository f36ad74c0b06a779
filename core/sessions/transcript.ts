// A session's recorded conversation and trace: transcript pages, trace events by filter, and a
// span's children. Every filter carries the session's tenant (and project).
import { type Models } from '../../db/models';
import { type SessionDoc } from '../../db/session';
import { type TraceEventDoc } from '../../db/trace-event';

/** A trace read's filters and page (`eventType` already split into its types). */
export interface TraceQuery {
  limit: number;
  offset: number;
  eventType?: string[];
  decisionKind?: string;
  spanId?: string;
}

export async function listTranscript(models: Models, session: SessionDoc, page: { limit: number; offset: number }) {
  const filter = { tenantId: session.tenantId, sessionId: session._id };
  const [total, messages] = await Promise.all([
    models.TranscriptMessage.countDocuments(filter),
    models.TranscriptMessage.find(filter).sort({ seq: 1 }).skip(page.offset).limit(page.limit).lean(),
  ]);
  return { total, messages };
}

export async function listTraceEvents(models: Models, session: SessionDoc, query: TraceQuery) {
  const filter: Record<string, unknown> = { tenantId: session.tenantId, projectId: session.projectId, sessionId: session._id };
  if (query.eventType) filter.type = query.eventType.length === 1 ? query.eventType[0] : { $in: query.eventType };
  if (query.decisionKind) {
    filter.type = 'decision';
    if (query.eventType && !query.eventType.includes('decision')) return { total: 0, events: [] as TraceEventDoc[] };
    filter['data.decisionKind'] = query.decisionKind;
  }
  if (query.spanId) filter.spanId = query.spanId;
  const [total, events] = await Promise.all([
    models.TraceEvent.countDocuments(filter),
    models.TraceEvent.find(filter).sort({ seq: 1 }).skip(query.offset).limit(query.limit).lean(),
  ]);
  return { total, events };
}

export async function listSpanChildren(models: Models, session: SessionDoc, spanId: string, page: { limit: number; offset: number }) {
  const filter = { tenantId: session.tenantId, projectId: session.projectId, sessionId: session._id, parentSpanId: spanId };
  const [total, events] = await Promise.all([
    models.TraceEvent.countDocuments(filter),
    models.TraceEvent.find(filter).sort({ seq: 1 }).skip(page.offset).limit(page.limit).lean(),
  ]);
  return { total, events };
}
