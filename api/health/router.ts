// Liveness (the process answers) and readiness (Temporal and MongoDB are reachable; LiveKit's
// reachability reported beside, when configured, without failing readiness). The public probe
// says only ready or not, and whether voice's LiveKit answers; why not is for the operator (logs,
// GET /api/admin/readiness).
import { z } from 'zod';
import { ApiError } from '../../lib/errors';
import { defineRoute, type AnyRoute } from '../http/route';
import { requirePlatformAdmin } from '../middleware/platform-admin';
import { checkReadiness, sharedReadiness } from './readiness';

const ZCheck = z.object({
  ok: z.boolean(),
  error: z.string().optional().describe('The first line of the failure (at most 200 characters); absent when ok'),
});

export const healthRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/healthz',
    operationId: 'getHealth',
    summary: 'Liveness: the process is up',
    tags: ['Health'],
    auth: 'public',
    response: z.object({ status: z.literal('ok') }),
    async handler() {
      return { status: 'ok' };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/readyz',
    operationId: 'getReadiness',
    summary: 'Readiness: Temporal and MongoDB answer',
    description:
      'Public, for load balancers: 200 when ready, 503 `SERVICE_UNAVAILABLE` otherwise, with no detail. ' +
      'When real-time voice is configured (`LIVEKIT_URL`), `livekit` says whether its LiveKit server answers; ' +
      'voice is optional, so `unreachable` leaves the API ready. ' +
      'Which dependency failed and why is logged, and shown to operators by `GET /api/admin/readiness`. ' +
      'Probes arriving together share one check, and a check is reused for one second, so the answer can be up to a second old.',
    tags: ['Health'],
    auth: 'public',
    errorStatuses: [503],
    response: z.object({
      status: z.literal('ready'),
      livekit: z.enum(['ok', 'unreachable']).optional().describe('Only when real-time voice is configured: whether LiveKit answers its server API'),
    }),
    async handler({ ctx }) {
      const { ready, checks } = await sharedReadiness(ctx);
      if (!ready) throw new ApiError('SERVICE_UNAVAILABLE', 'Not ready');
      return { status: 'ready' as const, ...(checks.livekit ? { livekit: checks.livekit.ok ? ('ok' as const) : ('unreachable' as const) } : {}) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/admin/readiness',
    operationId: 'getReadinessReport',
    summary: 'Readiness with the reason of each failed check (operators)',
    description:
      'Requires `X-Platform-Admin-Token`; answers 200 with the report whether or not the API is ready ' +
      '(503 only when PLATFORM_ADMIN_TOKEN is unset). The errors can name internal hosts.',
    tags: ['Health'],
    auth: 'public',
    security: 'platformAdmin',
    errorStatuses: [401, 503],
    response: z.object({
      success: z.literal(true),
      status: z.enum(['ready', 'not_ready']),
      checks: z.object({ mongodb: ZCheck, temporal: ZCheck, livekit: ZCheck.optional().describe('Only when real-time voice is configured; never fails readiness') }),
    }),
    async handler({ ctx, req }) {
      requirePlatformAdmin(ctx, req, 'The readiness report');
      const { ready, checks } = await checkReadiness(ctx);
      return { success: true, status: ready ? 'ready' : 'not_ready', checks };
    },
  }),
];
