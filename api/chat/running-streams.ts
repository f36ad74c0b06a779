// The chat streams an API process is serving, so that a graceful stop lets them finish and ends
// the ones still running at the end of its grace period cleanly: with an `error` event the client
// can retry on, and the call on record in the usage ledger, instead of a cut connection.
import { type AppContext } from '../context';

interface Tracked {
  stop: () => void;
  ended: Promise<void>;
}

export class RunningStreams {
  private readonly streams = new Set<Tracked>();
  private stopping = false;

  /**
   * Registers a stream; `stop` asks it to end early. Returns what the stream calls once it has
   * ended and its call is on record. A stream that starts while a stop is under way is stopped at once.
   */
  add(stop: () => void): () => void {
    let markEnded!: () => void;
    const tracked: Tracked = { stop, ended: new Promise<void>((resolve) => (markEnded = resolve)) };
    this.streams.add(tracked);
    if (this.stopping) stop();
    return () => {
      this.streams.delete(tracked);
      markEnded();
    };
  }

  get size(): number {
    return this.streams.size;
  }

  /** Lets the running streams finish for up to `graceMs`, then stops the rest and waits until they have ended. */
  async drain(graceMs: number): Promise<void> {
    const allEnded = () => Promise.all([...this.streams].map((s) => s.ended));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([allEnded(), new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
    clearTimeout(timer);
    this.stopping = true;
    for (const stream of this.streams) stream.stop();
    await allEnded();
  }
}

const registries = new WeakMap<AppContext, RunningStreams>();

export function runningStreams(ctx: AppContext): RunningStreams {
  let registry = registries.get(ctx);
  if (!registry) registries.set(ctx, (registry = new RunningStreams()));
  return registry;
}
