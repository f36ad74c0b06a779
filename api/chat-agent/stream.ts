// POST /api/v1/chat/agent/stream: an agent chat turn as Server-Sent Events (`turn`, the reply's
// text as `delta`s while the model generates it, then `response` or `error`), and
// GET /api/v1/chat/agent/stream/:turnId: the same events again from any API process, then live
// until the end. The turn is the same durable workflow update as POST /api/v1/chat/agent; its
// events live in the store (core/chat/turn-stream.ts), so a dropped connection loses nothing, and
// a reader whose turn has no final event yet re-attaches to the workflow update for its answer.
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { type Response } from 'express';
import { defineRoute, RESPONSE_SENT, type AnyRoute } from '../http/route';
import { SseWriter } from '../http/sse';
import { type AppContext } from '../context';
import { ApiError, isApiError } from '../../lib/errors';
import { statusForCode } from '../../lib/error-codes';
import { canActInEnvironment, canSeeProject, sdkChannelUId, type Principal } from '../../lib/permissions';
import { findOwned } from '../../db/owned';
import { type TurnStreamDoc } from '../../db/turn-stream';
import { refundSessionCharge, runChatTurn, toApiError, type SendingTurn } from '../../core/chat/turns';
import { isWorkflowNotFound } from '../../core/sessions/workflow-client';
import { runningCalls } from '../../core/running-calls';
import {
  finishTurnStream,
  isFinalEvent,
  newTurnId,
  nextTurnWrite,
  openTurnStream,
  readTurnEvents,
  wakeTurnReaders,
  type TurnEvent,
  type TurnStreamOwner,
} from '../../core/chat/turn-stream';
import { type TurnResult } from '../../workflows/definitions';
import { ZChatAgentRequestSchema, ZChatAgentStreamEventSchema, ZTurnStreamParams, ZTurnStreamQuery } from './schemas';
import { chatTurnAnswer, chatTurnOptions, chatTurnPreload } from './turn';

/** How often a reader looks for events written by another process (the worker's deltas). */
export const TURN_STREAM_POLL_MS = 25;
/** How long a reader waits between attempts to re-attach to the turn's workflow update. */
const REATTACH_RETRY_MS = 1_000;

const EVENTS_DOC =
  'Events: `turn` ({turnId, sessionId, isNewSession}) at once; zero or more `delta` ({text}: append; with `reset: true` the text replaces what was shown, after a model call was retried); ' +
  'then exactly one of `response` (the body `POST /api/v1/chat/agent` answers, plus `status` 200 or 202; its `response` text is authoritative) or `error` ({error, code, retryable, status}). ' +
  'Each event has an `id:` (its number from 0); `: heartbeat` comments keep the connection open. Deltas are written only for replies of agents without output guardrails.';

export const streamChatAgentRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/api/v1/chat/agent/stream',
    operationId: 'streamChatWithAgent',
    summary: "Send a message to a project's agents and stream the turn (Server-Sent Events)",
    description:
      'Same credentials, body and `Idempotency-Key` as `POST /api/v1/chat/agent`. A request refused before the turn is sent (400, 401, 403, 404, 409, 410, 429, 503) is the same JSON error envelope; ' +
      'otherwise the answer is `200 text/event-stream`. ' +
      EVENTS_DOC +
      ' Closing the connection does not cancel the turn: reconnect with `GET /api/v1/chat/agent/stream/{turnId}` and `Last-Event-ID`. A message retried with the same Idempotency-Key gets a new turnId; its stream may carry no deltas.',
    tags: ['Chat'],
    auth: 'session:execute',
    sdkToken: true,
    body: ZChatAgentRequestSchema,
    bodyExample: { projectId: 'jqmvff06cp7cvm69y75r2r1x', message: 'I have a question about my invoice' },
    errorStatuses: [404, 409, 410, 429, 503],
    response: ZChatAgentStreamEventSchema,
    responseContentType: 'text/event-stream',
    preload: chatTurnPreload,
    onRefused: ({ existing }) => refundSessionCharge(existing),
    async handler(input) {
      await streamChatTurn(input.ctx, input.principal, chatTurnOptions(input), input.res);
      return RESPONSE_SENT;
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/v1/chat/agent/stream/:turnId',
    operationId: 'resumeChatAgentStream',
    summary: "Replay a streamed turn's events and follow it to its end",
    description:
      'Replays the events numbered above `Last-Event-ID` (header) or `after` (query), all of them when neither is sent, then follows the turn live until its `response` or `error`, and ends. ' +
      'Works from any API process, also after a restart in the middle of the turn, and for at least 15 minutes after the turn ended. Same credentials as the start: another tenant, project, environment or SDK end user gets 404, as does an unknown or expired turn. ' +
      'A `Last-Event-ID` that is not an event number is 400. ' +
      EVENTS_DOC,
    tags: ['Chat'],
    auth: 'session:execute',
    sdkToken: true,
    params: ZTurnStreamParams,
    query: ZTurnStreamQuery,
    response: ZChatAgentStreamEventSchema,
    responseContentType: 'text/event-stream',
    errorStatuses: [404],
    async handler({ ctx, principal, params, query, req, res }) {
      const after = resumePoint(req.headers['last-event-id'], query.after);
      const turn = await findTurnStream(ctx, principal, params.turnId);
      if (!turn) throw new ApiError('NOT_FOUND', 'Turn not found or expired');
      const owner: TurnStreamOwner = { tenantId: turn.tenantId, sessionId: turn.sessionId, turnId: turn._id };
      const sse = new SseWriter(res, ctx.config.SSE_HEARTBEAT_MS);
      sse.open();
      const tail = new TurnTail(ctx, owner, sse, after);
      const tailing = tail.run();
      // A turn whose API process died mid-way has no final event: its update has the answer.
      const gone = new AbortController();
      res.once('close', () => gone.abort());
      if (!turn.finishedAt) void settleFromWorkflow(ctx, turn, gone.signal);
      // A stopping process ends the stream; the client reconnects to another.
      let stopping = false;
      const untrack = runningCalls(ctx).add(() => {
        stopping = true;
        tail.stop();
      });
      try {
        await tailing;
        if (stopping && !tail.finished) await sse.send('error', errorData(new ApiError('SERVICE_UNAVAILABLE', 'The API is restarting; reconnect with Last-Event-ID')));
      } finally {
        untrack();
        gone.abort();
      }
      sse.end();
      return RESPONSE_SENT;
    },
  }),
];

/** Where a replay starts: after `Last-Event-ID` when sent (400 unless an event number), else `after`, else from the start. */
function resumePoint(header: string | string[] | undefined, after: number | undefined): number {
  if (header === undefined) return after ?? -1;
  const value = (Array.isArray(header) ? header[0]! : header).trim();
  if (!/^[0-9]{1,10}$/.test(value)) throw new ApiError('VALIDATION_ERROR', 'Last-Event-ID: must be an event number (the `id:` of an event of this turn)');
  return Number(value);
}

/**
 * The turn if the caller may read it: its tenant, a project it may see, an environment it may act
 * in, and for an SDK token the end user who started it. Anything else is missing (404).
 */
async function findTurnStream(ctx: AppContext, principal: Principal, turnId: string): Promise<TurnStreamDoc | null> {
  const turn = (await ctx.models.TurnStream.collection.findOne({ _id: turnId, tenantId: principal.tenantId, expiresAt: { $gt: new Date() } } as never)) as TurnStreamDoc | null;
  if (!turn || !canSeeProject(principal, { tenantId: turn.tenantId, _id: turn.projectId })) return null;
  if (principal.sdk && turn.channelUId !== sdkChannelUId(principal.sdk)) return null;
  if (principal.environments?.length) {
    const environment = turn.environment ?? (await findOwned(ctx.models.Session, turn.sessionId, { tenantId: principal.tenantId }))?.environment;
    if (!environment || !canActInEnvironment(principal, environment)) return null;
  }
  return turn;
}

/** Sends a turn's stored events after a number, in order, until its final event (or until stopped). */
class TurnTail {
  /** The number of the last event sent. */
  last: number;
  /** The final event was sent. */
  finished = false;
  /** Stopped after a read that saw every event written before `stop()`, all of them sent. */
  caughtUp = false;
  private stopping = false;

  constructor(
    private readonly ctx: AppContext,
    private readonly owner: TurnStreamOwner,
    private readonly sse: SseWriter,
    after: number,
  ) {
    this.last = after;
  }

  async run(): Promise<void> {
    for (;;) {
      // Stopped before this read started: it is the last one, and sees every event written before.
      const last = this.stopping;
      let events: TurnEvent[] = [];
      let read = false;
      try {
        events = await readTurnEvents(this.ctx.models, this.owner, this.last);
        read = true;
      } catch (err) {
        this.ctx.logger.warn({ err, turnId: this.owner.turnId }, 'could not read a streamed turn; retrying');
      }
      for (const event of events) {
        await this.sse.send(event.event, event.data, event.seq);
        this.last = event.seq;
        if (isFinalEvent(event.event)) {
          this.finished = true;
          return;
        }
      }
      if (last) this.caughtUp = read && !this.sse.closed;
      if (last || this.sse.closed) return;
      await nextTurnWrite(this.owner.turnId, TURN_STREAM_POLL_MS);
    }
  }

  /** Reads once more (everything written by now), then returns. */
  stop(): void {
    this.stopping = true;
    wakeTurnReaders(this.owner.turnId);
  }
}

/** The `response` event of a turn's answer: the plain route's body and status. */
function responseData(result: TurnResult): Record<string, unknown> {
  const { status, body } = chatTurnAnswer(result);
  return { ...body, status };
}

/** The `error` event of a refused or failed turn. */
function errorData(error: ApiError): Record<string, unknown> {
  const status = statusForCode(error.code);
  return { error: error.message, code: error.code, retryable: status === 503 || status === 429, status };
}

type Final = { event: 'response' | 'error'; data: Record<string, unknown> };

/**
 * Runs the turn with its stream: the stream opens (its `turn` event stored and sent) once every
 * check has passed, so a refusal before that is an error envelope. The turn's answer is sent, then
 * stored as its final event. A client that leaves does not stop the turn, and its answer is
 * still stored for a reconnect. When this process stops (a redeploy) before the answer, the client
 * gets a retryable `error` that is not stored: its reconnect, to another process, gets the answer.
 */
async function streamChatTurn(ctx: AppContext, principal: Principal, options: ReturnType<typeof chatTurnOptions>, res: Response): Promise<void> {
  const turnId = newTurnId();
  const stream: { owner?: TurnStreamOwner; sse?: SseWriter; tail?: TurnTail; tailing?: Promise<void>; turn?: TurnStreamDoc } = {};
  let stopping = false;
  const untrack = runningCalls(ctx).add(() => {
    stopping = true;
  });
  try {
    const open = async (sending: SendingTurn) => {
      const doc = {
        _id: turnId,
        tenantId: principal.tenantId,
        projectId: options.project._id,
        sessionId: sending.sessionId,
        environment: sending.environment,
        channelUId: principal.sdk ? sdkChannelUId(principal.sdk) : null,
        workflowId: sending.workflowId,
        updateId: sending.updateId,
        isNewSession: sending.isNewSession,
      };
      const first = await openTurnStream(ctx.models, doc, { turnId, sessionId: sending.sessionId, isNewSession: sending.isNewSession });
      stream.turn = { ...doc, finishedAt: null, expiresAt: new Date(), createdAt: new Date() };
      stream.owner = { tenantId: principal.tenantId, sessionId: sending.sessionId, turnId };
      stream.sse = new SseWriter(res, ctx.config.SSE_HEARTBEAT_MS);
      stream.sse.open();
      // `turn` goes out at once; the tail sends every event after it.
      void stream.sse.send(first.event, first.data, first.seq);
      stream.tail = new TurnTail(ctx, stream.owner, stream.sse, first.seq);
      stream.tailing = stream.tail.run();
    };

    let final: Final | null = null;
    let store = true;
    try {
      final = { event: 'response', data: responseData(await runChatTurn(ctx, { ...options, streamId: turnId, sending: open })) };
    } catch (err) {
      if (!stream.owner) throw err;
      const error = isApiError(err) ? err : toApiError(err);
      if (error.code !== 'SERVICE_UNAVAILABLE') {
        if (statusForCode(error.code) >= 500) ctx.logger.error({ err: error.cause ?? err, turnId }, 'streamed turn failed');
        final = { event: 'error', data: errorData(error) };
      } else if (stopping) {
        // The turn goes on in its workflow: this client reconnects to another process.
        final = { event: 'error', data: errorData(error) };
        store = false;
      } else {
        // Not answered in time, or Temporal did not answer: the update may still answer.
        const gone = new AbortController();
        res.once('close', () => gone.abort());
        await settleFromWorkflow(ctx, stream.turn!, gone.signal);
      }
    }
    const { owner, sse, tail, tailing } = stream as Required<typeof stream>;
    // Every delta was written before the turn answered: one more read sends them all, and the
    // answer goes out at once, numbered after them; the store gets it meanwhile, for replays.
    tail.stop();
    await tailing;
    // An answer that is not stored (this process is stopping) has no number: a reconnect with the
    // last number gets the turn's real answer, from the store or the workflow.
    if (final && !tail.finished) await sse.send(final.event, final.data, store ? tail.last + 1 : undefined);
    sse.end();
    if (final && store) {
      await finishTurnStream(ctx.models, owner, final.event, final.data, tail.caughtUp ? { afterSeq: tail.last } : {}).catch((err: unknown) =>
        ctx.logger.error({ err, turnId }, "could not store a streamed turn's answer; a reconnect gets it from the workflow"),
      );
    }
  } finally {
    untrack();
  }
}

/**
 * Waits for the turn's workflow update and stores its answer as the final event (a reader of the
 * store sends it). A failed turn stores its `error`. An update Temporal does not know, once the
 * turn is older than a request may wait, never reached its session: a retryable `error`. While
 * Temporal does not answer, it tries again, until `signal` (the reader left).
 */
async function settleFromWorkflow(ctx: AppContext, turn: TurnStreamDoc, signal: AbortSignal): Promise<void> {
  const owner: TurnStreamOwner = { tenantId: turn.tenantId, sessionId: turn.sessionId, turnId: turn._id };
  const lostAfter = turn.createdAt.getTime() + ctx.config.REQUEST_TIMEOUT_MS + 5_000;
  while (!signal.aborted) {
    let final: Final | null = null;
    try {
      const client = await ctx.temporal.client();
      const result = await client.withAbortSignal(signal, () => client.workflow.getHandle(turn.workflowId).getUpdateHandle<TurnResult>(turn.updateId).result());
      final = { event: 'response', data: responseData(result) };
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof WorkflowUpdateFailedError) final = { event: 'error', data: errorData(toApiError(err)) };
      else if (isWorkflowNotFound(err) && Date.now() > lostAfter) {
        final = {
          event: 'error',
          data: errorData(new ApiError('SERVICE_UNAVAILABLE', "The turn's answer could not be found; send the message again (with the same Idempotency-Key, if it had one)")),
        };
      } else ctx.logger.warn({ err, turnId: turn._id }, 'could not re-attach to a streamed turn; retrying');
    }
    if (final) {
      try {
        await finishTurnStream(ctx.models, owner, final.event, final.data);
        return;
      } catch (err) {
        ctx.logger.warn({ err, turnId: turn._id }, "could not store a streamed turn's answer; retrying");
      }
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, REATTACH_RETRY_MS);
      signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
    });
  }
}
