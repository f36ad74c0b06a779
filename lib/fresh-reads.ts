// Shares reads of one key among callers without ever answering a caller from a read that started
// before it asked. A caller that finds no read of its key running starts one; callers that find
// one running all join the single read that starts when it ends. Everyone still sees the state
// as of some moment after they asked (so a revocation written before a request is always seen),
// but a burst of N requests for one key costs two reads instead of N.
export class FreshReads<T> {
  private readonly slots = new Map<string, { running: Promise<T>; next: Promise<T> | null }>();

  read(key: string, load: () => Promise<T>): Promise<T> {
    const slot = this.slots.get(key);
    if (!slot) return this.start(key, load);
    // The running read may have started before this caller arrived: join the one after it.
    slot.next ??= slot.running.then(settled, settled).then(() => this.start(key, load));
    return slot.next;
  }

  /** Keys with a read running or queued (for tests). */
  get size(): number {
    return this.slots.size;
  }

  private start(key: string, load: () => Promise<T>): Promise<T> {
    const running = load();
    const slot = { running, next: null as Promise<T> | null };
    this.slots.set(key, slot);
    void running.then(settled, settled).then(() => {
      if (this.slots.get(key) === slot && slot.next === null) this.slots.delete(key);
    });
    return running;
  }
}

function settled(): void {}

/**
 * One FreshReads per owner (an app or worker context), made on first use: module-level sharing
 * without holding on to a context that is gone.
 */
export function freshReadsPerOwner<T>(): (owner: object) => FreshReads<T> {
  const byOwner = new WeakMap<object, FreshReads<T>>();
  return (owner) => {
    let reads = byOwner.get(owner);
    if (!reads) byOwner.set(owner, (reads = new FreshReads<T>()));
    return reads;
  };
}
