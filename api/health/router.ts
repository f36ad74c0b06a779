// Liveness (the process answers) and readiness (Temporal and MongoDB are reachable).
import { z } from 'zod';
import { pingMongo } from '../../db/connection';
import { defineRoute, type AnyRoute } from '../http/route';

const ZCheck = z.object({ ok: z.boolean(), error: z.string().optional() });

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
    summary: 'Readiness: Temporal and MongoDB answer (503 with the reason otherwise)',
    tags: ['Health'],
    auth: 'public',
    errorStatuses: [503],
    response: z.object({ status: z.enum(['ready', 'not_ready']), checks: z.object({ mongodb: ZCheck, temporal: ZCheck }) }),
    async handler({ ctx, res }) {
      const check = async (probe: () => Promise<void>) => {
        try {
          await probe();
          return { ok: true };
        } catch (err) {
          return { ok: false, error: err instanceof Error ? err.message.split('\n')[0]!.slice(0, 200) : 'unreachable' };
        }
      };
      const [mongodb, temporal] = await Promise.all([
        check(() => pingMongo(ctx.models.connection)),
        check(() => ctx.temporal.ping()),
      ]);
      const ready = mongodb.ok && temporal.ok;
      res.status(ready ? 200 : 503);
      return { status: ready ? 'ready' : 'not_ready', checks: { mongodb, temporal } };
    },
  }),
];
