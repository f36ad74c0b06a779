// POST …/runs/execute and the run status, as HTTP: a run in the request is answered with 200 or
// as Server-Sent Events, an async one with 202 (core/agentic-apps/runs.ts runs them).
import { type Response } from 'express';
import { type Principal } from '../../lib/permissions';
import { type AppContext } from '../context';
import { SseWriter } from '../http/sse';
import { sessionMessageBudget } from '../sessions/message-budget';
import { findRun, prepareRun, runError, runTurnNow, startAsyncRun, startRunTurn } from '../../core/agentic-apps/runs';
import { readAppSession, type AppScope } from '../../core/agentic-apps/sessions';
import { type TExecuteRunBody } from './schemas';
import { sessionInfo } from './present';

export interface ExecuteRunOptions {
  principal: Principal;
  scope: AppScope;
  body: TExecuteRunBody;
  res: Response;
}

export type ExecuteOutcome = { status: 200 | 202; body: Record<string, unknown> } | { streamed: true };

export async function executeRun(ctx: AppContext, options: ExecuteRunOptions): Promise<ExecuteOutcome> {
  const { body, scope } = options;
  const budget = sessionMessageBudget(ctx, options.res);
  const prepared = await prepareRun(ctx, scope, body);

  if (prepared.async) {
    const { run, session: current } = await startAsyncRun(ctx, prepared, body, budget);
    return {
      status: 202,
      body: {
        messageId: run.messageId,
        output: [],
        status: 'processing',
        runId: run._id,
        message: body.callbackUrl ? 'The run is processing; its result will be POSTed to callbackUrl' : 'The run is processing; poll runs/{runId}/status',
        sessionInfo: sessionInfo(current, run._id, prepared.attachments),
      },
    };
  }

  // The message charge and the session read happen before any byte of a stream is written.
  const { session } = prepared;
  const { run, existing } = await startRunTurn(ctx, options.principal, prepared, budget);
  if (!prepared.streaming) {
    const { output } = await runTurnNow(ctx, options.principal, session, run, existing, budget);
    return { status: 200, body: { messageId: run.messageId, output, sessionInfo: sessionInfo(await readAppSession(ctx, scope, session._id), run._id, prepared.attachments) } };
  }

  const sse = new SseWriter(options.res, ctx.config.SSE_HEARTBEAT_MS);
  sse.open();
  let index = 0;
  const send = (type: string, data: Record<string, unknown>, last = false) => sse.send(type, { eventIndex: index++, type, ...data, isLastEvent: last });
  await send('run.started', { runId: run._id, messageId: run.messageId });
  try {
    const { result, output } = await runTurnNow(ctx, options.principal, session, run, existing, budget);
    for (const event of result.traceEvents) await send('trace', { event });
    await send('run.completed', { messageId: run.messageId, output, sessionInfo: sessionInfo(await readAppSession(ctx, scope, session._id), run._id, prepared.attachments) }, true);
  } catch (err) {
    const info = sessionInfo(await readAppSession(ctx, scope, session._id).catch(() => session), run._id, prepared.attachments);
    await send('run.failed', { messageId: run.messageId, error: runError(err), sessionInfo: info }, true);
  } finally {
    sse.end();
  }
  return { streamed: true };
}

/** A run of this app and environment, or 404. */
export async function runStatus(ctx: AppContext, scope: AppScope, runId: string) {
  const { run, session } = await findRun(ctx, scope, runId);
  return {
    run: {
      runId: run._id,
      messageId: run.messageId,
      status: run.status,
      output: run.output,
      error: run.error,
      createdAt: new Date(run.createdAt).toISOString(),
      finishedAt: run.finishedAt ? new Date(run.finishedAt).toISOString() : null,
      callback: run.callbackUrl ? { attempts: run.deliveryAttempts, deliveredAt: run.deliveredAt ? new Date(run.deliveredAt).toISOString() : null } : null,
    },
    sessionInfo: sessionInfo(session, run._id),
  };
}
