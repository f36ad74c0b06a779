// Results of async tool calls: the signed callback an outside system posts (no credential but
// the signature), and the authenticated resume route, the polling alternative (docs/callbacks.md).
import { z } from 'zod';
import { defineRoute, type AnyRoute } from '../http/route';
import { ZSessionId } from '../sessions/schemas';
import { rawBodyOf } from '../http/raw-body';
import { PUBLIC_BODY_BYTES, STANDARD_BODY_BYTES } from '../http/body';
import { acceptCallback, resumeSession } from '../../core/callbacks/delivery';
import { type AppContext } from '../context';
import { ApiError } from '../../lib/errors';
import { canActInEnvironment, type Principal } from '../../lib/permissions';

/**
 * A session of an environment the key is not bound to is not there for it: 404, as on the session
 * routes (docs/public-api.md, "Environment binding"). Costs a read only for an environment-bound key.
 */
async function requireSessionEnvironment(ctx: AppContext, principal: Principal, scope: { tenantId: string; projectId?: string }, sessionId: string): Promise<void> {
  if (!principal.environments?.length) return;
  const session = await ctx.models.Session.findOne({ _id: sessionId, ...scope }, { environment: 1 }).lean();
  if (session && !canActInEnvironment(principal, session.environment)) throw ApiError.notFound('Session');
}

const ZCallbackParams = z.object({
  callbackId: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[A-Za-z0-9_-]+$/, 'must be a callback id such as cb_3f2a…')
    .describe('The suspension id in the callback URL the tool request carried'),
});

const ZCallbackResponse = z
  .object({
    ok: z.literal(true),
    status: z.literal('already_processed').optional().describe('Set when an earlier delivery already resumed the session'),
  })
  .openapi('CallbackAccepted');

const ZResumeRequest = z
  .object({ toolResult: z.record(z.string(), z.unknown()).describe('The async tool’s result, as its callback would have posted it') })
  .openapi('ResumeSessionRequest');

export const callbackRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/api/v1/callbacks/:callbackId',
    operationId: 'postToolCallback',
    summary: "Deliver an async tool's result to the session waiting on it",
    description:
      'No credential: the callback id is the capability and `x-callback-signature: sha256=<hex>` (the HMAC-SHA256 of the raw body ' +
      'with the suspension’s secret, sent as `callbackSecret` in the tool request) proves the sender. The first valid call resumes ' +
      'the session and answers `{ ok: true }`; later ones answer 200 `{ ok: true, status: "already_processed" }`. 404 unknown id, ' +
      '410 expired (the session resumed with a tool_timeout) or the session ended, 401 bad or missing signature, 503 when the result ' +
      'could not be handed to the session (nothing was used up: retry).',
    tags: ['Callbacks'],
    auth: 'public',
    // The callback id is the capability: a body over a few KB is read only for an id that exists.
    authorize: async ({ ctx, req }) => {
      const declared = Number(req.headers['content-length']);
      if (Number.isFinite(declared) && declared <= PUBLIC_BODY_BYTES) return;
      const id = req.params.callbackId;
      if (typeof id !== 'string' || id.includes('\u0000') || !(await ctx.models.Suspension.exists({ _id: id }))) throw new ApiError('NOT_FOUND', 'Unknown callback id');
    },
    bodyLimit: { bytes: STANDARD_BODY_BYTES },
    params: ZCallbackParams,
    body: z.record(z.string(), z.unknown()).describe('Whatever the outside system reports; passed to the agent unchanged as the tool result'),
    bodyExample: { status: 'completed', result: { transactionId: 'tx_123' } },
    errorStatuses: [401, 404, 409, 410, 503],
    response: ZCallbackResponse,
    async handler({ ctx, params, body, req }) {
      const signature = req.headers['x-callback-signature'];
      const outcome = await acceptCallback(ctx, params.callbackId, rawBodyOf(req), typeof signature === 'string' ? signature : undefined, body);
      return outcome.status === 'already_processed' ? { ok: true, status: 'already_processed' } : { ok: true };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/v1/sessions/:id/resume',
    operationId: 'resumeSession',
    summary: 'Resume a session waiting on an async tool call with its result (the polling alternative to callbacks)',
    description:
      'For callers that poll the outside system instead of receiving its callback: `toolResult` becomes the result of the call the ' +
      'session waits on, exactly as a callback’s body would. Claims the suspension like a callback does: 200 once, then ' +
      '`already_processed`; 409 when the session waits on nothing; 410 when its wait expired. A session of an environment the key is not ' +
      'bound to is 404.',
    tags: ['Callbacks'],
    auth: 'session:execute',
    params: z.object({ id: ZSessionId }),
    body: ZResumeRequest,
    bodyExample: { toolResult: { status: 'completed', result: { transactionId: 'tx_123' } } },
    errorStatuses: [404, 409, 410, 503],
    response: z
      .object({
        success: z.literal(true),
        sessionId: z.string(),
        suspensionId: z.string(),
        status: z.enum(['resumed', 'already_processed']),
      })
      .openapi('SessionResumed'),
    async handler({ ctx, principal, params, body }) {
      const scope = { tenantId: principal.tenantId, ...(principal.projectId ? { projectId: principal.projectId } : {}) };
      await requireSessionEnvironment(ctx, principal, scope, params.id);
      const outcome = await resumeSession(ctx, scope, params.id, body.toolResult);
      return { success: true, sessionId: params.id, suspensionId: outcome.suspensionId, status: outcome.status === 'delivered' ? 'resumed' : 'already_processed' };
    },
  }),
];
