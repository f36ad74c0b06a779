// The hourly rollups on the real store: the rollup path gives the same answers as a raw scan of
// every hour; a rollup is built once and then read; the open hour is always read raw, so an event
// of the last minutes is counted at once; an event written late into a built hour makes the next
// read rebuild that hour, so it is counted too.
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { recordAnalyticsEvents } from '../../../core/analytics/ingest';
import { mongoAnalyticsStore } from '../../../core/analytics/store';
import { bucketsOf, GROUP_DIMENSIONS, METRICS } from '../../../core/analytics/metrics';
import { decodeCells } from '../../../core/analytics/rollups';
import { generateEvents } from './fixtures';

let stack: TestStack;
let acme: SeededTenant;
const HOUR = 3_600_000;
const now = new Date();
const hourStart = Math.floor(now.getTime() / HOUR) * HOUR;

// Starting the stack and seeding thousands of events: give a loaded machine time.
beforeAll(async () => {
  stack = await startTestStack();
  acme = await seedTenant(stack.ctx, 'acme-rollups');
  const events = generateEvents(11, 2000, acme, new Date(hourStart - 30 * HOUR), now, 'r');
  for (let i = 0; i < events.length; i += 500) await recordAnalyticsEvents(stack.ctx.models, events.slice(i, i + 500));
}, 240_000);
afterAll(() => stack.close());

/** The built rollups (writing events of past hours leaves stubs that only say the hour is stale). */
const rollupsOf = async (projectId: string) => (await stack.ctx.models.AnalyticsRollup.find({ tenantId: acme.tenantId, projectId }).lean()).filter((r) => r.builtAt);

describe('hourly rollups', () => {
  it('give the same buckets and event pages as a raw scan of every hour', async () => {
    const rolled = mongoAnalyticsStore(stack.ctx.models);
    const raw = mongoAnalyticsStore(stack.ctx.models, { rollups: false });
    const range = { from: new Date(hourStart - 28 * HOUR + 7 * 60_000), to: new Date(now.getTime() + 1) };
    expect(await rollupsOf(acme.projectId)).toHaveLength(0);
    const [a, b] = [await rolled.cells(acme, range, {}), await raw.cells(acme, range, {})];
    // Every whole hour that ended five minutes ago or more now has its rollup.
    const built = await rollupsOf(acme.projectId);
    const closedWhole = Array.from({ length: 29 }, (_, i) => hourStart - (28 - i) * HOUR).filter((h) => h >= range.from.getTime() && h + HOUR + 5 * 60_000 <= now.getTime());
    expect(built.map((r) => r.hour.getTime()).sort()).toEqual(closedWhole.sort());
    for (const groupBy of [...GROUP_DIMENSIONS.map((d) => [d]), ['agent_name', 'channel', 'hour'] as const, ['category', 'event_type', 'day'] as const]) {
      expect(bucketsOf(a, groupBy, METRICS)).toEqual(bucketsOf(b, groupBy, METRICS));
    }
    for (const filter of [{}, { category: 'llm' }, { agentName: 'Billing_Agent', hasError: true }, { eventTypes: ['tool.call', 'session.ended'], hasError: false }]) {
      const page = { limit: 300, offset: 650 };
      const [x, y] = [await rolled.events(acme, range, filter, page), await raw.events(acme, range, filter, page)];
      expect(x.total).toBe(y.total);
      expect(x.events.map((e) => e._id)).toEqual(y.events.map((e) => e._id));
    }
  });

  it('are read, not rebuilt, by the next query', async () => {
    const store = mongoAnalyticsStore(stack.ctx.models);
    const range = { from: new Date(hourStart - 20 * HOUR), to: new Date(hourStart - 10 * HOUR) };
    await store.cells(acme, range, {});
    const before = new Map((await rollupsOf(acme.projectId)).map((r) => [r._id, r.builtAt!.getTime()]));
    await store.cells(acme, range, {});
    const after = await rollupsOf(acme.projectId);
    for (const r of after) expect(r.builtAt!.getTime()).toBe(before.get(r._id));
  });

  it('count an event of the last minutes at once: the open hour is read raw', async () => {
    const store = mongoAnalyticsStore(stack.ctx.models);
    const range = { from: new Date(now.getTime() - 24 * HOUR), to: new Date(Date.now() + 60_000) };
    const count = async () => (await store.cells({ tenantId: acme.tenantId, projectId: acme.otherProjectId }, range, {})).reduce((n, c) => n + c.count, 0);
    const base = await count();
    await recordAnalyticsEvents(stack.ctx.models, [{ tenantId: acme.tenantId, projectId: acme.otherProjectId, category: 'message', eventType: 'message.user', timestamp: new Date(Date.now() - 30_000) }]);
    expect(await count()).toBe(base + 1);
  });

  it('rebuild an hour an event was written into late, so the event is counted', async () => {
    const store = mongoAnalyticsStore(stack.ctx.models);
    const scope = { tenantId: acme.tenantId, projectId: acme.otherProjectId };
    const lateHour = new Date(hourStart - 5 * HOUR);
    const range = { from: new Date(hourStart - 8 * HOUR), to: new Date(hourStart - 2 * HOUR) };
    const count = async () => (await store.cells(scope, range, { category: 'tool' })).reduce((n, c) => n + c.count, 0);
    await recordAnalyticsEvents(stack.ctx.models, [{ id: 'late-1', ...scope, category: 'tool', eventType: 'tool.call', timestamp: new Date(lateHour.getTime() + 60_000), durationMs: 40 }]);
    expect(await count()).toBe(1);
    const built = (await rollupsOf(acme.otherProjectId)).find((r) => r.hour.getTime() === lateHour.getTime())!;
    expect(decodeCells(built.cells!)).toHaveLength(1);

    await recordAnalyticsEvents(stack.ctx.models, [{ id: 'late-2', ...scope, category: 'tool', eventType: 'tool.call', timestamp: new Date(lateHour.getTime() + 120_000), durationMs: 4000 }]);
    const stale = (await rollupsOf(acme.otherProjectId)).find((r) => r.hour.getTime() === lateHour.getTime())!;
    expect(stale.invalidatedAt!.getTime()).toBeGreaterThanOrEqual(stale.builtAt!.getTime());
    expect(await count()).toBe(2);
    const rebuilt = (await rollupsOf(acme.otherProjectId)).find((r) => r.hour.getTime() === lateHour.getTime())!;
    expect(rebuilt.builtAt!.getTime()).toBeGreaterThan(built.builtAt!.getTime());
    expect(decodeCells(rebuilt.cells!)[0]!.count).toBe(2);
    // A retried batch (same ids) adds nothing.
    await recordAnalyticsEvents(stack.ctx.models, [{ id: 'late-2', ...scope, category: 'tool', eventType: 'tool.call', timestamp: new Date(lateHour.getTime() + 120_000), durationMs: 4000 }]);
    expect(await count()).toBe(2);
  });

  it('serve the minutes of an hour a range covers in part from minute rollups, and rebuild them after a late event', async () => {
    const rolled = mongoAnalyticsStore(stack.ctx.models);
    const raw = mongoAnalyticsStore(stack.ctx.models, { rollups: false });
    const h = hourStart - 3 * HOUR;
    const range = { from: new Date(h + 10 * 60_000 + 500), to: new Date(h + 50 * 60_000) };
    const minutes = async () => (await stack.ctx.models.AnalyticsMinuteRollup.find({ tenantId: acme.tenantId, projectId: acme.projectId, hour: new Date(h) }).lean()).filter((r) => r.builtAt);
    expect(bucketsOf(await rolled.cells(acme, range, {}), ['agent_name', 'event_type'], METRICS)).toEqual(bucketsOf(await raw.cells(acme, range, {}), ['agent_name', 'event_type'], METRICS));
    // The whole minutes 11..49 have rollups; the cut minute 10 is read raw.
    expect((await minutes()).map((r) => r.minute!.getTime()).sort()).toEqual(Array.from({ length: 39 }, (_, i) => h + (11 + i) * 60_000));
    const count = async () => (await rolled.cells(acme, range, { category: 'search' })).reduce((n, c) => n + c.count, 0);
    expect(await count()).toBe(0);
    await recordAnalyticsEvents(stack.ctx.models, [{ id: 'late-minute', ...acme, category: 'search', eventType: 'search.query', timestamp: new Date(h + 20 * 60_000 + 5) }]);
    expect(await count()).toBe(1);
  });
});
