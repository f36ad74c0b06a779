// One completion call up to the provider: the preloaded reads (the project, reused for a few
// seconds, and the model resolution), the checks that judge them in order, and the request the
// provider gets. The complete and stream endpoints share it.
import { type Response } from 'express';
import { ApiError } from '../../lib/errors';
import { canSeeProject, type Principal } from '../../lib/permissions';
import { findOwned } from '../../db/owned';
import { type ProjectDoc } from '../../db/project';
import { memoizePerProject } from '../../lib/memoize-per-project';
import { type LlmProvider, type LlmRequest, type ResolvedProjectLlm, type RuntimeTarget } from '../../providers/llm';
import { type AppContext } from '../context';
import { consumeRateLimit } from '../middleware/rate-limit';
import { isCredentialDecryptionError, llmRuntime, PROJECT_LLM_TTL_MS, runtimeNotConfigured } from '../../core/llm/runtime';
import { type TChatRequest } from './schemas';

export interface PreparedCall {
  target: RuntimeTarget;
  llm: LlmProvider;
  projectId: string;
}

/**
 * The completion endpoints' project reads, reused for PROJECT_LLM_TTL_MS like the project's LLM
 * settings. Only `_id` and `tenantId` are used, and a project is never deleted or moved to
 * another tenant, so a reused answer is the one a read would give; the principal's own project
 * binding is still checked on every request. (Were project deletion added, a deleted project
 * would stay usable here for at most that long, as its settings already do.)
 */
const projectReads = new WeakMap<AppContext, ReturnType<typeof memoizePerProject<ProjectDoc | null>>>();

async function loadVisibleProjectReused(ctx: AppContext, principal: Principal, projectId: string) {
  let reads = projectReads.get(ctx);
  if (!reads) {
    reads = memoizePerProject(PROJECT_LLM_TTL_MS, (tenantId, id) => findOwned(ctx.models.Project, id, { tenantId }), 10_000);
    projectReads.set(ctx, reads);
  }
  const project = await reads.get(principal.tenantId, projectId);
  return project && canSeeProject(principal, project) ? project : null;
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
export async function lookUpCall(ctx: AppContext, principal: Principal, body: TChatRequest): Promise<CallLookups> {
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
export async function prepareCall(ctx: AppContext, principal: Principal, body: TChatRequest, res: Response, lookups: CallLookups): Promise<PreparedCall> {
  const { project, resolved } = lookups;
  if (!project) throw ApiError.notFound('Project');
  if (body.sessionId) {
    await consumeRateLimit(ctx.sessionMessageLimiter, sessionRateLimitKey(principal.tenantId, body.sessionId), res, 'Session message rate limit exceeded');
  }
  if ('error' in resolved) {
    if (isCredentialDecryptionError(resolved.error)) throw runtimeNotConfigured(resolved.error.message);
    throw resolved.error;
  }
  if (!resolved.ok) throw runtimeNotConfigured(resolved.reason);
  return { target: resolved.target, llm: resolved.llm, projectId: project._id };
}

export function toLlmRequest(body: TChatRequest, modelId: string, signal: AbortSignal): LlmRequest {
  return {
    model: modelId,
    messages: body.messages,
    ...(body.tools && body.tools.length > 0 ? { tools: body.tools } : {}),
    ...(body.temperature !== undefined ? { temperature: body.temperature } : {}),
    ...(body.maxTokens !== undefined ? { maxTokens: body.maxTokens } : {}),
    signal,
  };
}

/** Aborts the upstream call when the client closes the connection before the response ends. */
export function abortOnDisconnect(res: Response, controller = new AbortController()): { signal: AbortSignal; clientGone: () => boolean } {
  let gone = false;
  res.on('close', () => {
    if (res.writableFinished) return;
    gone = true;
    controller.abort(new Error('client disconnected'));
  });
  return { signal: controller.signal, clientGone: () => gone };
}

export const elapsedSince = (started: number): number => Math.round(performance.now() - started);
