// Tool secrets (/api/tool-secrets): values HTTP tools reference as {{secrets.NAME}}, stored with
// envelope encryption and never returned; create, rotate and delete are audited, and the audit
// trail is listed by GET /api/projects/:projectId/tool-secrets/audit. See docs/secrets.md.
import { type ToolSecretAuditDoc, type ToolSecretDoc } from '../../db/tool-secret';
import { defineRoute, linksTo, type AnyRoute } from '../http/route';
import { ZProjectIdParam, ZSuccessOnly } from '../http/schemas';
import {
  ZCreatedToolSecretResponse,
  ZCreateToolSecretRequest,
  ZListToolSecretAuditQuery,
  ZListToolSecretAuditResponse,
  ZListToolSecretsQuery,
  ZListToolSecretsResponse,
  ZRotatedToolSecretResponse,
  ZRotateToolSecretRequest,
  ZToolSecretIdParam,
} from './schemas';
import { requireVisibleProject } from '../../core/projects/visible';
import { createToolSecret, deleteToolSecret, rotateToolSecret } from '../../core/tool-secrets/secrets';

const TAGS = ['Tool secrets'];
const iso = (d: Date | null) => (d ? d.toISOString() : null);

function presentSecret(doc: ToolSecretDoc) {
  return {
    id: doc._id,
    toolName: doc.toolName,
    secretKey: doc.secretKey,
    environment: doc.environment,
    version: doc.version,
    expiresAt: iso(doc.expiresAt),
    allowedHosts: doc.allowedHosts ?? [],
    createdAt: doc.createdAt.toISOString(),
    updatedAt: doc.updatedAt.toISOString(),
  };
}

function presentAudit(doc: ToolSecretAuditDoc) {
  return {
    id: doc._id,
    action: doc.action,
    secretId: doc.secretId,
    toolName: doc.toolName,
    secretKey: doc.secretKey,
    environment: doc.environment,
    version: doc.version,
    allowedHosts: doc.allowedHosts ?? [],
    actor: { type: doc.actor.type, id: doc.actor.id },
    at: doc.at.toISOString(),
  };
}

export const toolSecretRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/api/tool-secrets',
    operationId: 'createToolSecret',
    summary: 'Store a secret for a tool of a project (the value is encrypted and never returned)',
    description:
      'A tool references it as {{secrets.<secretKey>}} in its headers, auth_config or body. toolName `*` makes it project-wide. ' +
      'allowedHosts names where the value may be sent (host or host:port); a tool call to any other destination fails. ' +
      '409 when the project already has the same toolName, secretKey and environment; 422 when expiresAt is not in the future; ' +
      '503 when encryption is not configured.',
    tags: TAGS,
    auth: 'credential:write',
    body: ZCreateToolSecretRequest,
    bodyExample: { projectId: 'jqmvff06cp7cvm69y75r2r1x', toolName: 'get_invoice', secretKey: 'BILLING_TOKEN', value: 'tok_live_example', allowedHosts: ['billing.example.com'], environment: 'dev' },
    successStatus: 201,
    response: ZCreatedToolSecretResponse,
    links: {
      ...linksTo(['rotateToolSecret', 'deleteToolSecret'], { id: '$response.body#/secret/id' }),
      ...linksTo(['listToolSecrets', 'listToolSecretAudit'], { projectId: '$request.body#/projectId' }),
    },
    errorStatuses: [404, 409, 422, 503],
    async handler({ ctx, principal, body }) {
      const doc = await createToolSecret(ctx, principal, body);
      const { updatedAt: _updatedAt, ...secret } = presentSecret(doc);
      return { success: true, secret };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/tool-secrets',
    operationId: 'listToolSecrets',
    summary: "A project's tool secrets, metadata only (values are never returned)",
    tags: TAGS,
    auth: 'credential:read',
    query: ZListToolSecretsQuery,
    response: ZListToolSecretsResponse,
    errorStatuses: [404],
    async handler({ ctx, principal, query }) {
      const project = await requireVisibleProject(ctx, principal, query.projectId);
      const filter = {
        tenantId: project.tenantId,
        projectId: project._id,
        ...(query.toolName ? { toolName: query.toolName } : {}),
        ...(query.environment ? { environment: query.environment } : {}),
        // An environment-bound key lists only its environments' secrets.
        ...(principal.environments?.length ? { environment: { $in: principal.environments.filter((e) => !query.environment || e === query.environment) } } : {}),
      };
      const [docs, total] = await Promise.all([
        ctx.models.ToolSecret.find(filter, { value: 0 })
          .sort({ toolName: 1, secretKey: 1, environment: 1, _id: 1 })
          .skip((query.page - 1) * query.limit)
          .limit(query.limit)
          .lean(),
        ctx.models.ToolSecret.countDocuments(filter),
      ]);
      return { success: true, secrets: docs.map(presentSecret), total, page: query.page, limit: query.limit };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/projects/:projectId/tool-secrets/audit',
    operationId: 'listToolSecretAudit',
    summary: "Who created, rotated and deleted a project's tool secrets, newest first",
    description: 'Never the values. Under the project, so that no path of /api/tool-secrets/:id is taken by it.',
    tags: TAGS,
    auth: 'credential:read',
    params: ZProjectIdParam,
    query: ZListToolSecretAuditQuery,
    response: ZListToolSecretAuditResponse,
    async handler({ ctx, project, query }) {
      const filter = { tenantId: project!.tenantId, projectId: project!._id, ...(query.secretId ? { secretId: query.secretId } : {}) };
      const [docs, total] = await Promise.all([
        ctx.models.ToolSecretAudit.find(filter)
          .sort({ at: -1, _id: -1 })
          .skip((query.page - 1) * query.limit)
          .limit(query.limit)
          .lean(),
        ctx.models.ToolSecretAudit.countDocuments(filter),
      ]);
      return { success: true, records: docs.map(presentAudit), total, page: query.page, limit: query.limit };
    },
  }),
  defineRoute({
    method: 'put',
    path: '/api/tool-secrets/:id',
    operationId: 'rotateToolSecret',
    summary: 'Rotate a tool secret (a new value, re-encrypted, version + 1) or change where it may be sent',
    description:
      'The next tool call uses the new value and hosts. value, allowedHosts or both; allowedHosts alone keeps the value and its version (audited as update). ' +
      'expiresAt may be changed at the same time (null removes it).',
    tags: TAGS,
    auth: 'credential:write',
    params: ZToolSecretIdParam,
    body: ZRotateToolSecretRequest,
    bodyExample: { value: 'tok_live_rotated' },
    response: ZRotatedToolSecretResponse,
    links: linksTo(['deleteToolSecret'], { id: '$request.path.id' }),
    errorStatuses: [404, 422, 503],
    async handler({ ctx, principal, params, body }) {
      const doc = await rotateToolSecret(ctx, principal, params.id, body);
      const { id, toolName, secretKey, environment, version, allowedHosts, updatedAt } = presentSecret(doc);
      return { success: true, secret: { id, toolName, secretKey, environment, version, allowedHosts, updatedAt } };
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/api/tool-secrets/:id',
    operationId: 'deleteToolSecret',
    summary: 'Delete a tool secret permanently',
    tags: TAGS,
    auth: 'credential:write',
    params: ZToolSecretIdParam,
    response: ZSuccessOnly,
    errorStatuses: [404],
    async handler({ ctx, principal, params }) {
      await deleteToolSecret(ctx, principal, params.id);
      return { success: true };
    },
  }),
];
