// Builds the Express app: request ids and logs, every feature's routes (mounted and documented
// together; each reads its own body, api/http/route.ts), the OpenAPI document and the errors.
import express, { type Express, type Router } from 'express';
import type swaggerUiExpress from 'swagger-ui-express';
import { ApiError } from '../lib/errors';
import { type AppContext } from './context';
import { type AnyRoute, mountRoutes, type MountedRoute, registerInOpenApi } from './http/route';
import { errorHandler, notFoundHandler } from './middleware/errors';
import { requestId } from './middleware/request-id';
import { requestLog } from './middleware/request-log';
import { httpMetrics, tagRoute } from './middleware/http-metrics';
import { httpTracing } from './middleware/tracing';
import { createOpenApiRegistry, generateOpenApiDocument } from './openapi/registry';
import { agentRoutes } from './agents/router';
import { ablTestRoutes } from './abl-tests/router';
import { authRoutes } from './auth/router';
import { chatRoutes } from './completions/router';
import { codecRoutes } from './codec/router';
import { codecCors } from './codec/cors';
import { codecLoginRouter } from './codec/operator-session';
import { chatAgentRoutes } from './chat-agent/router';
import { deploymentRoutes } from './deployments/router';
import { healthRoutes } from './health/router';
import { llmSettingsRoutes } from './llm-settings/router';
import { sessionRoutes } from './sessions/router';
import { sessionInsightRoutes } from './sessions/insight-router';
import { projectIoRoutes } from './project-io/router';
import { tenancyRoutes } from './tenancy/router';
import { platformKeyRoutes } from './platform-keys/router';
import { toolSecretRoutes } from './tool-secrets/router';
import { mcpServerRoutes } from './mcp-servers/router';
import { projectFunctionRoutes } from './project-functions/router';
import { callbackRoutes } from './callbacks/router';
import { humanTaskRoutes } from './human-tasks/router';
import { agenticAppRoutes } from './agentic-apps/router';
import { httpAsyncRoutes } from './http-async/router';
import { channelConnectionRoutes } from './channel-connections/router';
import { registerHttpAsyncWebhooks } from './http-async/webhooks';
import { voiceWebhookRoutes } from './telephony/voice';
import { outboundCallRoutes } from './outbound-calls/router';
import { telephonyStatusRoutes } from './telephony/status';
import { recordingRoutes } from './recordings/router';
import { analyticsRoutes } from './analytics/router';
import { recordingStatusRoutes } from './telephony/recording-status';
import { voiceAnalyticsRoutes } from './voice-analytics/router';
import { sessionAnalyticsRoutes } from './session-analytics/router';
import { SESSION_ANALYTICS_PREFIX, sessionAnalyticsResponses } from './session-analytics/responses';
import { attachmentRoutes } from './attachments/router';
import { chatSendRoutes } from './chat-agent/send';
import { feedbackRoutes } from './feedback/router';
import { contactRoutes } from './contacts/router';
import { memoryRoutes } from './memory/router';
import { sdkRoutes } from './sdk/router';
import { SDK_CORS_PATHS, sdkPreflight } from './sdk/cors';
import { agentAssistRoutes } from './agent-assist/router';
import { widgetDemoRouter, widgetRoutes } from './widget/router';
import { lifecycleRoutes } from './lifecycle/router';
import { voiceRoutes } from './voice/router';

/** Every feature's routes. A new feature adds its array here and appears in /openapi.json. */
export const featureRoutes: AnyRoute[][] = [healthRoutes, authRoutes, tenancyRoutes, agentRoutes, chatRoutes, chatAgentRoutes, llmSettingsRoutes, sessionRoutes, sessionInsightRoutes, toolSecretRoutes, mcpServerRoutes, projectFunctionRoutes, callbackRoutes, humanTaskRoutes, projectIoRoutes, codecRoutes, deploymentRoutes, platformKeyRoutes, agenticAppRoutes, httpAsyncRoutes, channelConnectionRoutes, voiceWebhookRoutes, outboundCallRoutes, telephonyStatusRoutes, recordingRoutes, recordingStatusRoutes,
  voiceAnalyticsRoutes,
  sessionAnalyticsRoutes,
  attachmentRoutes,
  chatSendRoutes,
  feedbackRoutes,
  contactRoutes,
  analyticsRoutes,
  memoryRoutes,
  sdkRoutes,
  agentAssistRoutes,
  widgetRoutes,
  ablTestRoutes,
  lifecycleRoutes,
  voiceRoutes,
];

/** The document /openapi.json serves, built without a server or a context (sdk/ generates from it). */
export function buildOpenApiDocument(serverUrl: string): ReturnType<typeof generateOpenApiDocument> {
  const registry = createOpenApiRegistry();
  for (const routes of featureRoutes) for (const route of routes) registerInOpenApi(registry, route);
  registerHttpAsyncWebhooks(registry);
  return generateOpenApiDocument(registry, serverUrl);
}

export function createApp(ctx: AppContext, extraRoutes: AnyRoute[] = []): Express {
  const app = express();
  app.disable('x-powered-by');
  // Whose X-Forwarded-For gives req.ip, which the login throttle counts by (TRUST_PROXY).
  app.set('trust proxy', ctx.config.TRUST_PROXY);
  app.set('query parser', 'simple');

  app.use(requestId);
  // Every request, whichever part of the app answers it, by route template (never the raw path).
  app.use(httpMetrics());
  // A server span per request, only when tracing is on (lib/tracing.ts).
  if (ctx.tracing) app.use(httpTracing());
  app.use(requestLog(ctx.logger, { ignore: (req) => req.url === '/healthz' || req.url === '/readyz' }));
  // Before the routes, so a refused body still carries the CORS headers the UI needs to read it.
  // No body is parsed here: each route reads its own once the caller may send it (api/http/body.ts).
  app.use('/codec', codecCors(ctx));
  // A widget's preflights, answered only for origins a live public key lists (api/sdk/cors.ts).
  app.use(SDK_CORS_PATHS, sdkPreflight(ctx));
  // Session analytics answers: their own error shape and, per key, encryption (before the routes, so errors too).
  app.use(SESSION_ANALYTICS_PREFIX, sessionAnalyticsResponses(ctx));

  const registry = createOpenApiRegistry();
  const router: Router = express.Router();
  const mounted: MountedRoute[] = [];
  for (const routes of [...featureRoutes, extraRoutes]) mounted.push(...mountRoutes(router, registry, ctx, routes));
  registerHttpAsyncWebhooks(registry);
  // OPTIONS answered from the mounted patterns, which honour `reservedParams`: Express's own answer
  // would list the methods of a `:param` route for the literal it reserves (DELETE for
  // `apikeys/create`). Same form as Express's: the methods, with HEAD where GET is, sorted.
  app.use((req, res, next) => {
    if (req.method !== 'OPTIONS') return next();
    const methods = new Set(mounted.filter((r) => r.pattern.test(req.path)).map((r) => r.method.toUpperCase()));
    if (methods.size === 0) return next();
    if (methods.has('GET')) methods.add('HEAD');
    tagRoute(res, '(options)');
    const allow = [...methods].sort().join(', ');
    res.setHeader('Allow', allow);
    res.status(200).send(allow);
  });
  app.use(router);
  app.use((req, res, next) => {
    if (/^\/codec\/login\/?$/.test(req.path)) tagRoute(res, '/codec/login');
    else if (req.path === '/demo') tagRoute(res, '/demo');
    next();
  });
  app.use(codecLoginRouter(ctx));
  // The dev stack's widget demo page (GET /demo); an unknown path anywhere else (api/widget/router.ts).
  app.use(widgetDemoRouter(ctx));
  mounted.push({ method: 'get', pattern: /^\/codec\/login\/?$/ }, { method: 'post', pattern: /^\/codec\/login\/?$/ });

  let document: ReturnType<typeof generateOpenApiDocument> | null = null;
  const openApi = () => (document ??= generateOpenApiDocument(registry, ctx.config.PUBLIC_BASE_URL));
  app.get('/openapi.json', (_req, res) => {
    tagRoute(res, '/openapi.json');
    res.json(openApi());
  });
  // The documentation UI's package loads on the first visit, not with every API process.
  let docsUi: express.Router | undefined;
  app.use('/docs', (req: express.Request, res: express.Response, next: express.NextFunction) => {
    tagRoute(res, '/docs');
    if (!docsUi) {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const swaggerUi = require('swagger-ui-express') as typeof swaggerUiExpress;
      docsUi = express.Router().use(swaggerUi.serve, (rq: express.Request, rs: express.Response, nx: express.NextFunction) =>
        swaggerUi.setup(openApi(), { customSiteTitle: 'Switchboard API' })(rq, rs, nx),
      );
    }
    docsUi(req, res, next);
  });
  mounted.push({ method: 'get', pattern: /^\/openapi\.json$/ });

  app.use(notFoundHandler(() => mounted));
  app.use(errorHandler(ctx.logger));
  return app;
}

export { ApiError };
