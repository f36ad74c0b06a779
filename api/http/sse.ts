// A Server-Sent Events writer for one response: proxy-safe headers, every event flushed as soon as
// it is sent (no buffering across time, no compression), `: heartbeat` comments on a timer, and
// backpressure that never waits on a client that is gone.
import { type Response } from 'express';

export class SseWriter {
  private heartbeat: NodeJS.Timeout | null = null;
  private flushScheduled = false;

  constructor(
    private readonly res: Response,
    private readonly heartbeatMs: number,
  ) {}

  /** The client went away (or the response ended). */
  get closed(): boolean {
    return this.res.destroyed || this.res.writableEnded;
  }

  open(): void {
    const { res } = this;
    res.status(200);
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache, no-transform');
    res.setHeader('Connection', 'keep-alive');
    // nginx and similar proxies buffer responses unless told not to.
    res.setHeader('X-Accel-Buffering', 'no');
    res.socket?.setNoDelay(true);
    // No flushHeaders(): the headers leave with the first event, in the same packet.
    this.heartbeat = setInterval(() => {
      void this.write(': heartbeat\n\n');
    }, this.heartbeatMs);
    res.once('close', () => this.stopHeartbeat());
  }

  /** One event; `id` (when given) is what a client resumes from with `Last-Event-ID`. */
  send(event: string, data: unknown, id?: number | string): Promise<void> {
    return this.write(`${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  end(): void {
    this.stopHeartbeat();
    if (!this.closed) this.res.end();
  }

  private stopHeartbeat(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }

  /**
   * Events sent by one run of promise continuations (the headers and `metadata` with a first
   * delta already waiting, or several deltas parsed from one upstream chunk) leave in one
   * socket write: the socket is corked on the first of them and uncorked by a tick, which Node
   * runs as soon as those continuations are done. Nothing waits for later data; a write
   * costs a system call and a wake-up of the reader, which is what this saves. (Uncorking on
   * setImmediate instead held a first delta until the rest of the event loop's I/O had been
   * handled: ~1.4 ms more to the first token with a thinking upstream, docs/performance.md.)
   */
  private flushSoon(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    this.res.cork();
    // A tick queued from a microtask runs once the whole microtask queue has drained, whether
    // the first event was sent from a continuation or straight from an I/O callback.
    queueMicrotask(() =>
      process.nextTick(() => {
        this.flushScheduled = false;
        // end() has already uncorked everything, and the socket may now serve another response.
        if (!this.res.writableEnded) this.res.uncork();
      }),
    );
  }

  private write(chunk: string): Promise<void> {
    const { res } = this;
    if (this.closed) return Promise.resolve();
    this.flushSoon();
    if (res.write(chunk)) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      res.once('drain', done);
      res.once('close', done);
    });
  }
}
