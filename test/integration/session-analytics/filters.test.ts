// The public session analytics list on the real API: every filter, the spec's validation codes
// and error body, the list caps and the limit, channel families, status and containment values,
// paging with `total` and `hasMore`, and pages cut under 1 MiB.
import { client } from '../../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { scopedKey } from '../telephony/recording-fixtures';
import { seedSessions } from './fixtures';

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;
let key: string;
const day = (d: number, h = 0) => new Date(Date.UTC(2026, 0, d, h));
let ids: Record<string, string>;

beforeAll(async () => {
  stack = await startTestStack();
  api = client(stack.baseUrl);
  t = await seedTenant(stack.ctx);
  ({ key } = await scopedKey(stack.ctx, t, ['analytics.read']));
  const [a, b, c, d, e, f] = await seedSessions(stack.ctx, t, [
    { createdAt: day(1), channel: 'api', environment: 'dev', containmentType: 'contained_resolved', status: 'ended', analyticsStatus: 'completed', endedAt: day(1, 1), channelUId: 'u-1', traceDimensions: { region: 'emea', tier: 3 } },
    { createdAt: day(2), channel: 'voice', environment: 'production', containmentType: 'escalated', status: 'ended', analyticsStatus: 'escalated', endedAt: day(2, 1), channelUId: 'u-2', traceDimensions: { region: 'apac' } },
    { createdAt: day(3), channel: 'sdk_web', environment: 'staging', containmentType: 'abandoned', status: 'ended', analyticsStatus: 'abandoned', endedAt: day(3, 1) },
    { createdAt: day(4), channel: 'http_async', environment: 'working-copy', containmentType: 'contained_partial', status: 'ended', analyticsStatus: 'ended', endedAt: day(4, 1) },
    // Live: one active now, one idle since the 5th.
    { createdAt: day(5), lastActivityAt: new Date(), channel: 'web_debug', environment: 'dev' },
    { createdAt: day(5, 1), channel: 'api', environment: 'dev' },
  ]);
  ids = { a: a!, b: b!, c: c!, d: d!, e: e!, f: f! };
}, 120_000);

afterAll(async () => {
  await stack?.close();
});

const path = `/api/public/analytics/projects/__P__/sessions`;
const url = (query: string) => `${path.replace('__P__', t.projectId)}?${query}`;
const get = (query: string) => api.get(url(query), { headers: { 'x-api-key': key } });
const post = (json: unknown) => api.post(path.replace('__P__', t.projectId), { headers: { 'x-api-key': key }, json });
const JANUARY = 'fromDate=2026-01-01T00:00:00Z&toDate=2026-02-01T00:00:00Z';
const idsOf = (res: { body: { sessions: { id: string }[] } }) => res.body.sessions.map((s) => s.id);

function expectError(res: { status: number; body: Record<string, unknown> }, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.body).toMatchObject({ success: false, error: { code, message: expect.any(String), details: expect.any(Object) }, message: expect.any(String), required: null });
  expect(res.body.message).toBe((res.body.error as { message: string }).message);
}

it('lists the range newest first with every summary field and the envelope', async () => {
  const res = await get(JANUARY);
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({ success: true, total: 6, offset: 0, limit: 100, hasMore: false });
  expect(idsOf(res)).toEqual([ids.f, ids.e, ids.d, ids.c, ids.b, ids.a]);
  const a = res.body.sessions.find((s: { id: string }) => s.id === ids.a);
  expect(a).toEqual({
    id: ids.a,
    channel: 'api',
    environment: 'dev',
    status: 'completed',
    containmentType: 'contained_resolved',
    createdAt: day(1).toISOString(),
    lastActivityAt: day(1).toISOString(),
    endedAt: day(1, 1).toISOString(),
    messageCount: { user: 1, agent: 2, total: 3 },
    traceEventCount: { llm_call: 1, decision: 2, tool_call: 3, error: 0, total: 7 },
    tokenCount: { inputTokens: 20, cachedTokens: 0, completionTokens: 10, reasoningTokens: 0, outputTokens: 10, totalTokens: 30 },
    traceDimensions: { region: 'emea', tier: 3 },
    estimatedCost: 0.25,
    durationMs: 3_600_000,
    idleDurationMs: 3_600_000,
    isTest: null,
  });
});

it('takes fromDate inclusive and toDate exclusive; sessionIds replace the range, comma separated or repeated', async () => {
  expect(idsOf(await get('fromDate=2026-01-02T00:00:00Z&toDate=2026-01-04T00:00:00Z'))).toEqual([ids.c, ids.b]);
  expect(idsOf(await get(`sessionIds=${ids.a},${ids.c}`)).sort()).toEqual([ids.a, ids.c].sort());
  expect(idsOf(await get(`sessionIds=${ids.a}&sessionIds=${ids.b}&${JANUARY}`)).sort()).toEqual([ids.a, ids.b].sort());
});

it('needs the range or sessionIds, valid ISO dates, and toDate after fromDate', async () => {
  expectError(await get(''), 400, 'VALIDATION_ERROR');
  expectError(await get('fromDate=2026-01-01T00:00:00Z'), 400, 'VALIDATION_ERROR');
  expectError(await get('fromDate=yesterday&toDate=2026-01-02T00:00:00Z'), 400, 'VALIDATION_ERROR');
  expectError(await get('fromDate=2026-01-02T00:00:00Z&toDate=2026-01-01T00:00:00Z'), 400, 'VALIDATION_ERROR');
});

it('filters by containment type, environment, channel user and custom dimensions', async () => {
  expect(idsOf(await get(`${JANUARY}&containmentType=escalated,abandoned`))).toEqual([ids.c, ids.b]);
  expect(idsOf(await get(`${JANUARY}&environment=production&environment=working-copy`))).toEqual([ids.d, ids.b]);
  expect(idsOf(await get(`${JANUARY}&channelUId=u-2`))).toEqual([ids.b]);
  expect(idsOf(await get(`${JANUARY}&traceDimensions[region]=emea&traceDimensions[tier]=3`))).toEqual([ids.a]);
  expect(idsOf(await get(`${JANUARY}&traceDimensions[region]=emea&traceDimensions[tier]=4`))).toEqual([]);
  expect(idsOf(await post({ fromDate: '2026-01-01', toDate: '2026-02-01', traceDimensions: { region: ['emea', 'apac'] } }))).toEqual([ids.b, ids.a]);
});

it('answers the spec codes for values outside the enumerations, case sensitively', async () => {
  expectError(await get(`${JANUARY}&containmentType=Escalated`), 400, 'INVALID_CONTAINMENT_TYPE');
  expectError(await post({ fromDate: '2026-01-01', toDate: '2026-02-01', containmentType: ['contained', 'resolved'] }), 400, 'INVALID_CONTAINMENT_TYPE');
  for (const env of ['prod', 'development', 'Production']) expectError(await get(`${JANUARY}&environment=${env}`), 400, 'INVALID_ENVIRONMENT');
  expectError(await get(`${JANUARY}&status=failed`), 400, 'INVALID_STATUS');
  expectError(await post({ fromDate: '2026-01-01', toDate: '2026-02-01', status: 'Active' }), 400, 'INVALID_STATUS');
  const wrong = await get(`${JANUARY}&environment=prod`);
  expect(wrong.body.error.details).toMatchObject({ field: 'environment', value: 'prod' });
});

it('filters by status, the first value when repeated; idle is a live session without activity for five minutes', async () => {
  expect(idsOf(await get(`${JANUARY}&status=completed&status=bogus`))).toEqual([ids.a]);
  expect(idsOf(await get(`${JANUARY}&status=escalated`))).toEqual([ids.b]);
  expect(idsOf(await get(`${JANUARY}&status=abandoned`))).toEqual([ids.c]);
  expect(idsOf(await get(`${JANUARY}&status=ended`))).toEqual([ids.d]);
  expect(idsOf(await get(`${JANUARY}&status=active`))).toEqual([ids.e]);
  expect(idsOf(await get(`${JANUARY}&status=idle`))).toEqual([ids.f]);
  expect(idsOf(await get(`${JANUARY}&status=archived`))).toEqual([]);
  const listed = await get(`sessionIds=${ids.e},${ids.f}`);
  expect(Object.fromEntries(listed.body.sessions.map((s: { id: string; status: string }) => [s.id, s.status]))).toEqual({ [ids.e!]: 'active', [ids.f!]: 'idle' });
});

it('matches channel families: web chat spellings together, any voice channel for all voice; an unknown channel is no rows', async () => {
  expect(idsOf(await get(`${JANUARY}&channel=web_chat`))).toEqual([ids.c]);
  expect(idsOf(await get(`${JANUARY}&channel=web`))).toEqual([ids.c]);
  expect(idsOf(await get(`${JANUARY}&channel=voice_pipeline`))).toEqual([ids.b]);
  expect(idsOf(await get(`${JANUARY}&channel=http_async,api`))).toEqual([ids.f, ids.d, ids.a]);
  const unknown = await get(`${JANUARY}&channel=some_messenger`);
  expect(unknown.status).toBe(200);
  expect(unknown.body).toMatchObject({ total: 0, sessions: [], hasMore: false });
});

it('takes POST bodies with lists as arrays or comma-separated text, and refuses an empty callerNumber, nested dimensions and unknown fields', async () => {
  expect(idsOf(await post({ fromDate: '2026-01-01', toDate: '2026-02-01', environment: 'production,staging', channel: ['voice', 'sdk_web'] }))).toEqual([ids.c, ids.b]);
  expectError(await post({ fromDate: '2026-01-01', toDate: '2026-02-01', callerNumber: [] }), 400, 'VALIDATION_ERROR');
  expectError(await post({ fromDate: '2026-01-01', toDate: '2026-02-01', callerNumber: ['--- ()'] }), 400, 'VALIDATION_ERROR');
  expectError(await post({ fromDate: '2026-01-01', toDate: '2026-02-01', callerNumber: ['1'.repeat(513)] }), 400, 'VALIDATION_ERROR');
  expectError(await post({ fromDate: '2026-01-01', toDate: '2026-02-01', traceDimensions: { region: { nested: 'x' } } }), 400, 'VALIDATION_ERROR');
  expectError(await post({ fromDate: '2026-01-01', toDate: '2026-02-01', surprise: 1 }), 400, 'VALIDATION_ERROR');
});

it('keeps limit within 1-10000 and offset at least 0', async () => {
  expectError(await get(`${JANUARY}&limit=10001`), 400, 'VALIDATION_ERROR');
  expectError(await get(`${JANUARY}&limit=0`), 400, 'VALIDATION_ERROR');
  expectError(await get(`${JANUARY}&offset=-1`), 400, 'VALIDATION_ERROR');
  expectError(await post({ fromDate: '2026-01-01', toDate: '2026-02-01', limit: 10_001 }), 400, 'VALIDATION_ERROR');
  expect((await get(`${JANUARY}&limit=10000`)).status).toBe(200);
});

it('refuses lists over their caps', async () => {
  const many = (n: number, f: (i: number) => string) => Array.from({ length: n }, (_, i) => f(i));
  const base = { fromDate: '2026-01-01', toDate: '2026-02-01' };
  expectError(await post({ sessionIds: many(10_001, (i) => `s${i}`) }), 400, 'VALIDATION_ERROR');
  expect((await post({ sessionIds: many(10_000, (i) => `s${i}`) })).status).toBe(200);
  expectError(await post({ ...base, containmentType: many(101, () => 'contained') }), 400, 'VALIDATION_ERROR');
  expectError(await post({ ...base, environment: many(5, () => 'dev') }), 400, 'VALIDATION_ERROR');
  expectError(await post({ ...base, environment: ['x'.repeat(129)] }), 400, 'VALIDATION_ERROR');
  expectError(await post({ ...base, channelUId: many(101, (i) => `u${i}`) }), 400, 'VALIDATION_ERROR');
  expectError(await post({ ...base, channel: many(51, (i) => `c${i}`) }), 400, 'VALIDATION_ERROR');
  expect((await post({ ...base, channel: many(60, (i) => `c${i % 50}`) })).status).toBe(200);
  expectError(await post({ ...base, callerNumber: many(101, (i) => `+1415555${String(i).padStart(4, '0')}`) }), 400, 'VALIDATION_ERROR');
});

it('pages with offset, total and hasMore', async () => {
  const first = await get(`${JANUARY}&limit=4`);
  expect(first.body).toMatchObject({ total: 6, offset: 0, limit: 4, hasMore: true });
  const second = await get(`${JANUARY}&limit=4&offset=4`);
  expect(second.body).toMatchObject({ total: 6, offset: 4, limit: 4, hasMore: false });
  expect([...idsOf(first), ...idsOf(second)]).toEqual([ids.f, ids.e, ids.d, ids.c, ids.b, ids.a]);
});

it('cuts a page before it would pass 1 MiB, says hasMore, and the next page goes on from there', async () => {
  const place = { tenantId: t.tenantId, projectId: t.otherProjectId };
  const { key: otherKey } = await scopedKey(stack.ctx, place, ['SESSIONS_LIST']);
  const big = Object.fromEntries(Array.from({ length: 32 }, (_, i) => [`d${i}`, 'x'.repeat(256)]));
  const seeded = await seedSessions(
    stack.ctx,
    place,
    Array.from({ length: 150 }, (_, i) => ({ createdAt: new Date(Date.UTC(2026, 1, 1) + i * 1000), traceDimensions: big })),
  );
  const page = (offset: number) =>
    api.get(`/api/public/analytics/projects/${t.otherProjectId}/sessions?fromDate=2026-02-01&toDate=2026-03-01&limit=10000&offset=${offset}`, { headers: { 'x-api-key': otherKey } });
  const one = await page(0);
  expect(one.status).toBe(200);
  expect(Buffer.byteLength(one.text)).toBeLessThanOrEqual(1024 * 1024);
  expect(one.body.sessions.length).toBeGreaterThan(0);
  expect(one.body.sessions.length).toBeLessThan(150);
  expect(one.body).toMatchObject({ total: 150, limit: 10000, hasMore: true });
  const two = await page(one.body.sessions.length);
  expect(two.body).toMatchObject({ total: 150, hasMore: false });
  expect(Buffer.byteLength(two.text)).toBeLessThanOrEqual(1024 * 1024);
  const all = [...idsOf(one), ...idsOf(two)];
  expect(new Set(all).size).toBe(150);
  expect(all.sort()).toEqual([...seeded].sort());
});
