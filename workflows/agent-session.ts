// AgentSession: one durable workflow per conversation (`session/<sessionId>`). Each chat turn is
// the `turn` update: turns run one at a time in arrival order, drive the pure ABL interpreter,
// execute its commands as activities and child workflows, persist the turn's projection, and
// return the reply. Long sessions continue-as-new with their state once history grows.
import * as wf from '@temporalio/workflow';
import { finishingOnCancellation, onCancellationRequest, type CancellationRequest } from './cancellation';
import type { Activities } from '../activities';
import type { CompilationOutput, Json, VoiceOutputIR } from '../abl/ir';
import type { AdvanceResult, RuntimeEvent, SessionRuntimeState } from '../abl/runtime/contract';
import { createInterpreter } from '../abl/runtime';
import { maskSensitive } from '../abl/gather';
import {
  callbackSignal,
  endSignal,
  flushUpdate,
  humanTaskSignal,
  httpAsyncReplySignal,
  httpAsyncSessionEndedSignal,
  endVoiceRoomSignal,
  voiceRoomWorkflowId,
  sessionEndedSignal,
  resetUpdate,
  stateQuery,
  turnUpdate,
  type CarriedSessionState,
  type SessionStartInput,
  type SessionStateView,
  type SessionStats,
  type TurnResult,
  type TurnUpdateInput,
  type WaitingCallback,
  type HumanTaskOutcomeInput,
  type AgentSessionWorkflow,
  type VoiceConfig,
  type VoiceSegment,
} from './definitions';
import { driveInterpreter, LOCAL_ACTIVITIES_PATCH, type EffectContext } from './effects';
import { interpreterFlags, runFlags } from './interpreter-flags';
import { ProjectionWriter } from './projection-writer';
import { AGENT_IDLE_TIMEOUT_PATCH, ASYNC_TOOLS_PATCH, CALLBACK_AT_ROLLOVER_PATCH, EARLY_CALLBACK_PATCH, SESSION_END_CANCELS_TASK_PATCH, SESSION_END_HOOKS_PATCH } from './patches';
import { SessionStatusKey } from './search-attributes';
import { llmProvenance } from './http-async-bodies';
import { TurnTrace } from './session-trace';
import { emptyInsight, insightSummary, tallyTurn, type SessionInsight } from './session-insight';
import { pinnedBundleRef } from './bundle-ref';
import { sharedBundle } from './shared-bundles';
import { contactAsUser, loadSessionMemory, memoryPlan, saveSessionMemory, type MemoryOwner, type MemoryPlan } from './agent-memory';
import { SessionLane } from './session-http-async';

const { loadSessionBundle } = wf.proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 10 },
});
const { loadSessionBundle: loadSessionBundleLocally } = wf.proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 10 },
});

const RECENT_TURNS_KEPT = 20;
/** How many callbacks for calls the session does not wait on yet it keeps (see the callback signal's handler). */
const EARLY_CALLBACKS_KEPT = 20;
/** Runs started before this marker keep an idle timer per turn when they replay. */
const IDLE_WATCHDOG_PATCH = 'idle-watchdog-v1';
const DEFAULT_MAX_HISTORY_EVENTS = 8000;

/**
 * RICH_CONTENT and ACTIONS of the flow step the session now waits in, for channels to render
 * (buttons for an ON_INPUT question, a markdown variant). Passed on as authored; a list of
 * actions becomes `{ items: [...] }` so `actions` is always an object.
 */
function channelContent(compiled: CompilationOutput, agent: string | undefined, step: string | null | undefined) {
  const channel = agent && step ? compiled.agents[agent]?.flow?.steps[step]?.channel : undefined;
  if (!channel) return {};
  const rich = channel.rich_content;
  const actions = channel.actions;
  return {
    ...(rich && typeof rich === 'object' && !Array.isArray(rich) ? { richContent: rich as Record<string, unknown> } : {}),
    ...(Array.isArray(actions) ? { actions: { items: actions } } : actions && typeof actions === 'object' ? { actions: actions as Record<string, unknown> } : {}),
  };
}

/**
 * The voice settings in force where the session waits: the agent's VOICE section with the
 * step's VOICE block over it, for the voice channel (docs/telephony/voice.md). Absent when neither
 * has any, so a text agent's answer is unchanged.
 */
function voiceContent(compiled: CompilationOutput, agent: string | undefined, step: string | null | undefined): { voiceConfig?: VoiceConfig } {
  const ir = agent ? compiled.agents[agent] : undefined;
  const merged = { ...(ir?.voice ?? {}), ...((step ? ir?.flow?.steps[step]?.voice : undefined) ?? {}) };
  if (!ir?.voice && !(step && ir?.flow?.steps[step]?.voice)) return {};
  const voiceConfig: VoiceConfig = {};
  if (merged.voice !== undefined) voiceConfig.voice = merged.voice;
  if (merged.language !== undefined) voiceConfig.language = merged.language;
  if (merged.barge_in !== undefined) voiceConfig.bargeIn = merged.barge_in;
  if (merged.speech_timeout !== undefined) voiceConfig.speechTimeout = merged.speech_timeout;
  if (merged.silence_timeout !== undefined) voiceConfig.silenceTimeout = merged.silence_timeout;
  return { voiceConfig };
}

/**
 * The turn's replies with the voice form each was given (a step's VOICE ssml / plain_text), for
 * the voice channel to say instead of the text. Absent when none has one.
 */
function voiceOutput(responses: string[], voices: Array<VoiceOutputIR | null>): { voiceOutput?: VoiceSegment[] } {
  if (!voices.some((v) => v !== null)) return {};
  return {
    voiceOutput: responses.map((text, i) => {
      const v = voices[i];
      return { text, ...(v?.ssml !== undefined ? { ssml: v.ssml } : {}), ...(v?.plain_text !== undefined ? { plainText: v.plain_text } : {}) };
    }),
  };
}

function emptyStats(): SessionStats {
  return { messageCount: 0, traceEventCount: 0, tokenCount: 0, errorCount: 0, estimatedCost: 0, handoffCount: 0 };
}

/** The end reason of a session whose workflow was asked to cancel (the Temporal Web UI, `temporal workflow cancel`). */
export const CANCELLED_END_REASON = 'workflow_canceled';

/**
 * A cancellation request is an end request: the session ends as on `end`, writing its last rows,
 * giving its place back and telling its conversation or room (workflows/cancellation.ts).
 */
export async function agentSession(input: SessionStartInput): Promise<{ status: 'ended'; reason: string }> {
  return finishingOnCancellation((cancellation) => runAgentSession(input, cancellation));
}

async function runAgentSession(input: SessionStartInput, cancellation: CancellationRequest): Promise<{ status: 'ended'; reason: string }> {
  const carried: CarriedSessionState | undefined = input.carried;
  let runtime: SessionRuntimeState | null = carried?.runtime ?? null;
  let turnCount = carried?.turnCount ?? 0;
  let traceSeq = carried?.traceSeq ?? 0;
  const stats: SessionStats = carried?.stats ?? emptyStats();
  // Runs carried over from before the insight existed start counting from here.
  const insight: SessionInsight = carried?.insight ?? emptyInsight();
  const recentTurns = carried?.recentTurns ?? [];
  const createdAtMs = carried?.createdAtMs ?? Date.now();
  const flags = runFlags();
  // Each turn's transcript rows, trace events and the summary, written after the reply
  // (projection-writer.ts). Created here: it asks its patch marker where the session always has.
  const projection = new ProjectionWriter({
    tenantId: input.tenantId,
    projectId: input.projectId,
    sessionId: input.sessionId,
    flushDelayMs: input.projectionFlushMs,
    carried,
    currentTurn: () => turnCount,
    summary,
    onRecord: (events, messages) => tallyTurn(insight, events, messages),
  });
  let bundle: CompilationOutput | null = null;
  let ended: { reason: string } | null = null;
  // The async tool call the session waits on, and its result once a callback delivered it.
  let waiting: WaitingCallback | null = carried?.waiting ?? null;
  // For a human task, the payload is its outcome (HumanTaskOutcomeInput).
  let delivered: { payload: unknown; via: 'callback' | 'resume' | 'human_task' } | null = null;
  /** Callbacks signalled before the session waited on their call (the call's turn still running), by callback id. */
  const early = new Map<string, { payload: unknown; via: 'callback' | 'resume' }>();
  let inFlight = 0;
  let idleSinceMs = Date.now();
  // Turns (and resets) run strictly one after another, in arrival order.
  let queue: Promise<unknown> = Promise.resolve();
  const enqueue = <T>(work: () => Promise<T>): Promise<T> => {
    inFlight++;
    const run = queue.then(work);
    queue = run.catch(() => undefined);
    return run.finally(() => {
      inFlight--;
      idleSinceMs = Date.now();
    });
  };

  const activeThread = () => runtime?.threads[runtime.threads.length - 1] ?? null;
  const view = (): SessionStateView => {
    const thread = activeThread();
    return {
      sessionId: input.sessionId,
      status: ended ? 'ended' : (runtime?.status ?? 'active'),
      currentAgent: thread?.agent ?? input.agentName,
      step: thread?.flow?.step ?? null,
      gathered: maskSensitive(thread ? bundle?.agents[thread.agent] : undefined, thread?.vars ?? {}),
      pending: runtime?.pending
        ? {
            kind: runtime.pending.kind,
            ...(runtime.pending.kind === 'callback'
              ? { tool: runtime.pending.tool, expiresAt: new Date(runtime.pending.expiresAtMs).toISOString() }
              : runtime.pending.kind === 'confirmation'
                ? { tool: runtime.pending.tool }
                : { reason: runtime.pending.reason }),
          }
        : null,
      turnCount,
      stats: { ...stats, handoffCount: runtime?.handoffCount ?? stats.handoffCount },
    };
  };

  wf.setHandler(stateQuery, view);
  wf.setHandler(endSignal, ({ reason }) => {
    ended ??= { reason };
  });
  wf.setHandler(callbackSignal, ({ callbackId, payload, via }) => {
    // The first result for the call the session waits on; a late or repeated one changes nothing.
    if (waiting?.callbackId === callbackId && waiting.kind !== 'human_task') {
      if (delivered === null) delivered = { payload, via };
      return;
    }
    // One for a call whose turn is still running (its activity's result not yet seen): kept until
    // the session waits on it (waitOn). Bounded: ids of calls already over are never asked for.
    if (!early.has(callbackId)) {
      early.set(callbackId, { payload, via });
      if (early.size > EARLY_CALLBACKS_KEPT) early.delete(early.keys().next().value!);
    }
  });
  wf.setHandler(humanTaskSignal, (outcome) => {
    // The outcome of the task the session waits on; one of an earlier (reset) wait changes nothing.
    if (waiting?.kind === 'human_task' && waiting.callbackId === outcome.taskId && delivered === null) delivered = { payload: outcome, via: 'human_task' };
  });
  wf.setHandler(
    turnUpdate,
    (turn) => {
      const done = recentTurns.find((r) => r.clientMessageId === turn.clientMessageId);
      if (done) return Promise.resolve(done.result);
      return enqueue(() => runTurn(turn));
    },
    {
      validator: (turn) => {
        // Rejected here, a bad turn leaves nothing in history. Types map to API error codes.
        if (ended) throw wf.ApplicationFailure.nonRetryable('Session has ended; start a new session', 'CONFLICT');
        if (typeof turn?.message !== 'string' || (turn.message.trim() === '' && turn.startOnly !== true)) {
          throw wf.ApplicationFailure.nonRetryable('body.message: must not be empty', 'VALIDATION_ERROR');
        }
        if (typeof turn.clientMessageId !== 'string' || turn.clientMessageId === '') {
          throw wf.ApplicationFailure.nonRetryable('clientMessageId is required', 'VALIDATION_ERROR');
        }
      },
    },
  );
  wf.setHandler(flushUpdate, () => projection.flush(), {
    validator: () => {
      if (projection.idle) {
        throw wf.ApplicationFailure.nonRetryable('Nothing to write', 'NOTHING_PENDING');
      }
    },
  });
  wf.setHandler(
    resetUpdate,
    () =>
      enqueue(async () => {
        runtime = null;
        // A human task of the old conversation resumes nothing now (the API cancels it).
        if (waiting?.kind === 'human_task') {
          waitOn(null);
          delivered = null;
        }
        const trace = new TurnTrace(++turnCount, traceSeq);
        trace.add('state_change', { variable: '_session', value: 'reset' });
        traceSeq = trace.nextSeq;
        stats.traceEventCount += trace.events.length;
        await projection.record(trace, []);
        return { resetAt: new Date().toISOString() };
      }),
    {
      validator: () => {
        if (ended) throw wf.ApplicationFailure.nonRetryable('Session has ended', 'CONFLICT');
      },
    },
  );

  // An HTTP-async session that runs its conversation's lane takes its messages and delivers its
  // replies itself (session-http-async.ts); only sessions started with one carry it.
  const httpAsyncLane = input.httpAsync?.lane
    ? new SessionLane(
        { tenantId: input.tenantId, projectId: input.projectId, sessionId: input.sessionId, conversationWorkflowId: input.httpAsync.conversationWorkflowId, ended: () => ended !== null, enqueue, runTurn: (turn) => runTurn(turn) },
        input.httpAsync.lane,
        carried?.httpAsyncLane,
      )
    : null;
  httpAsyncLane?.start(carried === undefined);

  const bundleQuery = { tenantId: input.tenantId, projectId: input.projectId, bundleRef: input.bundleRef };
  // One copy per worker context of the bundle every session of it runs (shared-bundles.ts).
  const loaded = sharedBundle(wf.patched(LOCAL_ACTIVITIES_PATCH) ? await loadSessionBundleLocally(bundleQuery) : await loadSessionBundle(bundleQuery));
  bundle = loaded;
  // From here on the session names its exact bundle: every continue-as-new and delegation child
  // runs these versions, whatever is deployed or created meanwhile.
  const bundleRef = pinnedBundleRef(input.bundleRef, loaded);
  const agentIdleTimeouts = Object.values(bundle.agents).some((a) => typeof a.execution.session_idle_timeout_ms === 'number') && wf.patched(AGENT_IDLE_TIMEOUT_PATCH);
  /** How long the session may stay idle: the active agent's session_idle_timeout, else the platform's. */
  const idleTimeoutMs = (): number => {
    const own = agentIdleTimeouts ? bundle?.agents[activeThread()?.agent ?? input.agentName]?.execution.session_idle_timeout_ms : null;
    return typeof own === 'number' && own > 0 ? own : input.idleTimeoutMs;
  };

  /** The session's summary row as it stands, for the projection writer. */
  function summary(lastActivityMs: number) {
    const thread = activeThread();
    return {
      currentAgent: thread?.agent ?? input.agentName,
      channel: input.channel,
      runtimeStatus: ended ? 'ended' : (runtime?.status ?? 'active'),
      status: ended ? ('ended' as const) : ('active' as const),
      messageCount: stats.messageCount,
      traceEventCount: stats.traceEventCount,
      tokenCount: stats.tokenCount,
      errorCount: stats.errorCount,
      estimatedCost: stats.estimatedCost,
      handoffCount: runtime?.handoffCount ?? stats.handoffCount,
      durationMs: Date.now() - createdAtMs,
      lastActivityAt: new Date(lastActivityMs).toISOString(),
      ...(ended ? { endedAt: new Date().toISOString(), endReason: ended.reason } : {}),
      ...insightSummary(insight, ended?.reason ?? null, waiting?.kind === 'human_task'),
    };
  }

  // Agent memory (agent-memory.ts): facts loaded at the start, what a turn changed saved after it.
  const memoryOwner: MemoryOwner = { tenantId: input.tenantId, projectId: input.projectId, sessionId: input.sessionId, ...(input.contact ? { contact: input.contact } : {}) };
  let plan: MemoryPlan | null = null;
  const planOf = (compiled: CompilationOutput): MemoryPlan => (plan ??= memoryPlan(compiled));
  /** The start event's memory: asked (and the patch marked) only for a session with a contact or agents that use memory. */
  async function startMemory(compiled: CompilationOutput, trace: TurnTrace) {
    const p = planOf(compiled);
    if ((!p.used && !input.contact) || !flags.agentMemory()) return {};
    const loaded = p.used ? await loadSessionMemory(memoryOwner, p, trace, input.agentName) : { memory: {}, kept: {} };
    return {
      user: contactAsUser(input.contact),
      ...(Object.keys(loaded.memory).length > 0 ? { memory: loaded.memory } : {}),
      ...(Object.keys(loaded.kept).length > 0 ? { kept: loaded.kept } : {}),
    };
  }
  /** Saves what the turn wrote; only runs with agent memory record writes. */
  async function saveMemory(compiled: CompilationOutput, trace: TurnTrace): Promise<void> {
    if (!runtime?.memoryWrites) return;
    const before = trace.events.length;
    await saveSessionMemory(memoryOwner, planOf(compiled), runtime, trace, activeThread()?.agent ?? input.agentName);
    stats.errorCount += trace.events.slice(before).filter((e) => e.type === 'error').length;
  }

  /**
   * A session ended from outside (not by its own COMPLETE) runs its active agent's HOOKS
   * after_agent: the interpreter's `end` event, its effects like a turn's. Not while a turn or a
   * wait (callback, human task) is open: that agent has not finished its step. Returns its replies,
   * which only the transcript keeps (nobody is there to read them).
   */
  async function endHook(reason: string, trace: TurnTrace): Promise<string[]> {
    const compiled = bundle;
    const agent = activeThread()?.agent;
    if (reason === 'completed' || !compiled || !runtime || runtime.exec || runtime.status === 'completed' || !agent) return [];
    if (!compiled.agents[agent]?.hooks.after_agent || !wf.patched(SESSION_END_HOOKS_PATCH)) return [];
    const replies: string[] = [];
    const interpreter = interpreterFor(compiled, new Set());
    const result = await driveInterpreter(effectsFor(compiled, trace, new Map(), undefined), interpreter, interpreter.advance(runtime, { type: 'end', reason }), replies);
    runtime = result.state;
    return replies;
  }

  /** The interpreter for one turn (or one resume) over the session's agents. */
  function interpreterFor(compiled: CompilationOutput, mockedTools: Set<string>) {
    // The session's own agent is the entry agent, whatever the project's manifest says.
    return createInterpreter(
      { ...compiled, entry_agent: input.agentName },
      // The run-wide flags, and those asked per turn: a session recorded before the checkpoints (digressions, agent hooks, GATHER LLM) keeps them off while it replays.
      {
        now: () => Date.now(),
        random: () => Math.random(),
        mockedTools,
        ...interpreterFlags(flags),
      },
    );
  }

  /** What a turn's (or a resume's) effects run with: the session's ids, bundle, trace and counters. */
  function effectsFor(compiled: CompilationOutput, trace: TurnTrace, mocks: EffectContext['mocks'], messageMetadata: EffectContext['messageMetadata'], streamId?: string): EffectContext {
    return {
      tenantId: input.tenantId,
      projectId: input.projectId,
      sessionId: input.sessionId,
      environment: input.environment,
      deploymentId: input.deploymentId,
      bundleRef,
      compiled,
      trace,
      stats,
      mocks,
      ...(messageMetadata ? { messageMetadata } : {}),
      ...(streamId ? { streamId } : {}),
      childIdPrefix: `${wf.workflowInfo().workflowId}/t${turnCount}`,
      delegationChain: [],
      // Asked only when a delegation starts, and only for sessions whose agents use memory.
      memory: () => (planOf(compiled).used && flags.agentMemory() ? { facts: { ...(runtime?.memory ?? {}) }, ...(input.contact ? { contact: input.contact } : {}) } : undefined),
    };
  }

  /** What the session waits on now: the Web UI's `SessionStatus` attribute follows it. */
  function waitOn(next: WaitingCallback | null): void {
    if ((waiting === null) !== (next === null)) wf.upsertSearchAttributes([{ key: SessionStatusKey, value: next ? 'suspended' : 'active' }]);
    waiting = next;
    const kept = next && next.kind !== 'human_task' ? early.get(next.callbackId) : undefined;
    if (kept && delivered === null && wf.patched(EARLY_CALLBACK_PATCH)) delivered = kept;
    if (next) early.delete(next.callbackId);
  }

  async function runTurn(turn: TurnUpdateInput): Promise<TurnResult> {
    // With update-with-start the first turn arrives before the agents are loaded.
    if (bundle === null) await wf.condition(() => bundle !== null);
    if (ended) throw wf.ApplicationFailure.nonRetryable('Session has ended', 'CONFLICT');
    if (turn.startOnly && runtime) throw wf.ApplicationFailure.nonRetryable('The session has already started', 'CONFLICT');
    const compiled = bundle!;
    const trace = new TurnTrace(++turnCount, traceSeq);
    const mocks = new Map((turn.testContext?.toolMocks ?? []).map((m) => [m.toolName, m]));
    const interpreter = interpreterFor(compiled, new Set(mocks.keys()));
    const responses: string[] = [];
    const voices: Array<VoiceOutputIR | null> = [];

    const effects = effectsFor(compiled, trace, mocks, turn.metadata, turn.streamId);
    const drive = (first: AdvanceResult) => driveInterpreter(effects, interpreter, first, responses, voices);

    let result: AdvanceResult | null = null;
    const starting = !runtime;
    if (!runtime) {
      const tc = turn.testContext;
      const memory = await startMemory(compiled, trace);
      result = await drive(
        interpreter.init({
          type: 'start',
          ...memory,
          // The session's channel, and the test caller's identity as `caller` (userId, channel,
          // customAttributes); the caller's channel overrides the session's.
          sessionVariables: {
            channel: tc?.callerContext?.channel ?? input.channel,
            ...(tc?.callerContext ? { caller: tc.callerContext as Json } : {}),
            ...(tc?.sessionVariables as Record<string, Json> | undefined),
          },
          gatherValues: tc?.gatherValues as Record<string, Json> | undefined,
          startAtStep: tc?.startAtStep,
          skipOnStart: tc?.skipOnStart,
        }),
      );
      runtime = result.state;
    }
    // A start-only turn (an app session's greeting) stops after the start. It depends on the
    // turn's input alone, which no recorded turn carries: no patch marker is needed.
    if (!turn.startOnly) {
      result = await drive(interpreter.advance(runtime, {
        type: 'user_message',
        text: turn.message,
        metadata: turn.metadata as Record<string, Json> | undefined,
        // Only turns sent with an action carry it, so recorded turns replay unchanged.
        ...(turn.action ? { action: turn.action as { id: string; value?: Json } } : {}),
        // What the interpreter does with it is behind patches (start-gather-hold-v1).
        ...(starting ? { withStart: true } : {}),
      }));
      runtime = result.state;
    }
    // Narrows the type only: a start-only turn is refused above unless it started the session here.
    if (!result) throw wf.ApplicationFailure.nonRetryable('The session has already started', 'CONFLICT');
    await saveMemory(compiled, trace);
    if (result.outcome === 'completed') ended ??= { reason: 'completed' };
    if (effects.waiting) waitOn(effects.waiting);
    const w = effects.waiting;
    const suspension = w && w.kind !== 'human_task' ? { id: w.callbackId, tool: w.tool, expiresAt: new Date(w.expiresAtMs).toISOString() } : null;
    const humanTask = w?.kind === 'human_task' ? { id: w.callbackId, status: 'pending', dueAt: w.expiresAtMs > 0 ? new Date(w.expiresAtMs).toISOString() : null } : null;

    const response = responses.join('\n\n');
    const thread = activeThread();
    stats.messageCount += (response ? 1 : 0) + (turn.startOnly ? 0 : 1);
    stats.traceEventCount += trace.events.length;
    traceSeq = trace.nextSeq;
    await projection.record(trace, [
      // What the agents saw: input guardrails' redactions apply to the stored transcript too.
      ...(turn.startOnly ? [] : [{ role: 'user' as const, agent: null, content: result.userText ?? turn.message }]),
      ...(response ? [{ role: 'assistant' as const, agent: thread?.agent ?? null, content: response }] : []),
    ]);
    const actionType = result.outcome === 'completed' ? 'complete' : result.outcome === 'suspended' ? (runtime.pending?.kind === 'human_task' ? 'escalate' : 'suspend') : 'continue';
    const turnResult: TurnResult = {
      sessionId: input.sessionId,
      response,
      action: suspension ? { type: actionType, suspension } : humanTask ? { type: actionType, humanTask } : { type: actionType },
      state: {
        agent: thread?.agent ?? input.agentName,
        status: runtime.status,
        step: thread?.flow?.step ?? null,
        variables: maskSensitive(thread ? compiled.agents[thread.agent] : undefined, thread?.vars ?? {}),
      },
      traceEvents: trace.events.map(({ seq: _seq, ...event }) => event),
      ...channelContent(compiled, thread?.agent, thread?.flow?.step),
      ...voiceContent(compiled, thread?.agent, thread?.flow?.step),
      ...voiceOutput(responses, voices),
    };
    // Only a turn the client can send again is remembered for the next run: the answer is in this
    // run's history already, and Temporal answers a repeated update id within the run itself.
    if (turn.retryable !== false) {
      recentTurns.push({ clientMessageId: turn.clientMessageId, result: turnResult });
      if (recentTurns.length > RECENT_TURNS_KEPT) recentTurns.shift();
    }
    return turnResult;
  }

  /**
   * Resumes the turn that waits on an async tool call: with the callback's payload as the tool's
   * result, or with a tool_timeout once the suspension expired. Its replies are recorded like a
   * turn's (transcript, traces, a `resume` event with the wait), and it may suspend again.
   */
  async function resume(w: WaitingCallback, result: { payload: unknown; via: 'callback' | 'resume' | 'human_task' } | null): Promise<void> {
    const compiled = bundle!;
    waitOn(null);
    delivered = null;
    if (!runtime) return;
    const trace = new TurnTrace(++turnCount, traceSeq);
    let event: RuntimeEvent;
    if (w.kind === 'human_task') {
      const outcome = result?.payload as HumanTaskOutcomeInput;
      const r = outcome.resolution;
      trace.add('human_task', {
        agent: w.agent,
        taskId: w.callbackId,
        status: outcome.outcome,
        ...(r ? { respondedBy: r.respondedBy, decision: r.decision } : {}),
        waitedMs: Date.now() - w.sinceMs,
      });
      event =
        outcome.outcome === 'expired'
          ? { type: 'wait_expired', commandId: w.commandId }
          : {
              type: 'human_resolved',
              commandId: w.commandId,
              resolution: (r ? { ...r.fields, decision: r.decision, notes: r.notes, respondedBy: r.respondedBy } : {}) as Record<string, Json>,
              ...(outcome.outcome === 'cancelled' ? { cancelled: true } : {}),
            };
    } else {
      trace.add('resume', {
        agent: w.agent,
        tool: w.tool,
        callbackId: w.callbackId,
        outcome: result ? 'callback' : 'expired',
        ...(result ? { via: result.via } : {}),
        waitedMs: Date.now() - w.sinceMs,
      });
      event = result
        ? { type: 'callback' as const, commandId: w.commandId, payload: (result.payload ?? null) as Json }
        : { type: 'wait_expired' as const, commandId: w.commandId };
    }
    const responses: string[] = [];
    const effects = effectsFor(compiled, trace, new Map(), undefined);
    const interpreter = interpreterFor(compiled, new Set());
    const advanced = await driveInterpreter(effects, interpreter, interpreter.advance(runtime, event), responses);
    runtime = advanced.state;
    if (advanced.outcome === 'completed') ended ??= { reason: 'completed' };
    await saveMemory(compiled, trace);
    if (effects.waiting) waitOn(effects.waiting);
    const response = responses.join('\n\n');
    if (response) stats.messageCount += 1;
    stats.traceEventCount += trace.events.length;
    traceSeq = trace.nextSeq;
    await projection.record(trace, response ? [{ role: 'assistant' as const, agent: activeThread()?.agent ?? null, content: response }] : []);
    if (input.httpAsync) {
      // The HTTP-async caller hears this reply through the lane: the session's own, or its conversation's.
      const thread = activeThread();
      const action = advanced.outcome === 'completed' ? 'complete' : advanced.outcome === 'suspended' ? (runtime.pending?.kind === 'human_task' ? 'escalate' : 'suspend') : 'continue';
      const reply = {
        sessionId: input.sessionId,
        response,
        cause: w.kind === 'human_task' ? ('human_task' as const) : result ? ('callback' as const) : ('expired' as const),
        action: action as 'continue' | 'suspend' | 'escalate' | 'complete',
        ...channelContent(compiled, thread?.agent, thread?.flow?.step),
        llm: llmProvenance(trace.events),
      };
      const replyId = `${input.sessionId}:${turnCount}`;
      if (httpAsyncLane) httpAsyncLane.reply(reply, replyId);
      else await signalConversation(input.httpAsync.conversationWorkflowId, httpAsyncReplySignal, { ...reply, replyId });
    }
  }

  /** Waits for the result of the call the session waits on, or its expiry, and resumes the turn. */
  async function watchCallbacks(): Promise<void> {
    for (;;) {
      await wf.condition(() => ended !== null || waiting !== null);
      if (ended) return;
      const w = waiting!;
      const settled = () => ended !== null || delivered !== null || waiting !== w;
      // A human task keeps its own deadline: its workflow reports the expiry like any outcome.
      if (w.kind === 'human_task') await wf.condition(settled);
      else await wf.condition(settled, Math.max(1, w.expiresAtMs - Date.now()));
      if (ended) return;
      if (waiting !== w) continue;
      const result = delivered;
      await enqueue(() => resume(w, result));
    }
  }

  const maxEvents = input.maxHistoryEvents ?? DEFAULT_MAX_HISTORY_EVENTS;
  const shouldRollOver = () => wf.workflowInfo().continueAsNewSuggested || wf.workflowInfo().historyLength > maxEvents;
  /** Continues as new, unless work came in while the held rows were written: then it returns, and the caller waits to try again. */
  const rollOver = async (): Promise<void> => {
    if (projection.deferred) await projection.flushBeforeRollOver();
    await wf.condition(wf.allHandlersFinished);
    // A callback delivered during that write (its signal handled, its resume not yet started or
    // still running) belongs to this run: the next one carries the wait, not a result already taken.
    if ((inFlight > 0 || delivered !== null) && wf.patched(CALLBACK_AT_ROLLOVER_PATCH)) return;
    if (httpAsyncLane) {
      // Stopped between attempts, the lane goes along; a message taken meanwhile keeps this run.
      await httpAsyncLane.stop();
      if (inFlight > 0 || delivered !== null) {
        httpAsyncLane.resume();
        return;
      }
    }
    // Rows of turns answered during that write go along (the next run writes them).
    const next: CarriedSessionState = {
      runtime,
      turnCount,
      recentTurns,
      traceSeq,
      messageSeq: projection.messageSeq,
      stats,
      insight,
      createdAtMs,
      ...(waiting ? { waiting } : {}),
      ...(httpAsyncLane ? { httpAsyncLane: httpAsyncLane.carried() } : {}),
      ...projection.handOver(),
    };
    // The lane's start (the messages and events it was handed) is in the carried state now.
    const httpAsync = input.httpAsync?.lane ? { httpAsync: { ...input.httpAsync, lane: { ...input.httpAsync.lane, pending: [], outbox: [], seen: [] } } } : {};
    await wf.continueAsNew<typeof agentSession>({ ...input, ...httpAsync, bundleRef, carried: next });
  };

  projection.resume();
  if (wf.patched(ASYNC_TOOLS_PATCH)) void watchCallbacks();
  // Nothing is recorded for it until it comes, and no session ever completed a task after one
  // (each failed from then on), so no marker is needed.
  onCancellationRequest(cancellation, () => {
    ended ??= { reason: CANCELLED_END_REASON };
  });

  if (wf.patched(IDLE_WATCHDOG_PATCH)) {
    // One timer per idle period, not one per turn: when it fires it re-arms for whatever is
    // left since the last turn, and ends the session once a whole idle period has passed.
    const watchIdle = async () => {
      while (!ended) {
        const remaining = idleSinceMs + idleTimeoutMs() - Date.now();
        // A session waiting on a callback is not idle: its suspension's expiry resumes it.
        if (remaining <= 0 && inFlight === 0 && waiting === null) {
          ended ??= { reason: 'idle_timeout' };
          return;
        }
        await wf.sleep(remaining > 0 ? remaining : idleTimeoutMs());
      }
    };
    void watchIdle();
    for (;;) {
      await wf.condition(() => ended !== null || (inFlight === 0 && delivered === null && shouldRollOver()));
      if (ended !== null) break;
      await rollOver();
    }
  } else {
    // Runs recorded before the watchdog: a fresh idle timer after every turn.
    while (!ended) {
      const seen = turnCount;
      const woke = await wf.condition(() => ended !== null || inFlight > 0 || turnCount !== seen || shouldRollOver(), input.idleTimeoutMs);
      if (!woke) {
        ended = { reason: 'idle_timeout' };
        break;
      }
      await wf.condition(() => inFlight === 0 || ended !== null);
      if (!ended && inFlight === 0 && shouldRollOver()) await rollOver();
    }
  }
  // Rolling over never returns, so the session has ended here.
  const { reason } = ended ?? { reason: 'ended' };
  await wf.condition(wf.allHandlersFinished);
  const trace = new TurnTrace(++turnCount, traceSeq);
  // The human task it waited on waits for nobody now: it is cancelled (a durable signal command).
  const task = waiting?.kind === 'human_task' && delivered === null ? waiting : null;
  if (task && wf.patched(SESSION_END_CANCELS_TASK_PATCH)) {
    const cancelReason = reason === 'deleted' ? 'session deleted' : `session ended (${reason})`;
    try {
      await wf.getExternalWorkflowHandle(`human-task/${task.callbackId}`).signal(sessionEndedSignal, { sessionId: input.sessionId, reason: cancelReason });
    } catch {
      // The task's workflow has finished meanwhile: it has its outcome.
    }
    trace.add('human_task', { agent: task.agent, taskId: task.callbackId, status: 'cancelled', reason: cancelReason, waitedMs: Date.now() - task.sinceMs });
  }
  const hookReplies = await endHook(reason, trace);
  trace.add('state_change', { variable: '_session', value: 'ended', reason });
  stats.traceEventCount += trace.events.length;
  await projection.record(trace, hookReplies.map((content) => ({ role: 'assistant' as const, agent: activeThread()?.agent ?? null, content })), false);
  if (projection.deferred) await projection.flush('now');
  if (input.httpAsync) {
    // After the last reply's signal (a resume that ended the session may still be sending it):
    // two signals in flight at once can arrive in either order.
    await wf.condition(() => inFlight === 0);
    // A session that ran the lane hands it back, with the messages it did not answer (a message
    // taken while the lane stopped has gone to the unanswered ones once nothing is in flight).
    if (httpAsyncLane) {
      await httpAsyncLane.stop();
      await wf.condition(() => inFlight === 0);
    }
    await signalConversation(input.httpAsync.conversationWorkflowId, httpAsyncSessionEndedSignal, { sessionId: input.sessionId, reason, ...(httpAsyncLane ? { lane: httpAsyncLane.handBack() } : {}) });
    // A message recorded after that is sent on to the conversation by its handler.
    if (httpAsyncLane) await wf.condition(wf.allHandlersFinished);
  }
  // A real-time voice session's room closes with it. Only `voice_realtime` sessions take this
  // path, and none was recorded before it: it needs no marker.
  if (input.channel === 'voice_realtime') {
    await signalConversation(voiceRoomWorkflowId(input.sessionId), endVoiceRoomSignal, { reason: reason === 'deleted' ? 'deleted' : 'session_ended' });
  }
  return { status: 'ended', reason };
}

/**
 * Tells an HTTP-async session's conversation, or a voice session's room (a durable signal
 * command). Only sessions started by a conversation carry `httpAsync`, and only voice rooms'
 * sessions have the `voice_realtime` channel, so no recorded history meets this code: it needs no marker.
 */
async function signalConversation<T>(workflowId: string, signal: wf.SignalDefinition<[T]>, arg: T): Promise<void> {
  try {
    await wf.getExternalWorkflowHandle(workflowId).signal(signal, arg);
  } catch {
    // The conversation has closed: nothing waits for this any more.
  }
}

/** Compile-time check: clients start this workflow by the signature in definitions.ts. */
type _SignatureIsTheContract = Assert<Same<typeof agentSession, AgentSessionWorkflow>>;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Assert<T extends true> = T;
