// The registry a graceful stop drains (core/running-calls.ts): streams that end within the
// grace period are left alone, the rest are stopped, and the drain returns once all have ended.
import { RunningCalls } from '../../../core/running-calls';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

it('returns at once with nothing running, without waiting for the grace period', async () => {
  // With fake timers the grace period never ends on its own: the drain can only return because
  // there was nothing to wait for, and it must leave no grace timer behind.
  jest.useFakeTimers();
  try {
    const streams = new RunningCalls();
    await streams.drain(10_000);
    expect(jest.getTimerCount()).toBe(0);
    expect(streams.size).toBe(0);
    // Drained: a call that starts now is stopped at once.
    const late = jest.fn();
    streams.add(late);
    expect(late).toHaveBeenCalledTimes(1);
  } finally {
    jest.useRealTimers();
  }
});

it('lets streams that end within the grace period end on their own', async () => {
  const streams = new RunningCalls();
  const stop = jest.fn();
  const ended = streams.add(stop);
  setTimeout(ended, 20);
  await streams.drain(10_000);
  expect(stop).not.toHaveBeenCalled();
  expect(streams.size).toBe(0);
});

it('stops the streams still running after the grace period and waits until they have ended', async () => {
  const streams = new RunningCalls();
  const order: string[] = [];
  const quick = streams.add(() => order.push('quick stopped'));
  setTimeout(() => {
    order.push('quick ended');
    quick();
  }, 5);
  const slow = streams.add(() => {
    order.push('slow stopped');
    // Recording the call takes a moment after the stop.
    void sleep(20).then(() => {
      order.push('slow ended');
      slow();
    });
  });
  await streams.drain(50);
  order.push('drained');
  expect(order).toEqual(['quick ended', 'slow stopped', 'slow ended', 'drained']);
});

it('stops a stream that starts once the stop is under way', async () => {
  const streams = new RunningCalls();
  const first = streams.add(() => first());
  await streams.drain(0);
  const late = jest.fn();
  streams.add(late);
  expect(late).toHaveBeenCalledTimes(1);
});
