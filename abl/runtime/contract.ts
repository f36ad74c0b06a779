// The contract between the ABL session interpreter (pure, in abl/runtime/) and the AgentSession
// workflow that drives it. The interpreter never performs effects: `advance` takes the session
// state and one event and returns the new state plus the commands the workflow must execute
// (LLM calls, tool calls, delegations, escalations). Results come back as further events.
// Everything here is plain JSON, so state travels through workflow history and continue-as-new.
import type { EscalationRoutingIR, HumanTaskFieldIR, Json, VoiceOutputIR } from '../ir';

/** One agent activation. The session holds a stack of them; the last is active. */
export interface ThreadState {
  id: string;
  agent: string;
  status: 'active' | 'waiting' | 'completed' | 'suspended' | 'escalated';
  /** Session variables of this thread (gathered fields, SET values, tool results). */
  vars: Record<string, Json>;
  /** Conversation of this thread, bounded (oldest dropped first). */
  history: ChatTurn[];
  /** Current FLOW step and where inside it execution stands; null for reasoning agents. */
  flow: {
    step: string;
    phase: string;
    attempts: Record<string, number>;
    /** The branch of this step whose GATHER waits for the user (branch-gather.ts). */
    branchGather?: { source: 'on_exhausted' | 'on_fail' | 'on_result' | 'on_success' | 'on_input'; index: number; soft: boolean };
    /** The session-start turn in which a constraint or guardrail blocked this step's CALL (its message is sent). */
    blockedAtTurn?: number;
  } | null;
  /** Parent thread id when entered by HANDOFF with RETURN: true. */
  returnTo: string | null;
  /** Delegate entries that already fired (they fire once). */
  firedDelegates: string[];
  startedOnce: boolean;
  /** Agent-level GATHER field the agent last asked for (a plain answer fills it). */
  askedField?: string | null;
  /** Answers in a row that did not fill `askedField` (its `max_retries` bounds them). */
  askedRetries?: number;
  /** GATHER `infer` candidates awaiting the user's confirmation, by field. */
  inferred?: Record<string, Json>;
  /** Input guardrails with `action: reask` that fired on the last messages in a row, by name, with the count. */
  reasks?: Record<string, number>;
  /** Fields whose inferred value the user rejected (not inferred again). */
  inferRejected?: string[];
  /** The last reply this thread sent (returned to a waiting parent on COMPLETE). */
  lastReply?: string | null;
  /** Index of the parent's HANDOFF rule that started this thread with RETURN: true (its ON_RETURN and MAP apply). */
  returnRule?: number;
  /** A waiting parent's triggering message: ON_RETURN `resume_intent` hands it to the parent again. */
  resumeInput?: string | null;
  /** ON_RETURN's instruction, rendered: the next reasoning call's system prompt carries it, once. */
  returnInstruction?: string;
  /** Persistent paths a HANDOFF's `grant_memory` let this thread use, with the granting agent's access. */
  grants?: Record<string, 'read' | 'write' | 'readwrite'>;
  /** The agent's recall entries (by index) that have fired in this thread (memory.ts). */
  recalled?: number[];
}

export interface ChatTurn {
  role: 'user' | 'assistant' | 'tool' | 'system';
  content: string;
  toolCallId?: string;
  toolCalls?: { id: string; name: string; arguments: string }[];
}

export interface SessionRuntimeState {
  /** Bumped when the shape changes; the workflow refuses states it does not know. */
  version: 1;
  entryAgent: string;
  threads: ThreadState[];
  status: 'active' | 'suspended' | 'escalated' | 'completed';
  /** Persistent memory facts (MEMORY persistent/remember), by dotted path. */
  memory: Record<string, Json>;
  /**
   * Persistent paths written since the workflow last saved them, with the TTL of the write (null:
   * no expiry); a `RESET: never` variable as `session:<Agent>.<name>`. The workflow saves and clears it.
   */
  memoryWrites?: Record<string, { ttlMs: number | null }>;
  /** `RESET: never` session variables as last kept, by agent: a new thread of that agent starts from them. */
  kept?: Record<string, Record<string, Json>>;
  /** The session's contact as agents read it (`user.*`); absent for sessions started before it. */
  user?: Record<string, Json>;
  /** What the session waits for when suspended (async tool callback or human task). */
  pending: PendingWait | null;
  handoffCount: number;
  turn: number;
  /** Counter for deterministic ids (commands, spans). */
  seq: number;
  /** The turn in progress while effects are outstanding (see docs/runtime-interpreter.md). */
  exec?: TurnExecution | null;
  /** `delegate`: a delegated child run to completion without a user (initDelegateState). */
  mode?: 'session' | 'delegate';
  /** How the session (or delegated child) ended: COMPLETE text, outcome label, failure. */
  result?: { ok: boolean; response: string | null; label: string | null; error: RuntimeError | null } | null;
}

/**
 * A turn that waits for effects. The interpreter replays the turn from `snapshot` with the
 * recorded effect results (`journal`, by command id) until it reaches an effect it has no result
 * for; responses and trace already returned are not returned again.
 */
export interface TurnExecution {
  snapshot: SessionRuntimeState;
  event: RuntimeEvent;
  journal: Record<string, RuntimeEvent>;
  /** Command ids already handed to the workflow and not yet answered. */
  outstanding: string[];
  /** Command type by id (to check that the answering event fits). */
  kinds: Record<string, RuntimeCommand['type']>;
  emittedResponses: number;
  emittedTrace: number;
  /** Clock and seed fixed at the start of the turn, so replays are identical. */
  nowMs: number;
  seed: number;
  /** The message that answered a tool's confirmation question and continued this turn: what the user said now. */
  answerText?: string;
}

export type PendingWait =
  | { kind: 'callback'; commandId: string; tool: string; expiresAtMs: number }
  | { kind: 'human_task'; commandId: string; reason: string }
  /** A tool's `confirmation`: the user's next message says yes or no to the call (the session stays active). */
  | { kind: 'confirmation'; commandId: string; tool: string };

export type RuntimeEvent =
  /** Session start: runs ON_START of the entry agent. */
  | {
      type: 'start';
      sessionVariables?: Record<string, Json>;
      gatherValues?: Record<string, Json>;
      startAtStep?: string;
      skipOnStart?: boolean;
      /** Persistent facts loaded for the session (over each path's DEFAULT), `RESET: never` variables by agent, and `user.*`. */
      memory?: Record<string, Json>;
      kept?: Record<string, Record<string, Json>>;
      user?: Record<string, Json>;
    }
  /**
   * `action`: a channel's structured action (a button press); it takes the waiting step's ON_ACTION
   * handler with that id. `text` is what the transcript and any other matching see.
   */
  | {
      type: 'user_message';
      text: string;
      metadata?: Record<string, Json>;
      action?: { id: string; value?: Json };
      /** The message came with the session's start, in one request: its sender has not seen what the start said. */
      withStart?: boolean;
    }
  | { type: 'llm_result'; commandId: string; ok: true; content: string; toolCalls: { id: string; name: string; arguments: string }[] }
  | { type: 'llm_result'; commandId: string; ok: false; error: RuntimeError }
  | { type: 'tool_result'; commandId: string; ok: true; value: Json }
  | { type: 'tool_result'; commandId: string; ok: false; error: RuntimeError }
  | { type: 'delegate_result'; commandId: string; results: DelegateOutcome[] }
  | { type: 'callback'; commandId: string; payload: Json }
  /** `cancelled`: the task was cancelled instead of resolved (human.cancelled, resolved false). */
  | { type: 'human_resolved'; commandId: string; resolution: Record<string, Json>; cancelled?: boolean }
  | { type: 'wait_expired'; commandId: string }
  | ({ type: 'moderation_result'; commandId: string; ok: true } & ModerationAnswer)
  | { type: 'moderation_result'; commandId: string; ok: false; error: RuntimeError }
  /**
   * The session ends from outside the interpreter (the API's end, an idle timeout, a drain): the
   * active agent's HOOKS `after_agent` runs (its CALLs are effects like any turn's) and the
   * session completes. `reason` is the workflow's end reason.
   */
  | { type: 'end'; reason: string }
  /** The user's answer to a `confirm_tool` (made by the interpreter from the next user message). */
  | { type: 'confirmation_result'; commandId: string; confirmed: boolean };

/** A moderation provider's verdict on one text (abl/moderation.ts decides what it means for a guardrail). */
export interface ModerationAnswer {
  /** The provider that answered (`openai`, or `local` for the offline rules). */
  provider: string;
  model: string;
  flagged: boolean;
  /** Score per category id, 0..1. */
  scores: Record<string, number>;
  /** Categories the provider itself flagged. */
  flaggedCategories: string[];
}

export interface RuntimeError {
  kind: string;
  message: string;
}

export interface DelegateOutcome {
  agent: string;
  status: 'completed' | 'failed' | 'timed_out';
  /** The child's final reply (its COMPLETE response). */
  response?: string;
  /** The child's variables named in RETURNS. */
  returns?: Record<string, Json>;
  error?: RuntimeError;
}

export interface LlmRequestSpec {
  /** Model id from EXECUTION.model when set; otherwise the workflow resolves a tier. */
  model: string | null;
  tier: 'fast' | 'balanced' | 'powerful';
  temperature?: number;
  maxTokens?: number;
  /** EXECUTION.fallback_model: tried once when the model fails with a retryable error or is unavailable. */
  fallbackModel?: string;
  /** EXECUTION.llm_timeout: how long one model call may take. */
  timeoutMs?: number;
  messages: ChatTurn[];
  tools: { name: string; description: string; parameters: Json }[];
}

export type RuntimeCommand =
  | { type: 'call_llm'; id: string; agent: string; purpose: 'reasoning' | 'extraction' | 'validation' | 'classification' | 'routing'; request: LlmRequestSpec }
  | {
      type: 'call_tool';
      id: string;
      agent: string;
      tool: string;
      args: Record<string, Json>;
      timeoutMs: number;
      retries: number;
      /** Arguments holding a `sensitive` GATHER field's value: the tool gets them, traces show a mask. */
      sensitiveArgs?: string[];
      /** The message metadata keys the tool may receive (`context_access`); absent = all. */
      contextKeys?: string[];
    }
  /**
   * A tool call waits for the user's yes or no (its `confirmation`); the question is in the turn's
   * responses. Nothing runs for it: the interpreter answers it from the user's next message.
   */
  | { type: 'confirm_tool'; id: string; agent: string; tool: string; args: Record<string, Json> }
  | {
      type: 'delegate';
      id: string;
      agent: string;
      /** `returns`: child variables the parent reads back (DELEGATE RETURNS keys). */
      tasks: { agent: string; input: Record<string, Json>; timeoutMs: number | null; purpose: string; returns?: string[] }[];
    }
  | {
      type: 'escalate';
      id: string;
      agent: string;
      reason: string;
      priority: string;
      tags: string[];
      context: Record<string, Json>;
      /** The human task's type, deadline and form (a trigger's TYPE, DUE and FIELDS); absent in turns recorded before them. */
      taskType?: string;
      dueMs?: number | null;
      /** The trigger's ON_DUE: raise_priority (absent: the task expires at DUE). */
      onDue?: { action: 'raise_priority'; thenExpireAfterMs: number | null };
      fields?: HumanTaskFieldIR[];
      /** ESCALATE `routing:` (a trigger's own overriding it field by field). */
      routing?: EscalationRoutingIR;
    }
  /** A provider guardrail's check: the text goes to the moderation provider (answered by `moderation_result`). */
  | { type: 'moderate'; id: string; agent: string; guardrail: string; provider: 'openai' | 'local'; text: string }
  | {
      type: 'suspend_for_callback';
      id: string;
      agent: string;
      tool: string;
      args: Record<string, Json>;
      timeoutMs: number;
      /** As on `call_tool`. */
      contextKeys?: string[];
    };

/** Trace events the interpreter emits; the workflow adds ids, timestamps and durations. */
export type TraceDraft =
  | { type: 'decision'; data: { decisionKind: string; decision: string; agent: string; reasoning?: string } }
  | { type: 'handoff'; data: { fromAgent: string; toAgent: string; reason: string } }
  | {
      type: 'guardrail_eval';
      data: {
        guardrail: string; kind: string; passed: boolean; action: string; agent: string;
        /** Provider guardrails only: who judged, the category and score that decided, and a failed call's error. */
        provider?: string; model?: string; category?: string | null; score?: number; threshold?: number | null; error?: string;
      };
    }
  /** `source: 'gather'`: a value a GATHER collected (absent for SET and the like). */
  | { type: 'state_change'; data: { agent: string; variable: string; value: Json; source?: 'gather' } }
  /** `tool`: the tool whose call failed, for a failed tool call. */
  | { type: 'error'; data: { agent: string; kind: string; message: string; tool?: string } }
  | { type: 'response'; data: { agent: string; text: string } }
  /**
   * Not an event of its own: what a `tool_output` guardrail left of a tool's result (redacted, or
   * withheld when it blocked). The workflow applies it to the `tool_result` event it recorded for
   * that command, so the stored trace never holds what the guardrail removed.
   */
  | { type: 'tool_output_guarded'; data: { commandId: string; output: Json; blocked: boolean } };

export interface AdvanceResult {
  state: SessionRuntimeState;
  /** Effects to execute now; each result is fed back with the command's id. */
  commands: RuntimeCommand[];
  /** Text sent to the user during this advance, in order. */
  responses: string[];
  /**
   * The voice form of each of `responses` (same index; null for one without), rendered; present
   * only when one of them has one (a step's VOICE ssml / plain_text).
   */
  voices?: Array<VoiceOutputIR | null>;
  trace: TraceDraft[];
  /**
   * `awaiting_effects`: commands are outstanding; `turn_complete`: the turn is over (waiting for
   * the user); `suspended`: waiting for a callback or human; `completed`: the session ended.
   */
  outcome: 'awaiting_effects' | 'turn_complete' | 'suspended' | 'completed';
  /**
   * The user's message as the agents saw it, after input guardrails (redactions applied); absent
   * when no user message ran. The workflow stores this, not the raw text, in the transcript.
   */
  userText?: string;
}

export interface RuntimeOptions {
  /** Deterministic time and randomness (the workflow passes its own clock). */
  now(): number;
  random(): number;
  /** Tool names replaced by test mocks for this turn: the workflow answers them itself. */
  mockedTools?: ReadonlySet<string>;
  /**
   * Several ordinary tool calls in one LLM answer are issued together (parallel-tools.ts) instead
   * of one after another. A function is asked only when an answer has such calls; it must give
   * the same answer for the whole turn (the turn is replayed), e.g. a memoised `wf.patched`.
   */
  parallelToolCalls?: boolean | (() => boolean);
  /**
   * Rule checkpoints: `tool_input`/`tool_output`/`handoff` guardrails and `BEFORE returning
   * results` constraints. On unless false; workflows pass false while replaying runs recorded
   * before the checkpoints existed (patch `rule-checkpoints-v1`).
   */
  ruleCheckpoints?: boolean;
  /**
   * Flow DIGRESSIONS / SUB_INTENTS / global_digressions take matching messages while a step waits
   * for the user. On unless false; workflows pass false while replaying runs recorded before
   * digressions ran (patch `digressions-v1`).
   */
  digressions?: boolean;
  /**
   * `HOOKS.before_agent` / `after_agent` run when an agent becomes / stops being the active agent
   * (agent-hooks.ts). On unless false; workflows pass false while replaying runs recorded before
   * those hooks ran (patch `agent-hooks-v1`).
   */
  agentHooks?: boolean;
  /**
   * A flow step's GATHER `STRATEGY: llm|hybrid` asks the model (`call_llm`, purpose `extraction`),
   * and LLM-judged validate rules of step and top-level GATHER fields are judged (purpose
   * `validation`); otherwise every strategy is the deterministic pattern one and those rules are
   * ignored. On unless false; workflows pass false while replaying runs recorded before it (patch
   * `gather-llm-v1`).
   */
  gatherLlm?: boolean;
  /**
   * ON_ERROR's THEN is carried out after a model failure (`llm_error`) of a reasoning agent or of a
   * flow's reasoning step, and a top-level GATHER field stops being re-asked after
   * `max_retries` failed answers (a `validation_error`). On unless false; a function is asked
   * only when one of these would happen, and must give the same answer for the whole turn (patch
   * `agent-error-transitions-v1`).
   */
  agentErrorTransitions?: boolean | (() => boolean);
  /**
   * GATHER `infer`: a field with `infer: true` that is still open may be inferred by the model (an
   * extraction call, with the conversation), subject to `infer_confidence` and `infer_confirm`.
   * Needs `gatherLlm`. On unless false; a function is asked only when a field could be inferred,
   * and must give the same answer for the whole turn (patch `gather-infer-v1`).
   */
  gatherInfer?: boolean | (() => boolean);
  /**
   * The answer to a GATHER opened by a flow branch fills that GATHER, then the branch's THEN
   * follows (before, the answer went to the step's own GATHER, or nowhere, and the step went on).
   * On unless false; a function is asked only when such an answer arrives (patch `branch-gather-v1`).
   */
  branchGather?: boolean | (() => boolean);
  /**
   * GATHER fields' `depends_on` and `activation` (`{when}`, `progressive`) decide which fields are
   * asked and count toward completion, a `default` fills an unset active field, a number field's
   * `range` validates, a `list` field takes several values and a `transient` one is cleared when its
   * step is left. On unless
   * false; a function is asked only for a GATHER whose fields use them (patch `gather-field-rules-v1`).
   */
  gatherFieldRules?: boolean | (() => boolean);
  /**
   * TRANSFORM `sort_by` orders text by UTF-16 code units, the same on every worker; before, it used
   * `localeCompare` with the worker's default locale. On unless false; a function is asked only when
   * a sort compares values that are not both numbers (patch `code-unit-sort-v1`).
   */
  codeUnitSort?: boolean | (() => boolean);
  /**
   * A tool's `pii_access` / `context_access` limit the arguments and message metadata it receives.
   * On unless false; a function is asked only when a tool with such a limit is called (patch
   * `tool-access-v1`).
   */
  toolAccess?: boolean | (() => boolean);
  /**
   * A tool's `confirmation` (require: always, or when_side_effects on a tool with side effects)
   * asks the user before the call and runs it only on a yes. On unless false; a function is asked
   * only when such a call is about to be made (patch `tool-confirmation-v1`).
   */
  toolConfirmation?: boolean | (() => boolean);
  /**
   * HANDOFF `ON_RETURN` other than `continue` acts when the child returns: a step name moves the
   * parent's FLOW there and runs it in the same turn, an instruction goes to the parent's next
   * reasoning call, `resume_intent` hands the triggering message to the parent again. On unless
   * false; a function is asked only when such a return happens (patch `handoff-return-actions-v1`).
   */
  handoffReturnActions?: boolean | (() => boolean);
  /**
   * A flow step whose CALL was blocked while the session started is not run again by the first
   * message, which arrives in the same turn (its ON_FAIL message was sent once already); the next
   * message runs it. On unless false; a function is asked only when that first message arrives
   * (patch `start-block-hold-v1`).
   */
  startBlockHold?: boolean | (() => boolean);
  /**
   * A first message that arrives with the session's start (`user_message.withStart`) and leaves
   * the field the start's step GATHER just asked missing is not a failed answer: the question,
   * said once already in that reply, is not said again and no retry is counted. On unless false; a
   * function is asked only when that would happen (patch `start-gather-hold-v1`).
   */
  startGatherHold?: boolean | (() => boolean);
  /**
   * An escalation tells the user it was passed on (MESSAGES.escalated, else a default notice)
   * unless what escalated said its own message first: a branch's or step's RESPOND before its
   * THEN: ESCALATE, an ON_ERROR handler's. Off, the notice is said only when nothing else was said
   * in the turn. On unless false; a function is asked only when the two differ (patch
   * `escalation-notice-v1`).
   */
  escalationNotice?: boolean | (() => boolean);
  /**
   * An agent's NLU section classifies each user message (`call_llm`, purpose `classification`)
   * into `intent.*` before the rest of its turn. On unless false; a function is asked only when
   * such an agent gets a message, and must give the same answer for the whole turn (patch `nlu-v1`).
   */
  nlu?: boolean | (() => boolean);
  /**
   * Provider guardrails (`provider`, `category`, `threshold`) ask the moderation provider with a
   * `moderate` command. On unless false; a function is asked only when such a guardrail is about
   * to run (patch `moderation-guardrails-v1`); off, they do not run.
   */
  moderationGuardrails?: boolean | (() => boolean);
  /**
   * Agent memory: RESET policies other than `per_session`, ACCESS and `grant_memory` enforced,
   * `remember` TTLs and writes recorded for the workflow to save (`memoryWrites`), and `recall`
   * run. On unless false; a function is asked only when an agent's memory is used (patch
   * `agent-memory-v1`).
   */
  agentMemory?: boolean | (() => boolean);
  /**
   * Guardrail actions `fix`, `reask`, `filter` and `escalate` act (they only logged, as `warn`,
   * before), and `llm_check` guardrails ask the model. On unless false; a function is asked only
   * when such a guardrail fires or judges (patch `guardrail-actions-v1`).
   */
  guardrailActions?: boolean | (() => boolean);
  /**
   * GATHER `range` bounds dates, datetimes and text lengths as well as numbers, and `transient`
   * clears a top-level (agent) GATHER field once the turn that gathered it ends. On unless false;
   * a function is asked only when such a field is checked or cleared (patch `gather-ranges-v1`).
   */
  gatherRanges?: boolean | (() => boolean);
  /**
   * IS_NUMBER is true for text that reads as a number, such as ON_INPUT's `input` ("42"). On
   * unless false; a function is asked only when IS_NUMBER gets such text (patch `numeric-text-v1`).
   */
  numericText?: boolean | (() => boolean);
  /**
   * `__fan_out__` may also target DELEGATE entries with an expression WHEN while it holds. On unless
   * false; a function is asked only for an agent that has such an entry (patch `fan-out-when-v1`).
   */
  fanOutWhen?: boolean | (() => boolean);
  /**
   * An LLM answer that mixes ordinary tool calls with control calls (`delegate_to_<A>`,
   * `__fan_out__`, handoff, complete, escalate) issues its ordinary calls together first, then runs
   * the others in the answer's order. Needs `parallelToolCalls`. On unless false; a function is asked
   * only for such an answer (patch `mixed-parallel-tools-v1`).
   */
  mixedParallelTools?: boolean | (() => boolean);
  /**
   * HOOKS `after_agent` also runs when a delegated child fails and when an agent escalates to a
   * human. On unless false; a function is asked only when such a hook would run (patch
   * `failure-hooks-v1`).
   */
  failureHooks?: boolean | (() => boolean);
  /**
   * A step's digression whose INTENT is one of the agent's NLU intents is taken when the NLU
   * classification (the model, else PATTERNS) names that intent, after no phrase matched. On unless
   * false; a function is asked only when that would take a digression (patch `digression-intents-v1`).
   */
  digressionIntents?: boolean | (() => boolean);
}
