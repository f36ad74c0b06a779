// The evaluation context: the only source of time and randomness for expressions and templates.
// The workflow passes its deterministic clock and PRNG; tests pass `fixedContext()`.

export interface EvalContext {
  /** Current time in epoch milliseconds. */
  now(): number;
  /** A number in [0, 1). */
  random(): number;
  /**
   * Time zone used by FORMAT_DATE when none is given.
   * @default 'UTC'
   */
  timeZone?: string;
  /**
   * Whether IS_NUMBER is true for text that reads as a number ("42", "-3.5"), as ON_INPUT's `input`
   * always is. Asked only for such text; unset means yes.
   */
  numericText?: () => boolean;
}

/** A deterministic context: a fixed clock and a seeded PRNG (mulberry32). */
export function fixedContext(nowMs = 0, seed = 1): EvalContext {
  let state = seed >>> 0;
  return {
    now: () => nowMs,
    random: () => {
      state = (state + 0x6d2b79f5) >>> 0;
      let t = state;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    },
  };
}
