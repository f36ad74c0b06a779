// A completion's tie to its client's connection: the complete and stream endpoints abort the
// upstream call when the client goes away.
import { type Response } from 'express';

/** Aborts the upstream call when the client closes the connection before the response ends. */
export function abortOnDisconnect(res: Response, controller = new AbortController()): { signal: AbortSignal; clientGone: () => boolean } {
  let gone = false;
  res.on('close', () => {
    if (res.writableFinished) return;
    gone = true;
    controller.abort(new Error('client disconnected'));
  });
  return { signal: controller.signal, clientGone: () => gone };
}
