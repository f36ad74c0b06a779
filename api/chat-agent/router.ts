// POST /api/v1/chat/agent: run one message through a project's agents.
import { readIdempotencyKey } from '../http/idempotency-key';
import { findOwned } from '../../db/owned';
import { ApiError } from '../../lib/errors';
import { defineRoute, type AnyRoute } from '../http/route';
import { sessionLinks } from '../sessions/router';
import { ZChatAgentRequestSchema, ZChatAgentResponseSchema } from './schemas';
import { refundSessionCharge, runChatTurn, startExistingSessionTurn } from '../../core/chat/turns';
import { sessionMessageBudget } from '../sessions/message-budget';
import { type Response } from 'express';
import { type TurnResult } from '../../workflows/definitions';


export const chatAgentRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/api/v1/chat/agent',
    operationId: 'chatWithAgent',
    summary: "Send a message to a project's agents",
    description:
      'Creates a session on the first message (omit sessionId) or continues one. Send `Idempotency-Key` to make a retried message count once: the same key returns the same answer (and, for a first message, the same session). ' +
      "An embedded widget sends `X-SDK-Token` (from `POST /api/v1/sdk/init`) from the page origin it was issued to (403 otherwise): it continues only sessions it started (another end user's is 404), in the public key's project and environment.",
    tags: ['Chat'],
    auth: 'session:execute',
    sdkToken: true,
    body: ZChatAgentRequestSchema,
    links: sessionLinks('$request.body#/projectId', '$response.body#/sessionId'),
    bodyExample: { projectId: 'jqmvff06cp7cvm69y75r2r1x', message: 'I have a question about my invoice' },
    errorStatuses: [404, 409, 410, 429, 503],
    alsoSuccess: [202],
    response: ZChatAgentResponseSchema,
    // The project, and a continuing session with its message charge, are looked up while the
    // key is checked and the tenant charged; a refused request gets the message charge back.
    preload: async ({ ctx, principal, body, req }) => {
      const readProject = () => findOwned(ctx.models.Project, body.projectId, { tenantId: principal.tenantId });
      if (!body.sessionId) return { project: await readProject(), existing: null };
      // The response is only given its rate-limit headers here.
      const existing = await startExistingSessionTurn(ctx, principal, body.sessionId, sessionMessageBudget(ctx, req.res!));
      // A session of this tenant in this project proves the project exists: projects are never
      // deleted while they have sessions (db/session.ts). Otherwise the project decides the 404.
      const session = existing.session;
      const project = session?.projectId === body.projectId ? { _id: session.projectId, tenantId: session.tenantId } : await readProject();
      return { project, existing };
    },
    onRefused: ({ existing }) => refundSessionCharge(existing),
    async handler({ ctx, principal, body, req, res, preloaded: { project, existing } }) {
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
      const result = await runChatTurn(ctx, { principal, project, body, idempotencyKey, budget: sessionMessageBudget(ctx, res), existing });
      return chatTurnResponse(result, res);
    },
  }),
];

/** The answer to a chat turn (POST /api/v1/chat/agent, POST /api/v1/chat/send); 202 when it suspended. */
export function chatTurnResponse(result: TurnResult, res: Response) {
  // The voice form of the reply is for calls; the chat response has no field for it.
  const { traceEvents, voiceOutput: _voiceOutput, ...rest } = result;
  // An async tool call suspended the session: 202 with the suspension (ABL.md §5, step 3).
  const suspension = result.action.type === 'suspend' ? (result.action.suspension as { id: string; tool: string; expiresAt: string } | undefined) : undefined;
  if (suspension) res.status(202);
  const models = [...new Set(traceEvents.filter((e) => e.type === 'llm_call').map((e) => `${e.data.provider}:${e.data.model}`))];
  const offline = models.some((m) => m.startsWith('local:'));
  return {
    success: true as const,
    ...rest,
    ...(traceEvents.length > 0 ? { traceEvents } : {}),
    ...(suspension ? { suspensionId: suspension.id, suspension } : {}),
    ...(models.length > 0
      ? { metadata: { models, ...(offline ? { note: 'Produced by the offline local model (deterministic rules, not a real LLM).' } : {}) } }
      : {}),
  };
}

