// The HttpAsyncConversation workflow's messages and shapes, and those its sessions take when they
// run its lane, kept beside the other workflows' contracts and re-exported from ./definitions,
// which the API and the workflows import.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';

// HttpAsyncConversation (`http-async/<hash of the session key>`): one per session key of the
// HTTP-async channel (docs/http-async.md). Accepted messages arrive as signals (signal-with-start),
// are answered one turn at a time in the order accepted, and every event for the caller's server
// goes through one ordered delivery lane with retries.

/** When and how often a failed delivery is tried again (docs/http-async.md "Retries"). */
export interface HttpAsyncRetrySchedule {
  /** The wait before the second attempt; each later wait doubles, capped at `maxIntervalMs`. */
  initialIntervalMs: number;
  maxIntervalMs: number;
  /** No attempt starts later than this after the first one; the delivery is then failed. */
  windowMs: number;
  /** How often a delivery held by a paused subscription looks again. */
  pausedCheckMs: number;
}

export interface HttpAsyncConversationInput {
  tenantId: string;
  projectId: string;
  /** The subscription's Source ID (`whs-…`). */
  subscriptionId: string;
  /** The canonical key, `http_async:<project>:<subscription>:<caller key>`. */
  sessionKey: string;
  environment: string;
  /**
   * The events the subscription took when the conversation started; kept current from each
   * delivery's answer. Absent in runs started before it: every event is queued.
   */
  events?: string[];
  schedule: HttpAsyncRetrySchedule;
  /** A session idle this long ends; the conversation checks on its session after twice that. */
  sessionIdleTimeoutMs: number;
  /** Continue-as-new past this many history events (the server also suggests it). */
  maxHistoryEvents?: number;
  /**
   * Its sessions run its delivery lane and take follow-up messages straight from the API
   * (docs/http-async.md "Order and delivery"). Absent on conversations started before that, which
   * answer every message through their own turn activity until they end.
   */
  sessionsRunLane?: boolean;
  carried?: HttpAsyncCarriedState;
}

/** One accepted message; its text and metadata are in history only through the payload codec. */
export interface HttpAsyncInboundMessage {
  messageId: string;
  text: string;
  metadata?: Record<string, unknown>;
  acceptedAtMs: number;
  /** With a message sent as a signal (no worker answered the update): the limits it is held to. */
  limits?: HttpAsyncQueueLimits;
  /** The subscription's revision when the API accepted it (its reply's first attempt may use a worker's copy of that revision). */
  subscriptionRevision?: number;
}

export const HTTP_ASYNC_STATUSES = ['processing', 'suspended', 'waiting_for_human', 'resumed', 'ended', 'delivery_failed'] as const;
export type HttpAsyncStatus = (typeof HTTP_ASYNC_STATUSES)[number];

/** One event waiting in (or being tried by) the delivery lane. `body` is the exact JSON posted. */
export interface HttpAsyncOutbound {
  /** The delivery's `message_id`: the accepted message's for its reply, a new one otherwise. */
  messageId: string;
  event: 'agent.response' | 'agent.status' | 'agent.media';
  body: Record<string, unknown>;
  /** POSTs made so far (held checks of a paused subscription are not attempts), and when the first started. */
  attempts: number;
  firstAttemptAtMs: number | null;
  /**
   * When it was queued: its delivery window runs from here, so time spent behind other events of
   * the lane counts. Absent on events carried from a run before it (their window runs from the
   * first attempt).
   */
  queuedAtMs?: number;
  /**
   * Not tried before this time: set on a reply whose first attempt its turn's activity made (the
   * schedule's first wait runs from it). Cleared once the lane has waited it out.
   */
  retryAtMs?: number;
  /** Messages a session answered just before queueing this event, for their `channel.message_accepted` analytics, written with its first attempt. */
  answered?: HttpAsyncAnsweredMessage[];
  /** A reply's: its message's `subscriptionRevision`, for its first attempt. */
  subscriptionRevision?: number;
}

/** An accepted message its session answered, as its `channel.message_accepted` analytics event records it. */
export interface HttpAsyncAnsweredMessage {
  sessionId: string;
  messageId: string;
  chars: number;
  /** The turn's duration, by the workflow's clock (the time of the workflow tasks it spans). */
  durationMs: number;
  /** When the API accepted the message (its clock): the turn-duration metric counts from here. */
  acceptedAtMs?: number;
  action?: string;
  /** The error the turn ended with, and its code. */
  error?: { code: string; message: string };
}

export interface HttpAsyncCarriedState {
  inbox: HttpAsyncInboundMessage[];
  outbox: HttpAsyncOutbound[];
  /** Message ids already taken, newest last (a bounded window), so a repeated signal is dropped. */
  seen: string[];
  session: { sessionId: string } | null;
  /** The accepted message whose turn the session waits in (a callback or a human task). */
  waitingFor?: string | null;
  /** The subscription's events as the last delivery found them (null: gone). */
  subscribed?: string[] | null;
}

/** What a session of the channel signals to its conversation: a reply outside a turn, or its end. */
export interface HttpAsyncSessionReplyInput {
  sessionId: string;
  /** Unique per reply (`<sessionId>:<turn>`): a repeated signal delivers once. */
  replyId: string;
  response: string;
  cause: 'callback' | 'expired' | 'human_task';
  /** The session's state after the reply: waiting again, or ended. */
  action: 'continue' | 'suspend' | 'escalate' | 'complete';
  richContent?: Record<string, unknown>;
  actions?: Record<string, unknown>;
  llm: { generated: boolean; usedInternally: boolean; usedFallback: boolean };
}
export interface HttpAsyncSessionEndedInput {
  sessionId: string;
  reason: string;
  /** From a session that ran the conversation's lane: what it hands back (its lane and the messages it did not answer). */
  lane?: HttpAsyncLaneState & { unanswered: HttpAsyncInboundMessage[] };
}

/**
 * The delivery lane of a conversation and what goes with it, as a session that runs it carries it
 * across continue-as-new and hands it back at its end (docs/http-async.md "Order and delivery").
 */
export interface HttpAsyncLaneState {
  outbox: HttpAsyncOutbound[];
  /** The subscription's events as the last delivery found them (null: gone). */
  subscribed: string[] | null;
  /** Message ids already taken, newest last (a bounded window): a repeated message is answered once. */
  seen: string[];
  /** The accepted message whose turn the session waits in (a callback or a human task). */
  waitingFor: string | null;
}

/**
 * Set on a session started by a conversation that lets it run the conversation's lane: follow-up
 * messages go straight to the session (the `httpAsyncSessionMessage` update) and the session
 * delivers its replies. Absent on sessions of conversations started before it.
 */
export interface HttpAsyncSessionLane extends HttpAsyncLaneState {
  subscriptionId: string;
  sessionKey: string;
  schedule: HttpAsyncRetrySchedule;
  /** Messages the conversation held for the session, answered first and in this order (the first opens the session). */
  pending: HttpAsyncInboundMessage[];
}
export const httpAsyncMessageSignal = defineSignal<[HttpAsyncInboundMessage]>('httpAsyncMessage');
/** The bounds a conversation holds a new message to (docs/http-async.md "Limits"), sent with each message. */
export interface HttpAsyncQueueLimits {
  /** Messages accepted and not yet taken by a turn. */
  maxQueuedMessages: number;
  /** Events waiting in (or being tried by) the delivery lane. */
  maxPendingDeliveries: number;
  /** Bytes of JSON of the queued messages and pending events together (what continue-as-new carries). */
  maxQueuedBytes: number;
}
/**
 * Accepts a message (update-with-start): refused with an ApplicationFailure of type `QUEUE_FULL`
 * when the conversation is at one of its limits, so the API answers 429 and nothing is queued.
 */
export const httpAsyncAcceptUpdate = defineUpdate<{ accepted: true }, [HttpAsyncInboundMessage, HttpAsyncQueueLimits, HttpAsyncAcceptRoute?]>('httpAsyncAccept');
/**
 * How a message reached a conversation whose sessions run its lane. While such a session runs, the
 * conversation refuses a message with `SESSION_RUNS_LANE` (its details name the session), so the
 * API sends it there, unless that session has refused it as ended (`refusedBy`); while one is
 * starting, with `SESSION_STARTING` (sent again shortly). One order of messages holds either way.
 */
export interface HttpAsyncAcceptRoute {
  refusedBy?: string;
}
/** A message recorded on the session that runs the lane while no worker answered its update (durable without one). */
export const httpAsyncSessionMessageSignal = defineSignal<[HttpAsyncInboundMessage]>('httpAsyncSessionMessage');
/**
 * A message sent straight to the session that runs its conversation's lane: accepted (the 202)
 * once the session has queued it; refused with `QUEUE_FULL` past the limits (given when the API
 * sends it; the conversation forwards messages it has accepted already without them), or with
 * `CONFLICT` once the session has ended or does not run the lane (the message then goes to the conversation).
 */
export const httpAsyncSessionMessageUpdate = defineUpdate<{ accepted: true }, [HttpAsyncInboundMessage, HttpAsyncQueueLimits | null]>('httpAsyncSessionMessage');
export const httpAsyncReplySignal = defineSignal<[HttpAsyncSessionReplyInput]>('httpAsyncReply');
export const httpAsyncSessionEndedSignal = defineSignal<[HttpAsyncSessionEndedInput]>('httpAsyncSessionEnded');
export interface HttpAsyncConversationView {
  sessionKey: string;
  sessionId: string | null;
  queued: number;
  pendingDeliveries: number;
}
export const httpAsyncStateQuery = defineQuery<HttpAsyncConversationView>('httpAsyncState');
