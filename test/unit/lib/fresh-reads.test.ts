// FreshReads: concurrent reads of one key are shared, but never answered by a read that started
// before the caller asked.
import { FreshReads } from '../../../lib/fresh-reads';

/** A load whose answers the test releases one at a time; each answer is the number of the read. */
function scriptedLoad() {
  const pending: Array<(n: number) => void> = [];
  let started = 0;
  return {
    load: () => new Promise<number>((resolve) => pending.push(() => resolve(++started))),
    get running() {
      return pending.length;
    },
    finishNext: async () => {
      pending.shift()!(0);
      // Let the queued read start.
      for (let i = 0; i < 5; i++) await Promise.resolve();
    },
  };
}

it('starts a read at once when none of the key is running', async () => {
  const reads = new FreshReads<number>();
  const s = scriptedLoad();
  const first = reads.read('k', s.load);
  expect(s.running).toBe(1);
  await s.finishNext();
  await expect(first).resolves.toBe(1);
  expect(reads.size).toBe(0);
});

it('makes callers that arrive during a read wait for one read started after them, shared by all', async () => {
  const reads = new FreshReads<number>();
  const s = scriptedLoad();
  const first = reads.read('k', s.load);
  const late = [reads.read('k', s.load), reads.read('k', s.load), reads.read('k', s.load)];
  // Only the first read has started: the latecomers must not be answered by it.
  expect(s.running).toBe(1);
  let lateAnswered = false;
  void Promise.all(late).then(() => (lateAnswered = true));
  await s.finishNext();
  await expect(first).resolves.toBe(1);
  expect(lateAnswered).toBe(false);
  // One more read for all three.
  expect(s.running).toBe(1);
  await s.finishNext();
  await expect(Promise.all(late)).resolves.toEqual([2, 2, 2]);
  expect(reads.size).toBe(0);
});

it('keeps keys apart', async () => {
  const reads = new FreshReads<string>();
  const a = reads.read('a', async () => 'A');
  const b = reads.read('b', async () => 'B');
  await expect(Promise.all([a, b])).resolves.toEqual(['A', 'B']);
});

it('passes a failed read to its callers only; the next callers read again', async () => {
  const reads = new FreshReads<number>();
  let calls = 0;
  const failing = reads.read('k', async () => {
    calls++;
    throw new Error('down');
  });
  const queued = reads.read('k', async () => ++calls);
  await expect(failing).rejects.toThrow('down');
  await expect(queued).resolves.toBe(2);
  await expect(reads.read('k', async () => ++calls)).resolves.toBe(3);
});
