// The event stream of one outbound call (GET …/outbound-calls/{id}/events): a `snapshot`, then a
// `phase` event per transition, the SSE id being the call's version, until `terminal`. Correct
// across API replicas with no shared memory: each stream long-polls the call's workflow (an
// update answered the moment the version passes the last one sent), and reads the MongoDB
// projection when the workflow has closed or refuses the wait. Transitions are kept with their
// versions (statusHistory), so a stream resumed with Last-Event-ID replays what it missed.
import { type Request, type Response } from 'express';
import { type OutboundCallDoc } from '../../db/outbound-call';
import { presentCall, streamableCall, waitForCallChange, type OutboundScope } from '../../core/telephony/outbound-calls';
import { type AppContext } from '../context';

/** How long one long-poll of the workflow waits for a transition before it is made again. */
export const CALL_EVENTS_WAIT_MS = 20_000;
/** How long a stream waits before reading the projection again when the workflow cannot be asked. */
export const CALL_EVENTS_POLL_MS = 500;

export async function streamCallEvents(ctx: AppContext, scope: OutboundScope, id: string, lastEventId: number | null, req: Request, res: Response): Promise<void> {
  // 404 before the stream opens, as a JSON envelope.
  let doc: OutboundCallDoc = await streamableCall(ctx, scope, id);
  let gone = false;
  const write = (chunk: string) => {
    if (!gone && !res.writableEnded) res.write(chunk);
  };
  res.status(200);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache, no-transform');
  res.setHeader('Connection', 'keep-alive');
  res.setHeader('X-Accel-Buffering', 'no');
  res.socket?.setNoDelay(true);
  res.flushHeaders();
  const heartbeat = setInterval(() => write(': heartbeat\n\n'), ctx.config.SSE_HEARTBEAT_MS);
  const stop = () => {
    gone = true;
    clearInterval(heartbeat);
  };
  req.once('close', stop);
  res.once('close', stop);

  let sent: number;
  if (lastEventId === null) {
    const call = presentCall(doc);
    write(
      `id: ${doc.version}\nevent: snapshot\ndata: ${JSON.stringify({ type: 'snapshot', outboundCallId: doc._id, phase: doc.phase, outcome: doc.outcome, version: doc.version, statusHistory: call.statusHistory })}\n\n`,
    );
    sent = doc.version;
  } else {
    sent = lastEventId;
  }
  const emitAfter = (d: OutboundCallDoc) => {
    for (const entry of d.statusHistory) {
      if (entry.version <= sent) continue;
      write(`id: ${entry.version}\nevent: phase\ndata: ${JSON.stringify({ type: 'phase', outboundCallId: d._id, phase: entry.phase, outcome: entry.outcome ?? null, version: entry.version })}\n\n`);
      sent = entry.version;
    }
  };
  try {
    emitAfter(doc);
    while (!gone && !(doc.phase === 'terminal' && sent >= doc.version)) {
      doc = await waitForCallChange(ctx, scope, id, sent, CALL_EVENTS_WAIT_MS, CALL_EVENTS_POLL_MS);
      emitAfter(doc);
    }
  } catch (err) {
    ctx.logger.warn({ err, outboundCallId: id }, 'outbound call event stream stopped');
  } finally {
    stop();
    if (!res.writableEnded) res.end();
  }
}
