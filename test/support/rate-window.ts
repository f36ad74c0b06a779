// Rate-limit counters are clock-aligned windows, and a window that ends mid-test hands out a
// fresh budget (by design). Tests that count up to a limit start with enough of their window left.

/** Waits for the next window when less than `minLeftMs` of the current `windowMs` one is left. */
export async function inFreshWindow(windowMs = 60_000, minLeftMs = 5_000): Promise<void> {
  const left = windowMs - (Date.now() % windowMs);
  if (left < minLeftMs) await new Promise((resolve) => setTimeout(resolve, left + 50));
}
