// Every update, signal and query of every workflow: the contract the API and the workflows share.
// Named <verb><Kind>; one input type per message.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { SessionRuntimeState } from '../abl/runtime/contract';
import type { EscalationRoutingIR, HumanTaskFieldIR } from '../abl/ir';
import type { SessionInsight } from './session-insight';
import type { HttpAsyncLaneState, HttpAsyncSessionLane } from './http-async-definitions';

/** Probe: a workflow that only answers a no-op update; the bare-Temporal baseline of the benches. */
export interface PingUpdateInput {
  n: number;
}
export const pingUpdate = defineUpdate<{ n: number; count: number }, [PingUpdateInput]>('ping');
export const probeStateQuery = defineQuery<{ count: number }>('probeState');
export const stopProbeUpdate = defineUpdate<void>('stopProbe');
/** A signal the probe counts, and an update that waits for the count to pass a value: the bare
 * form of a stream long-polling a workflow that a webhook's signal moves. */
export const nudgeProbeSignal = defineSignal('nudgeProbe');
export const waitProbeUpdate = defineUpdate<{ nudges: number }, [{ after: number }]>('waitProbe');

// ---------------------------------------------------------------------------------------------
// AgentSession (`session/<sessionId>`): one workflow per conversation.

/** `voice`: a phone call; `voice_realtime`: a LiveKit voice room (docs/voice.md). */
export type SessionChannel = 'api' | 'web_debug' | 'voice' | 'voice_realtime' | 'http_async';

export interface SessionStartInput {
  sessionId: string;
  tenantId: string;
  projectId: string;
  /** Agent that handles the first turn (entry agent unless overridden). */
  agentName: string;
  agentId: string | null;
  channel: SessionChannel;
  environment: string;
  deploymentId: string | null;
  /**
   * How the compiled agents are found. A new session names its deployment or the latest versions;
   * once its first run has loaded them, continue-as-new and delegation children name the exact
   * bundle by its content hash, so every run of the session runs the same versions.
   */
  bundleRef: { kind: 'latest_versions' } | { kind: 'deployment'; deploymentId: string } | { kind: 'bundle'; bundleHash: string };
  /** Carried across continue-as-new; absent on the first run. */
  carried?: CarriedSessionState;
  /** Session ends after this much inactivity. */
  idleTimeoutMs: number;
  /** Continue-as-new once history passes this many events (the server also suggests it). */
  maxHistoryEvents?: number;
  /**
   * How long after a turn its projection (transcript, trace events, summary) is written to
   * MongoDB, together with any other turns finished by then. 0 writes it before the reply.
   * @default 250
   */
  projectionFlushMs?: number;
  /**
   * Set on a session of the HTTP-async channel: the conversation workflow its replies outside a
   * turn (after a callback or a human task) and its end are signalled to. Absent on every other
   * session, so the code that uses it never runs in their histories.
   */
  httpAsync?: { conversationWorkflowId: string; lane?: HttpAsyncSessionLane };
  /**
   * The contact the session's caller identity found or created (core/contacts/linking.ts): the
   * agent reads it as `user.*`, and user-scoped persistent memory is keyed by its id. Absent for an
   * anonymous session (no identity on its channel). Never carries the identity itself (an e-mail
   * address or phone number), which stays in MongoDB.
   */
  contact?: SessionContact;
}

/** The contact of a session as the workflow holds it (no identity value: see `SessionStartInput.contact`). */
export interface SessionContact {
  contactId: string;
  type: 'employee' | 'customer' | 'anonymous';
  identityType: 'email' | 'phone' | 'external';
  displayName: string | null;
  company: string | null;
  department: string | null;
  accountRef: string | null;
  tags: string[];
}

/** Projection rows a session holds until its next write (see `projectionFlushMs`). */
export interface PendingProjection {
  messages: { seq: number; turn: number; role: 'user' | 'assistant'; agent: string | null; content: string; timestamp: string }[];
  traceEvents: { seq: number; turn: number; type: string; spanId: string; parentSpanId: string | null; timestamp: string; data: Record<string, unknown> }[];
}

export interface CarriedSessionState {
  runtime: SessionRuntimeState | null;
  turnCount: number;
  /** Recent retryable turns (sent with an Idempotency-Key) with their results, for deduplication after continue-as-new. */
  recentTurns: { clientMessageId: string; result: TurnResult }[];
  traceSeq: number;
  messageSeq: number;
  stats: SessionStats;
  /** The summary's tallies (session-insight.ts); absent in runs carried over before they existed. */
  insight?: SessionInsight;
  createdAtMs: number;
  /** Rows not yet written when the run rolled over. */
  pending?: PendingProjection;
  /** The async tool call the session waits on, if any. */
  waiting?: WaitingCallback | null;
  lastActivityMs?: number;
  /** An HTTP-async session's delivery lane and seen messages (absent unless it runs its conversation's lane). */
  httpAsyncLane?: HttpAsyncLaneState;
}

/**
 * What a suspended session waits on: an async tool call (its suspension), until a callback or
 * `expiresAtMs`; or, with `kind: 'human_task'`, a human task (`callbackId` is the task id), until
 * the task's workflow reports its outcome (the task keeps its own deadline).
 */
export interface WaitingCallback {
  /** Absent for async tool calls (and in sessions recorded before human tasks). */
  kind?: 'human_task';
  callbackId: string;
  /** The interpreter command the result answers. */
  commandId: string;
  agent: string;
  tool: string;
  expiresAtMs: number;
  /** When the session started waiting, for the resume trace's wait time. */
  sinceMs: number;
}

export interface SessionStats {
  messageCount: number;
  traceEventCount: number;
  tokenCount: number;
  errorCount: number;
  estimatedCost: number;
  handoffCount: number;
}

export interface TurnUpdateInput {
  /** Client message id (Idempotency-Key header or generated): a retried turn is answered once. */
  clientMessageId: string;
  /**
   * False when the id was generated (no Idempotency-Key): nobody can send the turn again, so its
   * answer is not remembered past the run (Temporal answers a repeated update id within a run).
   * Absent in turns recorded before it: remembered, as they were.
   */
  retryable?: boolean;
  message: string;
  /** A channel's structured action (a button press): the waiting step's ON_ACTION handler with this id. */
  action?: { id: string; value?: unknown };
  /**
   * Start the session only (its ON_START and first flow step, the agent's greeting) and take no
   * user message; `message` is then empty. Sent once, right after an app session is created.
   * Absent in every turn recorded before it, so those replay unchanged.
   */
  startOnly?: boolean;
  /** Per-turn only; visible as session.messageMetadata and message_metadata in tool context. */
  metadata?: Record<string, unknown>;
  testContext?: TurnTestContext;
  /**
   * The turn's stream (POST /api/v1/chat/agent/stream): its reply's LLM calls publish their text
   * there as they generate it. Only this id is in history, never the text. It adds no command (it
   * rides in the LLM activity's input), so no patch marker. Absent for unstreamed turns.
   */
  streamId?: string;
}

export interface TurnTestContext {
  gatherValues?: Record<string, unknown>;
  sessionVariables?: Record<string, unknown>;
  callerContext?: { userId?: string; channel?: string; customAttributes?: Record<string, unknown> };
  toolMocks?: { toolName: string; response?: unknown; error?: string }[];
  skipOnStart?: boolean;
  startAtStep?: string;
}

export interface TraceEventOut {
  type: string;
  spanId: string;
  parentSpanId: string | null;
  timestamp: string;
  data: Record<string, unknown>;
}

export interface TurnResult {
  sessionId: string;
  response: string;
  action: { type: 'continue' | 'complete' | 'handoff' | 'suspend' | 'escalate'; [key: string]: unknown };
  state: { agent: string; status: string; step: string | null; variables: Record<string, unknown> };
  traceEvents: TraceEventOut[];
  /** RICH_CONTENT of the step the session waits in (content variants for channels). */
  richContent?: Record<string, unknown>;
  /** ACTIONS of that step (interactive elements), always an object. */
  actions?: Record<string, unknown>;
  /** Voice settings in force there (the agent's VOICE section, the step's VOICE over it); voice-enabled agents only. */
  voiceConfig?: VoiceConfig;
  /**
   * The turn's reply as the voice channel says it: one entry per reply of `response` (joined
   * there by blank lines), with the voice form its step's VOICE gave it (`ssml`, `plainText`).
   * Present only when one of them has a voice form.
   */
  voiceOutput?: VoiceSegment[];
}

/** One reply of a turn with its voice form (ABL VOICE ssml / plain_text, rendered). */
export interface VoiceSegment {
  text: string;
  ssml?: string;
  plainText?: string;
}

/** An agent's voice settings as channels get them (ABL VOICE; seconds for the timeouts). */
export interface VoiceConfig {
  voice?: string;
  language?: string;
  bargeIn?: boolean;
  speechTimeout?: number | 'auto';
  silenceTimeout?: number;
}

export interface SessionStateView {
  sessionId: string;
  status: 'active' | 'suspended' | 'escalated' | 'completed' | 'ended';
  currentAgent: string;
  step: string | null;
  gathered: Record<string, unknown>;
  pending: { kind: string; reason?: string; tool?: string; expiresAt?: string } | null;
  turnCount: number;
  stats: SessionStats;
}

export const turnUpdate = defineUpdate<TurnResult, [TurnUpdateInput]>('turn');
export const resetUpdate = defineUpdate<{ resetAt: string }, []>('reset');
export const endSignal = defineSignal<[{ reason: string }]>('end');
/**
 * An async tool's result, sent by the API once a callback (or the resume route) claimed its
 * suspension. A session takes the first for the suspension it waits on and ignores the rest.
 */
export interface CallbackSignalInput {
  callbackId: string;
  payload: unknown;
  via: 'callback' | 'resume';
}
export const callbackSignal = defineSignal<[CallbackSignalInput]>('callback');
export const stateQuery = defineQuery<SessionStateView>('state');
/** A human task's outcome, sent by its workflow to `session/<sessionId>` (the current run). */
export interface HumanTaskOutcomeInput {
  taskId: string;
  outcome: 'completed' | 'expired' | 'cancelled';
  resolution: HumanTaskResolution | null;
}
export const humanTaskSignal = defineSignal<[HumanTaskOutcomeInput]>('humanTask');
/**
 * Sent by a session to the task it waits on when it ends any way but a reset (idle timeout, the
 * end signal of a delete or a deployment drain, COMPLETE): the task is cancelled unless it has an
 * outcome already. A signal, because a workflow can signal another but not send it an update.
 */
export interface SessionEndedInput {
  sessionId: string;
  /** The task's cancel reason, e.g. `session ended (deployment_retired)`. */
  reason: string;
}
export const sessionEndedSignal = defineSignal<[SessionEndedInput]>('sessionEnded');
/**
 * Writes the projection rows the session holds now, so a read right after a reply sees its
 * turn. Rejected (type NOTHING_PENDING, leaving no history) when there is nothing to write.
 */
export const flushUpdate = defineUpdate<void, []>('flush');

// ---------------------------------------------------------------------------------------------
// DeploymentDrain (`deployment-drain/<deploymentId>`): started by POST .../retire.

export interface DeploymentDrainInput {
  tenantId: string;
  projectId: string;
  deploymentId: string;
  environment: string;
  /** Every session still on the deployment is ended this long after the drain starts. */
  drainTimeoutMs: number;
  /** A session with no message for this long is ended. */
  idleMs: number;
  pollMs: number;
}

export interface DeploymentDrainResult {
  /** `drained`: no session left; `timed_out`: the rest were ended at the timeout; `reactivated`: rolled back meanwhile; `not_retired`: the retire never happened. */
  outcome: 'drained' | 'timed_out' | 'reactivated' | 'not_retired';
  endedSessions: number;
}

/** What a drain sees of its deployment each round. */
export interface DrainView {
  status: 'active' | 'retired' | 'missing';
  /** Why it was retired (only an explicit retire, `retired`, is drained). */
  retireReason: string | null;
  /** Sessions on the deployment that have not ended (at most DRAIN_SESSIONS_PER_ROUND). */
  sessions: { id: string; lastActivityMs: number }[];
}

/** The reason a drained session ends with. */
export const DEPLOYMENT_RETIRED_REASON = 'deployment_retired';

// ---------------------------------------------------------------------------------------------
// HumanTask (`human-task/<taskId>`): one workflow per task, the truth for its transitions
// (docs/human-tasks.md). Started by a session that escalates (a child it abandons, so the task
// outlives the session's runs) or by POST .../human-tasks.

export const HUMAN_TASK_STATUSES = ['pending', 'assigned', 'in_progress', 'completed', 'expired', 'cancelled'] as const;
export type HumanTaskStatus = (typeof HUMAN_TASK_STATUSES)[number];
export const HUMAN_TASK_PRIORITIES = ['low', 'medium', 'high', 'critical'] as const;
export type HumanTaskPriority = (typeof HUMAN_TASK_PRIORITIES)[number];
/** Statuses a task never leaves. */
export const TERMINAL_TASK_STATUSES: readonly HumanTaskStatus[] = ['completed', 'expired', 'cancelled'];

export interface HumanTaskStartInput {
  taskId: string;
  tenantId: string;
  projectId: string;
  /** The session that waits on the task (null for a task created through the API). */
  sessionId: string | null;
  agentName: string | null;
  type: string;
  title: string;
  priority: HumanTaskPriority;
  tags: string[];
  context: Record<string, unknown>;
  fields: HumanTaskFieldIR[];
  dueAtMs: number | null;
  /** ABL `ON_DUE: raise_priority`: at `dueAtMs` the priority goes up one level instead of expiring. */
  onDue?: { action: 'raise_priority'; thenExpireAfterMs: number | null };
  routing: EscalationRoutingIR | null;
  /** Who created it: `agent:<name>` for an escalation, else the API caller's subject. */
  createdBy: string;
  /**
   * The environment the task belongs to: its session's, or the creating key's for a task created
   * through the API. Absent on tasks started before tasks carried one: those are visible only to
   * credentials bound to no environment.
   */
  environment?: string;
  /** Creation time as its starter wrote it to the projection (the workflow's start otherwise). */
  createdAtMs?: number;
}

export interface HumanTaskResolution {
  /** The credential that resolved it: a user id, or an API key id. */
  respondedBy: string;
  /** The name the resolver gave (`respondedBy` in the body), for display only; absent on older tasks. */
  displayName?: string | null;
  decision: string | null;
  fields: Record<string, unknown>;
  notes: string | null;
  resolvedAt: string;
  /** The Idempotency-Key the resolve was sent with, hashed with its credential, and its request's hash: a resend is known by them. */
  idempotency?: ResolveIdempotency;
}

/** What a resolve sent with an Idempotency-Key is known by (hashes only: neither the key nor the body is kept in clear). */
export interface ResolveIdempotency {
  /** sha256 of the resolving credential and the key. */
  key: string;
  /** sha256 of the request (task id and body). */
  request: string;
}

export interface HumanTaskTransition {
  action: 'created' | 'claimed' | 'assigned' | 'resolved' | 'expired' | 'cancelled' | 'priority_raised';
  from: HumanTaskStatus | null;
  to: HumanTaskStatus;
  by: string | null;
  at: string;
  note?: string;
}

/** The task as its workflow holds it; the MongoDB projection stores exactly this. */
export interface HumanTaskView extends Omit<HumanTaskStartInput, 'dueAtMs' | 'createdAtMs'> {
  status: HumanTaskStatus;
  assignedTo: string | null;
  assignedToTeam: string | null;
  claimedAt: string | null;
  dueAt: string | null;
  resolution: HumanTaskResolution | null;
  cancelReason: string | null;
  history: HumanTaskTransition[];
  createdAt: string;
  updatedAt: string;
  /** Bumped by every transition: a projection write never replaces a newer one. */
  revision: number;
}

export interface ClaimTaskInput {
  /** The claiming credential (a user id or an API key id), never a name the caller chose. */
  userId: string;
  /** The name the claimer gave, for display only. */
  displayName?: string;
}
export interface AssignTaskInput {
  assignedTo?: string;
  assignedToTeam?: string;
  by: string;
}
export interface ResolveTaskInput {
  /** The resolving credential (a user id or an API key id), never a name the caller chose. */
  respondedBy: string;
  /** The name the resolver gave, for display only (null: none given). */
  displayName?: string | null;
  decision?: string;
  fields?: Record<string, unknown>;
  notes?: string;
  /** Set when the request carried an Idempotency-Key; kept with the resolution. */
  idempotency?: ResolveIdempotency;
}
export interface CancelTaskInput {
  reason?: string;
  by: string;
}

/**
 * Transitions. Each validator refuses what the task's state does not allow (types map to API
 * codes: CONFLICT, VALIDATION_ERROR), so a refused call never reaches history; each answers the
 * task as it stands after the transition (written to the projection first).
 */
export const claimTaskUpdate = defineUpdate<HumanTaskView, [ClaimTaskInput]>('claimTask');
export const assignTaskUpdate = defineUpdate<HumanTaskView, [AssignTaskInput]>('assignTask');
export const resolveTaskUpdate = defineUpdate<HumanTaskView, [ResolveTaskInput]>('resolveTask');
export const cancelTaskUpdate = defineUpdate<HumanTaskView, [CancelTaskInput]>('cancelTask');
export const taskStateQuery = defineQuery<HumanTaskView>('taskState');
// AppRun (`app-run/<runId>`): an async run of an agentic-app session (POST …/runs/execute with
// isAsync). The run record in MongoDB holds the message and the callback; history holds ids only.

export interface AppRunInput {
  tenantId: string;
  projectId: string;
  runId: string;
}

export interface AppRunResult {
  status: 'success' | 'failed';
  delivered: boolean;
}

// HttpAsyncConversation, and what its sessions take when they run its lane: their messages live in
// their own module.
export * from './http-async-definitions';

// ---------------------------------------------------------------------------------------------
// OutboundCall (`outbound-call/<outboundCallId>`): one per outbound phone call (docs/telephony.md).
// It submits the call to the provider, follows its status callbacks (signals), and is the one
// owner of the call's phase, outcome and status history. The rest of its contract (start input,
// status signal, terminate update, state query) sits beside these.

export const OUTBOUND_CALL_WORKFLOW_TYPE = 'outboundCall';
export const outboundCallWorkflowId = (outboundCallId: string): string => `outbound-call/${outboundCallId}`;

/** The answered call became an agent session (its voice webhook started one): the call records its id. */
export interface OutboundCallSessionInput {
  sessionId: string;
}
export const outboundCallSessionSignal = defineSignal<[OutboundCallSessionInput]>('outboundCallSession');

export const OUTBOUND_PHASES = ['accepted', 'dialing', 'ringing', 'in_progress', 'terminal'] as const;
export type OutboundPhase = (typeof OUTBOUND_PHASES)[number];
export const OUTBOUND_OUTCOMES = ['completed', 'busy', 'rejected', 'no_answer', 'machine', 'failed', 'canceled', 'expired'] as const;
export type OutboundOutcome = (typeof OUTBOUND_OUTCOMES)[number];
export const OUTBOUND_INITIATION_STATES = ['created', 'provider_requesting', 'submitted', 'provider_request_unknown', 'failed_to_submit'] as const;
export type OutboundInitiationState = (typeof OUTBOUND_INITIATION_STATES)[number];
export type OutboundAmdMode = 'off' | 'continue' | 'disconnect';

/**
 * What the workflow needs to place and follow one call. The destination is not here: the submit
 * activity opens it from the call's row (sealed there), so no number reaches workflow history.
 */
export interface OutboundCallStartInput {
  outboundCallId: string;
  tenantId: string;
  projectId: string;
  environment: string;
  channelConnectionId: string;
  amdMode: OutboundAmdMode;
  /** When the API accepted the call (ms): the first status history entry's time. */
  acceptedAtMs: number;
  /** A call that has not connected, with no provider event for this long, ends `expired` (OUTBOUND_CALL_ABANDON_MS). */
  abandonAfterMs: number;
  /** A connected call still live after this long is hung up and ends `expired` (OUTBOUND_CALL_MAX_DURATION_MS). */
  maxDurationMs: number;
  /** How long a submit whose answer never came is reconciled before the call counts as not placed. */
  reconcileWindowMs: number;
}

/** One transition of the call's phase; `version` is its position (the first, `accepted`, is 1). */
export interface OutboundStatusEntry {
  phase: OutboundPhase;
  outcome: OutboundOutcome | null;
  /** The provider's timestamp of the event (its `Timestamp`), null when it gave none. */
  providerEventAt: string | null;
  /** When the platform recorded the transition. */
  ingestedAt: string;
  version: number;
}

/** The call as the workflow holds it: the query's answer, the projection's content, the SSE's source. */
export interface OutboundCallView {
  outboundCallId: string;
  tenantId: string;
  projectId: string;
  phase: OutboundPhase;
  outcome: OutboundOutcome | null;
  initiationState: OutboundInitiationState;
  failureReason: string | null;
  providerCallSid: string | null;
  sessionId: string | null;
  /** The provider's AnsweredBy (answering-machine detection), when it gave one. */
  answeredBy: string | null;
  statusHistory: OutboundStatusEntry[];
  /** The number of phase transitions so far (= statusHistory.length); what SSE events carry. */
  version: number;
  /** Rises with every change of the view; the projection never replaces a newer revision. */
  revision: number;
  updatedAt: string;
}

/** One provider status callback, as the status webhook received it (already signature-checked). */
export interface OutboundProviderStatusInput {
  /** The connection whose signature the callback carried: a status for another connection's call is dropped. */
  channelConnectionId: string;
  callSid: string | null;
  /** Twilio's CallStatus: queued, initiated, ringing, in-progress, completed, busy, no-answer, failed, canceled. */
  callStatus: string;
  answeredBy: string | null;
  sipResponseCode: string | null;
  sequenceNumber: number | null;
  /** Twilio's Timestamp (RFC 2822) as ISO 8601, null when absent or unreadable. */
  timestamp: string | null;
  /** When the webhook received it (ISO 8601). */
  ingestedAt: string;
}
export const outboundProviderStatusSignal = defineSignal<[OutboundProviderStatusInput]>('outboundProviderStatus');

export interface OutboundTerminateResult {
  outboundCallId: string;
  phase: OutboundPhase;
  outcome: OutboundOutcome | null;
}
/** Ends the call: `canceled` before it connects, a hang-up (`completed`) after; a terminal call answers as it is. */
export const terminateOutboundCallUpdate = defineUpdate<OutboundTerminateResult, []>('terminateOutboundCall');

/** Answers once the call's version passes `afterVersion` or after `waitMs`, with the call as it then is (SSE long-poll). */
export const waitOutboundCallUpdate = defineUpdate<OutboundCallView, [{ afterVersion: number; waitMs: number }]>('waitOutboundCall');
export const outboundCallStateQuery = defineQuery<OutboundCallView>('outboundCallState');
export type OutboundCallWorkflow = (input: OutboundCallStartInput) => Promise<OutboundCallView>;

// ---------------------------------------------------------------- workflow signatures

/**
 * The signatures clients start workflows by (core/ types its handles with these), so a client
 * needs the contract and never the workflow code; agent-session.ts, human-task.ts and deployment-drain.ts
 * check at compile time that their workflows have exactly these.
 */
export type AgentSessionWorkflow = (input: SessionStartInput) => Promise<{ status: 'ended'; reason: string }>;
export type HumanTaskWorkflow = (input: HumanTaskStartInput) => Promise<HumanTaskView>;
export type DeploymentDrainWorkflow = (input: DeploymentDrainInput) => Promise<DeploymentDrainResult>;

// ---------------------------------------------------------------------------------------------
// RecordingFetch (`recording-fetch/<recordingId>`): copies one finished call recording from the
// provider into the recording store (GridFS), with retries that outlive a worker's crash.

export const RECORDING_FETCH_WORKFLOW_TYPE = 'recordingFetch';
export const recordingFetchWorkflowId = (recordingId: string): string => `recording-fetch/${recordingId}`;

export interface RecordingFetchInput {
  tenantId: string;
  recordingId: string;
}
export type RecordingFetchWorkflow = (input: RecordingFetchInput) => Promise<{ availability: string }>;

// AgentAssistConversation: its messages live in their own module.
export * from './agent-assist-definitions';

// ---------------------------------------------------------------------------------------------
// DataDeletion (`data-deletion/<tenantId>[/<projectId>]`): started by DELETE /api/projects/:projectId
// and DELETE /api/admin/tenants/:tenantId. Ends the scope's running workflows, deletes every
// collection's documents of the scope (core/lifecycle/cascade.ts), then the record itself.

export interface DataDeletionInput {
  /** The deletion record (db/deletion-job.ts) the workflow completes. */
  deletionId: string;
  tenantId: string;
  /** null: the whole tenant. */
  projectId: string | null;
}

export interface DataDeletionResult {
  deletionId: string;
  workflowsEnded: number;
  /** Documents deleted, by collection. */
  deleted: Record<string, number>;
}

export type DataDeletionWorkflow = (input: DataDeletionInput) => Promise<DataDeletionResult>;

// ---------------------------------------------------------------------------------------------
// RetentionSweep (`retention-sweep`, started by the `data-retention` schedule or on demand):
// enforces every project's retention (core/lifecycle/retention.ts), a project per activity.

export interface RetentionSweepInput {
  /** The run's clock (ms); set by the sweep on its first run and carried across continue-as-new. */
  nowMs?: number;
  /** The last policy done (its project id), carried across continue-as-new. */
  after?: string | null;
  /** What earlier runs of this sweep did, carried across continue-as-new. */
  carried?: RetentionSweepResult;
}

export interface RetentionProjectOutcome {
  tenantId: string;
  projectId: string;
  deleted: { transcripts: number; traces: number; analytics: number };
}

export interface RetentionSweepResult {
  projects: number;
  deleted: { transcripts: number; traces: number; analytics: number };
  /** Each project where something was deleted (at most RETENTION_SWEEP_LISTED; `projects` counts them all). */
  byProject: RetentionProjectOutcome[];
}

export type RetentionSweepWorkflow = (input: RetentionSweepInput) => Promise<RetentionSweepResult>;

// ---------------------------------------------------------------------------------------------
// VoiceRoom (`voice-room/<sessionId>`): one LiveKit room of a real-time voice session (docs/voice.md).
// Schedules the voice agent's `attendVoiceRoom` on the voice task queue and, when it returns or
// the room is told to end, closes the room (`closeVoiceRoom` on the main task queue).

export const VOICE_ROOM_WORKFLOW_TYPE = 'voiceRoom';
export const voiceRoomWorkflowId = (sessionId: string): string => `voice-room/${sessionId}`;

export interface VoiceRoomInput {
  tenantId: string;
  projectId: string;
  sessionId: string;
  roomName: string;
  /** The agent's voiceConfig when the room was made. */
  voiceConfig: Record<string, unknown>;
  recording: boolean;
  /** The task queue the voice agents serve (config `voiceTaskQueue`). */
  voiceTaskQueue: string;
  /** How long the attend activity may wait for a voice agent to take it (s); past it the room closes, `no_voice_agent`. */
  agentWaitSeconds: number;
}

export interface VoiceRoomResult {
  /** Why the room closed: the attend activity's reason, the end signal's, `no_voice_agent` or `voice_agent_failed`. */
  reason: string;
  /** Turns the voice agent reported; null when it did not return. */
  turns: number | null;
}

/** Ends the room: the session ended or was deleted, the voice session was ended through its route, a project's deletion. */
export const endVoiceRoomSignal = defineSignal<[{ reason: string }]>('endVoiceRoom');

export type VoiceRoomWorkflow = (input: VoiceRoomInput) => Promise<VoiceRoomResult>;
