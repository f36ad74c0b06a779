// Event analytics routes on the real stack, against brute force: generated events (written through
// recordAnalyticsEvents) of one project, beside another project's and another tenant's events in
// the same hours; every groupBy dimension and metric, every events filter, paging and limits, the
// POST forms, an agent's summary, the cost breakdown, session metrics, validation and isolation.
import { client } from '../../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { recordAnalyticsEvents, type NewAnalyticsEvent } from '../../../core/analytics/ingest';
import { ZAgentResponse, ZCostBreakdownResponse, ZEventsResponse, ZMetricsResponse, ZSessionMetricsResponse } from '../../../api/analytics/schemas';
import { bruteGroups, type Dim, exactP95, expectBucket, generateEvents, inRange } from './fixtures';

let stack: TestStack;
let api: ReturnType<typeof client>;
let acme: SeededTenant;
let globex: SeededTenant;
let events: NewAnalyticsEvent[];
const HOUR = 3_600_000;
const now = new Date();
// A range with partial hours at both ends, whole closed hours between and the open hour at its end.
const from = new Date(Math.floor(now.getTime() / HOUR) * HOUR - 20 * HOUR + 17 * 60_000);
const to = new Date(now.getTime() + 1);
const range = `from=${from.toISOString()}&to=${to.toISOString()}`;
const base = (projectId: string) => `/api/projects/${projectId}/analytics`;

// Starting the stack and seeding thousands of events: give a loaded machine time.
beforeAll(async () => {
  stack = await startTestStack();
  api = client(stack.baseUrl);
  acme = await seedTenant(stack.ctx, 'acme-analytics');
  globex = await seedTenant(stack.ctx, 'globex-analytics');
  const start = new Date(now.getTime() - 26 * HOUR);
  events = generateEvents(1, 3000, acme, start, now, 'a');
  // Same agents, channels and hours in another project and another tenant: never counted.
  const noise = [
    ...generateEvents(2, 400, { tenantId: acme.tenantId, projectId: acme.otherProjectId }, start, now, 'o'),
    ...generateEvents(3, 400, globex, start, now, 'g'),
  ];
  for (const batch of [events, noise]) for (let i = 0; i < batch.length; i += 500) await recordAnalyticsEvents(stack.ctx.models, batch.slice(i, i + 500));
}, 240_000);
afterAll(() => stack.close());

const inWindow = () => events.filter((e) => inRange(e, from, to));
const ALL_METRICS = 'count,avg_duration,error_rate,p95_duration,sum_tokens,sum_cost';

function expectBuckets(buckets: Record<string, unknown>[], selected: NewAnalyticsEvent[], groupBy: Dim[]) {
  const groups = bruteGroups(selected, groupBy);
  expect(buckets).toHaveLength(groups.size);
  for (const b of buckets) {
    const g = groups.get(JSON.stringify(groupBy.map((d) => b[d] as string | null)));
    expect(g).toBeDefined();
    expectBucket(b, g!);
  }
}

describe('GET .../analytics/metrics', () => {
  it('groups by category with count and error_rate by default, over the last 24 hours', async () => {
    const res = await api.get(`${base(acme.projectId)}/metrics`, { key: acme.adminKey });
    expect(res.status).toBe(200);
    const { data } = ZMetricsResponse.parse(res.body);
    const f = new Date(data.from);
    const t = new Date(data.to);
    expect(t.getTime() - f.getTime()).toBe(24 * HOUR);
    expect(Object.keys(data.buckets[0]!).sort()).toEqual(['category', 'count', 'error_rate']);
    expectBuckets(data.buckets, events.filter((e) => inRange(e, f, t)), ['category']);
  });

  it.each<Dim>(['category', 'event_type', 'agent_name', 'channel', 'hour', 'day'])('groups by %s with every metric', async (dim) => {
    const res = await api.get(`${base(acme.projectId)}/metrics?${range}&groupBy=${dim}&metrics=${ALL_METRICS}`, { key: acme.adminKey });
    expect(res.status).toBe(200);
    const { buckets } = ZMetricsResponse.parse(res.body).data;
    expectBuckets(buckets, inWindow(), [dim]);
    const keys = buckets.map((b) => b[dim] as string | null);
    expect(keys).toEqual([...keys].sort((a, b) => (a === null ? -1 : b === null ? 1 : a < b ? -1 : 1)));
  });

  it('groups by several dimensions at once and filters by category', async () => {
    const res = await api.get(`${base(acme.projectId)}/metrics?${range}&groupBy=agent_name,hour&metrics=count,p95_duration,sum_cost&category=llm`, { key: acme.adminKey });
    expect(res.status).toBe(200);
    const { buckets } = ZMetricsResponse.parse(res.body).data;
    expect(buckets.every((b) => Object.keys(b).sort().join() === 'agent_name,count,hour,p95_duration,sum_cost')).toBe(true);
    expectBuckets(buckets, inWindow().filter((e) => e.category === 'llm'), ['agent_name', 'hour']);
  });

  it('POST .../aggregate answers as the metrics route does, with event-type filters', async () => {
    const res = await api.post(`${base(acme.projectId)}/aggregate`, {
      key: acme.adminKey,
      json: { timeRange: { from: from.toISOString(), to: to.toISOString() }, groupBy: ['channel', 'event_type'], metrics: ['count', 'error_rate', 'avg_duration', 'p95_duration', 'sum_tokens', 'sum_cost'], filters: { category: 'tool', eventTypes: ['tool.result'] } },
    });
    expect(res.status).toBe(200);
    const { buckets } = ZMetricsResponse.parse(res.body).data;
    expect(buckets.length).toBeGreaterThan(0);
    expectBuckets(buckets, inWindow().filter((e) => e.category === 'tool' && e.eventType === 'tool.result'), ['channel', 'event_type']);
  });
});

const newestFirst = (a: NewAnalyticsEvent, b: NewAnalyticsEvent) => b.timestamp.getTime() - a.timestamp.getTime() || (a.id! < b.id! ? 1 : -1);

describe('GET .../analytics/events and POST .../analytics/query', () => {
  const filters: [string, string, Record<string, unknown>, (e: NewAnalyticsEvent) => boolean][] = [
    ['no filter', '', {}, () => true],
    ['category', 'category=llm', { category: 'llm' }, (e) => e.category === 'llm'],
    ['eventTypes', 'eventTypes=tool.call,message.user', { eventTypes: ['tool.call', 'message.user'] }, (e) => ['tool.call', 'message.user'].includes(e.eventType)],
    ['sessionId', 'sessionId=ses_a3', { sessionId: 'ses_a3' }, (e) => e.sessionId === 'ses_a3'],
    ['agentName', 'agentName=Billing_Agent', { agentName: 'Billing_Agent' }, (e) => e.agentName === 'Billing_Agent'],
    ['hasError=true', 'hasError=true', { hasError: true }, (e) => e.error != null],
    ['hasError=false', 'hasError=false', { hasError: false }, (e) => e.error == null],
    ['all at once', 'category=tool&eventTypes=tool.result&agentName=Support_Agent&hasError=true', { category: 'tool', eventTypes: ['tool.result'], agentName: 'Support_Agent', hasError: true }, (e) => e.category === 'tool' && e.eventType === 'tool.result' && e.agentName === 'Support_Agent' && e.error != null],
  ];

  it.each(filters)('filters by %s, newest first, with the total', async (_name, qs, body, pred) => {
    const expected = inWindow().filter(pred).sort(newestFirst);
    expect(expected.length).toBeGreaterThan(0);
    const get = await api.get(`${base(acme.projectId)}/events?${range}&limit=10000${qs ? `&${qs}` : ''}`, { key: acme.adminKey });
    expect(get.status).toBe(200);
    const data = ZEventsResponse.parse(get.body).data;
    expect(data.total).toBe(expected.length);
    expect(data.hasMore).toBe(false);
    expect(data.events.map((e) => e.id)).toEqual(expected.map((e) => e.id));
    const post = await api.post(`${base(acme.projectId)}/query`, { key: acme.adminKey, json: { timeRange: { from: from.toISOString(), to: to.toISOString() }, limit: 10000, ...body } });
    expect(post.status).toBe(200);
    expect(post.body).toEqual(get.body);
  });

  it('presents an event as the spec says: snake_case, error only on error events, LLM metadata', async () => {
    const llmError = inWindow().find((e) => e.category === 'llm' && e.error != null)!;
    const res = await api.get(`${base(acme.projectId)}/events?${range}&sessionId=${llmError.sessionId}&category=llm&hasError=true&limit=10000`, { key: acme.adminKey });
    const event = ZEventsResponse.parse(res.body).data.events.find((e) => e.id === llmError.id)!;
    expect(event).toEqual({
      id: llmError.id,
      category: 'llm',
      event_type: llmError.eventType,
      agent_name: llmError.agentName,
      session_id: llmError.sessionId,
      channel: llmError.channel,
      timestamp: llmError.timestamp.toISOString(),
      duration_ms: llmError.durationMs,
      error: 'upstream timeout',
      metadata: llmError.metadata,
    });
    expect(Object.keys(event.metadata).sort()).toEqual(['cost', 'model', 'provider', 'tokens_in', 'tokens_out']);
    const ok = await api.get(`${base(acme.projectId)}/events?${range}&hasError=false&limit=1`, { key: acme.adminKey });
    expect(ZEventsResponse.parse(ok.body).data.events[0]).not.toHaveProperty('error');
  });

  it('pages with offset and hasMore: the pages together are the whole list, in order', async () => {
    const expected = inWindow().sort(newestFirst).map((e) => e.id);
    const seen: string[] = [];
    for (let offset = 0; ; offset += 700) {
      const res = await api.get(`${base(acme.projectId)}/events?${range}&limit=700&offset=${offset}`, { key: acme.adminKey });
      const data = ZEventsResponse.parse(res.body).data;
      expect(data.total).toBe(expected.length);
      seen.push(...data.events.map((e) => e.id));
      expect(data.hasMore).toBe(seen.length < expected.length);
      if (!data.hasMore) break;
    }
    expect(seen).toEqual(expected);
    const past = await api.get(`${base(acme.projectId)}/events?${range}&offset=${expected.length + 5}`, { key: acme.adminKey });
    expect(ZEventsResponse.parse(past.body).data).toMatchObject({ events: [], total: expected.length, hasMore: false });
  });

  it('defaults to 100 events and takes up to 10,000; 10,001 or 0 is 400', async () => {
    const def = await api.get(`${base(acme.projectId)}/events?${range}`, { key: acme.adminKey });
    expect(ZEventsResponse.parse(def.body).data).toMatchObject({ limit: 100, offset: 0, hasMore: true });
    expect(def.body.data.events).toHaveLength(100);
    const max = await api.get(`${base(acme.projectId)}/events?${range}&limit=10000`, { key: acme.adminKey });
    expect(max.status).toBe(200);
    for (const limit of ['10001', '0', '-1', 'ten']) {
      const res = await api.get(`${base(acme.projectId)}/events?${range}&limit=${limit}`, { key: acme.adminKey });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR', message: expect.stringContaining('limit') } });
    }
    const body = await api.post(`${base(acme.projectId)}/query`, { key: acme.adminKey, json: { timeRange: { from: from.toISOString(), to: to.toISOString() }, limit: 10001 } });
    expect(body.status).toBe(400);
  });
});

describe('GET .../analytics/agents/:name, cost-breakdown, session-metrics', () => {
  it("summarises an agent's events, in total, per category and per event type", async () => {
    const res = await api.get(`${base(acme.projectId)}/agents/Support_Agent?${range}`, { key: acme.adminKey });
    expect(res.status).toBe(200);
    const { data } = ZAgentResponse.parse(res.body);
    const mine = inWindow().filter((e) => e.agentName === 'Support_Agent');
    expect(data.agent_name).toBe('Support_Agent');
    const all = bruteGroups(mine, []).get('[]')!;
    expectBucket(data.summary, all);
    expect(data.summary.error_count).toBe(all.errors);
    expectBuckets(data.by_category, mine, ['category']);
    expectBuckets(data.by_event_type, mine, ['category', 'event_type']);
    const none = await api.get(`${base(acme.projectId)}/agents/Nobody?${range}`, { key: acme.adminKey });
    expect(ZAgentResponse.parse(none.body).data.summary).toMatchObject({ count: 0, error_count: 0, p95_duration: null });
  });

  it('breaks LLM cost down by model and provider, most expensive first', async () => {
    const res = await api.get(`${base(acme.projectId)}/cost-breakdown?${range}`, { key: acme.adminKey });
    expect(res.status).toBe(200);
    const { data } = ZCostBreakdownResponse.parse(res.body);
    const llm = inWindow().filter((e) => e.category === 'llm');
    const sum = (xs: NewAnalyticsEvent[], f: (e: NewAnalyticsEvent) => number) => xs.reduce((s, e) => s + f(e), 0);
    expect(data.total.calls).toBe(llm.length);
    expect(data.total.cost).toBeCloseTo(sum(llm, (e) => e.cost!), 6);
    for (const line of data.by_model) {
      const of = llm.filter((e) => e.metadata!.model === line.model && e.metadata!.provider === line.provider);
      expect(line).toMatchObject({ calls: of.length, tokens: sum(of, (e) => e.tokens!), tokens_in: sum(of, (e) => e.metadata!.tokens_in as number), tokens_out: sum(of, (e) => e.metadata!.tokens_out as number) });
      expect(line.cost).toBeCloseTo(sum(of, (e) => e.cost!), 6);
    }
    expect(data.by_model.map((l) => `${l.model}/${l.provider}`).sort()).toEqual(['claude-sonnet/anthropic', 'gpt-4o-mini/openai', 'gpt-4o/openai']);
    expect(data.by_model.map((l) => l.cost)).toEqual([...data.by_model.map((l) => l.cost)].sort((a, b) => b - a));
    expect(data.by_provider.map((l) => l.provider).sort()).toEqual(['anthropic', 'openai']);
    expect(data.by_provider.find((l) => l.provider === 'anthropic')!.calls).toBe(llm.filter((e) => e.metadata!.provider === 'anthropic').length);
  });

  it('counts sessions, their length, messages, errors, tokens and cost, in total and per channel', async () => {
    const res = await api.get(`${base(acme.projectId)}/session-metrics?${range}`, { key: acme.adminKey });
    expect(res.status).toBe(200);
    const { data } = ZSessionMetricsResponse.parse(res.body);
    const w = inWindow();
    const started = w.filter((e) => e.eventType === 'session.started').length;
    const ended = w.filter((e) => e.eventType === 'session.ended');
    const messages = w.filter((e) => e.category === 'message').length;
    const lengths = ended.flatMap((e) => (e.durationMs == null ? [] : [e.durationMs]));
    expect(data.summary).toMatchObject({
      sessions_started: started,
      sessions_ended: ended.length,
      messages,
      llm_calls: w.filter((e) => e.category === 'llm').length,
      tool_events: w.filter((e) => e.category === 'tool').length,
      events: w.length,
      errors: w.filter((e) => e.error != null).length,
      tokens: w.reduce((s, e) => s + e.tokens!, 0),
      messages_per_session: Number((messages / started).toFixed(6)),
    });
    expect(Math.abs(data.summary.p95_session_duration! - exactP95(lengths)!) / exactP95(lengths)!).toBeLessThanOrEqual(0.01 + 1e-6);
    expect(data.by_channel.map((c) => c.channel)).toEqual([null, 'api', 'voice', 'web_debug']);
    expect(data.by_channel.find((c) => c.channel === 'voice')!.events).toBe(w.filter((e) => e.channel === 'voice').length);
  });
});

describe('validation and isolation', () => {
  const bad: [string, string][] = [
    ['a date that is not ISO 8601', `metrics?from=yesterday`],
    ['an unknown groupBy', `metrics?groupBy=category,tenant`],
    ['an unknown metric', `metrics?metrics=count,p99_duration`],
    ['an unknown category', `metrics?category=billing`],
    ['an unknown category on events', `events?category=billing`],
    ['hasError that is not a boolean', `events?hasError=yes`],
    ['an empty event type', `events?eventTypes=a,,b`],
    ['51 event types', `events?eventTypes=${Array.from({ length: 51 }, (_, i) => `t${i}`).join(',')}`],
    ['an event type over 128 characters', `events?eventTypes=${'x'.repeat(129)}`],
  ];
  it.each(bad)('refuses %s with 400', async (_name, path) => {
    const res = await api.get(`${base(acme.projectId)}/${path}`, { key: acme.adminKey });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ success: false, error: { code: 'VALIDATION_ERROR', message: expect.any(String) } });
  });

  const unusable: [string, string][] = [
    ['from after to', `metrics?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z`],
    ['a range over 92 days', `metrics?from=2026-01-01T00:00:00Z&to=2026-04-03T00:00:01Z`],
    ['from after to on events', `events?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z`],
    ['a from after the default to (now)', `events?from=2999-01-01T00:00:00Z`],
    ['from after to on an agent', `agents/x?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z`],
    ['from after to on cost-breakdown', `cost-breakdown?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z`],
    ['a range over 92 days on session-metrics', `session-metrics?from=2025-01-02T00:00:00Z&to=2026-01-01T00:00:00Z`],
  ];
  it.each(unusable)('refuses %s with 422', async (_name, path) => {
    const res = await api.get(`${base(acme.projectId)}/${path}`, { key: acme.adminKey });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ success: false, error: { code: 'UNPROCESSABLE_ENTITY', message: expect.stringMatching(/must not be after|longer than 92 days/) } });
  });
  it('takes a range of exactly 92 days, and an empty one', async () => {
    expect((await api.get(`${base(acme.projectId)}/metrics?from=2026-01-01T00:00:00Z&to=2026-04-03T00:00:00Z`, { key: acme.adminKey })).status).toBe(200);
    const empty = await api.get(`${base(acme.projectId)}/events?from=${to.toISOString()}&to=${to.toISOString()}`, { key: acme.adminKey });
    expect(ZEventsResponse.parse(empty.body).data).toMatchObject({ events: [], total: 0, hasMore: false });
  });

  const badBodies: [string, string, unknown, number][] = [
    ['query without timeRange', 'query', { limit: 10 }, 400],
    ['query with a date that is not ISO 8601', 'query', { timeRange: { from: '2026-01-01', to: '2026-01-02T00:00:00Z' } }, 400],
    ['query with hasError as a string', 'query', { timeRange: { from: '2026-01-01T00:00:00Z', to: '2026-01-02T00:00:00Z' }, hasError: 'true' }, 400],
    ['aggregate without groupBy', 'aggregate', { timeRange: { from: '2026-01-01T00:00:00Z', to: '2026-01-02T00:00:00Z' }, metrics: ['count'] }, 400],
    ['aggregate without metrics', 'aggregate', { timeRange: { from: '2026-01-01T00:00:00Z', to: '2026-01-02T00:00:00Z' }, groupBy: ['hour'] }, 400],
    ['aggregate with an empty groupBy', 'aggregate', { timeRange: { from: '2026-01-01T00:00:00Z', to: '2026-01-02T00:00:00Z' }, groupBy: [], metrics: ['count'] }, 400],
    ['aggregate with an unknown metric', 'aggregate', { timeRange: { from: '2026-01-01T00:00:00Z', to: '2026-01-02T00:00:00Z' }, groupBy: ['hour'], metrics: ['p99'] }, 400],
    ['query with from after to', 'query', { timeRange: { from: '2026-01-02T00:00:00Z', to: '2026-01-01T00:00:00Z' } }, 422],
    ['aggregate over 92 days', 'aggregate', { timeRange: { from: '2026-01-01T00:00:00Z', to: '2026-06-01T00:00:00Z' }, groupBy: ['hour'], metrics: ['count'] }, 422],
  ];
  it.each(badBodies)('refuses %s', async (_name, route, json, status) => {
    const res = await api.post(`${base(acme.projectId)}/${route}`, { key: acme.adminKey, json });
    expect(res.status).toBe(status);
    expect(res.body).toMatchObject({ success: false, error: { code: status === 400 ? 'VALIDATION_ERROR' : 'UNPROCESSABLE_ENTITY' } });
  });

  it.each(['metrics', 'events', 'agents/Support_Agent', 'cost-breakdown', 'session-metrics'])("answers 404 for another tenant's project on %s", async (path) => {
    const res = await api.get(`${base(acme.projectId)}/${path}`, { key: globex.adminKey });
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ success: false, error: { code: 'NOT_FOUND' } });
  });

  it("answers 404 for another tenant's project on the POST routes", async () => {
    const timeRange = { from: from.toISOString(), to: to.toISOString() };
    expect((await api.post(`${base(acme.projectId)}/query`, { key: globex.adminKey, json: { timeRange } })).status).toBe(404);
    expect((await api.post(`${base(acme.projectId)}/aggregate`, { key: globex.adminKey, json: { timeRange, groupBy: ['hour'], metrics: ['count'] } })).status).toBe(404);
  });

  it('needs session:read', async () => {
    const key = await acme.keyWith(['agent:read']);
    const res = await api.get(`${base(acme.projectId)}/metrics`, { key });
    expect(res.status).toBe(403);
  });

  it("counts only the project's own events: the other project and the other tenant see theirs", async () => {
    const mine = await api.get(`${base(acme.projectId)}/events?${range}&limit=1`, { key: acme.adminKey });
    const other = await api.get(`${base(acme.otherProjectId)}/events?${range}&limit=10000`, { key: acme.adminKey });
    const theirs = await api.get(`${base(globex.projectId)}/events?${range}&limit=10000`, { key: globex.adminKey });
    expect(mine.body.data.total).toBe(inWindow().length);
    expect(other.body.data.events.every((e: { id: string }) => e.id.startsWith('o'))).toBe(true);
    expect(theirs.body.data.events.every((e: { id: string }) => e.id.startsWith('g'))).toBe(true);
    expect(theirs.body.data.total).toBeGreaterThan(0);
  });
});
