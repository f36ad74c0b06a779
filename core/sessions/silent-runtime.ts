// Remembers, per API process, that session workflows recently went unanswered (no worker running,
// a crashed worker's sessions waiting out Temporal's sticky-queue timeout, Temporal down). Reads
// that ask a session first (the projection flush, the live-state query) then try briefly instead
// of waiting out their whole deadline on every request of an outage; the first answer in time
// ends the memory, so reads are current again as soon as a worker answers.
import { type CoreContext } from '../context';

/** How long one unanswered call keeps the short deadlines in force (each further one renews it). */
export const SILENT_MEMORY_MS = 30_000;
/** The deadline of a call made while the memory holds. */
export const SILENT_PROBE_MS = 500;

export class SilentRuntime {
  private silentAtMs: number | null = null;

  constructor(private readonly now: () => number = Date.now) {}

  /** True while a call went unanswered less than SILENT_MEMORY_MS ago, with no answer since. */
  isSilent(): boolean {
    return this.silentAtMs !== null && this.now() - this.silentAtMs < SILENT_MEMORY_MS;
  }

  /** The deadline for a call that normally gets `normalMs`. */
  deadline(normalMs: number): number {
    return this.isSilent() ? Math.min(normalMs, SILENT_PROBE_MS) : normalMs;
  }

  noteUnanswered(): void {
    this.silentAtMs = this.now();
  }

  noteAnswered(): void {
    this.silentAtMs = null;
  }
}

const byContext = new WeakMap<CoreContext, SilentRuntime>();

export function silentRuntime(ctx: CoreContext): SilentRuntime {
  let memory = byContext.get(ctx);
  if (!memory) byContext.set(ctx, (memory = new SilentRuntime()));
  return memory;
}
