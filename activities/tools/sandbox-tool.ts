// The `runSandboxTool` and `runLambdaTool` activities: run a `type: sandbox` tool's code (or a
// `type: lambda` tool's function from the project's registry) once in the engine of its
// runtime (JavaScript: QuickJS in worker threads; Python: Pyodide in a sandboxed child process per call), with the in-code
// memory-store helpers reaching `POST /api/v1/memory` under a sandbox token issued for this call.
// A failure is never retried: the code may have written to a memory store before it failed.
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Json, ToolIR } from '../../abl/ir';
import { type Config } from '../../lib/config';
import { type Logger } from '../../lib/logger';
import { capToolResult } from '../../lib/result-cap';
import { withToolSpan } from '../../lib/tracing';
import { type ProjectFunctionDoc } from '../../db/project-function';
import { issueSandboxToken } from '../../core/memory-stores/sandbox-token';
import { createJavaScriptEngine } from './sandbox/javascript';
import { createPythonEngine, pythonEngineOptions } from './sandbox/python';
import { type MemoryBridge, type SandboxEngine, type SandboxOutcome } from './sandbox/engine';

export interface SandboxToolInput {
  tenantId: string;
  projectId: string;
  sessionId: string;
  /** The interpreter's command id of the call: named in the sandbox token. */
  toolCallId: string;
  tool: ToolIR;
  args: Record<string, Json>;
  timeoutMs: number;
}

export interface SandboxToolDeps {
  config: Config;
  logger: Logger;
  /** A lambda tool's function from the project's registry (db/project-function.ts), or null. */
  findFunction?: (scope: { tenantId: string; projectId: string }, name: string) => Promise<ProjectFunctionDoc | null>;
}

/** The longest a sandbox call may run, whatever its `timeout` says (the Studio's script time limit). */
export const MAX_SANDBOX_TIMEOUT_MS = 180_000;
/** How long a sandbox token outlives the call's timeout (clock skew, the last memory call in flight). */
const TOKEN_MARGIN_MS = 30_000;

/** Failure types of the activity (ApplicationFailure.type); TOOL_TIMEOUT becomes the interpreter's `tool_timeout`. */
const FAILURE_TYPE: Record<Extract<SandboxOutcome, { ok: false }>['kind'], string> = {
  error: 'SANDBOX_ERROR',
  timeout: 'TOOL_TIMEOUT',
  memory: 'SANDBOX_MEMORY_LIMIT',
  output: 'SANDBOX_OUTPUT_LIMIT',
  unavailable: 'SANDBOX_UNAVAILABLE',
};

export type SandboxEngines = ReturnType<typeof createSandboxEngines>;

/** The engines of one worker, each created on its first call. */
export function createSandboxEngines(config: Config) {
  let javascript: SandboxEngine | null = null;
  let python: Promise<SandboxEngine | string> | null = null;
  return {
    async get(runtime: 'javascript' | 'python'): Promise<SandboxEngine | string> {
      if (runtime === 'javascript') return (javascript ??= createJavaScriptEngine({ threads: config.SANDBOX_JS_THREADS }));
      // Started on first use: a worker that never runs Python never loads Pyodide.
      python ??= Promise.resolve(createPythonEngine(pythonEngineOptions(config)));
      return python;
    },
    async close(): Promise<void> {
      const engines = [javascript, python ? await python : null].filter((e): e is SandboxEngine => typeof e === 'object' && e !== null);
      javascript = null;
      python = null;
      await Promise.all(engines.map((e) => e.close()));
    },
  };
}

/**
 * The memory-store helpers' way out: `POST ${PUBLIC_BASE_URL}/api/v1/memory` with a sandbox token
 * for this call, issued on the first helper call (code that never uses a store needs no key).
 */
export function httpMemoryBridge(config: Config, claims: Parameters<typeof issueSandboxToken>[1], timeoutMs: number, signal?: AbortSignal): MemoryBridge {
  let token: Promise<string> | null = null;
  const url = `${config.PUBLIC_BASE_URL.replace(/\/$/, '')}/api/v1/memory`;
  return {
    async call(action, memoryStoreName, content) {
      token ??= issueSandboxToken({ config }, claims, timeoutMs + TOKEN_MARGIN_MS);
      const body = { action, memoryStoreName, ...(action === 'set' ? { payload: { content: content ?? null } } : {}) };
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${await token}` },
        body: JSON.stringify(body),
        signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs),
      });
      const text = await res.text();
      type Envelope = { success?: boolean; data?: Json; error?: { message?: string } };
      let answer: Envelope | null;
      try {
        answer = JSON.parse(text) as Envelope;
      } catch {
        answer = null;
      }
      if (!res.ok || !answer || answer.success !== true) {
        const message = answer?.error?.message ?? `HTTP ${res.status}`;
        throw new Error(`memory.${action}_content("${memoryStoreName}") failed: ${message}`);
      }
      return answer.data ?? null;
    },
  };
}

type SandboxBinding = Extract<ToolIR['binding'], { type: 'sandbox' }>;

/** Runs `binding`'s code once for the call; a failure's message is what the agent sees. */
async function runCode(deps: SandboxToolDeps, engines: SandboxEngines, input: SandboxToolInput, binding: SandboxBinding): Promise<Json> {
  const engine = await engines.get(binding.runtime);
  if (typeof engine === 'string') throw ApplicationFailure.nonRetryable(`Tool ${input.tool.name}: ${engine}`, FAILURE_TYPE.unavailable);
  const timeoutMs = Math.min(Math.max(1, input.timeoutMs || binding.timeout_ms), MAX_SANDBOX_TIMEOUT_MS);
  const memoryMb = Math.min(Math.max(1, binding.memory_mb), deps.config.SANDBOX_MAX_MEMORY_MB);
  let signal: AbortSignal | undefined;
  try {
    signal = Context.current().cancellationSignal;
  } catch {
    signal = undefined;
  }
  const memory = httpMemoryBridge(
    deps.config,
    { tenantId: input.tenantId, projectId: input.projectId, sessionId: input.sessionId, toolCallId: input.toolCallId, tool: input.tool.name },
    timeoutMs,
    signal,
  );
  const started = Date.now();
  const outcome = await engine.run({
    code: binding.code,
    entrypoint: binding.entrypoint,
    params: input.args,
    timeoutMs,
    memoryMb,
    maxOutputBytes: deps.config.SANDBOX_OUTPUT_MAX_BYTES,
    memory,
  });
  deps.logger.debug(
    { tenantId: input.tenantId, projectId: input.projectId, tool: input.tool.name, runtime: binding.runtime, ok: outcome.ok, kind: outcome.ok ? null : outcome.kind, durationMs: Date.now() - started, logLines: outcome.logs.length },
    'sandbox tool call',
  );
  if (!outcome.ok) {
    // The exception's own message for an error in the code; the limit that stopped it otherwise.
    const message = outcome.kind === 'error' ? outcome.message : `Tool ${input.tool.name}: ${outcome.message}`;
    throw ApplicationFailure.nonRetryable(message, FAILURE_TYPE[outcome.kind]);
  }
  // What this returns is written to workflow history: only a bounded cut of a large result.
  return capToolResult(outcome.value, deps.config.TOOL_RESULT_HISTORY_MAX_BYTES).value;
}

/** `engines`: one set per worker (its threads are idle and never keep the process alive). */
export function createSandboxToolActivities(deps: SandboxToolDeps, engines: SandboxEngines = createSandboxEngines(deps.config)) {
  return {
    /** Runs the tool's code; the result is its value, a failure's message is what the agent sees. */
    runSandboxTool: (input: SandboxToolInput): Promise<Json> => withToolSpan(input.tool, async () => {
      const binding = input.tool.binding;
      if (binding.type !== 'sandbox') throw ApplicationFailure.nonRetryable(`Tool ${input.tool.name} is not a sandbox tool`, 'TOOL_UNSUPPORTED');
      return runCode(deps, engines, input, binding);
    }),

    /**
     * A `type: lambda` tool: its `function` is looked up in the project's function registry at
     * call time (so the registry's current code runs) and run like a sandbox tool's code.
     */
    runLambdaTool: (input: SandboxToolInput): Promise<Json> => withToolSpan(input.tool, async () => {
      const binding = input.tool.binding;
      if (binding.type !== 'lambda') throw ApplicationFailure.nonRetryable(`Tool ${input.tool.name} is not a lambda tool`, 'TOOL_UNSUPPORTED');
      const fn = deps.findFunction ? await deps.findFunction({ tenantId: input.tenantId, projectId: input.projectId }, binding.function) : null;
      if (!fn) {
        throw ApplicationFailure.nonRetryable(
          `Tool ${input.tool.name}: function "${binding.function}" is not in the project's function registry (PUT /api/projects/${input.projectId}/functions/${binding.function})`,
          'TOOL_FUNCTION_NOT_FOUND',
        );
      }
      if (binding.runtime && binding.runtime !== fn.runtime) {
        throw ApplicationFailure.nonRetryable(`Tool ${input.tool.name}: function "${fn.name}" is ${fn.runtime}, but the tool says runtime ${binding.runtime}`, 'TOOL_FUNCTION_RUNTIME');
      }
      return runCode(deps, engines, input, { type: 'sandbox', runtime: fn.runtime, code: fn.code, entrypoint: fn.entrypoint, timeout_ms: input.timeoutMs, memory_mb: fn.memoryMb });
    }),
  };
}
