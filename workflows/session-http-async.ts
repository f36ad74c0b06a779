// The HTTP-async side of a session that runs its conversation's delivery lane (docs/http-async.md
// "Order and delivery"): follow-up messages come straight to the session (the
// `httpAsyncSessionMessage` update, accepted once queued, which is the caller's 202), each is
// answered as a turn in arrival order, and every event for the caller's server (statuses, the
// reply, media, replies after a callback or a human task) goes through the lane the session runs.
// It carries the lane across continue-as-new and hands it back to the conversation at its end.
import * as wf from '@temporalio/workflow';
import type { Activities } from '../activities';
import {
  httpAsyncMessageSignal,
  httpAsyncSessionMessageSignal,
  httpAsyncSessionMessageUpdate,
  httpAsyncStateQuery,
  type HttpAsyncInboundMessage,
  type HttpAsyncLaneState,
  type HttpAsyncSessionEndedInput,
  type HttpAsyncSessionLane,
  type HttpAsyncSessionReplyInput,
  type TurnResult,
  type TurnUpdateInput,
} from './definitions';
import { turnOutcome } from './http-async-bodies';
import { applicationFailureOf, DeliveryLane, jsonBytes, queueFull, SeenMessages } from './http-async-lane';

const { recordHttpAsyncAnswers } = wf.proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 5 },
});

export interface SessionLaneHost {
  tenantId: string;
  projectId: string;
  sessionId: string;
  /** The session has ended (or is ending): messages are no longer taken, and queued ones go back. */
  ended: () => boolean;
  conversationWorkflowId: string;
  /** Queues work behind the session's turns (one at a time, in arrival order). */
  enqueue: <T>(work: () => Promise<T>) => Promise<T>;
  runTurn: (turn: TurnUpdateInput) => Promise<TurnResult>;
}

export class SessionLane {
  private readonly lane: DeliveryLane;
  private readonly seen: SeenMessages;
  /** Messages taken and not yet answered (their turn not begun), and their bytes. */
  private queued = 0;
  private queuedBytes = 0;
  /** Messages taken whose turn the session did not run because it had ended: handed back at the end. */
  private readonly unanswered: HttpAsyncInboundMessage[] = [];
  private stopping = false;
  /** The lane has been handed back: a message recorded after that goes to the conversation. */
  private handedBack = false;
  private running: Promise<void> | null = null;

  constructor(
    private readonly host: SessionLaneHost,
    private readonly config: HttpAsyncSessionLane,
    /** The lane as the previous run carried it (absent on the first run, which starts from `config`). */
    carried: HttpAsyncLaneState | undefined,
  ) {
    const state = carried ?? config;
    this.lane = new DeliveryLane(
      { tenantId: host.tenantId, projectId: host.projectId, subscriptionId: config.subscriptionId, sessionKey: config.sessionKey, schedule: config.schedule },
      state,
      true,
    );
    this.seen = new SeenMessages(state.seen);
  }

  /** Registers the message update, queues the messages the conversation handed over (first run only) and starts the lane. */
  start(firstRun: boolean): void {
    // The conversation's state as its lane's owner sees it (the conversation answers the same query while it holds the lane).
    wf.setHandler(httpAsyncStateQuery, () => ({ sessionKey: this.config.sessionKey, sessionId: this.host.sessionId, queued: this.queued, pendingDeliveries: this.lane.outbox.length }));
    wf.setHandler(
      httpAsyncSessionMessageUpdate,
      (message) => {
        if (!this.seen.has(message.messageId)) this.take(message);
        return { accepted: true as const };
      },
      {
        validator: (message, limits) => {
          if (this.host.ended()) throw wf.ApplicationFailure.nonRetryable('Session has ended; the message goes to its conversation', 'CONFLICT');
          if (typeof message?.messageId !== 'string' || typeof message.text !== 'string') throw wf.ApplicationFailure.nonRetryable('A message needs an id and a text', 'VALIDATION_ERROR');
          if (this.seen.has(message.messageId) || !limits) return;
          const full = this.lane.fullBecause({ count: this.queued, bytes: this.queuedBytes }, message, limits);
          if (full) throw queueFull(full);
        },
      },
    );
    // Recorded while no worker answered the update: taken in the order recorded, checked against
    // its limits here; one that comes once the session has ended goes back to the conversation.
    wf.setHandler(httpAsyncSessionMessageSignal, async (message) => {
      if (this.seen.has(message.messageId)) return;
      // Before the hand-back, queued like any message: after a turn it finds the session ended and waits with the unanswered ones.
      if (!this.handedBack) return this.take(message);
      this.seen.add(message.messageId);
      try {
        await wf.getExternalWorkflowHandle(this.host.conversationWorkflowId).signal(httpAsyncMessageSignal, message);
      } catch {
        // The conversation has closed: nothing answers the key any more.
      }
    });
    if (firstRun) this.config.pending.forEach((message, i) => this.take(message, i === 0));
    this.resume();
  }

  /** A reply outside a turn (a callback, a human task or an expiry resumed the session). */
  reply(reply: Omit<HttpAsyncSessionReplyInput, 'replyId'>, replyId: string): void {
    this.lane.deliverReply(reply, replyId);
  }

  /** Stops the lane between attempts (before continue-as-new or the end) and waits for it. */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.running;
    this.running = null;
  }

  /** Runs the lane (again, after a stop that did not lead to continue-as-new). */
  resume(): void {
    this.stopping = false;
    this.running = this.lane.run(() => this.stopping);
  }

  /** What the next run carries. */
  carried(): HttpAsyncLaneState {
    return this.lane.state(this.seen.list());
  }

  /** What the conversation takes back at the end: the lane, and the messages not answered. */
  handBack(): NonNullable<HttpAsyncSessionEndedInput['lane']> {
    this.handedBack = true;
    return { ...this.lane.state(this.seen.list()), unanswered: this.unanswered };
  }

  /** Takes one message: queued behind the session's turns, or answered at once when past the limits it came with. */
  private take(message: HttpAsyncInboundMessage, opensSession = false): void {
    this.seen.add(message.messageId);
    const { limits, ...accepted } = message;
    // Sent while no worker answered: the conversation took it unchecked, and it is checked here.
    const full = limits ? this.lane.fullBecause({ count: this.queued, bytes: this.queuedBytes }, accepted, limits) : null;
    if (full) {
      this.lane.error(this.host.sessionId, accepted, { code: 'QUEUE_FULL', message: queueFull(full).message });
      return;
    }
    this.queued++;
    const bytes = jsonBytes(accepted);
    this.queuedBytes += bytes;
    void this.host.enqueue(() => {
      this.queued--;
      this.queuedBytes -= bytes;
      return this.answer(accepted, opensSession);
    });
  }

  /** One message's turn, and what it leads to in the lane. */
  private async answer(message: HttpAsyncInboundMessage, isNewSession: boolean): Promise<void> {
    const { sessionId } = this.host;
    if (this.host.ended()) {
      this.unanswered.push(message);
      return;
    }
    const metadata = message.metadata ?? {};
    this.lane.status(sessionId, 'processing', message.messageId);
    const startedAt = Date.now();
    let result: TurnResult;
    try {
      result = await this.host.runTurn({ clientMessageId: message.messageId, retryable: true, message: message.text, ...(message.metadata ? { metadata: message.metadata } : {}) });
    } catch (err) {
      if (!(err instanceof wf.TemporalFailure)) throw err;
      const error = applicationFailureOf(err, 'The turn failed');
      this.lane.noteAnswered({ sessionId, messageId: message.messageId, chars: message.text.length, durationMs: Date.now() - startedAt, acceptedAtMs: message.acceptedAtMs, error });
      this.lane.error(sessionId, message, error, isNewSession);
      this.recordLeftAnswers();
      return;
    }
    const outcome = turnOutcome(result);
    if (!outcome.ok) return;
    this.lane.noteAnswered({ sessionId, messageId: message.messageId, chars: message.text.length, durationMs: Date.now() - startedAt, acceptedAtMs: message.acceptedAtMs, action: outcome.action });
    const details = outcome.suspension ? { tool: outcome.suspension.tool, expires_at: outcome.suspension.expiresAt } : outcome.humanTask ? { human_task_id: outcome.humanTask.id, due_at: outcome.humanTask.dueAt } : undefined;
    const revision = message.subscriptionRevision !== undefined ? { subscriptionRevision: message.subscriptionRevision } : {};
    this.lane.deliverOutcome(sessionId, message.messageId, message.messageId, outcome, { isNewSession, metadata, ...(details ? { details } : {}), ...revision });
    this.recordLeftAnswers();
  }

  /** Analytics of answered messages no event took (nothing was queued for the caller after them). */
  private recordLeftAnswers(): void {
    const answered = this.lane.takeAnswered();
    if (answered.length === 0) return;
    void recordHttpAsyncAnswers({ tenantId: this.host.tenantId, projectId: this.host.projectId, answered }).catch((err: unknown) => {
      if (!(err instanceof wf.ActivityFailure) || wf.isCancellation(err)) throw err;
    });
  }
}
