// One completion call up to the provider: the preloaded reads (the project, reused for a few
// seconds, and the model resolution), the checks that judge them in order, and the request the
// provider gets. The complete and stream endpoints share it (api/completions/).
import { ApiError } from '../../lib/errors';
import { canSeeProject, type Principal } from '../../lib/permissions';
import { findOwned } from '../../db/owned';
import { type ProjectDoc } from '../../db/project';
import { memoizePerProject } from '../../lib/memoize-per-project';
import { type LlmProvider, type LlmRequest, type ProjectLlmQuery, type ResolvedProjectLlm, type RuntimeTarget } from '../../providers/llm';
import { type CoreContext } from '../context';
import { isCredentialDecryptionError, llmRuntime, PROJECT_LLM_TTL_MS, runtimeNotConfigured } from '../llm/runtime';
import { type MessageBudget } from '../sessions/message-budget';

export type { LlmStreamEvent } from '../../providers/llm';

/** A completion call as the caller asks for it: the body of /chat/complete and /chat/stream (api/completions/schemas.ts). */
export interface CompletionRequest {
  projectId: string;
  messages: LlmRequest['messages'];
  sessionId?: string;
  tools?: LlmRequest['tools'];
  modelId?: string;
  tier?: ProjectLlmQuery['tier'];
  temperature?: number;
  maxTokens?: number;
}

export interface PreparedCall {
  target: RuntimeTarget;
  llm: LlmProvider;
  projectId: string;
}

/**
 * The completion endpoints' project reads, reused for PROJECT_LLM_TTL_MS like the project's LLM
 * settings. Only `_id`, `tenantId` and `deletingAt` are used, and a project is never moved to
 * another tenant; the principal's own project binding is still checked on every request. A
 * project being deleted (core/lifecycle/deletion.ts) stays usable here for at most that long, as
 * its settings already do.
 */
const projectReads = new WeakMap<CoreContext, ReturnType<typeof memoizePerProject<ProjectDoc | null>>>();

async function loadVisibleProjectReused(ctx: CoreContext, principal: Principal, projectId: string) {
  let reads = projectReads.get(ctx);
  if (!reads) {
    reads = memoizePerProject(PROJECT_LLM_TTL_MS, (tenantId, id) => findOwned(ctx.models.Project, id, { tenantId }), 10_000);
    projectReads.set(ctx, reads);
  }
  const project = await reads.get(principal.tenantId, projectId);
  return project && !project.deletingAt && canSeeProject(principal, project) ? project : null;
}

/** The reads a call needs, as the route's preload: they overlap the tenant rate-limit charge. */
export interface CallLookups {
  project: ProjectDoc | null;
  resolved: ResolvedProjectLlm | { ok: false; error: unknown };
}

/**
 * The project lookup and the model resolution, in parallel (both tenant-scoped, both reads).
 * Never rejects: `prepareCall` judges the outcomes in order, so an invisible project is 404
 * even when the runtime is not configured.
 */
export async function lookUpCall(ctx: CoreContext, principal: Principal, body: CompletionRequest): Promise<CallLookups> {
  const [project, resolved] = await Promise.all([
    loadVisibleProjectReused(ctx, principal, body.projectId),
    llmRuntime(ctx)
      .resolve({
        tenantId: principal.tenantId,
        projectId: body.projectId,
        ...(body.modelId ? { modelId: body.modelId } : {}),
        ...(body.tier ? { tier: body.tier } : {}),
      })
      .catch((err: unknown) => ({ ok: false as const, error: err })),
  ]);
  return { project, resolved };
}

export const sessionRateLimitKey = (tenantId: string, sessionId: string) => `${tenantId}:${sessionId}`;

/** Everything before the provider is called, from the preloaded lookups. */
export async function prepareCall(ctx: CoreContext, principal: Principal, body: CompletionRequest, budget: Pick<MessageBudget, 'charge'>, lookups: CallLookups): Promise<PreparedCall> {
  const { project, resolved } = lookups;
  if (!project) throw ApiError.notFound('Project');
  if (body.sessionId) {
    await budget.charge(sessionRateLimitKey(principal.tenantId, body.sessionId));
  }
  if ('error' in resolved) {
    if (isCredentialDecryptionError(resolved.error)) throw runtimeNotConfigured(resolved.error.message);
    throw resolved.error;
  }
  if (!resolved.ok) throw runtimeNotConfigured(resolved.reason);
  return { target: resolved.target, llm: resolved.llm, projectId: project._id };
}

export function toLlmRequest(body: CompletionRequest, modelId: string, signal: AbortSignal): LlmRequest {
  return {
    model: modelId,
    messages: body.messages,
    ...(body.tools && body.tools.length > 0 ? { tools: body.tools } : {}),
    ...(body.temperature !== undefined ? { temperature: body.temperature } : {}),
    ...(body.maxTokens !== undefined ? { maxTokens: body.maxTokens } : {}),
    signal,
  };
}

export const elapsedSince = (started: number): number => Math.round(performance.now() - started);
