// Session summaries written straight into the store, as the runtime leaves them, for the public
// session analytics tests (the runtime's own writing is tested in runtime-fields.test.ts).
import { randomUUID } from 'node:crypto';
import { type AppContext } from '../../../api/context';
import { driverCollection } from '../../../db/driver-collection';

export interface SessionSeed {
  createdAt?: Date;
  lastActivityAt?: Date;
  endedAt?: Date | null;
  channel?: string;
  environment?: string;
  status?: 'active' | 'ended';
  analyticsStatus?: string;
  containmentType?: string;
  channelUId?: string | null;
  traceDimensions?: Record<string, string | number | boolean>;
}

/** Inserts sessions of the project (through the driver: older stored channel spellings bypass today's enum). */
export async function seedSessions(ctx: AppContext, place: { tenantId: string; projectId: string }, seeds: SessionSeed[]): Promise<string[]> {
  const docs = seeds.map((s) => {
    const id = randomUUID();
    const createdAt = s.createdAt ?? new Date();
    return {
      _id: id,
      tenantId: place.tenantId,
      projectId: place.projectId,
      agentId: null,
      agentName: 'Seeded',
      currentAgent: 'Seeded',
      status: s.status ?? 'active',
      runtimeStatus: s.status ?? 'active',
      channel: s.channel ?? 'api',
      environment: s.environment ?? 'dev',
      deploymentId: null,
      runtimeSessionId: `session/${id}`,
      messageCount: 3,
      traceEventCount: 7,
      tokenCount: 30,
      errorCount: 0,
      estimatedCost: 0.25,
      durationMs: 0,
      handoffCount: 0,
      createdAt,
      lastActivityAt: s.lastActivityAt ?? createdAt,
      endedAt: s.endedAt ?? null,
      endReason: null,
      containmentType: s.containmentType ?? 'contained',
      analyticsStatus: s.analyticsStatus ?? 'active',
      messageCounts: { user: 1, agent: 2 },
      traceEventCounts: { llm_call: 1, decision: 2, tool_call: 3, error: 0 },
      tokenUsage: { inputTokens: 20, outputTokens: 10 },
      traceDimensions: s.traceDimensions ?? {},
      channelUId: s.channelUId ?? null,
      callerNumberIndex: null,
    };
  });
  await driverCollection(ctx.models.Session).insertMany(docs as never[]);
  return docs.map((d) => d._id);
}
