// Tenant-management routes: operators create tenants (platform token); tenant admins manage
// projects, users and API keys of their own tenant. Not in the spec; see docs/tenancy.md.
import { z } from 'zod';
import { ApiError } from '../../lib/errors';
import { requirePlatformAdmin } from '../middleware/platform-admin';
import { defineRoute, linksTo, type AnyRoute } from '../http/route';
import { trimmedText, ZPaginationQuery, ZProjectIdParam, ZSuccessOnly } from '../http/schemas';
import {
  ZApiKeySchema,
  ZCreateApiKeyRequestSchema,
  ZCreateProjectRequestSchema,
  ZCreateTenantRequestSchema,
  ZCreateUserRequestSchema,
  ZKeyIdParam,
  ZProjectSchema,
  ZTenantSchema,
  ZUserSchema,
} from './schemas';
import { lastUsedTimes } from '../../db/api-key-usage';
import { presentApiKey, presentProject, presentTenant, presentUser } from '../../core/tenancy/present';
import { createApiKey, createProject, createTenant, createUser, revokeApiKey } from '../../core/tenancy/accounts';
import { requireKeyWithinReach, requirePermissionsHeld } from '../../core/platform-keys/bounds';

const ZCreatedKey = z.object({
  success: z.literal(true),
  apiKey: ZApiKeySchema,
  key: z.string().describe('The key itself (`abl_` + 48 hex). Shown once; store it now.'),
});

export const tenancyRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/api/admin/tenants',
    operationId: 'createTenant',
    summary: 'Create a tenant with a first project and an admin API key',
    tags: ['Tenancy'],
    auth: 'public',
    security: 'platformAdmin',
    // The operator's token is checked before the body is read.
    authorize: ({ ctx, req }) => requirePlatformAdmin(ctx, req, 'Tenant management'),
    bodyExample: { name: 'Acme', slug: 'acme', projectName: 'Support' },
    body: ZCreateTenantRequestSchema.extend({
      projectName: trimmedText(200).default('Default').describe('Name of the first project'),
    }),
    successStatus: 201,
    errorStatuses: [401, 409, 503],
    response: z.object({ success: z.literal(true), tenant: ZTenantSchema, project: ZProjectSchema, apiKey: ZApiKeySchema, key: z.string() }),
    async handler({ ctx, req, body }) {
      requirePlatformAdmin(ctx, req, 'Tenant management');
      const tenant = await createTenant(ctx.models, body);
      const project = await createProject(ctx.models, tenant._id, { name: body.projectName });
      const { key, apiKey } = await createApiKey(ctx.models, tenant._id, { name: 'admin', permissions: ['admin'] });
      return { success: true, tenant: presentTenant(tenant), project: presentProject(project), apiKey: presentApiKey(apiKey), key };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/admin/tenants',
    operationId: 'listTenants',
    summary: 'List tenants',
    tags: ['Tenancy'],
    auth: 'public',
    security: 'platformAdmin',
    query: ZPaginationQuery,
    errorStatuses: [401, 503],
    response: z.object({ success: z.literal(true), total: z.number(), tenants: z.array(ZTenantSchema) }),
    async handler({ ctx, req, query }) {
      requirePlatformAdmin(ctx, req, 'Tenant management');
      const [total, tenants] = await Promise.all([
        ctx.models.Tenant.countDocuments({}),
        ctx.models.Tenant.find({}).sort({ createdAt: 1 }).skip(query.offset).limit(query.limit).lean(),
      ]);
      return { success: true, total, tenants: tenants.map(presentTenant) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/projects',
    operationId: 'listProjects',
    summary: "List the caller's projects",
    tags: ['Tenancy'],
    auth: 'authenticated',
    query: ZPaginationQuery,
    response: z.object({ success: z.literal(true), total: z.number(), projects: z.array(ZProjectSchema) }),
    async handler({ ctx, principal, query }) {
      const filter = { tenantId: principal.tenantId, deletingAt: null, ...(principal.projectId ? { _id: principal.projectId } : {}) };
      const [total, projects] = await Promise.all([
        ctx.models.Project.countDocuments(filter),
        ctx.models.Project.find(filter).sort({ createdAt: 1 }).skip(query.offset).limit(query.limit).lean(),
      ]);
      return { success: true, total, projects: projects.map(presentProject) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/projects',
    operationId: 'createProject',
    summary: 'Create a project',
    tags: ['Tenancy'],
    auth: 'admin',
    body: ZCreateProjectRequestSchema,
    links: linksTo(
      ['getProject', 'listAgents', 'createAgent', 'listToolFiles', 'getLlmSettings', 'putLlmSettings', 'listLlmCredentials', 'listSessions', 'createSession'],
      { projectId: '$response.body#/project/id' },
    ),
    bodyExample: { name: 'Support', slug: 'support', description: 'Customer support agents' },
    successStatus: 201,
    errorStatuses: [409],
    response: z.object({ success: z.literal(true), project: ZProjectSchema }),
    async handler({ ctx, principal, body }) {
      if (principal.projectId) throw new ApiError('FORBIDDEN', 'A project-bound credential cannot create projects');
      const project = await createProject(ctx.models, principal.tenantId, body);
      return { success: true, project: presentProject(project) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/projects/:projectId',
    operationId: 'getProject',
    summary: 'Get a project',
    tags: ['Tenancy'],
    auth: 'authenticated',
    params: ZProjectIdParam,
    response: z.object({ success: z.literal(true), project: ZProjectSchema }),
    async handler({ project }) {
      return { success: true, project: presentProject(project!) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/users',
    operationId: 'listUsers',
    summary: "List the tenant's users",
    tags: ['Tenancy'],
    auth: 'admin',
    query: ZPaginationQuery,
    response: z.object({ success: z.literal(true), total: z.number(), users: z.array(ZUserSchema) }),
    async handler({ ctx, principal, query }) {
      const filter = { tenantId: principal.tenantId };
      const [total, users] = await Promise.all([
        ctx.models.User.countDocuments(filter),
        ctx.models.User.find(filter).select('-passwordHash').sort({ createdAt: 1 }).skip(query.offset).limit(query.limit).lean(),
      ]);
      return { success: true, total, users: users.map(presentUser) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/users',
    operationId: 'createUser',
    summary: 'Create a user who can log in for a JWT',
    description:
      'A user reaches the whole tenant and every environment, and does not expire: a credential bound to a project or to environments, ' +
      'or a key that expires, gets 403.',
    tags: ['Tenancy'],
    auth: 'admin',
    body: ZCreateUserRequestSchema,
    bodyExample: { email: 'ada@example.com', password: 'correct horse battery staple', name: 'Ada', permissions: ['agent:read', 'session:execute'] },
    successStatus: 201,
    errorStatuses: [409],
    response: z.object({ success: z.literal(true), user: ZUserSchema }),
    async handler({ ctx, principal, body }) {
      if (principal.projectId) throw new ApiError('FORBIDDEN', 'A project-bound credential cannot create users');
      // A user reaches every environment and never expires: a key bound to environments, or one
      // that expires, would make through it a credential wider than itself.
      if (principal.environments && principal.environments.length > 0) {
        throw new ApiError('FORBIDDEN', 'A credential bound to environments cannot create users: a user reaches every environment');
      }
      if (principal.expiresAt) throw new ApiError('FORBIDDEN', 'A key that expires cannot create users: a user does not expire');
      requirePermissionsHeld(principal, body.permissions, 'The user');
      const user = await createUser(ctx.models, principal.tenantId, body);
      return { success: true, user: presentUser(user) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/api-keys',
    operationId: 'listApiKeys',
    summary: "List the tenant's API keys (never the keys themselves)",
    tags: ['Tenancy'],
    auth: 'admin',
    query: ZPaginationQuery,
    response: z.object({ success: z.literal(true), total: z.number(), apiKeys: z.array(ZApiKeySchema) }),
    async handler({ ctx, principal, query }) {
      const filter = { tenantId: principal.tenantId, ...(principal.projectId ? { projectId: principal.projectId } : {}) };
      const [total, keys] = await Promise.all([
        ctx.models.ApiKey.countDocuments(filter),
        ctx.models.ApiKey.find(filter).sort({ createdAt: 1 }).skip(query.offset).limit(query.limit).lean(),
      ]);
      const lastUsed = await lastUsedTimes(ctx.models.ApiKeyUsage, principal.tenantId, keys.map((k) => k._id));
      return { success: true, total, apiKeys: keys.map((k) => presentApiKey(k, lastUsed.get(k._id))) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/api-keys',
    operationId: 'createApiKey',
    summary: 'Create an API key (the key is shown once)',
    description:
      'A permission-style key (`permissions`) or a scoped key (`scopeId`), either bound to environments (docs/public-api.md). ' +
      "The key holds no more than the calling credential: its project, environments (the caller's when omitted) and expiry " +
      "(the caller's when omitted) stay within the caller's; 403 otherwise.",
    tags: ['Tenancy'],
    auth: 'admin',
    body: ZCreateApiKeyRequestSchema,
    links: linksTo(['revokeApiKey'], { keyId: '$response.body#/apiKey/id' }),
    // 404: `projectId` or `scopeId` names a project or scope that is not this tenant's (or not the
    // key's own project's); 403 (added for every permission-checked route): the new key would reach
    // more than the caller (core/platform-keys/bounds.ts); 409: a key of that name exists in the scope; 422: `expiresAt` is
    // already past, or the body gives both or neither of `permissions` and `scopeId`; 429: the
    // scope holds its most keys.
    errorStatuses: [404, 409, 422, 429],
    bodyExample: { name: 'web widget', permissions: ['session:execute'], expiresAt: '2030-01-01T00:00:00Z' },
    successStatus: 201,
    response: ZCreatedKey,
    async handler({ ctx, principal, body }) {
      // A project-bound admin may only mint keys for its own project.
      const projectId = principal.projectId ?? body.projectId ?? null;
      if (principal.projectId && body.projectId && body.projectId !== principal.projectId) throw ApiError.notFound('Project');
      if (body.permissions && body.scopeId) throw new ApiError('UNPROCESSABLE_ENTITY', 'body: give either permissions or scopeId, not both');
      const { key, apiKey } = await createApiKey(ctx.models, principal.tenantId, {
        name: body.name,
        projectId,
        permissions: body.permissions,
        scopeId: body.scopeId ?? null,
        environments: body.environments,
        // Omitted (undefined) takes the calling key's expiry; null is "never".
        expiresAt: body.expiresAt === undefined ? undefined : body.expiresAt === null ? null : new Date(body.expiresAt),
        createdBy: principal.subjectId,
        issuer: principal,
      });
      return { success: true, apiKey: presentApiKey(apiKey), key };
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/api/api-keys/:keyId',
    operationId: 'revokeApiKey',
    summary: 'Revoke an API key (in force on every API process when this returns)',
    description: '403 when the key acts in an environment the calling key is not bound to: a key never revokes one it could not have made.',
    tags: ['Tenancy'],
    auth: 'admin',
    params: ZKeyIdParam,
    errorStatuses: [404],
    response: ZSuccessOnly.extend({ apiKey: ZApiKeySchema }),
    async handler({ ctx, principal, params }) {
      const existing = await ctx.models.ApiKey.findOne({ _id: params.keyId, tenantId: principal.tenantId }).lean();
      if (!existing || (principal.projectId && existing.projectId !== principal.projectId)) throw ApiError.notFound('API key');
      const scope = existing.scopeId ? await ctx.models.ApiScope.findOne({ _id: existing.scopeId, tenantId: principal.tenantId }, { grants: 1 }).lean() : null;
      requireKeyWithinReach(principal, existing, existing.scopeId ? (scope?.grants ?? []) : null);
      const doc = await revokeApiKey(ctx.models, principal.tenantId, params.keyId, ctx.config.API_KEY_CACHE_MS);
      const lastUsed = await lastUsedTimes(ctx.models.ApiKeyUsage, principal.tenantId, [doc._id]);
      return { success: true, apiKey: presentApiKey(doc, lastUsed.get(doc._id)) };
    },
  }),
];
