// Polls `probe` until `ok` accepts its value or the time is up, and returns the last value, so a
// test asserts on what it finally saw (and a failure shows it) instead of sleeping a fixed time.
export async function eventually<T>(probe: () => Promise<T>, ok: (value: T) => boolean, timeoutMs = 3000, everyMs = 25): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (ok(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
