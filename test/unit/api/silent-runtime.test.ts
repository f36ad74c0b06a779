// The memory of unanswered session workflows that shortens the deadlines of reads during an outage.
import { SILENT_MEMORY_MS, SILENT_PROBE_MS, SilentRuntime } from '../../../core/sessions/silent-runtime';

function withClock() {
  let now = 1_000_000;
  const memory = new SilentRuntime(() => now);
  return { memory, advance: (ms: number) => (now += ms) };
}

test('gives calls their whole deadline until one goes unanswered', () => {
  const { memory } = withClock();
  expect(memory.isSilent()).toBe(false);
  expect(memory.deadline(5_000)).toBe(5_000);
  memory.noteUnanswered();
  expect(memory.isSilent()).toBe(true);
  expect(memory.deadline(5_000)).toBe(SILENT_PROBE_MS);
  // Never longer than the call's own deadline.
  expect(memory.deadline(100)).toBe(100);
});

test('an answer in time ends the memory at once', () => {
  const { memory } = withClock();
  memory.noteUnanswered();
  memory.noteAnswered();
  expect(memory.isSilent()).toBe(false);
  expect(memory.deadline(2_000)).toBe(2_000);
});

test('the memory lapses SILENT_MEMORY_MS after the last unanswered call, and each one renews it', () => {
  const { memory, advance } = withClock();
  memory.noteUnanswered();
  advance(SILENT_MEMORY_MS - 1);
  expect(memory.isSilent()).toBe(true);
  memory.noteUnanswered();
  advance(SILENT_MEMORY_MS - 1);
  expect(memory.isSilent()).toBe(true);
  advance(1);
  expect(memory.isSilent()).toBe(false);
  expect(memory.deadline(5_000)).toBe(5_000);
});
