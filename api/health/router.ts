// Liveness (the process answers) and readiness (Temporal and MongoDB are reachable). The public
// probe says only ready or not; why not is for the operator (logs, GET /api/admin/readiness).
import { z } from 'zod';
import { ApiError } from '../../lib/errors';
import { defineRoute, type AnyRoute } from '../http/route';
import { requirePlatformAdmin } from '../middleware/platform-admin';
import { checkReadiness } from './readiness';

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
      'Which dependency failed and why is logged, and shown to operators by `GET /api/admin/readiness`.',
    tags: ['Health'],
    auth: 'public',
    errorStatuses: [503],
    response: z.object({ status: z.literal('ready') }),
    async handler({ ctx }) {
      const { ready } = await checkReadiness(ctx);
      if (!ready) throw new ApiError('SERVICE_UNAVAILABLE', 'Not ready');
      return { status: 'ready' };
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
      checks: z.object({ mongodb: ZCheck, temporal: ZCheck }),
    }),
    async handler({ ctx, req }) {
      requirePlatformAdmin(ctx, req, 'The readiness report');
      const { ready, checks } = await checkReadiness(ctx);
      return { success: true, status: ready ? 'ready' : 'not_ready', checks };
    },
  }),
];
