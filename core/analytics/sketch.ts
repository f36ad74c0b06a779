// The p95 estimator of the analytics routes: a log-bucket duration sketch (the DDSketch scheme).
// A duration x > 0 falls in bucket i = ceil(log_γ x) with γ = (1 + α) / (1 − α); the bucket's
// estimate 2γ^i / (γ + 1) is within α (1%) of every value in it, so the nearest-rank p95 read
// from the sketch is within 1% of the exact nearest-rank p95. Sketches add by bucket, in any
// order, so an hourly rollup and a raw scan of the same events give the same answer.

/** Relative accuracy of a quantile read from a sketch. */
export const SKETCH_RELATIVE_ACCURACY = 0.01;
const GAMMA = (1 + SKETCH_RELATIVE_ACCURACY) / (1 - SKETCH_RELATIVE_ACCURACY);
const LOG_GAMMA = Math.log(GAMMA);
/** Bucket of durations ≤ 0. */
const ZERO = 'z';

/** Bucket key → count. */
export type Sketch = Record<string, number>;

export function sketchKey(x: number): string {
  return x <= 0 ? ZERO : String(Math.ceil(Math.log(x) / LOG_GAMMA));
}

export function addToSketch(sketch: Sketch, x: number, count = 1): void {
  const k = sketchKey(x);
  sketch[k] = (sketch[k] ?? 0) + count;
}

export function mergeSketch(into: Sketch, from: Sketch): void {
  for (const [k, n] of Object.entries(from)) into[k] = (into[k] ?? 0) + n;
}

const valueOf = (k: string): number => (k === ZERO ? 0 : (2 * Math.pow(GAMMA, Number(k))) / (GAMMA + 1));

/** Nearest-rank quantile q (0 < q ≤ 1): the value at rank ceil(q·n) of the sorted durations; null when empty. */
export function sketchQuantile(sketch: Sketch, q: number): number | null {
  const entries = Object.entries(sketch).filter(([, n]) => n > 0);
  const n = entries.reduce((s, [, c]) => s + c, 0);
  if (n === 0) return null;
  const order = (k: string) => (k === ZERO ? -Infinity : Number(k));
  entries.sort(([a], [b]) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0));
  const rank = Math.max(1, Math.ceil(q * n));
  let seen = 0;
  for (const [k, c] of entries) {
    seen += c;
    if (seen >= rank) return valueOf(k);
  }
  return valueOf(entries[entries.length - 1]![0]);
}
