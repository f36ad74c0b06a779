// Builds the Express app: request ids and logs, JSON parsing with the spec's limits, every
// feature's routes (mounted and documented together), the OpenAPI document and the errors.
import { isUtf8 } from 'node:buffer';
import express, { type Express, type Router } from 'express';
import swaggerUi from 'swagger-ui-express';
import { ApiError } from '../lib/errors';
import { type AppContext } from './context';
import { type AnyRoute, mountRoutes, type MountedRoute } from './http/route';
import { errorHandler, notFoundHandler } from './middleware/errors';
import { requestId } from './middleware/request-id';
import { requestLog } from './middleware/request-log';
import { createOpenApiRegistry, generateOpenApiDocument } from './openapi/registry';
import { agentRoutes } from './agents/router';
import { authRoutes } from './auth/router';
import { chatRoutes } from './chat/router';
import { chatAgentRoutes } from './chat-agent/router';
import { deploymentRoutes } from './deployments/router';
import { healthRoutes } from './health/router';
import { llmSettingsRoutes } from './llm-settings/router';
import { sessionRoutes } from './sessions/router';
import { tenancyRoutes } from './tenancy/router';

/** Every feature's routes. A new feature adds its array here and appears in /openapi.json. */
export const featureRoutes: AnyRoute[][] = [healthRoutes, authRoutes, tenancyRoutes, agentRoutes, chatRoutes, chatAgentRoutes, llmSettingsRoutes, sessionRoutes, deploymentRoutes];

export function createApp(ctx: AppContext, extraRoutes: AnyRoute[] = []): Express {
  const app = express();
  app.disable('x-powered-by');
  // Whose X-Forwarded-For gives req.ip, which the login throttle counts by (TRUST_PROXY).
  app.set('trust proxy', ctx.config.TRUST_PROXY);
  app.set('query parser', 'simple');

  app.use(requestId);
  app.use(requestLog(ctx.logger, { ignore: (req) => req.url === '/healthz' || req.url === '/readyz' }));
  app.use(
    express.json({
      limit: '1mb',
      type: ['application/json', 'application/*+json'],
      verify: (_req, _res, buf) => {
        if (!isUtf8(buf)) throw Object.assign(new Error('Request body is not valid UTF-8'), { type: 'entity.verify.failed', status: 400 });
      },
    }),
  );

  const registry = createOpenApiRegistry();
  const router: Router = express.Router();
  const mounted: MountedRoute[] = [];
  for (const routes of [...featureRoutes, extraRoutes]) mounted.push(...mountRoutes(router, registry, ctx, routes));
  app.use(router);

  let document: ReturnType<typeof generateOpenApiDocument> | null = null;
  const openApi = () => (document ??= generateOpenApiDocument(registry, ctx.config.PUBLIC_BASE_URL));
  app.get('/openapi.json', (_req, res) => {
    res.json(openApi());
  });
  app.use('/docs', swaggerUi.serve, (req: express.Request, res: express.Response, next: express.NextFunction) =>
    swaggerUi.setup(openApi(), { customSiteTitle: 'Switchboard API' })(req, res, next),
  );
  mounted.push({ method: 'get', pattern: /^\/openapi\.json$/ });

  app.use(notFoundHandler(() => mounted));
  app.use(errorHandler(ctx.logger));
  return app;
}

export { ApiError };
