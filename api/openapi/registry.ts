// The OpenAPI registry every route registers into, and the document generator. The document is
// built from the same zod schemas the routes parse with, so it cannot drift from the code.
import { extendZodWithOpenApi, OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { addResponseExamples } from './examples';

extendZodWithOpenApi(z);

export function createOpenApiRegistry(): OpenAPIRegistry {
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', 'bearerAuth', {
    type: 'http',
    scheme: 'bearer',
    description: 'A JWT from POST /api/auth/login, or an API key (`abl_…`).',
  });
  registry.registerComponent('securitySchemes', 'apiKeyHeader', {
    type: 'apiKey',
    in: 'header',
    name: 'X-API-Key',
    description: 'An API key (`abl_…`).',
  });
  registry.registerComponent('securitySchemes', 'sdkToken', {
    type: 'apiKey',
    in: 'header',
    name: 'X-SDK-Token',
    description:
      "An embedded widget's SDK session token (POST /api/v1/sdk/init), sent from the page origin it was issued to. Only the operations that list this scheme take it; every other answers 401.",
  });
  registry.registerComponent('securitySchemes', 'platformAdmin', {
    type: 'apiKey',
    in: 'header',
    name: 'X-Platform-Admin-Token',
    description: 'The operator token (PLATFORM_ADMIN_TOKEN) for tenant management.',
  });
  return registry;
}

export function generateOpenApiDocument(registry: OpenAPIRegistry, serverUrl: string) {
  const document = new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Switchboard API',
      version: '1.0.0',
      description:
        'Hosts conversational agents written in ABL. Errors use `{ success: false, error: { code, message } }`.',
    },
    servers: [{ url: serverUrl }],
    security: [{ bearerAuth: [] }, { apiKeyHeader: [] }],
    tags: [
      {
        name: 'Public API: keys and scopes',
        description:
          'Platform keys (`abl_`, `ak-` ids) and the scopes (`as-` ids) of an app; an app is a project and `appId` is its id. ' +
          'Sent as `X-API-Key`. Errors carry the request id: `{ success: false, error: { code, message, requestId } }` (docs/public-api.md).',
      },
    ],
  });
  addResponseExamples(document as Parameters<typeof addResponseExamples>[0]);
  return document;
}
