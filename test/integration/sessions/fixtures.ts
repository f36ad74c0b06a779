// Shared setup of the session suites: agents created through the agents API, and session,
// trace and transcript documents seeded straight into MongoDB for read-only tests.
import { randomUUID } from 'node:crypto';
import { type AppContext } from '../../../api/context';
import { type SessionDoc } from '../../../db/session';
import { client } from '../../support/http';

export const AGENT_DSL = (name: string) => `AGENT: ${name}\nGOAL: "Help the caller."\n`;

export async function createAgent(baseUrl: string, key: string, projectId: string, name: string): Promise<string> {
  const res = await client(baseUrl).post(`/api/projects/${projectId}/agents`, { key, json: { name, dslContent: AGENT_DSL(name) } });
  if (res.status !== 201) throw new Error(`creating agent ${name}: ${res.status} ${res.text}`);
  // A version, so a session workflow has a compiled agent to run.
  const version = await client(baseUrl).post(`/api/projects/${projectId}/agents/${name}/versions`, { key, json: {} });
  if (version.status !== 201) throw new Error(`creating a version of ${name}: ${version.status} ${version.text}`);
  return (res.body.agent as { id: string }).id;
}

export async function seedSession(
  ctx: AppContext,
  scope: { tenantId: string; projectId: string },
  overrides: Partial<SessionDoc> = {},
): Promise<SessionDoc> {
  const id = overrides._id ?? randomUUID();
  const now = overrides.createdAt ?? new Date();
  const doc = await ctx.models.Session.create({
    _id: id,
    tenantId: scope.tenantId,
    projectId: scope.projectId,
    agentId: null,
    agentName: 'Seeded_Agent',
    currentAgent: 'Seeded_Agent',
    status: 'active',
    runtimeStatus: 'active',
    channel: 'api',
    environment: 'dev',
    runtimeSessionId: `session/${id}`,
    createdAt: now,
    lastActivityAt: now,
    ...overrides,
  });
  return doc.toObject();
}

export interface SeedEvent {
  type: string;
  spanId: string;
  parentSpanId?: string | null;
  turn?: number;
  data?: Record<string, unknown>;
  at?: Date;
}

export async function seedTrace(ctx: AppContext, session: SessionDoc, events: SeedEvent[]): Promise<void> {
  const base = Date.parse('2025-01-01T10:00:00Z');
  await ctx.models.TraceEvent.insertMany(
    events.map((e, seq) => ({
      _id: `${session._id}:${seq}`,
      tenantId: session.tenantId,
      projectId: session.projectId,
      sessionId: session._id,
      seq,
      turn: e.turn ?? 1,
      type: e.type,
      spanId: e.spanId,
      parentSpanId: e.parentSpanId ?? null,
      timestamp: e.at ?? new Date(base + seq * 100),
      data: e.data ?? {},
    })),
  );
}

export async function seedTranscript(
  ctx: AppContext,
  session: SessionDoc,
  messages: { role: 'user' | 'assistant'; content: string; turn?: number; at?: Date }[],
): Promise<void> {
  const base = Date.parse('2025-01-01T10:00:00Z');
  await ctx.models.TranscriptMessage.insertMany(
    messages.map((m, seq) => ({
      _id: `${session._id}:m${seq}`,
      tenantId: session.tenantId,
      projectId: session.projectId,
      sessionId: session._id,
      seq,
      turn: m.turn ?? Math.floor(seq / 2) + 1,
      role: m.role,
      agent: m.role === 'assistant' ? session.agentName : null,
      content: m.content,
      timestamp: m.at ?? new Date(base + seq * 1000),
    })),
  );
}
