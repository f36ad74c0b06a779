// What stands around an HTTP tool's request: the wait before a retried attempt (`retry_delay`,
// `retry_policy`), the tool's `rate_limit` (calls per second per tenant, project and tool,
// counted in MongoDB windows every worker shares) and its `circuit_breaker` (failures in a row
// per tenant, project and tool, in MongoDB; once at the threshold, calls fail fast until
// `reset_ms` has passed). Temporal retries the activity; the attempt number comes from it.
import { ApplicationFailure } from '@temporalio/activity';
import { type Connection } from 'mongoose';
import { type RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import type { ToolIR } from '../../abl/ir';
import { toolRetryDelayMs, toolRetryPlan } from '../../abl/tool-retry';
import { MongoWindowLimiter } from '../../db/rate-limit-windows';
import { toolCircuitId, type ToolCircuitModel } from '../../db/tool-circuit';

/** The longest a call waits for a free slot under its rate_limit before it fails (TOOL_RATE_LIMITED). */
export const MAX_RATE_LIMIT_WAIT_MS = 5_000;

export interface ToolScope {
  tenantId: string;
  projectId: string;
}

type HttpBinding = Extract<ToolIR['binding'], { type: 'http' }>;

/** How long attempt `attempt` (1-based, from Temporal) waits before it sends: 0 for the first. */
export function waitBeforeAttemptMs(tool: ToolIR, attempt: number, random: () => number = Math.random): number {
  if (attempt <= 1) return 0;
  const plan = toolRetryPlan(tool);
  return toolRetryDelayMs(plan.policy, attempt - 1, random());
}

/** A failure the endpoint is to blame for (5xx, 429, 408, timeout, network): what a circuit breaker counts. */
export function countsAgainstCircuit(err: unknown): boolean {
  return err instanceof ApplicationFailure && !err.nonRetryable && ['TOOL_HTTP_5XX', 'TOOL_TIMEOUT', 'TOOL_NETWORK'].includes(err.type ?? '');
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export interface ToolGuards {
  /** Sleeps the retry delay of `attempt` (cancellable). */
  waitForAttempt(tool: ToolIR, attempt: number, signal?: AbortSignal): Promise<void>;
  /** Waits for a slot under the tool's rate_limit, or fails with TOOL_RATE_LIMITED. */
  acquireRate(scope: ToolScope, tool: ToolIR, timeoutMs: number, signal?: AbortSignal): Promise<void>;
  /** Fails with TOOL_CIRCUIT_OPEN while the tool's circuit is open. */
  checkCircuit(scope: ToolScope, tool: ToolIR): Promise<void>;
  /** Records the outcome of a call that was sent. */
  recordOutcome(scope: ToolScope, tool: ToolIR, err: unknown | null): Promise<void>;
}

export function createToolGuards(options: { connection: Connection; circuits: ToolCircuitModel; now?: () => number }): ToolGuards {
  const now = options.now ?? Date.now;
  const limiters = new Map<string, RateLimiterAbstract>();
  /** One limiter per rate: `rps` calls per second, or one call per 1/rps seconds below 1. */
  const limiterFor = (rps: number): RateLimiterAbstract => {
    const points = rps >= 1 ? Math.floor(rps) : 1;
    const durationSeconds = rps >= 1 ? 1 : Math.ceil(1 / rps);
    const id = `${points}/${durationSeconds}`;
    let limiter = limiters.get(id);
    if (!limiter) {
      limiter = new MongoWindowLimiter({ connection: options.connection, keyPrefix: `tool-rate:${id}`, points, durationSeconds });
      limiters.set(id, limiter);
    }
    return limiter;
  };
  const circuitOf = (b: HttpBinding) => b.circuit_breaker;

  return {
    async waitForAttempt(tool, attempt, signal) {
      const ms = waitBeforeAttemptMs(tool, attempt);
      if (ms > 0) await sleep(ms, signal);
    },

    async acquireRate(scope, tool, timeoutMs, signal) {
      const b = tool.binding;
      if (b.type !== 'http' || b.rate_limit === null || !(b.rate_limit > 0)) return;
      const limiter = limiterFor(b.rate_limit);
      const key = JSON.stringify([scope.tenantId, scope.projectId, tool.name]);
      const budget = Math.min(MAX_RATE_LIMIT_WAIT_MS, Math.max(0, timeoutMs));
      let waited = 0;
      for (;;) {
        try {
          await limiter.consume(key, 1);
          return;
        } catch (err) {
          if (!(err instanceof RateLimiterRes)) throw err;
          const wait = Math.max(1, err.msBeforeNext);
          if (waited + wait > budget) {
            throw ApplicationFailure.nonRetryable(
              `Tool ${tool.name} is over its rate_limit of ${b.rate_limit} calls per second: no slot came free within ${budget} ms`,
              'TOOL_RATE_LIMITED',
              { rateLimit: b.rate_limit },
            );
          }
          await sleep(wait, signal);
          waited += wait;
        }
      }
    },

    async checkCircuit(scope, tool) {
      const b = tool.binding;
      if (b.type !== 'http' || !circuitOf(b)) return;
      const doc = await options.circuits.findOne({ _id: toolCircuitId(scope.tenantId, scope.projectId, tool.name) }).lean();
      if (doc?.openUntil && doc.openUntil.getTime() > now()) {
        throw ApplicationFailure.nonRetryable(
          `Tool ${tool.name} is not called: its circuit breaker is open after ${doc.failures} failures in a row, until ${doc.openUntil.toISOString()}`,
          'TOOL_CIRCUIT_OPEN',
          { failures: doc.failures, openUntil: doc.openUntil.toISOString() },
        );
      }
    },

    async recordOutcome(scope, tool, err) {
      const b = tool.binding;
      const breaker = b.type === 'http' ? circuitOf(b) : null;
      if (!breaker) return;
      const _id = toolCircuitId(scope.tenantId, scope.projectId, tool.name);
      if (err === null) {
        // Closed again: a success ends the run of failures (and a half-open circuit).
        await options.circuits.updateOne({ _id, failures: { $gt: 0 } }, { $set: { failures: 0, openUntil: null, updatedAt: new Date(now()) } });
        return;
      }
      if (!countsAgainstCircuit(err)) return;
      const doc = await options.circuits.findOneAndUpdate(
        { _id },
        { $inc: { failures: 1 }, $set: { updatedAt: new Date(now()) }, $setOnInsert: { tenantId: scope.tenantId, projectId: scope.projectId, tool: tool.name, openUntil: null } },
        { upsert: true, new: true, lean: true },
      );
      // At the threshold it opens; after reset_ms one call goes through, and a failure of it opens it again at once.
      if (doc && doc.failures >= breaker.threshold) {
        await options.circuits.updateOne({ _id }, { $set: { openUntil: new Date(now() + breaker.reset_ms) } });
      }
    },
  };
}
