// The public session analytics list (spec "Session analytics"): the filters of a GET query or a
// POST body checked into one filter (with the spec's own codes), the MongoDB query over the
// project's session summaries, and pages that stay under a byte budget (1 MiB), with `hasMore`.
// The summaries are what the runtime records for every session (db/session.ts,
// workflows/session-insight.ts). docs/session-analytics.md.
import { type SessionDoc } from '../../db/session';
import { DomainError } from '../../lib/errors';
import { canActInEnvironment, type Principal } from '../../lib/permissions';
import { type CoreContext } from '../context';
import { callerNumberIndexes } from '../telephony/caller-number';

export const CONTAINMENT_FILTER_VALUES = ['contained', 'contained_resolved', 'contained_partial', 'contained_unresolved', 'escalated', 'abandoned'] as const;
export const ENVIRONMENT_FILTER_VALUES = ['dev', 'staging', 'production', 'working-copy'] as const;
export const STATUS_FILTER_VALUES = ['active', 'idle', 'ended', 'completed', 'escalated', 'abandoned', 'archived'] as const;

/** The list caps of the spec's Limits table. */
export const FILTER_LIMITS = { sessionIds: 10_000, containmentType: 100, environment: 4, channelUId: 100, channel: 50, callerNumber: 100 } as const;
export const MAX_LIMIT = 10_000;
export const DEFAULT_LIMIT = 100;
/** A page's whole answer stays within this many bytes; fewer rows than `limit` come back otherwise. */
export const MAX_PAGE_BYTES = 1024 * 1024;
/** A live session with no activity for this long is reported `idle`. */
export const IDLE_AFTER_MS = 5 * 60_000;
/** Most custom-dimension filters in one request. */
export const MAX_DIMENSION_FILTERS = 32;
const DIMENSION_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Channel families: a value asks for every stored spelling of its family. Web chat: `web`,
 * `sdk_web`, `web_chat`; voice: any voice channel asks for all of them. Others stand for themselves.
 */
const CHANNEL_FAMILIES: readonly (readonly string[])[] = [
  ['web', 'sdk_web', 'web_chat'],
  ['voice', 'voice_vxml', 'voice_pipeline', 'voice_realtime'],
];

export function channelFamily(channel: string): string[] {
  return [...(CHANNEL_FAMILIES.find((family) => family.includes(channel)) ?? [channel])];
}

type Scalar = string | number | boolean;

export interface SessionAnalyticsFilter {
  range: { from: Date; to: Date } | null;
  sessionIds: string[] | null;
  containmentType: string[] | null;
  environment: string[] | null;
  channelUId: string[] | null;
  channel: string[] | null;
  traceDimensions: Record<string, Scalar[]>;
  status: (typeof STATUS_FILTER_VALUES)[number] | null;
  callerNumber: string[] | null;
  limit: number;
  offset: number;
}

const invalid = (message: string, details?: Record<string, unknown>) => new DomainError('VALIDATION_ERROR', { message, ...(details ? { details } : {}) });

/** A list parameter: repeated, a JSON array (body), or comma separated; empty items dropped. */
function listOf(name: string, value: unknown): string[] | null {
  if (value === undefined || value === null) return null;
  const items = Array.isArray(value) ? value : [value];
  const out: string[] = [];
  for (const item of items) {
    if (typeof item !== 'string') throw invalid(`${name}: each value must be a string`);
    for (const part of item.split(',')) if (part.trim() !== '') out.push(part.trim());
  }
  return out;
}

function capped(name: string, values: string[] | null, max: number, maxChars = 128): string[] | null {
  if (values === null) return null;
  if (values.length > max) throw invalid(`${name}: at most ${max} values`, { field: name, max });
  const long = values.find((v) => v.length > maxChars);
  if (long !== undefined) throw invalid(`${name}: each value has at most ${maxChars} characters`, { field: name, maxChars });
  return values;
}

function oneOf<T extends string>(name: string, values: string[] | null, allowed: readonly T[], code: 'INVALID_CONTAINMENT_TYPE' | 'INVALID_ENVIRONMENT' | 'INVALID_STATUS'): T[] | null {
  if (values === null) return null;
  const wrong = values.find((v) => !(allowed as readonly string[]).includes(v));
  if (wrong !== undefined) {
    throw new DomainError(code, { message: `${name}: "${wrong.slice(0, 64)}" is not one of ${allowed.join(', ')} (case sensitive)`, details: { field: name, value: wrong.slice(0, 64), allowed } });
  }
  return values as T[];
}

function integer(name: string, value: unknown, fallback: number, min: number, max: number): number {
  if (value === undefined || value === null || value === '') return fallback;
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) throw invalid(`${name}: must be an integer from ${min} to ${max}`, { field: name, min, max });
  return n;
}

function date(name: string, value: unknown): Date | null {
  if (value === undefined || value === null || value === '') return null;
  const text = Array.isArray(value) ? value[0] : value;
  // ISO 8601 date or date-time (the time zone, when a time is given, defaults to UTC as Date reads it).
  if (typeof text !== 'string' || !/^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(text)) throw invalid(`${name}: must be an ISO 8601 date or date-time`);
  const d = new Date(text);
  if (Number.isNaN(d.getTime())) throw invalid(`${name}: must be an ISO 8601 date or date-time`);
  return d;
}

function dimensionValue(name: string, value: unknown): Scalar[] {
  const values = Array.isArray(value) ? value : [value];
  if (values.length === 0 || values.length > 100) throw invalid(`traceDimensions.${name}: 1 to 100 values`);
  return values.map((v) => {
    if (typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v))) return v;
    throw invalid(`traceDimensions.${name}: a value is a string, number or boolean, or an array of those (no nested objects)`);
  });
}

function dimensions(raw: Record<string, unknown>): Record<string, Scalar[]> {
  const names = Object.keys(raw);
  if (names.length > MAX_DIMENSION_FILTERS) throw invalid(`traceDimensions: at most ${MAX_DIMENSION_FILTERS} dimensions`);
  const out: Record<string, Scalar[]> = {};
  for (const name of names) {
    if (!DIMENSION_NAME.test(name)) throw invalid(`traceDimensions: "${name.slice(0, 64)}" is not a dimension name (letters, digits, _ and -, at most 64)`);
    out[name] = dimensionValue(name, raw[name]);
  }
  return out;
}

/**
 * The filter from a GET query (strings; `traceDimensions[name]=value`) or a POST body (JSON;
 * `traceDimensions` an object, `callerNumber` accepted). Throws the spec's 400 codes.
 */
export function parseSessionAnalyticsInput(raw: Record<string, unknown>, source: 'query' | 'body'): SessionAnalyticsFilter {
  if (source === 'body') {
    const known = new Set(['fromDate', 'toDate', 'sessionIds', 'containmentType', 'environment', 'channelUId', 'channel', 'traceDimensions', 'status', 'limit', 'offset', 'callerNumber']);
    const unknown = Object.keys(raw).find((k) => !known.has(k));
    if (unknown !== undefined) throw invalid(`body.${unknown.slice(0, 64)}: unknown parameter`);
  }
  let traceDimensions: Record<string, Scalar[]> = {};
  if (source === 'query') {
    const fromBrackets: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(raw)) {
      const m = /^traceDimensions\[(.*)\]$/.exec(key);
      // Exact match on the text; a stored number or boolean matches its spelling.
      if (m) fromBrackets[m[1]!] = Array.isArray(value) ? value[0] : value;
    }
    traceDimensions = dimensions(fromBrackets);
  } else if (raw.traceDimensions !== undefined) {
    const td = raw.traceDimensions;
    if (!td || typeof td !== 'object' || Array.isArray(td)) throw invalid('traceDimensions: must be an object of name to value');
    traceDimensions = dimensions(td as Record<string, unknown>);
  }

  const sessionIds = capped('sessionIds', listOf('sessionIds', raw.sessionIds), FILTER_LIMITS.sessionIds);
  const from = date('fromDate', raw.fromDate);
  const to = date('toDate', raw.toDate);
  let range: SessionAnalyticsFilter['range'] = null;
  if (!sessionIds || sessionIds.length === 0) {
    if (!from || !to) throw invalid('fromDate and toDate are required together, unless sessionIds is given', { required: ['fromDate', 'toDate'] });
    if (to.getTime() <= from.getTime()) throw invalid('toDate: must be after fromDate (fromDate is inclusive, toDate exclusive)');
    range = { from, to };
  }

  let callerNumber: string[] | null = null;
  if (source === 'body' && raw.callerNumber !== undefined) {
    const list = listOf('callerNumber', raw.callerNumber) ?? [];
    if (list.length === 0) throw invalid('callerNumber: give 1 to 100 numbers, or leave it out', { field: 'callerNumber', min: 1, max: FILTER_LIMITS.callerNumber });
    capped('callerNumber', list, FILTER_LIMITS.callerNumber, 512);
    const blank = list.find((n) => !/[\p{L}\p{N}]/u.test(n));
    if (blank !== undefined) throw invalid('callerNumber: each number needs at least one letter or digit');
    callerNumber = list;
  }

  const statusList = listOf('status', raw.status);
  const status = oneOf('status', statusList && statusList.length > 0 ? [statusList[0]!] : null, STATUS_FILTER_VALUES, 'INVALID_STATUS')?.[0] ?? null;
  const channel = capped('channel', listOf('channel', raw.channel), Number.MAX_SAFE_INTEGER);
  const distinctChannels = channel ? [...new Set(channel)] : null;
  if (distinctChannels && distinctChannels.length > FILTER_LIMITS.channel) throw invalid(`channel: at most ${FILTER_LIMITS.channel} distinct values`);

  return {
    range,
    sessionIds: sessionIds && sessionIds.length > 0 ? sessionIds : null,
    containmentType: oneOf('containmentType', capped('containmentType', listOf('containmentType', raw.containmentType), FILTER_LIMITS.containmentType), CONTAINMENT_FILTER_VALUES, 'INVALID_CONTAINMENT_TYPE'),
    environment: oneOf('environment', capped('environment', listOf('environment', raw.environment), FILTER_LIMITS.environment), ENVIRONMENT_FILTER_VALUES, 'INVALID_ENVIRONMENT'),
    channelUId: capped('channelUId', listOf('channelUId', raw.channelUId), FILTER_LIMITS.channelUId, 512),
    channel: distinctChannels,
    traceDimensions,
    status,
    callerNumber,
    limit: integer('limit', raw.limit, DEFAULT_LIMIT, 1, MAX_LIMIT),
    offset: integer('offset', raw.offset, 0, 0, Number.MAX_SAFE_INTEGER),
  };
}

/** The store's query for a filter, within the project and the key's environments. */
export function sessionQuery(ctx: CoreContext, principal: Principal, place: { tenantId: string; projectId: string }, filter: SessionAnalyticsFilter, now: number): Record<string, unknown> {
  const and: Record<string, unknown>[] = [{ tenantId: place.tenantId, projectId: place.projectId }];
  if (filter.sessionIds) and.push({ _id: { $in: filter.sessionIds } });
  else if (filter.range) and.push({ createdAt: { $gte: filter.range.from, $lt: filter.range.to } });
  // A key bound to environments sees their sessions only, and may not ask for others.
  const bound = principal.environments && principal.environments.length > 0 ? principal.environments : null;
  if (filter.environment) {
    const outside = filter.environment.filter((e) => !canActInEnvironment(principal, e));
    if (outside.length > 0) throw new DomainError('FORBIDDEN', `This key is bound to ${bound!.join(', ')}; it cannot read sessions of ${outside.join(', ')}`);
    and.push({ environment: { $in: filter.environment } });
  }
  if (bound) and.push({ environment: { $in: bound } });
  if (filter.containmentType) {
    // Sessions recorded before containment was kept count as `contained`.
    const values: (string | null)[] = [...filter.containmentType];
    if (values.includes('contained')) values.push(null);
    and.push({ containmentType: { $in: values } });
  }
  if (filter.channelUId) and.push({ channelUId: { $in: filter.channelUId } });
  if (filter.channel) and.push({ channel: { $in: [...new Set(filter.channel.flatMap(channelFamily))] } });
  for (const [name, values] of Object.entries(filter.traceDimensions)) {
    // A text value also matches a stored number or boolean of that spelling (a query string has only text).
    const alternatives = values.flatMap((v): Scalar[] => {
      if (typeof v !== 'string') return [v];
      const extra: Scalar[] = [];
      if (v.trim() !== '' && Number.isFinite(Number(v))) extra.push(Number(v));
      if (v === 'true' || v === 'false') extra.push(v === 'true');
      return [v, ...extra];
    });
    and.push({ [`traceDimensions.${name}`]: { $in: alternatives } });
  }
  if (filter.callerNumber) and.push({ callerNumberIndex: { $in: callerNumberIndexes(ctx, place.tenantId, filter.callerNumber) } });
  if (filter.status) and.push(statusQuery(filter.status, now));
  return and.length === 1 ? and[0]! : { $and: and };
}

function statusQuery(status: (typeof STATUS_FILTER_VALUES)[number], now: number): Record<string, unknown> {
  const idleSince = new Date(now - IDLE_AFTER_MS);
  const live = { status: 'active', analyticsStatus: { $in: ['active', null] } };
  switch (status) {
    case 'active':
      return { ...live, lastActivityAt: { $gte: idleSince } };
    case 'idle':
      return { ...live, lastActivityAt: { $lt: idleSince } };
    case 'ended':
      return { status: 'ended', analyticsStatus: { $in: ['ended', null] } };
    case 'archived':
      // Nothing archives sessions today: the value is accepted and matches none.
      return { _id: { $in: [] } };
    default:
      return { analyticsStatus: status };
  }
}

const iso = (d: Date | null | undefined) => (d ? new Date(d).toISOString() : null);

/** One session summary as the API shows it (spec "Session summary"). */
export function presentSessionSummary(doc: SessionDoc, now: number) {
  const created = new Date(doc.createdAt).getTime();
  const last = new Date(doc.lastActivityAt).getTime();
  const ended = doc.endedAt ? new Date(doc.endedAt).getTime() : null;
  const user = doc.messageCounts?.user ?? 0;
  const agent = doc.messageCounts?.agent ?? 0;
  const counts = doc.traceEventCounts;
  const inputTokens = doc.tokenUsage?.inputTokens ?? 0;
  const outputTokens = doc.tokenUsage?.outputTokens ?? 0;
  let status: string = doc.analyticsStatus ?? doc.status;
  if (status === 'active' && doc.status === 'active' && now - last >= IDLE_AFTER_MS) status = 'idle';
  return {
    id: doc._id,
    channel: doc.channel,
    environment: doc.environment,
    status,
    containmentType: doc.containmentType ?? 'contained',
    createdAt: iso(doc.createdAt)!,
    lastActivityAt: iso(doc.lastActivityAt)!,
    endedAt: iso(doc.endedAt),
    messageCount: { user, agent, total: Math.max(doc.messageCount ?? 0, user + agent) },
    traceEventCount: {
      llm_call: counts?.llm_call ?? 0,
      decision: counts?.decision ?? 0,
      tool_call: counts?.tool_call ?? 0,
      error: counts?.error ?? 0,
      total: doc.traceEventCount ?? 0,
    },
    tokenCount: {
      inputTokens,
      // The providers' usage reports carry no cached or reasoning counts today: 0.
      cachedTokens: 0,
      completionTokens: outputTokens,
      reasoningTokens: 0,
      outputTokens,
      totalTokens: Math.max(doc.tokenCount ?? 0, inputTokens + outputTokens),
    },
    traceDimensions: doc.traceDimensions ?? {},
    estimatedCost: doc.estimatedCost ?? 0,
    durationMs: Math.max(0, (ended ?? last) - created),
    idleDurationMs: Math.max(0, (ended ?? now) - last),
    isTest: null,
  };
}

export type SessionSummaryView = ReturnType<typeof presentSessionSummary>;

export interface SessionAnalyticsPage {
  success: true;
  sessions: SessionSummaryView[];
  total: number;
  offset: number;
  limit: number;
  hasMore: boolean;
}

/**
 * One page of summaries, newest first (then by id), of at most `limit` rows and at most
 * `maxBytes` of JSON for the whole answer: rows are read through a cursor and the page ends before
 * the row that would cross the budget (a first row alone larger than it is still sent alone).
 */
export async function listSessionSummaries(
  ctx: CoreContext,
  principal: Principal,
  place: { tenantId: string; projectId: string },
  filter: SessionAnalyticsFilter,
  maxBytes: number,
): Promise<SessionAnalyticsPage> {
  const now = Date.now();
  const query = sessionQuery(ctx, principal, place, filter, now);
  const [total, sessions] = await Promise.all([
    ctx.models.Session.countDocuments(query),
    (async () => {
      const shell = (rows: SessionSummaryView[]) => ({ success: true, sessions: rows, total: Number.MAX_SAFE_INTEGER, offset: filter.offset, limit: filter.limit, hasMore: false });
      let bytes = Buffer.byteLength(JSON.stringify(shell([])));
      const rows: SessionSummaryView[] = [];
      const cursor = ctx.models.Session.find(query).sort({ createdAt: -1, _id: 1 }).skip(filter.offset).limit(filter.limit).lean<SessionDoc[]>().cursor({ batchSize: 200 });
      try {
        for await (const doc of cursor) {
          const row = presentSessionSummary(doc, now);
          const size = Buffer.byteLength(JSON.stringify(row)) + (rows.length > 0 ? 1 : 0);
          if (rows.length > 0 && bytes + size > maxBytes) break;
          bytes += size;
          rows.push(row);
        }
      } finally {
        await cursor.close();
      }
      return rows;
    })(),
  ]);
  return { success: true, sessions, total, offset: filter.offset, limit: filter.limit, hasMore: filter.offset + sessions.length < total };
}
