// The detail of an agentic-app session: one trace per turn (`r-` id: the run's id when a
// runs/execute call made the turn) and its observations, built from the session's trace events
// (db/trace-event.ts) and transcript: llm_call → GENERATION, tool_call (+ its tool_result) →
// SPAN, every other event → EVENT; parents follow the events' span tree.
import { type AppSessionDoc } from '../../db/app-session';
import { type SessionDoc } from '../../db/session';
import { type TraceEventDoc } from '../../db/trace-event';
import { sha256Hex } from '../../lib/crypto';
import { type CoreContext } from '../context';
import { findCurrentSession } from '../sessions/read';
import { type ApiError } from '../../lib/errors';

/** Most trace events and messages one detail reads. */
export const DETAIL_MAX_ROWS = 5_000;

const record = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' ? (v as Record<string, unknown>) : {});
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const iso = (d: Date | string) => new Date(d).toISOString();

/** The `av-` id of what the session runs: its deployment, or the latest versions. */
export const appVersionId = (core: Pick<SessionDoc, 'deploymentId'> | null) => (core?.deploymentId ? `av-${core.deploymentId}` : 'av-latest');

function observations(events: TraceEventDoc[]) {
  const results = new Map<string, TraceEventDoc>();
  for (const e of events) if (e.type === 'tool_result' && e.parentSpanId) results.set(e.parentSpanId, e);
  const shown = new Set(events.filter((e) => e.type !== 'tool_result').map((e) => e.spanId));
  return events
    .filter((e) => e.type !== 'tool_result')
    .map((e) => {
      const data = record(e.data);
      const end = new Date(e.timestamp).getTime();
      const parent = e.parentSpanId && shown.has(e.parentSpanId) ? e.parentSpanId : null;
      if (e.type === 'llm_call') {
        const usage = record(data.usage);
        const latencyMs = num(data.latencyMs);
        const input = num(usage.inputTokens);
        const output = num(usage.outputTokens);
        return {
          observation_id: e.spanId,
          type: 'GENERATION',
          name: str(data.purpose) ?? 'llm_call',
          start_time: new Date(end - latencyMs).toISOString(),
          end_time: iso(e.timestamp),
          latency: latencyMs / 1000,
          input: data.input ?? null,
          output: data.output ?? null,
          model: str(data.model),
          provider: str(data.provider),
          token_usage: { input, output, total: input + output },
          parent_observation_id: parent,
        };
      }
      const result = e.type === 'tool_call' ? results.get(e.spanId) : undefined;
      const finished = result ? new Date(result.timestamp).getTime() : end;
      return {
        observation_id: e.spanId,
        type: e.type === 'tool_call' ? 'SPAN' : 'EVENT',
        name: e.type === 'tool_call' ? (str(data.tool) ?? 'tool_call') : e.type,
        start_time: iso(e.timestamp),
        end_time: new Date(finished).toISOString(),
        latency: (finished - end) / 1000,
        input: e.type === 'tool_call' ? (data.input ?? null) : data,
        output: result ? (record(result.data).output ?? record(result.data).error ?? null) : null,
        model: null,
        provider: null,
        token_usage: null,
        parent_observation_id: parent,
      };
    });
}

export async function appSessionDetail(ctx: CoreContext, app: AppSessionDoc, include: { traces: boolean; observations: boolean }) {
  const scope = { tenantId: app.tenantId, projectId: app.projectId };
  const core = await findCurrentSession(ctx, scope, app._id).catch((err: unknown) => {
    if ((err as ApiError).code === 'NOT_FOUND') return null;
    throw err;
  });
  const detail = {
    session_id: `s-${app._id}`,
    created_at: iso(app.createdAt),
    source: app.source,
    environment: app.environment,
    user_id: app.userId,
    session_reference: app.sessionReference,
    app_version_id: appVersionId(core),
    latency: (core?.durationMs ?? 0) / 1000,
  };
  if (!include.traces || !core) return include.traces ? { ...detail, traces: [] } : detail;
  const owned = { tenantId: app.tenantId, sessionId: app._id };
  const [events, messages, runs] = await Promise.all([
    ctx.models.TraceEvent.find({ ...owned, projectId: app.projectId }).sort({ seq: 1 }).limit(DETAIL_MAX_ROWS).lean(),
    ctx.models.TranscriptMessage.find(owned).sort({ seq: 1 }).limit(DETAIL_MAX_ROWS).lean(),
    ctx.models.AppRun.find({ ...owned, projectId: app.projectId }).select({ _id: 1, spanIds: 1 }).lean(),
  ]);
  const runBySpan = new Map<string, string>();
  for (const run of runs) for (const span of run.spanIds) runBySpan.set(span, run._id);
  const turns = new Map<number, { events: TraceEventDoc[]; user: string[]; agent: string[]; times: number[] }>();
  const turnOf = (n: number) => {
    let t = turns.get(n);
    if (!t) turns.set(n, (t = { events: [], user: [], agent: [], times: [] }));
    return t;
  };
  for (const e of events) {
    const t = turnOf(e.turn);
    t.events.push(e);
    t.times.push(new Date(e.timestamp).getTime());
  }
  for (const m of messages) {
    const t = turnOf(m.turn);
    (m.role === 'user' ? t.user : t.agent).push(m.content);
    t.times.push(new Date(m.timestamp).getTime());
  }
  const traces = [...turns.entries()]
    .sort(([a], [b]) => a - b)
    .map(([turn, t]) => {
      const runId = t.events.map((e) => runBySpan.get(e.spanId)).find((id) => id !== undefined);
      const first = Math.min(...t.times);
      return {
        trace_id: runId ?? `r-${sha256Hex(`${app._id}:${turn}`).slice(0, 24)}`,
        timestamp: new Date(first).toISOString(),
        environment: app.environment,
        user_id: app.userId,
        input: t.user.length > 0 ? t.user.join('\n') : null,
        output: t.agent.length > 0 ? t.agent.join('\n') : null,
        latency: (Math.max(...t.times) - first) / 1000,
        app_version_id: appVersionId(core),
        env_id: app.environment,
        source: app.source,
        ...(include.observations ? { observations: observations(t.events) } : {}),
      };
    });
  return { ...detail, traces };
}
