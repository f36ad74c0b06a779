// The registry a graceful stop drains (api/chat/running-calls.ts): streams that end within the
// grace period are left alone, the rest are stopped, and the drain returns once all have ended.
import { RunningCalls } from '../../../api/running-calls';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

it('returns at once with nothing running', async () => {
  await new RunningCalls().drain(10_000);
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
