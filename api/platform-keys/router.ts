// The public key and scope API (spec "Platform keys and scopes"): keys bound to a scope of an app
// (an app is a project; `appId` is its id), created with a name unique in the scope and revoked
// by deleting them. Every response carries `meta { requestId, timestamp }`.
import { z } from 'zod';
import { ApiError } from '../../lib/errors';
import { lastUsedTimes } from '../../db/api-key-usage';
import { defineRoute, linksTo, type AnyRoute } from '../http/route';
import { loadApp } from './app';
import { createApiKey, KEYS_PER_SCOPE } from '../../core/tenancy/accounts';
import {
  ZAppParam,
  ZCreatePlatformKeyRequest,
  ZCreateScopeRequest,
  ZMeta,
  ZPageQuery,
  ZPlatformKey,
  ZPlatformKeyListItem,
  ZPublicKeyIdParam,
  ZScope,
  ZScopeParams,
  ZUpdateScopeRequest,
} from './schemas';
import { createScope, deletePlatformKey, deleteScope, expiryOf, findScope, presentPlatformKey, presentScope, updateScope } from '../../core/platform-keys/scopes';
import { metaOf } from './meta';
import { requireGrantsHeld } from '../../core/platform-keys/bounds';
import { hasGrant } from '../../lib/api-scopes';
import { auditEvent, emitOperationEvents } from '../../core/analytics/operations';

/** The names a `permissions` object sets to `value`. */
const namesSetTo = (permissions: Record<string, 'YES' | 'NO' | undefined> | undefined, value: 'YES' | 'NO'): string[] =>
  Object.entries(permissions ?? {})
    .filter(([, v]) => v === value)
    .map(([name]) => name);

const TAGS = ['Public API: keys and scopes'];

const scopeLinks = linksTo(['getScope', 'updateScope', 'deleteScope', 'listScopeKeys'], {
  appId: '$response.body#/scope/app_id',
  scopeId: '$response.body#/scope/scope_id',
});

export const platformKeyRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/api/public/apikeys/create',
    operationId: 'createPlatformKey',
    summary: 'Create a platform key in a scope (the key is shown once)',
    description:
      `The key belongs to the named scope of the app and holds what the scope grants. 404 when the scope does not exist in the app; ` +
      `403 when the scope grants a name the calling credential does not hold, or the key would reach an environment the calling key is not bound to, or outlive it; ` +
      `409 when the scope already has a key of that name; 429 (KEY_LIMIT_REACHED) when the scope holds ${KEYS_PER_SCOPE} keys.`,
    tags: TAGS,
    auth: 'api_key:manage',
    body: ZCreatePlatformKeyRequest,
    bodyExample: { scope_name: 'support-bots', api_key_name: 'web backend', environments: ['staging'], expiry: '90_days' },
    links: linksTo(['deletePlatformKey'], { keyId: '$response.body#/api_key/key_id' }),
    successStatus: 201,
    errorStatuses: [404, 409, 422, 429],
    response: z.object({ success: z.literal(true), api_key: ZPlatformKey, meta: ZMeta }),
    async handler({ ctx, principal, body, res }) {
      const appId = principal.projectId ?? body.app_id;
      // Well formed, but the calling key leaves the app open: which fields are needed depends on
      // the credential, which no schema can state, so 422 rather than 400.
      if (!appId) throw new ApiError('UNPROCESSABLE_ENTITY', 'body.app_id: is required when the calling key is bound to no app');
      if (principal.projectId && body.app_id && body.app_id !== principal.projectId) throw ApiError.notFound('App');
      const app = await loadApp(ctx, principal, appId);
      const scope = await ctx.models.ApiScope.findOne({ tenantId: app.tenantId, projectId: app._id, name: body.scope_name }).lean();
      if (!scope) throw ApiError.notFound('Scope');
      const { key, apiKey } = await createApiKey(ctx.models, principal.tenantId, {
        name: body.api_key_name,
        scopeId: scope._id,
        environments: body.environments,
        expiresAt: body.expiry === undefined ? undefined : expiryOf(body.expiry),
        createdBy: principal.subjectId,
        issuer: principal,
      });
      await emitOperationEvents(ctx, [
        auditEvent({ tenantId: app.tenantId, projectId: app._id }, 'api_key', 'created', principal.subjectId, { key_id: apiKey._id, name: body.api_key_name, scope_id: scope._id, scope_name: scope.name, environments: body.environments ?? [] }),
      ]);
      const { key_prefix: _p, created_at: _c, last_used_at: _l, ...shown } = presentPlatformKey(apiKey, scope);
      return { success: true, api_key: { apikey: key, ...shown }, meta: metaOf(res) };
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/api/public/apikeys/:keyId',
    // `apikeys/create` is the create route's path, never a key id (and not a DELETE target).
    reservedParams: { keyId: ['create'] },
    operationId: 'deletePlatformKey',
    summary: 'Revoke a platform key for good (deleted; refused on every API process when this returns)',
    description: '403 when the key holds a grant or permission the calling credential does not, or acts in an environment the calling key is not bound to: a key never revokes one it could not have made.',
    tags: TAGS,
    auth: 'api_key:manage',
    params: ZPublicKeyIdParam,
    errorStatuses: [404],
    response: z.object({
      success: z.literal(true),
      revoked: z.object({ key_id: z.string(), status: z.literal('revoked') }),
      meta: ZMeta,
    }),
    async handler({ ctx, principal, params, res }) {
      const revoked = await deletePlatformKey(ctx, principal, params.keyId);
      // A key of no project (a tenant key) has no project's analytics to appear in.
      if (revoked.projectId) {
        await emitOperationEvents(ctx, [auditEvent({ tenantId: principal.tenantId, projectId: revoked.projectId }, 'api_key', 'revoked', principal.subjectId, { key_id: params.keyId, scope_id: revoked.scopeId })]);
      }
      return { success: true, revoked: { key_id: params.keyId, status: 'revoked' as const }, meta: metaOf(res) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/public/apps/:appId/scopes',
    operationId: 'listScopes',
    summary: "List an app's scopes with their permissions",
    tags: TAGS,
    auth: 'api_key:read',
    params: ZAppParam,
    query: ZPageQuery,
    errorStatuses: [404],
    response: z.object({ success: z.literal(true), scopes: z.array(ZScope), total: z.number().int(), meta: ZMeta }),
    async handler({ ctx, principal, params, query, res }) {
      const app = await loadApp(ctx, principal, params.appId);
      const filter = { tenantId: app.tenantId, projectId: app._id };
      const [total, scopes] = await Promise.all([
        ctx.models.ApiScope.countDocuments(filter),
        ctx.models.ApiScope.find(filter).sort({ createdAt: 1, _id: 1 }).skip(query.offset).limit(query.limit).lean(),
      ]);
      return { success: true, scopes: scopes.map(presentScope), total, meta: metaOf(res) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/public/apps/:appId/scopes',
    operationId: 'createScope',
    summary: 'Create a scope: a named permission set of the app',
    description: 'The scope may grant only names the calling credential holds itself: any other set to YES is 403, and nothing is created.',
    tags: TAGS,
    auth: 'api_key:manage',
    params: ZAppParam,
    body: ZCreateScopeRequest,
    bodyExample: { scope_name: 'support-bots', description: 'Chat backends', permissions: { RUN_API: 'YES', SESSIONS_LIST: 'YES', 'chat.execute': 'YES' } },
    links: scopeLinks,
    successStatus: 201,
    errorStatuses: [404, 409],
    response: z.object({ success: z.literal(true), scope: ZScope, meta: ZMeta }),
    async handler({ ctx, principal, params, body, res }) {
      const app = await loadApp(ctx, principal, params.appId);
      requireGrantsHeld(principal, namesSetTo(body.permissions, 'YES'), 'The scope');
      const scope = await createScope(ctx.models, app, { name: body.scope_name, description: body.description, permissions: body.permissions });
      await emitOperationEvents(ctx, [auditEvent(scope, 'scope', 'created', principal.subjectId, { scope_id: scope._id, scope_name: scope.name, grants: scope.grants })]);
      return { success: true, scope: presentScope(scope), meta: metaOf(res) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/public/apps/:appId/scopes/:scopeId',
    operationId: 'getScope',
    summary: 'Get a scope and its permissions',
    tags: TAGS,
    auth: 'api_key:read',
    params: ZScopeParams,
    errorStatuses: [404],
    response: z.object({ success: z.literal(true), scope: ZScope, meta: ZMeta }),
    async handler({ ctx, principal, params, res }) {
      const scope = await findScope(ctx, await loadApp(ctx, principal, params.appId), params.scopeId);
      return { success: true, scope: presentScope(scope), meta: metaOf(res) };
    },
  }),
  defineRoute({
    method: 'put',
    path: '/api/public/apps/:appId/scopes/:scopeId',
    operationId: 'updateScope',
    summary: "Narrow a scope's permissions (only a key of that scope may; in force everywhere when this returns)",
    description:
      'Names given are set to YES or NO; names not given keep their value. A credential that is not a key of this scope gets 403; ' +
      'so does a YES for a name the scope does not grant already (a key never widens its own scope), and nothing changes.',
    tags: TAGS,
    auth: 'api_key:write',
    params: ZScopeParams,
    body: ZUpdateScopeRequest,
    bodyExample: { permissions: { SESSIONS_LIST: 'NO', 'analytics.read': 'YES' } },
    errorStatuses: [404],
    response: z.object({ success: z.literal(true), scope: ZScope, meta: ZMeta }),
    async handler({ ctx, principal, params, body, res }) {
      const scope = await findScope(ctx, await loadApp(ctx, principal, params.appId), params.scopeId);
      if (principal.scope?.id !== scope._id) throw new ApiError('FORBIDDEN', 'Only a key of this scope can update it');
      // Judged on the scope as stored now and on what the key was read to hold: a YES must be in both.
      const granted = new Set(scope.grants);
      const wider = namesSetTo(body.permissions, 'YES').filter((name) => !granted.has(name) || !hasGrant(principal, name));
      if (wider.length > 0) throw new ApiError('FORBIDDEN', `A key cannot widen its own scope; the scope does not grant ${wider.join(', ')}`);
      const updated = await updateScope(ctx, scope, body);
      await emitOperationEvents(ctx, [
        auditEvent(updated, 'scope', 'updated', principal.subjectId, { scope_id: updated._id, scope_name: updated.name, permissions: body.permissions }),
      ]);
      return { success: true, scope: presentScope(updated), meta: metaOf(res) };
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/api/public/apps/:appId/scopes/:scopeId',
    operationId: 'deleteScope',
    summary: 'Delete a scope and every key of it (refused everywhere when this returns)',
    tags: TAGS,
    auth: 'api_key:manage',
    params: ZScopeParams,
    errorStatuses: [404],
    response: z.object({
      success: z.literal(true),
      deleted: z.object({ scope_id: z.string(), status: z.literal('deleted'), keys_revoked: z.number().int() }),
      meta: ZMeta,
    }),
    async handler({ ctx, principal, params, res }) {
      const scope = await findScope(ctx, await loadApp(ctx, principal, params.appId), params.scopeId);
      const keysRevoked = await deleteScope(ctx, scope);
      await emitOperationEvents(ctx, [auditEvent(scope, 'scope', 'deleted', principal.subjectId, { scope_id: scope._id, scope_name: scope.name, keys_revoked: keysRevoked })]);
      return { success: true, deleted: { scope_id: scope._id, status: 'deleted' as const, keys_revoked: keysRevoked }, meta: metaOf(res) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/public/apps/:appId/scopes/:scopeId/apikeys',
    operationId: 'listScopeKeys',
    summary: "List a scope's keys (never the keys themselves)",
    tags: TAGS,
    auth: 'api_key:read',
    params: ZScopeParams,
    query: ZPageQuery,
    errorStatuses: [404],
    links: linksTo(['deletePlatformKey'], { keyId: '$response.body#/api_keys/0/key_id' }),
    response: z.object({ success: z.literal(true), api_keys: z.array(ZPlatformKeyListItem), total: z.number().int(), meta: ZMeta }),
    async handler({ ctx, principal, params, query, res }) {
      const scope = await findScope(ctx, await loadApp(ctx, principal, params.appId), params.scopeId);
      const filter = { tenantId: scope.tenantId, scopeId: scope._id };
      const [total, keys] = await Promise.all([
        ctx.models.ApiKey.countDocuments(filter),
        ctx.models.ApiKey.find(filter).sort({ createdAt: 1, _id: 1 }).skip(query.offset).limit(query.limit).lean(),
      ]);
      const lastUsed = await lastUsedTimes(ctx.models.ApiKeyUsage, scope.tenantId, keys.map((k) => k._id));
      return { success: true, api_keys: keys.map((k) => presentPlatformKey(k, scope, lastUsed.get(k._id))), total, meta: metaOf(res) };
    },
  }),
];
