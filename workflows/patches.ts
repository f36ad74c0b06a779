// Workflow patch ids introduced for interpreter behaviour (see test/fixtures/histories/README.md).
// Each is checked with `wf.patched(...)` by every workflow that drives the interpreter.
import * as wf from '@temporalio/workflow';

/**
 * tool_input / tool_output / handoff guardrails and `BEFORE returning results` constraints
 * (`RuntimeOptions.ruleCheckpoints`). Runs recorded before them replay with the checkpoints off:
 * a guardrail could otherwise block a tool call the history shows as made.
 */
export const RULE_CHECKPOINTS_PATCH = 'rule-checkpoints-v1';

/**
 * Flow DIGRESSIONS / SUB_INTENTS / global_digressions (`RuntimeOptions.digressions`). Runs recorded
 * before them replay with digressions off: a message the history shows filling a GATHER field or
 * answering ON_INPUT would otherwise be taken by a digression.
 */
export const DIGRESSIONS_PATCH = 'digressions-v1';

/**
 * HOOKS `before_agent` / `after_agent` (`RuntimeOptions.agentHooks`). Runs recorded before them
 * replay with those hooks off: a hook's CALL would otherwise issue a tool call the history does
 * not have, and its SET/RESPOND change what later turns see.
 */
export const AGENT_HOOKS_PATCH = 'agent-hooks-v1';

/**
 * GATHER `STRATEGY: llm|hybrid` in flow steps asks the model (`call_llm`, purpose `extraction`;
 * `RuntimeOptions.gatherLlm`), and LLM-judged validate rules of step and top-level GATHER fields
 * are judged (purpose `validation`). Runs recorded before it replay with every strategy as
 * `pattern` and those rules ignored: the history has no such call where the new code would make one.
 */
export const GATHER_LLM_PATCH = 'gather-llm-v1';

/**
 * Delegation guards at run time (ABL.md §9: no self-delegation, no cycles, depth ≤ 10): a DELEGATE
 * that would start a child deeper than MAX_DELEGATION_DEPTH, or one whose agent is already on the
 * chain above it, fails without a child. Checked only when a guard refuses, so histories where no
 * guard fires carry no marker; a run recorded before it replays starting the child it started.
 */
export const DELEGATION_GUARDS_PATCH = 'delegation-guards-v1';

/**
 * ON_ERROR's THEN after a model failure, and `max_retries` of an agent-level GATHER field
 * (`RuntimeOptions.agentErrorTransitions`): a reasoning agent's `llm_error` handler with THEN
 * COMPLETE or ESCALATE now does that (it only responded before), a failure in a flow's reasoning
 * step goes where the handler says instead of on to the step's THEN, and a top-level GATHER field
 * is re-asked at most `max_retries` times before a `validation_error` (it was re-asked without
 * limit). Asked only when one of these would happen, so histories where none does carry no marker.
 */
export const AGENT_ERROR_TRANSITIONS_PATCH = 'agent-error-transitions-v1';

/**
 * GATHER `infer` (`RuntimeOptions.gatherInfer`): an open field with `infer: true` may be inferred by
 * the model in an extraction call that carries the conversation, then used, confirmed with the user
 * or dropped by its `infer_confidence` / `infer_confirm`. Runs recorded before it never made that
 * call. Asked only when such a field is open, so histories of agents without `infer` carry no marker.
 */
export const GATHER_INFER_PATCH = 'gather-infer-v1';

/**
 * A GATHER opened by a flow branch (ON_FAIL, ON_RESULT, …; `RuntimeOptions.branchGather`): the
 * user's answer fills that GATHER and the branch's THEN follows, and a digression's RESUME asks its
 * question again. Runs recorded before it gave the answer to the step's own GATHER (or to nothing)
 * and went on with the step. Asked only when such an answer (or RESUME) arrives.
 */
export const BRANCH_GATHER_PATCH = 'branch-gather-v1';

/**
 * GATHER fields' `depends_on`, `activation` (`{when}`, `progressive`), `default`, `range`, `list`
 * and `transient` (`RuntimeOptions.gatherFieldRules`): they decide which fields are asked and count toward
 * completion, a default fills a field nobody gave, a number range validates, a list takes several
 * values, a transient one is cleared when its step is left. Runs recorded before asked every field in order and ignored them. Asked only for a
 * GATHER whose fields use one of them.
 */
export const GATHER_FIELD_RULES_PATCH = 'gather-field-rules-v1';

/**
 * TRANSFORM `sort_by` orders text by code units (`RuntimeOptions.codeUnitSort`), the same on every
 * worker. Runs recorded before it sorted with `localeCompare` in the worker's default locale and replay
 * that way. Asked only when a sort compares values that are not both numbers.
 */
export const CODE_UNIT_SORT_PATCH = 'code-unit-sort-v1';

/**
 * EXECUTION `session_idle_timeout`: the session ends after the active agent's own idle time instead
 * of the platform's SESSION_IDLE_TIMEOUT_MS. Runs recorded before it armed their idle timers with the
 * platform's value. Asked once per run, only when an agent of the project sets it.
 */
export const AGENT_IDLE_TIMEOUT_PATCH = 'agent-idle-timeout-v1';

/**
 * A tool's `pii_access` / `context_access` (`RuntimeOptions.toolAccess`): PII and sensitive GATHER
 * values in its arguments are masked or withheld, and it receives only the listed message metadata
 * keys. Runs recorded before it sent the arguments and metadata whole (the keys were stored and
 * ignored). Asked only when a tool with such a limit is called, so other histories carry no marker.
 */
export const TOOL_ACCESS_PATCH = 'tool-access-v1';

/**
 * An agent's NLU section classifies each user message (`RuntimeOptions.nlu`): one `call_llm`
 * (purpose `classification`) before the rest of the agent's turn, its answer in `intent.*`. Runs
 * recorded before it kept NLU as an unexecuted section and made no such call. Asked only when an
 * agent with NLU intents gets a message, so histories of other agents carry no marker.
 */
export const NLU_PATCH = 'nlu-v1';

/**
 * A lazily asked patch for the interpreter's options. The first answer is kept for the rest of the
 * run: a turn is replayed by the interpreter each time a result arrives, and `patched` (false while
 * replaying an old run) turns true once replay reaches live execution, which would switch a turn
 * begun on the old path to the new one halfway through.
 */
export function patchDecidedOnce(patchId: string): () => boolean {
  let decided: boolean | undefined;
  return () => (decided ??= wf.patched(patchId));
}

/**
 * Async tools send their request and wait for a signed callback or the suspension's expiry.
 * Runs recorded before it only traced the pause and waited until the idle timeout ended them.
 */
export const ASYNC_TOOLS_PATCH = 'async-tools-v1';

/**
 * HANDOFF `ON_RETURN` with a step name, an instruction or `resume_intent`
 * (`RuntimeOptions.handoffReturnActions`): when the child returns, the parent's FLOW moves to the
 * step and runs it in the same turn, the instruction joins the parent's next reasoning call, or the
 * triggering message is handed to the parent again. Runs recorded before it continued as with
 * `continue` (the parent waited for the next message). Asked only when such a return happens.
 */
export const HANDOFF_RETURN_ACTIONS_PATCH = 'handoff-return-actions-v1';

/**
 * A flow step whose CALL a constraint or guardrail blocked during the session start is not run
 * again by the first message (`RuntimeOptions.startBlockHold`): the start and that message are one
 * turn of the API, so the step's ON_FAIL message was sent twice. Runs recorded before it ran the
 * step again (and, had the message changed what the constraint checks, called the tool). Asked
 * only when such a first message arrives.
 */
export const START_BLOCK_HOLD_PATCH = 'start-block-hold-v1';

/**
 * A first message that came with the session's start and leaves the field the first step's GATHER
 * asked as the session started missing (`RuntimeOptions.startGatherHold`) is not a failed answer:
 * the start and that message are one turn of the API, so the question was said twice in one reply
 * ("Hi" got "Which order…?" twice). Runs recorded before it asked again (a retry for a message that
 * gave nothing). Asked only when such a first message arrives.
 */
export const START_GATHER_HOLD_PATCH = 'start-gather-hold-v1';

/**
 * An escalation says its notice (MESSAGES.escalated, else "I have passed this to a member of our
 * team…") unless what escalated said its own message first (`RuntimeOptions.escalationNotice`).
 * Runs recorded before it said the notice only when nothing else was said in the turn, so a trigger
 * that fired after a step's reply, or in a turn a callback resumed, told the user nothing. Asked
 * only when the two rules differ, so other histories carry no marker.
 */
export const ESCALATION_NOTICE_PATCH = 'escalation-notice-v1';

/**
 * ESCALATE creates a human task: a `human-task/<taskId>` workflow the session starts (and
 * abandons, so the task outlives its runs), and the session waits for its outcome. Runs recorded
 * before it only traced the escalation and waited until the idle timeout ended them. Asked only
 * when an escalation happens, so other histories carry no marker.
 */
export const HUMAN_TASKS_PATCH = 'human-tasks-v1';

/**
 * Before it starts a human task, a session asks whether the project has room for one more open
 * task (HUMAN_TASK_MAX_OPEN_PER_PROJECT, a local activity); without room the escalation resumes at
 * once as an expired one, as when the task cannot be started. Runs recorded before it started the
 * task without asking. Asked at each escalation.
 */
export const HUMAN_TASK_ROOM_PATCH = 'human-task-room-v1';

/**
 * A session that ends while it waits on a human task (idle timeout, the end signal of a delete or
 * a deployment drain, COMPLETE) signals the task to cancel itself, and traces it. Runs recorded
 * before it left the task open until its DUE, or for ever. Asked only when a session ends while
 * it waits on a task, so other histories carry no marker.
 */
export const SESSION_END_CANCELS_TASK_PATCH = 'session-end-cancels-task-v1';

/**
 * Provider guardrails (`provider`, `category`, `threshold`; `RuntimeOptions.moderationGuardrails`):
 * the guardrail's text goes to the moderation provider as a `moderate` command (a `moderate`
 * activity). Runs recorded before it never made that call. Asked only when such a guardrail is
 * about to run, so histories of agents without one carry no marker.
 */
export const MODERATION_GUARDRAILS_PATCH = 'moderation-guardrails-v1';

/**
 * A session does not continue as new while a callback's result is waiting to be taken or the
 * resume it started is still running: a callback (or a suspension's expiry) that comes while the
 * rollover writes its held rows is handled in this run, which then rolls over again. Runs recorded
 * before it continued as new regardless, cutting such a resume off. Asked only when that happens.
 */
export const CALLBACK_AT_ROLLOVER_PATCH = 'callback-at-rollover-v1';

/**
 * A human task writes its projection with a regular activity, scheduled once the workflow task
 * that made the transition is committed. A local activity runs inside that workflow task: when the
 * server refused the task's completion (updates that arrived meanwhile), its write had already
 * happened, and the retried task could let another of the racing resolves win, leaving the
 * projection with a resolution the workflow never kept. Runs recorded before it replay with the
 * local activity. Asked once, when the task workflow starts.
 */
export const HUMAN_TASK_PROJECTION_ACTIVITY_PATCH = 'human-task-projection-activity-v1';

/**
 * A cancellation request (the Temporal Web UI, `temporal workflow cancel`) cancels the task, as
 * the cancel update does, and the task tells its session and ends; before it, the request
 * cancelled the task's timer and the workflow closed with the task still open in the projection.
 * Tasks started before it keep the old behaviour. Asked once, when the task workflow starts.
 */
export const HUMAN_TASK_CANCEL_REQUEST_PATCH = 'human-task-cancel-request-v1';

/**
 * A cancellation request to a voice room's workflow closes the room as its end signal does (the
 * voice agent asked to leave, the room closed on LiveKit, the record ended, the place given back);
 * before it, the request cancelled the close too and the room waited for the reconciler. Rooms
 * started before it keep the old behaviour. Asked once, when the room's workflow starts.
 */
export const VOICE_ROOM_CANCEL_REQUEST_PATCH = 'voice-room-cancel-request-v1';

/**
 * A cancellation request to an outbound call's workflow ends the call as its terminate update does
 * (cancelled at the provider before it connects, hung up after, its session ended); before it, the
 * request cancelled the workflow's timers and the call was left to the provider. Calls started
 * before it keep the old behaviour. Asked once, when the call's workflow starts.
 */
export const OUTBOUND_CALL_CANCEL_REQUEST_PATCH = 'outbound-call-cancel-request-v1';

/**
 * `type: sandbox` tools run their code (the `runSandboxTool` activity) instead of failing at once
 * with "cannot run yet". Runs recorded before it replay that failure. Asked only when a sandbox
 * tool is called without a test mock, so other histories carry no marker.
 */
export const SANDBOX_TOOLS_PATCH = 'sandbox-tools-v1';

/**
 * `type: mcp` tools call their project's MCP server (the `runMcpTool` activity) and `type: lambda`
 * tools run their function from the project's registry (`runLambdaTool`) instead of failing at once
 * with "cannot run yet". Runs recorded before it replay that failure. Asked only when such a tool
 * is called without a test mock, so other histories carry no marker.
 */
export const MCP_LAMBDA_TOOLS_PATCH = 'mcp-lambda-tools-v1';

/**
 * Agent memory (`RuntimeOptions.agentMemory`): a session whose agents use MEMORY (or that has a
 * contact) loads its persistent facts and `RESET: never` variables at its start and saves what a
 * turn changed after it (local activities), exposes its contact as `user.*`, and the interpreter
 * applies RESET policies, ACCESS, `grant_memory`, TTLs and recall. Runs recorded before it kept
 * facts in the session's state only. Asked only for such sessions, so other histories carry no marker.
 */
export const AGENT_MEMORY_PATCH = 'agent-memory-v1';

/**
 * Guardrail actions `fix`, `reask`, `filter` and `escalate` (`RuntimeOptions.guardrailActions`):
 * a fix corrects the text, a reask asks the user to rephrase (then blocks), a filter removes the
 * check's matches, an escalate holds the content for a person (a human task); and an `llm_check`
 * guardrail asks the model (`call_llm`, purpose `validation`). Runs recorded before it logged those
 * actions as `warn` and never judged an llm_check. Asked only when such a guardrail fires or judges.
 */
export const GUARDRAIL_ACTIONS_PATCH = 'guardrail-actions-v1';

/**
 * GATHER `range` on date, datetime and text fields, and `transient` on top-level GATHER fields
 * (`RuntimeOptions.gatherRanges`): a value outside the range is refused and asked again; a
 * transient top-level field is cleared at the end of the turn that used it. Runs recorded before it
 * ignored both. Asked only when such a field is checked or cleared.
 */
export const GATHER_RANGES_PATCH = 'gather-ranges-v1';

/**
 * IS_NUMBER is true for text that reads as a number (`RuntimeOptions.numericText`), so
 * `IF: is_number(input)` in ON_INPUT matches a numeric answer. Runs recorded before it took only
 * numbers (never ON_INPUT's text). Asked only when IS_NUMBER gets such text.
 */
export const NUMERIC_TEXT_PATCH = 'numeric-text-v1';

/**
 * `__fan_out__` may target DELEGATE entries with an expression WHEN while it holds
 * (`RuntimeOptions.fanOutWhen`). Runs recorded before it refused those targets. Asked only for an
 * agent that has such an entry, so other histories carry no marker.
 */
export const FAN_OUT_WHEN_PATCH = 'fan-out-when-v1';

/**
 * An LLM answer that mixes ordinary tool calls with control calls issues its ordinary calls
 * together, then runs the control calls in order (`RuntimeOptions.mixedParallelTools`). Runs
 * recorded before it ran every call one after another. Asked only for such an answer.
 */
export const MIXED_PARALLEL_TOOLS_PATCH = 'mixed-parallel-tools-v1';

/**
 * HOOKS `after_agent` runs when a delegated child fails and when an agent escalates
 * (`RuntimeOptions.failureHooks`). Runs recorded before it ran nothing there. Asked only when an
 * agent with an `after_agent` block fails or escalates.
 */
export const FAILURE_HOOKS_PATCH = 'failure-hooks-v1';

/**
 * A digression whose INTENT is one of the agent's NLU intents is taken when the turn's
 * classification names it (`RuntimeOptions.digressionIntents`). Runs recorded before it matched
 * phrases only. Asked only when that would take a digression.
 */
export const DIGRESSION_INTENTS_PATCH = 'digression-intents-v1';

/**
 * A session that ends from outside (the API's end, an idle timeout, a drain) runs its active
 * agent's HOOKS `after_agent` first: the interpreter's `end` event, whose CALLs run as activities.
 * Runs recorded before it ended without it. Asked only when the active agent has such a block.
 */
export const SESSION_END_HOOKS_PATCH = 'session-end-hooks-v1';

/**
 * `type: workflow` tools start a workflow the worker offers to agents (workflows/agent-workflows.ts)
 * as a child: `sync` waits for its result, `async` answers with its id at once. Runs recorded
 * before it failed such a call at once ("cannot run yet"). Asked only when such a tool is called
 * without a test mock.
 */
export const WORKFLOW_TOOLS_PATCH = 'workflow-tools-v1';

/**
 * An HTTP tool's call is tried exactly `retry` + 1 times (`retry_policy.max_retries` when written),
 * and the activity waits the tool's own retry delay, rate-limit slot and circuit breaker; runs
 * recorded before it scheduled at least 3 attempts 500 ms apart, doubling. Asked at each HTTP tool
 * call that is not mocked, so histories of agents without such calls carry no marker.
 */
export const TOOL_RETRY_SETTINGS_PATCH = 'tool-retry-settings-v1';

/**
 * A tool's `confirmation` (`RuntimeOptions.toolConfirmation`): the call waits for the user's yes
 * (a `confirm_tool` command, answered from the next message) and a no fails it. Runs recorded
 * before it made the call at once. Asked only when such a call is about to be made.
 */
export const TOOL_CONFIRMATION_PATCH = 'tool-confirmation-v1';

/**
 * A callback that arrives while the turn that made its async call is still running (the signal
 * handled before the call's activity result, so before the session waits on it) is kept and
 * applied once the session waits on that call; runs recorded before it dropped it and waited on
 * until the suspension expired. Asked only when such an early callback is there to apply.
 */
export const EARLY_CALLBACK_PATCH = 'early-callback-v1';
