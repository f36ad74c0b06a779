// The turn-duration metric of an HTTP-async message its session answered
// (activities/http-async/delivery.ts `answeredMessageEvent`): from the API's acceptance of the
// message to the worker's now, not the workflow's clock, which stands still within a workflow task.
import { answeredMessageEvent } from '../../../activities/http-async/delivery';
import { switchboardMetrics } from '../../../lib/metrics/registry';

const turns = async () => {
  const values = (await switchboardMetrics().turnDuration.get()).values.filter((v) => v.labels.channel === 'http_async' && v.labels.outcome === 'ok');
  return { count: values.find((v) => v.metricName === 'switchboard_turn_duration_seconds_count')?.value ?? 0, sum: values.find((v) => v.metricName === 'switchboard_turn_duration_seconds_sum')?.value ?? 0 };
};
const scope = { tenantId: 't_1', projectId: 'p_1' };
const answered = { sessionId: 's_1', messageId: 'm_1', chars: 5, action: 'respond' };

it('counts a turn from its message’s acceptance, by the real clock, while the analytics event keeps the turn’s own duration', async () => {
  const before = await turns();
  const event = answeredMessageEvent(scope, { ...answered, durationMs: 0, acceptedAtMs: Date.now() - 1_500 }, true);
  const after = await turns();
  expect(after.count).toBe(before.count + 1);
  expect(after.sum - before.sum).toBeGreaterThanOrEqual(1.5);
  expect(after.sum - before.sum).toBeLessThan(3);
  expect(event).toMatchObject({ eventType: 'channel.message_accepted', durationMs: 0 });
});

it('falls back to the turn’s duration for a message without an acceptance time, and never counts below zero', async () => {
  let before = await turns();
  answeredMessageEvent(scope, { ...answered, durationMs: 250 }, true);
  let after = await turns();
  expect(after.sum - before.sum).toBeCloseTo(0.25, 5);
  before = after;
  // A worker whose clock is behind the API's.
  answeredMessageEvent(scope, { ...answered, durationMs: 10, acceptedAtMs: Date.now() + 60_000 }, true);
  after = await turns();
  expect(after.count).toBe(before.count + 1);
  expect(after.sum).toBe(before.sum);
});

it('observes nothing when asked only for the event', async () => {
  const before = await turns();
  answeredMessageEvent(scope, { ...answered, durationMs: 10, acceptedAtMs: Date.now() - 100 });
  expect(await turns()).toEqual(before);
});
