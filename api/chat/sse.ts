// A Server-Sent Events writer for one response: proxy-safe headers, one write per event (no
// buffering, no compression), `: heartbeat` comments on a timer, and backpressure that never
// waits on a client that is gone.
import { type Response } from 'express';

export class SseWriter {
  private heartbeat: NodeJS.Timeout | null = null;

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
    res.flushHeaders();
    this.heartbeat = setInterval(() => {
      void this.write(': heartbeat\n\n');
    }, this.heartbeatMs);
    res.once('close', () => this.stopHeartbeat());
  }

  send(event: string, data: unknown): Promise<void> {
    return this.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  end(): void {
    this.stopHeartbeat();
    if (!this.closed) this.res.end();
  }

  private stopHeartbeat(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }

  private write(chunk: string): Promise<void> {
    const { res } = this;
    if (this.closed) return Promise.resolve();
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
