// How often an HTTP tool's call is tried and how long it waits before each retry, from its
// `retry`, `retry_delay` and `retry_policy` (docs/abl.md, "Retries, rate limits and circuit
// breakers"). Pure: the workflow sizes the activity from it, the activity waits by it.
import type { ToolIR, ToolRetryPolicyIR } from './ir';

/** The longest wait before one retry, whatever the policy says. */
export const MAX_TOOL_RETRY_DELAY_MS = 60_000;
/** The most retries a tool may ask for. */
export const MAX_TOOL_RETRIES = 10;

export interface ToolRetryPlan {
  /** Attempts in all: the first one plus the retries. */
  attempts: number;
  policy: ToolRetryPolicyIR;
}

/** The plan of a tool: `retry` alone waits `retry_delay` (1000 ms) before every retry. */
export function toolRetryPlan(tool: ToolIR): ToolRetryPlan {
  const b = tool.binding;
  if (b.type !== 'http') return { attempts: 1, policy: { strategy: 'fixed', initial_delay_ms: 0, multiplier: 1, max_delay_ms: 0, jitter: 0 } };
  const retries = Math.min(MAX_TOOL_RETRIES, Math.max(0, Math.floor(b.retry)));
  const policy = b.retry_policy ?? { strategy: 'fixed', initial_delay_ms: b.retry_delay_ms, multiplier: 1, max_delay_ms: b.retry_delay_ms, jitter: 0 };
  return { attempts: retries + 1, policy };
}

/**
 * The wait before retry number `retry` (1 = the second attempt). `random` is in [0, 1): with
 * jitter j the wait is drawn from [delay × (1 − j), delay].
 */
export function toolRetryDelayMs(policy: ToolRetryPolicyIR, retry: number, random: number): number {
  const n = Math.max(1, retry);
  const base = Math.max(0, policy.initial_delay_ms);
  const raw = policy.strategy === 'exponential' ? base * Math.pow(Math.max(1, policy.multiplier), n - 1)
    : policy.strategy === 'linear' ? base * n
    : base;
  const capped = Math.min(raw, Math.max(base, policy.max_delay_ms), MAX_TOOL_RETRY_DELAY_MS);
  const j = Math.min(1, Math.max(0, policy.jitter));
  return Math.round(capped * (1 - j * Math.min(1, Math.max(0, random))));
}

/** The longest all of a call's waits can take together: its activity must live that long too. */
export function toolRetryBudgetMs(plan: ToolRetryPlan): number {
  let total = 0;
  for (let r = 1; r < plan.attempts; r++) total += toolRetryDelayMs(plan.policy, r, 0);
  return total;
}
