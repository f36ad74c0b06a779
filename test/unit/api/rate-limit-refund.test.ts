// Refunds of charges that are still waiting in this process's batch: taken out of the batch, with
// no write to the shared count.
import { type Response } from 'express';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { consumeRateLimit, refundRateLimit, writeBatchedCharges } from '../../../api/middleware/rate-limit';

const res = () => ({ setHeader: () => undefined }) as unknown as Response;

function limiter() {
  const memory = new RateLimiterMemory({ points: 100, duration: 60, keyPrefix: `refund-${Math.random()}` });
  const reward = jest.spyOn(memory, 'reward');
  return { memory, reward };
}

test('a refund of a batched charge takes it out of the batch and writes nothing', async () => {
  const { memory, reward } = limiter();
  // The first charge is counted at once and teaches the process the room left; the next two
  // are batched.
  await consumeRateLimit(memory, 'k', res());
  await consumeRateLimit(memory, 'k', res());
  await consumeRateLimit(memory, 'k', res());
  expect((await memory.get('k'))?.consumedPoints).toBe(1);
  await refundRateLimit(memory, 'k');
  expect(reward).not.toHaveBeenCalled();
  await writeBatchedCharges();
  expect((await memory.get('k'))?.consumedPoints).toBe(2);
});

test('a refund with nothing batched is written to the shared count', async () => {
  const { memory, reward } = limiter();
  await consumeRateLimit(memory, 'k', res());
  await refundRateLimit(memory, 'k');
  expect(reward).toHaveBeenCalledWith('k', 1);
  expect((await memory.get('k'))?.consumedPoints).toBe(0);
});

test('a charge after its batch was refunded away is still written', async () => {
  const { memory } = limiter();
  await consumeRateLimit(memory, 'k', res());
  await consumeRateLimit(memory, 'k', res());
  await refundRateLimit(memory, 'k');
  await consumeRateLimit(memory, 'k', res());
  await writeBatchedCharges();
  expect((await memory.get('k'))?.consumedPoints).toBe(2);
});
