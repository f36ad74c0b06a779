// The p95 estimator against the exact nearest-rank p95 of the same durations, over generated
// distributions: within the sketch's stated 1%, merged in any order with the same answer.
import { addToSketch, mergeSketch, sketchQuantile, SKETCH_RELATIVE_ACCURACY, type Sketch } from '../../../core/analytics/sketch';

/** A small seeded generator (mulberry32), so a failure can be replayed. */
function rng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const exactQuantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.max(1, Math.ceil(q * s.length)) - 1]!;
};

const distributions: [string, (r: () => number) => number][] = [
  ['uniform 0..2,000 ms, integers', (r) => Math.floor(r() * 2000)],
  ['log-normal latencies', (r) => Math.exp(5 + 1.5 * Math.sqrt(-2 * Math.log(r() || 1e-12)) * Math.cos(2 * Math.PI * r()))],
  ['bimodal: fast hits and slow misses', (r) => (r() < 0.9 ? 5 + r() * 10 : 800 + r() * 4000)],
  ['sub-millisecond fractions', (r) => r()],
  ['a few values, many zeros', (r) => (r() < 0.5 ? 0 : [3, 30, 300][Math.floor(r() * 3)]!)],
];

describe('sketchQuantile', () => {
  it.each(distributions)('is within 1%% of the exact nearest-rank p95 (and p50, p99): %s', (_name, draw) => {
    for (const [seed, n] of [
      [1, 1],
      [2, 7],
      [3, 100],
      [4, 5000],
    ] as const) {
      const r = rng(seed);
      const xs = Array.from({ length: n }, () => draw(r));
      const sketch: Sketch = {};
      for (const x of xs) addToSketch(sketch, x);
      for (const q of [0.5, 0.95, 0.99]) {
        const exact = exactQuantile(xs, q);
        const estimate = sketchQuantile(sketch, q)!;
        if (exact === 0) expect(estimate).toBe(0);
        else expect(Math.abs(estimate - exact) / exact).toBeLessThanOrEqual(SKETCH_RELATIVE_ACCURACY + 1e-9);
      }
    }
  });

  it('gives the same answer for sketches merged in any order as for one sketch of everything', () => {
    const r = rng(9);
    const parts = Array.from({ length: 5 }, () => Array.from({ length: 200 }, () => Math.floor(r() * 10_000)));
    const whole: Sketch = {};
    for (const x of parts.flat()) addToSketch(whole, x);
    const forward: Sketch = {};
    const backward: Sketch = {};
    for (const p of parts) {
      const s: Sketch = {};
      for (const x of p) addToSketch(s, x);
      mergeSketch(forward, s);
    }
    for (const p of [...parts].reverse()) {
      const s: Sketch = {};
      for (const x of p) addToSketch(s, x);
      mergeSketch(backward, s);
    }
    expect(sketchQuantile(forward, 0.95)).toBe(sketchQuantile(whole, 0.95));
    expect(sketchQuantile(backward, 0.95)).toBe(sketchQuantile(whole, 0.95));
  });

  it('is null for no durations', () => {
    expect(sketchQuantile({}, 0.95)).toBeNull();
  });
});
