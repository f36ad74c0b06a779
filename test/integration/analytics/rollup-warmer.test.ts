// Hour rollups built ahead of reads: the hours a process wrote events in are rolled up once they
// close, and only those; a read of them then finds them built instead of scanning.
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { recordAnalyticsEvents } from '../../../core/analytics/ingest';
import { warmClosedHours } from '../../../core/analytics/rollup-warmer';
import { mongoAnalyticsStore } from '../../../core/analytics/store';
import { decodeCells } from '../../../core/analytics/rollups';
import { generateEvents } from './fixtures';

let stack: TestStack;
let acme: SeededTenant;
const HOUR = 3_600_000;
const now = new Date();
const hourStart = Math.floor(now.getTime() / HOUR) * HOUR;

beforeAll(async () => {
  stack = await startTestStack();
  acme = await seedTenant(stack.ctx, 'acme-warmer');
}, 120_000);
afterAll(() => stack.close());

const builtRollups = async () => (await stack.ctx.models.AnalyticsRollup.find({ tenantId: acme.tenantId, projectId: acme.projectId }).lean()).filter((r) => r.builtAt);

it('rolls up the closed hours this process wrote events in, once, and a read then uses them', async () => {
  // Three closed hours (4, 3 and 2 hours ago) and the open one.
  const events = generateEvents(5, 300, acme, new Date(hourStart - 4 * HOUR), new Date(hourStart - HOUR), 'w');
  const open = generateEvents(6, 20, acme, new Date(hourStart), now, 'o');
  await recordAnalyticsEvents(stack.ctx.models, [...events, ...open]);
  expect(await builtRollups()).toHaveLength(0);

  // Nothing else in this process wrote closed hours, so only this project's three are built.
  expect(await warmClosedHours(stack.ctx.models, now)).toBe(3);
  const built = await builtRollups();
  expect(built.map((r) => r.hour.getTime()).sort()).toEqual([hourStart - 4 * HOUR, hourStart - 3 * HOUR, hourStart - 2 * HOUR]);
  const counted = built.reduce((sum, r) => sum + decodeCells(r.cells!).reduce((n, c) => n + c.count, 0), 0);
  expect(counted).toBe(events.length);

  // Done once: the hours are no longer noted.
  expect(await warmClosedHours(stack.ctx.models, now)).toBe(0);

  // A read over them builds nothing again.
  const before = new Map(built.map((r) => [r._id, r.builtAt!.getTime()]));
  await mongoAnalyticsStore(stack.ctx.models).cells(acme, { from: new Date(hourStart - 4 * HOUR), to: new Date(hourStart - HOUR) }, {});
  for (const r of await builtRollups()) expect(r.builtAt!.getTime()).toBe(before.get(r._id));
});

it('leaves an hour that has not closed (plus its delay) for later', async () => {
  const late = generateEvents(7, 10, acme, new Date(hourStart), new Date(hourStart + 60_000), 'l');
  await recordAnalyticsEvents(stack.ctx.models, late);
  expect(await warmClosedHours(stack.ctx.models, new Date(hourStart + HOUR + 60_000))).toBe(0);
  expect(await warmClosedHours(stack.ctx.models, new Date(hourStart + HOUR + 5 * 60_000))).toBe(1);
});
