// What POST /api/v1/chat/agent and its streamed form share: the preload (project, continuing
// session, message charge), the checks made once it is in, and the turn's answer body.
import { readIdempotencyKey } from '../http/idempotency-key';
import { findOwned } from '../../db/owned';
import { ApiError } from '../../lib/errors';
import { type HandlerInput, type PreloadInput } from '../http/route';
import { type TChatAgentRequest } from './schemas';
import { refundSessionCharge, startExistingSessionTurn, type ChatTurnOptions, type ExistingSessionTurn } from '../../core/chat/turns';
import { sessionMessageBudget } from '../sessions/message-budget';
import { type TurnResult } from '../../workflows/definitions';
import { type ProjectDoc } from '../../db/project';

type NoParams = Record<string, never>;

/** What the chat turn routes look up while the key is checked and the tenant charged. */
export interface ChatTurnLookups {
  project: Pick<ProjectDoc, '_id' | 'tenantId'> | null;
  existing: ExistingSessionTurn | null;
}

/**
 * The chat turn routes' preload: the project, and a continuing session with its message charge,
 * looked up while the key is checked and the tenant charged; a refused request gets the message
 * charge back (the routes' `onRefused`).
 */
export async function chatTurnPreload({ ctx, principal, body, req }: PreloadInput<NoParams, NoParams, TChatAgentRequest>): Promise<ChatTurnLookups> {
  // A project being deleted (db/project.ts, `deletingAt`) is 404 like one that is gone.
  const readProject = () => findOwned(ctx.models.Project, body.projectId, { tenantId: principal.tenantId, deletingAt: null });
  if (!body.sessionId) return { project: await readProject(), existing: null };
  // The response is only given its rate-limit headers here.
  const existing = await startExistingSessionTurn(ctx, principal, body.sessionId, sessionMessageBudget(ctx, req.res!));
  // A session of this tenant in this project proves the project exists: a project's deletion
  // terminates its sessions' workflows before it deletes their records (core/lifecycle/cascade.ts),
  // and a turn on a terminated session is refused. Otherwise the project decides the 404.
  const session = existing.session;
  const project = session?.projectId === body.projectId ? { _id: session.projectId, tenantId: session.tenantId } : await readProject();
  return { project, existing };
}

/**
 * The checks made once the preload is in (the project is the caller's, an SDK token stays in its
 * environment, the Idempotency-Key is well formed), and the turn's options. A refused turn hands
 * its message charge back.
 */
export function chatTurnOptions({
  ctx,
  principal,
  body,
  req,
  res,
  preloaded: { project, existing },
}: HandlerInput<NoParams, NoParams, TChatAgentRequest, 'session:execute', ChatTurnLookups>): ChatTurnOptions {
  const refused = (error: ApiError) => {
    refundSessionCharge(existing);
    return error;
  };
  if (!project || (principal.projectId && principal.projectId !== project._id)) {
    throw refused(new ApiError('NOT_FOUND', 'Project not found or has no agents'));
  }
  // A widget's chats run in its public key's environment, whatever the page asks for.
  if (principal.sdk && body.environment && !principal.environments?.includes(body.environment)) {
    throw refused(new ApiError('FORBIDDEN', `This SDK token is bound to ${principal.environments!.join(', ')}; it cannot act on ${body.environment} resources`));
  }
  const idempotencyKey = readIdempotencyKey(req, () => refundSessionCharge(existing));
  return { principal, project, body, idempotencyKey, budget: sessionMessageBudget(ctx, res), existing };
}

/** A chat turn's answer body and its status: 202 when it suspended on an async tool call (ABL.md §5, step 3). */
export function chatTurnAnswer(result: TurnResult) {
  // The voice form of the reply is for calls; the chat response has no field for it.
  const { traceEvents, voiceOutput: _voiceOutput, ...rest } = result;
  const suspension = result.action.type === 'suspend' ? (result.action.suspension as { id: string; tool: string; expiresAt: string } | undefined) : undefined;
  const models = [...new Set(traceEvents.filter((e) => e.type === 'llm_call').map((e) => `${e.data.provider}:${e.data.model}`))];
  const offline = models.some((m) => m.startsWith('local:'));
  const body = {
    success: true as const,
    ...rest,
    ...(traceEvents.length > 0 ? { traceEvents } : {}),
    ...(suspension ? { suspensionId: suspension.id, suspension } : {}),
    ...(models.length > 0
      ? { metadata: { models, ...(offline ? { note: 'Produced by the offline local model (deterministic rules, not a real LLM).' } : {}) } }
      : {}),
  };
  return { status: suspension ? 202 : 200, body };
}
