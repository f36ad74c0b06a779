// Per-project LLM settings (default model, tier overrides) and provider credentials (API keys
// stored encrypted, never returned). Not in the spec; see docs/llm-settings.md.
import { z } from 'zod';
import { ApiError } from '../../lib/errors';
import { deleteLlmCredential, listLlmCredentials, upsertLlmCredential, type LlmCredentialMetadata } from '../../db/llm-credential';
import { getProjectLlmSettings, putProjectLlmSettings, type ProjectLlmSettings } from '../../db/llm-settings';
import { effectiveProjectTiers } from '../../core/llm/models';
import { assertDestinationLiteral, blockedDestinationOf, llmDestinationPolicy } from '../../lib/net/destination';
import { type AppContext } from '../context';
import { defineRoute, linksTo, type AnyRoute } from '../http/route';
import { ZProjectIdParam, ZSuccessOnly } from '../http/schemas';
import { requireEncryptor } from '../../core/llm/runtime';
import {
  ZLlmCredentialSchema,
  ZLlmSettingsResponseSchema,
  ZProviderParam,
  ZPutLlmCredentialRequestSchema,
  ZPutLlmSettingsRequestSchema,
} from './schemas';

function presentSettings(ctx: AppContext, settings: ProjectLlmSettings) {
  const tiers = effectiveProjectTiers(ctx.config, settings.tierOverrides);
  return {
    defaultModel: settings.defaultModel,
    tierOverrides: settings.tierOverrides,
    effectiveTiers: { fast: tiers.fast ?? null, balanced: tiers.balanced ?? null, powerful: tiers.powerful ?? null },
    updatedAt: settings.updatedAt?.toISOString() ?? null,
  };
}

/**
 * Refuses now a base URL whose host is a non-public address literal (or `localhost`); a name is
 * judged at each call, by the resolution the call connects with.
 */
function assertBaseUrlDestination(ctx: AppContext, baseURL: string): void {
  try {
    assertDestinationLiteral(new URL(baseURL), llmDestinationPolicy(ctx.config));
  } catch (err) {
    const blocked = blockedDestinationOf(err);
    if (!blocked) throw err;
    throw new ApiError('VALIDATION_ERROR', `body.baseURL: ${blocked.message}; use a public address`);
  }
}

function presentCredential(credential: LlmCredentialMetadata) {
  return {
    provider: credential.provider,
    baseURL: credential.baseURL,
    createdAt: credential.createdAt.toISOString(),
    updatedAt: credential.updatedAt.toISOString(),
  };
}

export const llmSettingsRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/api/projects/:projectId/llm-settings',
    operationId: 'getLlmSettings',
    summary: "A project's LLM settings and the tier map its calls use",
    tags: ['LLM settings'],
    auth: 'agent:read',
    params: ZProjectIdParam,
    response: ZLlmSettingsResponseSchema,
    async handler({ ctx, project }) {
      const settings = await getProjectLlmSettings(ctx.models.LlmSettings, project!.tenantId, project!._id);
      return { success: true, settings: presentSettings(ctx, settings) };
    },
  }),
  defineRoute({
    method: 'put',
    path: '/api/projects/:projectId/llm-settings',
    operationId: 'putLlmSettings',
    summary: "Replace a project's LLM settings",
    tags: ['LLM settings'],
    auth: 'agent:write',
    params: ZProjectIdParam,
    body: ZPutLlmSettingsRequestSchema,
    bodyExample: { defaultModel: 'balanced', tierOverrides: { fast: 'openai:gpt-4.1-mini' } },
    response: ZLlmSettingsResponseSchema,
    async handler({ ctx, project, body }) {
      const settings = await putProjectLlmSettings(ctx.models.LlmSettings, { tenantId: project!.tenantId, projectId: project!._id }, body);
      return { success: true, settings: presentSettings(ctx, settings) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/projects/:projectId/llm-credentials',
    operationId: 'listLlmCredentials',
    summary: "A project's provider credentials (metadata only; keys are never returned)",
    tags: ['LLM settings'],
    auth: 'credential:read',
    params: ZProjectIdParam,
    response: z.object({ success: z.literal(true), credentials: z.array(ZLlmCredentialSchema) }),
    async handler({ ctx, project }) {
      const credentials = await listLlmCredentials(ctx.models.LlmCredential, project!.tenantId, project!._id);
      return { success: true, credentials: credentials.map(presentCredential) };
    },
  }),
  defineRoute({
    method: 'put',
    path: '/api/projects/:projectId/llm-credentials/:provider',
    operationId: 'putLlmCredential',
    summary: "Set (create or replace) a project's credential for a provider",
    description: 'The key is encrypted with the tenant key (AES-256-GCM) and never returned. 201 when created, 200 when replaced.',
    tags: ['LLM settings'],
    auth: 'credential:write',
    params: ZProviderParam,
    body: ZPutLlmCredentialRequestSchema,
    links: linksTo(['deleteLlmCredential'], { projectId: '$request.path.projectId', provider: '$request.path.provider' }),
    bodyExample: { apiKey: 'sk-your-provider-key', baseURL: null },
    alsoSuccess: [201],
    response: z.object({ success: z.literal(true), credential: ZLlmCredentialSchema }),
    errorStatuses: [503],
    async handler({ ctx, project, params, body, res }) {
      if (body.baseURL) assertBaseUrlDestination(ctx, body.baseURL);
      const encryptor = requireEncryptor(ctx);
      const { created, credential } = await upsertLlmCredential(
        ctx.models.LlmCredential,
        encryptor,
        { tenantId: project!.tenantId, projectId: project!._id },
        { provider: params.provider, apiKey: body.apiKey, baseURL: body.baseURL ?? null },
      );
      if (created) res.status(201);
      return { success: true, credential: presentCredential(credential) };
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/api/projects/:projectId/llm-credentials/:provider',
    operationId: 'deleteLlmCredential',
    summary: "Remove a project's credential for a provider (calls fall back to the platform credential)",
    tags: ['LLM settings'],
    auth: 'credential:write',
    params: ZProviderParam,
    response: ZSuccessOnly,
    async handler({ ctx, project, params }) {
      const removed = await deleteLlmCredential(ctx.models.LlmCredential, { tenantId: project!.tenantId, projectId: project!._id }, params.provider);
      if (!removed) throw new ApiError('NOT_FOUND', `No ${params.provider} credential is set for this project`);
      return { success: true };
    },
  }),
];
