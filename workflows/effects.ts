// Executes the interpreter's commands inside a workflow: LLM and tool calls as activities,
// delegations as child workflows (at most four at once), escalations and suspensions as trace
// decisions. Shared by AgentSession and Delegation, so a child agent runs exactly like a parent.
import * as wf from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { CompilationOutput, Json, ToolIR, VoiceOutputIR } from '../abl/ir';
import { toolRetryDelayMs, toolRetryPlan } from '../abl/tool-retry';
import { SENSITIVE_MASK } from '../abl/gather';
import { pickContext } from '../abl/tool-access';
import type { AdvanceResult, DelegateOutcome, LlmRequestSpec, RuntimeCommand, RuntimeEvent } from '../abl/runtime/contract';
import type { Interpreter } from '../abl/runtime';
import type { HumanTaskPriority, HumanTaskStartInput, SessionStartInput, SessionStats, TurnTestContext, WaitingCallback } from './definitions';
import type { TurnTrace } from './session-trace';
import type { DelegationInput, DelegationWorkflow } from './delegation-contract';
import { initialTaskView } from './human-task-rules';
import { type humanTaskWorkflow } from './human-task';
import { ASYNC_TOOLS_PATCH, DELEGATION_GUARDS_PATCH, HUMAN_TASK_ROOM_PATCH, HUMAN_TASKS_PATCH, MCP_LAMBDA_TOOLS_PATCH, SANDBOX_TOOLS_PATCH, TOOL_RETRY_SETTINGS_PATCH, WORKFLOW_TOOLS_PATCH } from './patches';
import { type AgentWorkflowInput, mapWorkflowInput, resolveAgentWorkflow } from './agent-workflows';
import { AgentNameKey, AssigneeKey, SessionStatusKey, TaskPriorityKey, TaskStatusKey, TaskTypeKey } from './search-attributes';
import { boostedPriority, priorityNumber } from './human-task-rules';

const RETRY = { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '15 seconds' } as const;
const LLM_RETRY = { ...RETRY, maximumAttempts: 5 } as const;
const { callLlm } = wf.proxyActivities<Activities>({ startToCloseTimeout: '90 seconds', retry: LLM_RETRY });
// The offline model answers in well under a millisecond: as a local activity it costs no
// task-queue hop, and a crash merely re-runs a free, deterministic call.
const { callLlmIfLocal } = wf.proxyLocalActivities<Activities>({ startToCloseTimeout: '10 seconds', retry: { ...RETRY, maximumAttempts: 5 } });

/**
 * Short MongoDB work (turn persistence, bundle loading, the offline model) runs as local
 * activities. Runs recorded before that change replay their regular activities: every point
 * that picks between the two asks `patched`, which is false only while replaying such history.
 */
export const LOCAL_ACTIVITIES_PATCH = 'local-activities-v1';

/**
 * A tool's activity lives as long as the tool's own timeout plus a margin, so a worker that dies
 * mid-call is noticed quickly and the call is retried elsewhere. ABL's `retry` adds attempts.
 */
function toolActivity(timeoutMs: number, retries: number, tool: ToolIR) {
  // Runs recorded before the tool's own retry settings were honoured replay with at least 3 attempts.
  if (!wf.patched(TOOL_RETRY_SETTINGS_PATCH)) {
    return wf.proxyActivities<Activities>({
      startToCloseTimeout: timeoutMs + 5_000,
      retry: { ...RETRY, maximumAttempts: Math.max(3, retries + 1) },
    }).callTool;
  }
  // Retry + 1 calls: the activity makes a failure final on its last one. Temporal allows
  // WORKER_LOSS_ATTEMPTS more, so a call lost with its worker is made again on another. Each retry
  // starts at once; the activity waits the tool's own delay first (retry_delay / retry_policy, with
  // jitter and a linear strategy Temporal lacks), and may wait for a rate_limit slot: it lives long
  // enough for both.
  const plan = toolRetryPlan(tool);
  return wf.proxyActivities<Activities>({
    startToCloseTimeout: timeoutMs + toolRetryDelayMs(plan.policy, plan.attempts + WORKER_LOSS_ATTEMPTS - 1, 0) + rateWaitMs(tool, timeoutMs) + 5_000,
    retry: { initialInterval: '1 millisecond', backoffCoefficient: 1, maximumAttempts: plan.attempts + WORKER_LOSS_ATTEMPTS },
  }).callTool;
}

/** The longest a sandbox call may run (the activity's MAX_SANDBOX_TIMEOUT_MS). */
const MAX_SANDBOX_TIMEOUT_MS = 180_000;

/**
 * A sandbox tool's activity lives a little longer than the call's own timeout, which the activity
 * enforces itself. It is never retried: the code may have written to a memory store before it failed.
 */
function sandboxActivity(timeoutMs: number) {
  return wf.proxyActivities<Activities>({
    startToCloseTimeout: Math.min(Math.max(1, timeoutMs), MAX_SANDBOX_TIMEOUT_MS) + 5_000,
    retry: { maximumAttempts: 1 },
  }).runSandboxTool;
}

/** A lambda tool runs its registry function in the sandbox: the same lifetime and no retry. */
function lambdaActivity(timeoutMs: number) {
  return wf.proxyActivities<Activities>({
    startToCloseTimeout: Math.min(Math.max(1, timeoutMs), MAX_SANDBOX_TIMEOUT_MS) + 5_000,
    retry: { maximumAttempts: 1 },
  }).runLambdaTool;
}

/**
 * An MCP call's activity enforces the tool's timeout itself (connection, listing and call). Only a
 * failure before the call was sent (no connection, a failed listing) is retryable: a call that may
 * have reached the server is never repeated.
 */
function mcpActivity(timeoutMs: number) {
  return wf.proxyActivities<Activities>({
    startToCloseTimeout: timeoutMs + 5_000,
    retry: { ...RETRY, maximumAttempts: 3 },
  }).runMcpTool;
}

/**
 * A model call's activity lives as long as the agent's llm_timeout lets the call run (twice when a
 * fallback model may follow) plus a margin: the activity enforces the timeout itself, and a worker
 * that dies mid-call is noticed soon after.
 */
function llmActivity(request: LlmRequestSpec) {
  if (!request.timeoutMs) return callLlm;
  const calls = request.fallbackModel ? 2 : 1;
  return wf.proxyActivities<Activities>({ startToCloseTimeout: request.timeoutMs * calls + 5_000, retry: LLM_RETRY }).callLlm;
}

/** A provider guardrail's moderation call: short, cheap, retried a little; a failure goes to the guardrail's on_error. */
const { moderate } = wf.proxyActivities<Activities>({ startToCloseTimeout: '30 seconds', retry: { ...RETRY, maximumAttempts: 3 } });

/**
 * The moderation verdict for a provider guardrail. A failure becomes a failed result: the
 * interpreter applies the guardrail's on_error and traces it (so it is counted once, there).
 */
async function runModeration(ctx: EffectContext, command: Extract<RuntimeCommand, { type: 'moderate' }>): Promise<RuntimeEvent> {
  try {
    const answer = await moderate({
      tenantId: ctx.tenantId,
      projectId: ctx.projectId,
      sessionId: ctx.sessionId,
      agent: command.agent,
      guardrail: command.guardrail,
      provider: command.provider,
      text: command.text,
    });
    return { type: 'moderation_result', commandId: command.id, ok: true, ...answer };
  } catch (err) {
    return { type: 'moderation_result', commandId: command.id, ok: false, error: failureOf(err) };
  }
}

/** Attempts a tool call gets beyond its own `retry` + 1, for calls lost with their worker (never for the endpoint's failures). */
const WORKER_LOSS_ATTEMPTS = 2;

/** The longest a call waits for a rate_limit slot (activities/tools/tool-guards.ts MAX_RATE_LIMIT_WAIT_MS). */
const MAX_RATE_LIMIT_WAIT_MS = 5_000;
const rateWaitMs = (tool: ToolIR, timeoutMs: number): number =>
  tool.binding.type === 'http' && tool.binding.rate_limit !== null ? Math.min(MAX_RATE_LIMIT_WAIT_MS, timeoutMs) : 0;

const MAX_DELEGATIONS_AT_ONCE = 4;

export interface EffectContext {
  tenantId: string;
  projectId: string;
  sessionId: string;
  /** The session's environment: its tools' secrets come from it (`dev` when absent). */
  environment?: string;
  /** The session's deployment: its workflowVersionManifest pins `type: workflow` tools' versions. */
  deploymentId?: string | null;
  bundleRef: SessionStartInput['bundleRef'];
  compiled: CompilationOutput;
  trace: TurnTrace;
  stats: SessionStats;
  mocks: Map<string, NonNullable<TurnTestContext['toolMocks']>[number]>;
  messageMetadata?: Record<string, unknown>;
  /** Unique prefix for child workflow ids started by this run. */
  childIdPrefix: string;
  /**
   * The agents that delegated down to this run, outermost first (empty in a session): a DELEGATE
   * is refused when its agent is on it or the child would be deeper than MAX_DELEGATION_DEPTH.
   */
  delegationChain: readonly string[];
  /** Set when an async tool call starts waiting for its callback: the session then waits on it. */
  waiting?: WaitingCallback | null;
  /** Agent memory a delegated child gets (agent-memory.ts); absent in runs without it. */
  memory?: () => DelegationInput['memory'] | undefined;
  /** The streamed turn its reply's text is published to (TurnUpdateInput.streamId); absent otherwise. */
  streamId?: string;
}

/**
 * The stream a call's text may go to: only a reply's (`reasoning`) call, and only when the agent
 * has no output guardrail, which may redact or block the text after it was generated.
 */
function streamOf(ctx: EffectContext, command: Extract<RuntimeCommand, { type: 'call_llm' }>): { streamId: string } | Record<string, never> {
  if (!ctx.streamId || command.purpose !== 'reasoning') return {};
  if (ctx.compiled.agents[command.agent]?.guardrails.some((g) => g.kind === 'output')) return {};
  return { streamId: ctx.streamId };
}

/** How deep delegated agents may nest (a session's own agent is depth 0). ABL.md §9. */
export const MAX_DELEGATION_DEPTH = 10;

/** Why a DELEGATE may not start its child, or null when it may. */
export function delegationRefusal(chain: readonly string[], fromAgent: string, toAgent: string): string | null {
  const path = [...chain, fromAgent];
  if (path.includes(toAgent)) return `Delegation from ${fromAgent} to ${toAgent} refused: ${[...path, toAgent].join(' → ')} is a cycle`;
  if (path.length > MAX_DELEGATION_DEPTH) return `Delegation from ${fromAgent} to ${toAgent} refused: it would nest delegated agents deeper than ${MAX_DELEGATION_DEPTH}`;
  return null;
}

export function failureOf(err: unknown): { kind: string; message: string } {
  if (err instanceof wf.ActivityFailure || err instanceof wf.ChildWorkflowFailure) {
    const cause = err.cause;
    if (cause instanceof wf.ApplicationFailure) return { kind: cause.type ?? 'error', message: cause.message };
    if (cause instanceof wf.TimeoutFailure) return { kind: 'timeout', message: 'timed out' };
    return { kind: 'error', message: cause?.message ?? err.message };
  }
  return { kind: 'error', message: err instanceof Error ? err.message : String(err) };
}

const LOCAL_NOTES: Partial<Record<Extract<RuntimeCommand, { type: 'call_llm' }>['purpose'], string>> = {
  extraction: 'extracted by the offline local model (the deterministic pattern extractor), not a real LLM',
  validation: 'accepted by the offline local model without judging the rule, not a real LLM',
  classification: 'classified by the offline local model (patterns and example overlap), not a real LLM',
};

async function runLlm(ctx: EffectContext, command: Extract<RuntimeCommand, { type: 'call_llm' }>): Promise<RuntimeEvent> {
  const started = Date.now();
  try {
    const input = { tenantId: ctx.tenantId, projectId: ctx.projectId, sessionId: ctx.sessionId, agent: command.agent, request: command.request, ...streamOf(ctx, command) };
    const result = (wf.patched(LOCAL_ACTIVITIES_PATCH) ? await callLlmIfLocal(input) : null) ?? (await llmActivity(command.request)(input));
    ctx.stats.tokenCount += result.usage.totalTokens;
    ctx.stats.estimatedCost += result.estimatedCost ?? 0;
    ctx.trace.add('llm_call', {
      agent: command.agent,
      purpose: command.purpose,
      model: result.model,
      provider: result.provider,
      usage: { inputTokens: result.usage.inputTokens, outputTokens: result.usage.outputTokens },
      latencyMs: result.latencyMs,
      finishReason: result.finishReason,
      estimatedCost: result.estimatedCost,
      ...(result.fallbackFrom ? { fallbackFrom: result.fallbackFrom } : {}),
      ...(result.provider === 'local'
        ? { note: LOCAL_NOTES[command.purpose] ?? 'produced by the offline local model, not a real LLM' }
        : {}),
    });
    return { type: 'llm_result', commandId: command.id, ok: true, content: result.content, toolCalls: result.toolCalls };
  } catch (err) {
    const error = failureOf(err);
    ctx.stats.errorCount++;
    ctx.trace.add('error', { agent: command.agent, source: 'llm', kind: error.kind, message: error.message, durationMs: Date.now() - started });
    return { type: 'llm_result', commandId: command.id, ok: false, error };
  }
}

/** A tool's arguments as the trace shows them: values of `sensitive` GATHER fields masked. */
function maskArgs(args: Record<string, Json>, sensitive: readonly string[] | undefined): Record<string, Json> {
  if (!sensitive?.length) return args;
  return Object.fromEntries(Object.entries(args).map(([k, v]) => [k, sensitive.includes(k) ? SENSITIVE_MASK : v]));
}

/** `before`: the previous call of the same batch; results are recorded in the order asked for. */
async function runTool(ctx: EffectContext, command: Extract<RuntimeCommand, { type: 'call_tool' }>, before: Promise<unknown>): Promise<RuntimeEvent> {
  const started = Date.now();
  const declared = ctx.compiled.agents[command.agent]?.tools.find((t) => t.name === command.tool);
  // MCP and lambda calls say which kind of binding ran (and the MCP server) in their trace.
  const kind = declared?.binding.type === 'mcp' ? { toolType: 'mcp', server: declared.binding.server } : declared?.binding.type === 'lambda' ? { toolType: 'lambda', function: declared.binding.function } : {};
  const callSpan = ctx.trace.add('tool_call', { agent: command.agent, tool: command.tool, ...kind, input: maskArgs(command.args, command.sensitiveArgs) });
  const mock = ctx.mocks.get(command.tool);
  let event: RuntimeEvent;
  if (mock) {
    event = mock.error
      ? { type: 'tool_result', commandId: command.id, ok: false, error: { kind: 'tool_error', message: mock.error } }
      : { type: 'tool_result', commandId: command.id, ok: true, value: (mock.response ?? null) as Json };
  } else {
    const tool = declared;
    // Sandbox tools run only in runs recorded with the marker (asked only for such a call).
    const runsSandbox = tool?.binding.type === 'sandbox' && wf.patched(SANDBOX_TOOLS_PATCH);
    // So do workflow tools (their own marker), and MCP and lambda tools (theirs).
    const runsWorkflow = tool?.binding.type === 'workflow' && wf.patched(WORKFLOW_TOOLS_PATCH);
    const runsMcp = tool?.binding.type === 'mcp' && wf.patched(MCP_LAMBDA_TOOLS_PATCH);
    const runsLambda = tool?.binding.type === 'lambda' && wf.patched(MCP_LAMBDA_TOOLS_PATCH);
    if (tool && runsWorkflow && tool.binding.type === 'workflow') {
      event = await runWorkflowTool(ctx, command, tool.binding);
    } else if (!tool || (tool.binding.type !== 'http' && !runsSandbox && !runsMcp && !runsLambda)) {
      const message = tool
        ? `Tool ${command.tool} has a ${tool.binding.type} binding, which this runtime cannot run yet`
        : `E721 Tool ${command.tool} not found in project`;
      event = { type: 'tool_result', commandId: command.id, ok: false, error: { kind: 'tool_error', message } };
    } else {
      try {
        const codeCall = {
          tenantId: ctx.tenantId,
          projectId: ctx.projectId,
          sessionId: ctx.sessionId,
          toolCallId: command.id,
          tool,
          args: command.args,
          timeoutMs: command.timeoutMs,
        };
        const value = runsMcp
          ? await mcpActivity(command.timeoutMs)({
              tenantId: ctx.tenantId,
              projectId: ctx.projectId,
              tool,
              args: command.args,
              timeoutMs: command.timeoutMs,
              ...(ctx.environment ? { toolSecretEnvironment: ctx.environment } : {}),
            })
          : runsLambda
          ? await lambdaActivity(command.timeoutMs)(codeCall)
          : runsSandbox
          ? await sandboxActivity(command.timeoutMs)(codeCall)
          : await toolActivity(command.timeoutMs, command.retries, tool)({
              tenantId: ctx.tenantId,
              projectId: ctx.projectId,
              // The session's secret vault (RESULT_SECRETS, {{_secret.KEY}}): values stay in the activity.
              ...(tool.result_secrets?.length || tool.secret_access?.length ? { sessionId: ctx.sessionId } : {}),
              tool,
              args: command.args,
              timeoutMs: command.timeoutMs,
              // Only the keys its context_access lists (the interpreter sets them only when that applies).
              messageMetadata: pickContext(ctx.messageMetadata, command.contextKeys),
              ...(ctx.environment ? { toolSecretEnvironment: ctx.environment } : {}),
            });
        event = { type: 'tool_result', commandId: command.id, ok: true, value };
      } catch (err) {
        const error = failureOf(err);
        const timedOut = error.kind === 'TOOL_TIMEOUT' || ((runsSandbox || runsMcp || runsLambda) && error.kind === 'timeout');
        event = { type: 'tool_result', commandId: command.id, ok: false, error: { kind: timedOut ? 'tool_timeout' : 'tool_error', message: error.message } };
      }
    }
  }
  // A failure is counted where the interpreter reports it (an `error` naming the tool), not here too.
  const durationMs = Date.now() - started;
  await before;
  ctx.trace.addToolResult(
    command.id,
    event.ok
      ? { agent: command.agent, tool: command.tool, success: true, durationMs, mocked: Boolean(mock), output: event.value }
      : { agent: command.agent, tool: command.tool, success: false, durationMs, mocked: Boolean(mock), error: event.error },
    callSpan,
  );
  return event;
}

const { agentWorkflowVersion } = wf.proxyLocalActivities<Activities>({ startToCloseTimeout: '10 seconds', retry: { ...RETRY, maximumAttempts: 5 } });

/**
 * A `type: workflow` tool (workflows/agent-workflows.ts): the deployment's version of the named
 * workflow, started as a child of this run with an id under the session's, with the session's
 * tenant, project and search attributes. `sync` waits up to the tool's timeout_ms for its result
 * (on a timeout the child is terminated with this run's scope), `async` answers `{workflow_id,
 * status: "started"}` at once and abandons it to run on its own.
 */
type ToolResultEvent = Extract<RuntimeEvent, { type: 'tool_result' }>;

/** The longest a turn waits for a `sync` workflow tool, whatever its timeout_ms says. */
const MAX_SYNC_WORKFLOW_MS = 300_000;

async function runWorkflowTool(
  ctx: EffectContext,
  command: Extract<RuntimeCommand, { type: 'call_tool' }>,
  binding: { workflow_id: string; mode: 'sync' | 'async'; timeout_ms: number; param_mapping: Record<string, string> },
): Promise<ToolResultEvent> {
  const fail = (kind: 'tool_error' | 'tool_timeout', message: string): ToolResultEvent => ({ type: 'tool_result', commandId: command.id, ok: false, error: { kind, message } });
  const label = await agentWorkflowVersion({ tenantId: ctx.tenantId, projectId: ctx.projectId, deploymentId: ctx.deploymentId ?? null, workflowId: binding.workflow_id }).catch(() => null);
  const resolved = resolveAgentWorkflow(binding.workflow_id, label);
  if (!resolved.ok) return fail('tool_error', resolved.error);
  const input: AgentWorkflowInput = {
    tenantId: ctx.tenantId,
    projectId: ctx.projectId,
    sessionId: ctx.sessionId,
    agent: command.agent,
    input: mapWorkflowInput(command.args, binding.param_mapping),
  };
  const workflowId = `${ctx.childIdPrefix}/workflow-${command.id}`;
  const inherited = wf.workflowInfo().typedSearchAttributes.getAll().filter((p) => p.key.name !== SessionStatusKey.name);
  const options = {
    workflowId,
    args: [input],
    typedSearchAttributes: inherited,
    staticSummary: `${binding.workflow_id} v${resolved.version} for ${command.agent}`,
  };
  try {
    if (binding.mode === 'async') {
      await wf.startChild(resolved.type, { ...options, parentClosePolicy: 'ABANDON' });
      return { type: 'tool_result', commandId: command.id, ok: true, value: { workflow_id: workflowId, workflow: binding.workflow_id, version: resolved.version, status: 'started' } };
    }
    const value = await wf.executeChild(resolved.type, { ...options, workflowExecutionTimeout: Math.min(Math.max(1, binding.timeout_ms), MAX_SYNC_WORKFLOW_MS) });
    return { type: 'tool_result', commandId: command.id, ok: true, value: (value ?? null) as Json };
  } catch (err) {
    const error = failureOf(err);
    return error.kind === 'timeout' ? fail('tool_timeout', `${binding.workflow_id} did not finish within ${Math.min(binding.timeout_ms, MAX_SYNC_WORKFLOW_MS)} ms`) : fail('tool_error', error.message);
  }
}

/**
 * The session's memory for a delegated child, when the run has agent memory: only the facts the
 * child's agent uses (declared, stored or recalled), so the child's input stays small.
 */
function memoryFor(ctx: EffectContext, agentName: string): { memory?: NonNullable<DelegationInput['memory']> } {
  const memory = ctx.memory?.();
  const agent = ctx.compiled.agents[agentName];
  if (!memory || !agent) return {};
  const used = new Set<string>([
    ...agent.memory.persistent.map((p) => p.path),
    ...agent.memory.remember.map((r) => r.to),
    ...agent.memory.recall.flatMap((r) => r.paths),
    ...agent.completion.flatMap((c) => (c.store?.kind === 'fact' ? [c.store.path] : [])),
  ]);
  const facts = Object.fromEntries(Object.entries(memory.facts).filter(([path]) => used.has(path)));
  return { memory: { ...memory, facts } };
}

async function runDelegation(ctx: EffectContext, command: Extract<RuntimeCommand, { type: 'delegate' }>, index: number): Promise<DelegateOutcome> {
  const task = command.tasks[index]!;
  const started = Date.now();
  const span = ctx.trace.add('delegate', { fromAgent: command.agent, toAgent: task.agent, task: task.purpose, status: 'started' });
  const refusal = delegationRefusal(ctx.delegationChain, command.agent, task.agent);
  if (refusal && wf.patched(DELEGATION_GUARDS_PATCH)) {
    ctx.stats.errorCount++;
    finishDelegateSpan(ctx, span, 0, 'failed', refusal);
    return { agent: task.agent, status: 'failed', error: { kind: 'delegation_refused', message: refusal } };
  }
  try {
    const outcome = await wf.executeChild<DelegationWorkflow>('delegationWorkflow', {
      workflowId: `${ctx.childIdPrefix}/delegate-${command.id}-${index}`,
      args: [
        {
          tenantId: ctx.tenantId,
          projectId: ctx.projectId,
          sessionId: ctx.sessionId,
          bundleRef: ctx.bundleRef,
          agent: task.agent,
          input: task.input,
          returns: task.returns ?? null,
          // A turn's test mocks cover the whole turn, delegated agents included.
          toolMocks: [...ctx.mocks.values()],
          parentAgent: command.agent,
          ...(ctx.environment ? { environment: ctx.environment } : {}),
          ...(ctx.deploymentId ? { deploymentId: ctx.deploymentId } : {}),
          chain: [...ctx.delegationChain, command.agent],
          rootSpan: span,
          ...memoryFor(ctx, task.agent),
        },
      ],
      ...(task.timeoutMs ? { workflowExecutionTimeout: task.timeoutMs } : {}),
    });
    ctx.stats.tokenCount += outcome.tokenCount;
    ctx.stats.estimatedCost += outcome.estimatedCost;
    ctx.stats.errorCount += outcome.errorCount;
    ctx.trace.adopt(outcome.traceEvents);
    finishDelegateSpan(ctx, span, Date.now() - started, outcome.result.status);
    return outcome.result;
  } catch (err) {
    const error = failureOf(err);
    ctx.stats.errorCount++;
    const status = error.kind === 'timeout' ? ('timed_out' as const) : ('failed' as const);
    finishDelegateSpan(ctx, span, Date.now() - started, status, error.message);
    return { agent: task.agent, status, error };
  }
}

/** A cancelled suspension is best-effort bookkeeping: a short local activity. */
const { cancelSuspension } = wf.proxyLocalActivities<Activities>({ startToCloseTimeout: '10 seconds', retry: { ...RETRY, maximumAttempts: 3 } });
const { recordHumanTask, humanTaskRoom } = wf.proxyLocalActivities<Activities>({ startToCloseTimeout: '10 seconds', retry: { ...RETRY, maximumAttempts: 10 } });

/**
 * An async tool call: the activity records the suspension and sends the request with its callback
 * URL; the session then waits (agent-session.ts) and no event goes back to the interpreter yet.
 * When the request cannot be sent, the call fails like any tool call (step ON_FAIL, else ON_ERROR).
 * A delegated agent cannot wait for a callback: its call fails at once.
 */
async function startAsyncCall(ctx: EffectContext, command: Extract<RuntimeCommand, { type: 'suspend_for_callback' }>): Promise<RuntimeEvent | null> {
  // The interpreter records (and the session counts) the failure as an `error` naming the tool,
  // as for any failed tool call; an event here too reported the one failure twice.
  const fail = (message: string): RuntimeEvent => ({ type: 'tool_result', commandId: command.id, ok: false, error: { kind: 'tool_error', message } });
  if (ctx.delegationChain.length > 0) return fail(`Tool ${command.tool} is asynchronous: a delegated agent cannot wait for its callback`);
  const tool = ctx.compiled.agents[command.agent]?.tools.find((t) => t.name === command.tool);
  if (!tool || tool.binding.type !== 'http' || !tool.binding.async) return fail(`E721 Tool ${command.tool} not found in project`);
  const callbackId = `cb_${wf.uuid4().replace(/-/g, '')}`;
  const requestTimeoutMs = tool.timeout_ms || 30_000;
  try {
    const started = await wf
      .proxyActivities<Activities>({ startToCloseTimeout: requestTimeoutMs + 5_000, retry: { ...RETRY, maximumAttempts: Math.max(3, tool.binding.retry + 1) } })
      .startAsyncCall({
        tenantId: ctx.tenantId,
        projectId: ctx.projectId,
        sessionId: ctx.sessionId,
        callbackId,
        commandId: command.id,
        agent: command.agent,
        tool,
        args: command.args,
        requestTimeoutMs,
        waitMs: command.timeoutMs,
        messageMetadata: pickContext(ctx.messageMetadata, command.contextKeys),
        ...(ctx.environment ? { toolSecretEnvironment: ctx.environment } : {}),
      });
    ctx.waiting = { callbackId, commandId: command.id, agent: command.agent, tool: command.tool, expiresAtMs: started.expiresAtMs, sinceMs: Date.now() };
    ctx.trace.add('suspension', { agent: command.agent, tool: command.tool, callbackId, expiresAt: new Date(started.expiresAtMs).toISOString() });
    return null;
  } catch (err) {
    await cancelSuspension({ tenantId: ctx.tenantId, callbackId }).catch(() => undefined);
    return fail(failureOf(err).message);
  }
}

const TASK_PRIORITIES = new Set<string>(['low', 'medium', 'high', 'critical']);

/**
 * An escalation: starts the human task's workflow (`human-task/<taskId>`, abandoned by the session
 * so it outlives the session's runs and a worker crash) with the session's search attributes, and
 * the session waits for its outcome (agent-session.ts). When the task cannot be started the
 * escalation resumes at once as an expired one (`human.expired`).
 */
async function startHumanTask(ctx: EffectContext, command: Extract<RuntimeCommand, { type: 'escalate' }>): Promise<RuntimeEvent | null> {
  const taskId = `ht_${wf.uuid4().replace(/-/g, '')}`;
  const requested = (TASK_PRIORITIES.has(command.priority) ? command.priority : 'medium') as HumanTaskPriority;
  const input: HumanTaskStartInput = {
    taskId,
    tenantId: ctx.tenantId,
    projectId: ctx.projectId,
    sessionId: ctx.sessionId,
    // The task belongs to the session's environment: keys bound to others do not see it.
    ...(ctx.environment ? { environment: ctx.environment } : {}),
    agentName: command.agent,
    type: command.taskType ?? 'escalation',
    title: command.reason,
    priority: requested,
    tags: command.tags,
    context: command.context,
    fields: command.fields ?? [],
    dueAtMs: command.dueMs ? Date.now() + command.dueMs : null,
    ...(command.onDue && command.dueMs ? { onDue: command.onDue } : {}),
    routing: command.routing ?? null,
    createdBy: `agent:${command.agent}`,
    createdAtMs: Date.now(),
  };
  const priority = boostedPriority(requested, input.routing?.priority_boost ?? 0);
  // The project's open tasks are bounded: without room, the escalation resumes as an expired one.
  // A failed count does not hold the escalation back (the bound guards against floods, not races).
  if (wf.patched(HUMAN_TASK_ROOM_PATCH) && !(await humanTaskRoom({ tenantId: ctx.tenantId, projectId: ctx.projectId }).catch(() => true))) {
    ctx.stats.errorCount++;
    ctx.trace.add('error', { agent: command.agent, kind: 'human_task_error', message: 'The project has reached its limit of open human tasks (HUMAN_TASK_MAX_OPEN_PER_PROJECT)' });
    return { type: 'wait_expired', commandId: command.id };
  }
  const inherited = wf.workflowInfo().typedSearchAttributes.getAll().filter((p) => p.key.name !== SessionStatusKey.name && p.key.name !== AgentNameKey.name);
  try {
    await wf.startChild<typeof humanTaskWorkflow>('humanTaskWorkflow', {
      workflowId: `human-task/${taskId}`,
      args: [input],
      parentClosePolicy: 'ABANDON',
      typedSearchAttributes: [
        ...inherited,
        { key: AgentNameKey, value: command.agent },
        { key: TaskStatusKey, value: 'pending' },
        { key: TaskTypeKey, value: input.type },
        { key: TaskPriorityKey, value: priorityNumber(priority) },
        ...(input.routing?.queue ? [{ key: AssigneeKey, value: [`team:${input.routing.queue}`] }] : []),
      ],
      staticSummary: `${input.type} · ${priority} · ${command.reason.slice(0, 80)}`,
    });
  } catch (err) {
    ctx.stats.errorCount++;
    ctx.trace.add('error', { agent: command.agent, kind: 'human_task_error', message: failureOf(err).message });
    return { type: 'wait_expired', commandId: command.id };
  }
  // Listed before the user hears of it: a reviewer can act on the task as soon as the turn answers.
  await recordHumanTask(initialTaskView(input, input.createdAtMs!)).catch(() => undefined);
  ctx.waiting = { kind: 'human_task', callbackId: taskId, commandId: command.id, agent: command.agent, tool: 'human_task', expiresAtMs: input.dueAtMs ?? 0, sinceMs: Date.now() };
  ctx.trace.add('human_task', {
    agent: command.agent,
    taskId,
    status: 'created',
    type: input.type,
    priority,
    title: command.reason,
    dueAt: input.dueAtMs !== null ? new Date(input.dueAtMs).toISOString() : null,
  });
  return null;
}

/** The `delegate` event carries the spec's fields; its duration is known only at the end. */
function finishDelegateSpan(ctx: EffectContext, span: string, durationMs: number, status: string, error?: string): void {
  const event = ctx.trace.events.find((e) => e.spanId === span);
  if (event) Object.assign(event.data, { duration_ms: durationMs, status, ...(error ? { error } : {}) });
}

export async function executeCommand(ctx: EffectContext, command: RuntimeCommand, before: Promise<unknown> = Promise.resolve()): Promise<RuntimeEvent | null> {
  switch (command.type) {
    case 'call_llm':
      return runLlm(ctx, command);
    case 'call_tool':
      return runTool(ctx, command, before);
    case 'delegate': {
      const results = new Array<DelegateOutcome>(command.tasks.length);
      let next = 0;
      const lane = async () => {
        while (next < command.tasks.length) {
          const index = next++;
          results[index] = await runDelegation(ctx, command, index);
        }
      };
      await Promise.all(Array.from({ length: Math.min(MAX_DELEGATIONS_AT_ONCE, command.tasks.length) }, lane));
      return { type: 'delegate_result', commandId: command.id, results };
    }
    case 'escalate':
      ctx.trace.add('decision', {
        decisionKind: 'escalation',
        decision: 'escalate',
        agent: command.agent,
        reasoning: command.reason,
        priority: command.priority,
        tags: command.tags,
      });
      // A delegated agent's escalation fails its delegation (the interpreter), so only sessions create tasks.
      return ctx.delegationChain.length === 0 && wf.patched(HUMAN_TASKS_PATCH) ? startHumanTask(ctx, command) : null;
    case 'suspend_for_callback':
      ctx.trace.add('decision', { decisionKind: 'pause', decision: 'suspend_for_callback', agent: command.agent, tool: command.tool });
      return wf.patched(ASYNC_TOOLS_PATCH) ? startAsyncCall(ctx, command) : null;
    case 'moderate':
      return runModeration(ctx, command);
    case 'confirm_tool':
      // The question is in the turn's reply; the user's next message answers it (the interpreter).
      return null;
  }
}

/** Interpreter errors that restate a failed effect, which was counted when it failed. */
const RESTATED_EFFECT_ERRORS = new Set(['llm_error', 'delegate_failed']);

/**
 * The interpreter's trace drafts, into the turn's trace. Errors the interpreter raises itself
 * (validation_error, max_flow_iterations, an unknown tool, …) count in the session's errorCount,
 * as failed LLM calls, tool calls and delegations do.
 */
function addInterpreterTrace(ctx: EffectContext, drafts: AdvanceResult['trace']): void {
  ctx.trace.addDrafts(drafts);
  for (const draft of drafts) if (draft.type === 'error' && !RESTATED_EFFECT_ERRORS.has(draft.data.kind)) ctx.stats.errorCount++;
}

/**
 * Runs commands until the interpreter needs nothing more: a batch runs concurrently (several
 * delegations, or the tool calls of one LLM answer), results are fed back one by one in the
 * batch's order, and commands they produce join the next batch. Collects replies and trace drafts.
 */
export async function driveInterpreter(
  ctx: EffectContext,
  interpreter: Interpreter,
  first: AdvanceResult,
  responses: string[],
  voices?: Array<VoiceOutputIR | null>,
): Promise<AdvanceResult> {
  let result = first;
  const collect = (r: AdvanceResult) => {
    responses.push(...r.responses);
    voices?.push(...r.responses.map((_, i) => r.voices?.[i] ?? null));
  };
  collect(result);
  addInterpreterTrace(ctx, result.trace);
  let batch = result.commands;
  while (batch.length > 0) {
    let previous: Promise<unknown> = Promise.resolve();
    const events = await Promise.all(batch.map((command) => (previous = executeCommand(ctx, command, previous))));
    batch = [];
    for (const event of events) {
      if (!event) continue;
      result = interpreter.advance(result.state, event);
      collect(result);
      addInterpreterTrace(ctx, result.trace);
      batch.push(...result.commands);
    }
  }
  return result;
}
