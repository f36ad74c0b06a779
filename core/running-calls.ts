// The long calls an API process is serving (provider calls on /chat/stream and /chat/complete,
// agent turns on /chat/agent), so that a graceful stop lets them finish and ends the ones still
// running at the end of its grace period cleanly (an `error` event or a 503 the client can retry
// on; a provider call on record in the usage ledger) instead of a cut connection, and only then
// closes the database connection.
import { type CoreContext } from './context';

interface Tracked {
  stop: () => void;
  ended: Promise<void>;
}

export class RunningCalls {
  private readonly calls = new Set<Tracked>();
  private stopping = false;

  /**
   * Registers a call; `stop` asks it to end early. Returns what the call's handler calls once it
   * has ended and is on record. A call that starts while a stop is under way is stopped at once.
   */
  add(stop: () => void): () => void {
    let markEnded!: () => void;
    const tracked: Tracked = { stop, ended: new Promise<void>((resolve) => (markEnded = resolve)) };
    this.calls.add(tracked);
    if (this.stopping) stop();
    return () => {
      this.calls.delete(tracked);
      markEnded();
    };
  }

  get size(): number {
    return this.calls.size;
  }

  /** Lets the running calls finish for up to `graceMs`, then stops the rest and waits until they have ended. */
  async drain(graceMs: number): Promise<void> {
    const allEnded = () => Promise.all([...this.calls].map((s) => s.ended));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([allEnded(), new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
    clearTimeout(timer);
    this.stopping = true;
    for (const call of this.calls) call.stop();
    await allEnded();
  }
}

const registries = new WeakMap<CoreContext, RunningCalls>();

export function runningCalls(ctx: CoreContext): RunningCalls {
  let registry = registries.get(ctx);
  if (!registry) registries.set(ctx, (registry = new RunningCalls()));
  return registry;
}
