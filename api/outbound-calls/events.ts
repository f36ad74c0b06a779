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
import { SseWriter } from '../http/sse';

/** How long one long-poll of the workflow waits for a transition before it is made again. */
export const CALL_EVENTS_WAIT_MS = 20_000;
/** How long a stream waits before reading the projection again when the workflow cannot be asked. */
export const CALL_EVENTS_POLL_MS = 500;

export async function streamCallEvents(ctx: AppContext, scope: OutboundScope, id: string, lastEventId: number | null, req: Request, res: Response): Promise<void> {
  // 404 before the stream opens, as a JSON envelope.
  let doc: OutboundCallDoc = await streamableCall(ctx, scope, id);
  const sse = new SseWriter(res, ctx.config.SSE_HEARTBEAT_MS);
  let gone = false;
  const stop = () => {
    gone = true;
  };
  req.once('close', stop);
  res.once('close', stop);
  sse.open();
  // A resumed stream may have nothing to send until the next transition: the client hears it is open.
  res.flushHeaders();

  let sent: number;
  if (lastEventId === null) {
    const call = presentCall(doc);
    void sse.send('snapshot', { type: 'snapshot', outboundCallId: doc._id, phase: doc.phase, outcome: doc.outcome, version: doc.version, statusHistory: call.statusHistory }, doc.version);
    sent = doc.version;
  } else {
    sent = lastEventId;
  }
  const emitAfter = (d: OutboundCallDoc) => {
    for (const entry of d.statusHistory) {
      if (entry.version <= sent) continue;
      void sse.send('phase', { type: 'phase', outboundCallId: d._id, phase: entry.phase, outcome: entry.outcome ?? null, version: entry.version }, entry.version);
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
    sse.end();
  }
}
