// Flushes of one session asked for at once (core/sessions/read.ts): at most one in flight and one
// waiting; a caller arriving while one is in flight gets the next one, never the one already sent.
import { coalesced, type FlushOutcome } from '../../../core/sessions/read';

function gate() {
  let open!: (outcome: FlushOutcome) => void;
  const done = new Promise<FlushOutcome>((resolve) => (open = resolve));
  return { done, open };
}

it('sends one flush at a time per session, and one more for everyone who asked meanwhile', async () => {
  const sent: Array<ReturnType<typeof gate>> = [];
  const send = () => {
    const g = gate();
    sent.push(g);
    return g.done;
  };
  const first = coalesced('session/a', send);
  const waiting = Array.from({ length: 5 }, () => coalesced('session/a', send));
  const other = coalesced('session/b', send);
  expect(sent).toHaveLength(2); // session a's first, session b's
  sent[0]!.open('written');
  expect(await first).toBe('written');
  await new Promise((r) => setImmediate(r));
  expect(sent).toHaveLength(3); // the one the five share
  const late = coalesced('session/a', send); // arrives while that one is in flight: waits for another
  sent[2]!.open('nothing_held');
  for (const w of waiting) expect(await w).toBe('nothing_held');
  await new Promise((r) => setImmediate(r));
  expect(sent).toHaveLength(4);
  sent[3]!.open('unanswered');
  expect(await late).toBe('unanswered');
  sent[1]!.open('written');
  expect(await other).toBe('written');
  // Nothing left behind: the next flush is sent at once.
  await new Promise((r) => setImmediate(r));
  void coalesced('session/a', send);
  expect(sent).toHaveLength(5);
  sent[4]!.open('written');
});
