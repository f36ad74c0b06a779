// Generated analytics events for the analytics tests, and the brute-force answers the routes are
// checked against: every metric computed straight from the list of events.
import { type NewAnalyticsEvent } from '../../../core/analytics/ingest';
import { type AnalyticsCategory } from '../../../db/analytics-event';

export function rng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const AGENTS = ['Support_Agent', 'Billing_Agent', null] as const;
export const CHANNELS = ['api', 'web_debug', 'voice', null] as const;
const TYPES: Record<string, string[]> = {
  session: ['session.started', 'session.ended'],
  message: ['message.user', 'message.assistant'],
  llm: ['llm.call'],
  tool: ['tool.call', 'tool.result'],
  agent: ['agent.handoff'],
};
const MODELS = [
  ['gpt-4o', 'openai'],
  ['gpt-4o-mini', 'openai'],
  ['claude-sonnet', 'anthropic'],
] as const;

/** `n` events of one project spread over [from, to), with every field varied. */
export function generateEvents(seed: number, n: number, scope: { tenantId: string; projectId: string }, from: Date, to: Date, idPrefix: string): NewAnalyticsEvent[] {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const span = to.getTime() - from.getTime();
  return Array.from({ length: n }, (_, i) => {
    const category = pick(Object.keys(TYPES)) as AnalyticsCategory;
    const eventType = pick(TYPES[category]!);
    const llm = category === 'llm';
    const [model, provider] = pick(MODELS);
    const tokensIn = llm ? Math.floor(r() * 2000) : 0;
    const tokensOut = llm ? Math.floor(r() * 500) : 0;
    const cost = llm ? Math.round(r() * 10_000) / 1_000_000 : 0;
    const hasDuration = r() < 0.8;
    return {
      id: `${idPrefix}${i}`,
      tenantId: scope.tenantId,
      projectId: scope.projectId,
      category,
      eventType,
      agentName: pick(AGENTS),
      sessionId: `ses_${idPrefix}${Math.floor(r() * 12)}`,
      channel: pick(CHANNELS),
      timestamp: new Date(from.getTime() + Math.floor(r() * span)),
      durationMs: hasDuration ? Math.floor(r() < 0.1 ? r() * 20_000 : r() * 900) : null,
      error: r() < 0.15 ? 'upstream timeout' : null,
      tokens: tokensIn + tokensOut,
      cost,
      metadata: llm ? { model, provider, tokens_in: tokensIn, tokens_out: tokensOut, cost } : { step: i },
    };
  });
}

export type Dim = 'category' | 'event_type' | 'agent_name' | 'channel' | 'hour' | 'day';

export function dimOf(e: NewAnalyticsEvent, d: Dim): string | null {
  switch (d) {
    case 'category':
      return e.category;
    case 'event_type':
      return e.eventType;
    case 'agent_name':
      return e.agentName ?? null;
    case 'channel':
      return e.channel ?? null;
    case 'hour':
      return new Date(Math.floor(e.timestamp.getTime() / 3_600_000) * 3_600_000).toISOString();
    case 'day':
      return e.timestamp.toISOString().slice(0, 10);
  }
}

export const inRange = (e: NewAnalyticsEvent, from: Date, to: Date) => e.timestamp >= from && e.timestamp < to;

export const exactP95 = (xs: number[]): number | null => {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.ceil(0.95 * s.length) - 1]!;
};

export interface BruteGroup {
  keys: Record<string, string | null>;
  count: number;
  errors: number;
  durations: number[];
  tokens: number;
  cost: number;
}

/** The groups of the events by the dimensions, computed directly. */
export function bruteGroups(events: readonly NewAnalyticsEvent[], groupBy: readonly Dim[]): Map<string, BruteGroup> {
  const groups = new Map<string, BruteGroup>();
  for (const e of events) {
    const keys = Object.fromEntries(groupBy.map((d) => [d, dimOf(e, d)]));
    const id = JSON.stringify(groupBy.map((d) => keys[d]));
    let g = groups.get(id);
    if (!g) groups.set(id, (g = { keys, count: 0, errors: 0, durations: [], tokens: 0, cost: 0 }));
    g.count++;
    if (e.error != null) g.errors++;
    if (e.durationMs != null) g.durations.push(e.durationMs);
    g.tokens += e.tokens ?? 0;
    g.cost += e.cost ?? 0;
  }
  return groups;
}

const round = (x: number, d: number) => Number(x.toFixed(d));

/** Asserts a response bucket against its brute-force group: exact for every metric but p95, which is within 1%. */
export function expectBucket(bucket: Record<string, unknown>, g: BruteGroup): void {
  expect(bucket.count ?? g.count).toBe(g.count);
  if ('error_rate' in bucket) expect(bucket.error_rate).toBe(round(g.errors / g.count, 6));
  if ('avg_duration' in bucket) expect(bucket.avg_duration).toBe(g.durations.length ? round(g.durations.reduce((a, b) => a + b, 0) / g.durations.length, 3) : null);
  if ('sum_tokens' in bucket) expect(bucket.sum_tokens).toBe(g.tokens);
  if ('sum_cost' in bucket) expect(bucket.sum_cost).toBeCloseTo(g.cost, 6);
  if ('p95_duration' in bucket) {
    const exact = exactP95(g.durations);
    if (exact === null) expect(bucket.p95_duration).toBeNull();
    else if (exact === 0) expect(bucket.p95_duration).toBe(0);
    else expect(Math.abs((bucket.p95_duration as number) - exact) / exact).toBeLessThanOrEqual(0.01 + 1e-6);
  }
}
