// Times the worker's LLM and tool activities for /metrics (lib/metrics/registry.ts): each attempt,
// by provider and model or by tool type, and its outcome, plus the tokens a call used. It reads
// only the activity's type, the model the request named and the result's model, provider and
// usage: never a tool's arguments or result, nor a tenant, project or session id.
import { ApplicationFailure, CancelledFailure, type Context } from '@temporalio/activity';
import { type ActivityExecuteInput, type ActivityInboundCallsInterceptor, type ActivityInterceptorsFactory, type Next } from '@temporalio/worker';
import { switchboardMetrics } from '../lib/metrics/registry';
import { boundedLabel } from '../lib/metrics/labels';
import type { CallLlmInput, CallLlmResult } from '../activities/llm/call-llm';

/** Tool activities and the tool type each runs (workflows/effects.ts); workflow tools are child workflows, not timed here. */
const TOOL_ACTIVITIES: Record<string, string> = {
  callTool: 'http',
  startAsyncCall: 'http_async',
  runSandboxTool: 'sandbox',
  runLambdaTool: 'lambda',
  runMcpTool: 'mcp',
};
const LLM_ACTIVITIES = new Set(['callLlm', 'callLlmIfLocal']);

// Models and providers are projects' settings: a bounded list of label values per process.
const modelLabel = boundedLabel(50);
const providerLabel = boundedLabel(20);

/** The outcome label of a failed attempt: timeouts and cancellations apart from other errors. */
export function failureOutcome(err: unknown): 'timeout' | 'cancelled' | 'error' {
  if (err instanceof CancelledFailure) return 'cancelled';
  if (err instanceof ApplicationFailure && /TIMEOUT/i.test(err.type ?? '')) return 'timeout';
  if (err instanceof Error && err.name === 'AbortError') return 'cancelled';
  return 'error';
}

class ActivityMetrics implements ActivityInboundCallsInterceptor {
  constructor(private readonly ctx: Context) {}

  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    const type = this.ctx.info.activityType;
    const toolType = TOOL_ACTIVITIES[type];
    const isLlm = LLM_ACTIVITIES.has(type);
    if (!toolType && !isLlm) return next(input);
    const started = process.hrtime.bigint();
    const elapsed = () => Number(process.hrtime.bigint() - started) / 1e9;
    const metrics = switchboardMetrics();
    try {
      const result = await next(input);
      if (toolType) metrics.toolCallDuration.observe({ tool_type: toolType, outcome: 'ok' }, elapsed());
      // callLlmIfLocal answers null for a model that is not the local one: no call was made.
      else if (result) observeLlm(result as CallLlmResult, elapsed());
      return result;
    } catch (err) {
      if (toolType) metrics.toolCallDuration.observe({ tool_type: toolType, outcome: failureOutcome(err) }, elapsed());
      else {
        const request = (input.args[0] as CallLlmInput | undefined)?.request;
        metrics.llmCallDuration.observe({ provider: 'unknown', model: modelLabel(request?.model ?? `tier:${request?.tier ?? 'unknown'}`), outcome: failureOutcome(err) }, elapsed());
      }
      throw err;
    }
  }
}

function observeLlm(result: CallLlmResult, seconds: number): void {
  const metrics = switchboardMetrics();
  const labels = { provider: providerLabel(result.provider), model: modelLabel(result.model) };
  metrics.llmCallDuration.observe({ ...labels, outcome: 'ok' }, seconds);
  metrics.llmTokens.inc({ ...labels, direction: 'input' }, result.usage.inputTokens);
  metrics.llmTokens.inc({ ...labels, direction: 'output' }, result.usage.outputTokens);
}

export const activityMetrics: ActivityInterceptorsFactory = (ctx) => ({ inbound: new ActivityMetrics(ctx) });
