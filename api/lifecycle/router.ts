// Data-lifecycle routes: a project's retention (GET/PUT .../retention), deleting a project
// (DELETE /api/projects/:projectId) or, for the operator, a tenant (DELETE /api/admin/tenants/:tenantId),
// polling a deletion, and erasing a contact (POST /api/contacts/:id/erase). docs/data-lifecycle.md.
import { ApiError } from '../../lib/errors';
import { requirePlatformAdmin } from '../middleware/platform-admin';
import { defineRoute, linksTo, type AnyRoute } from '../http/route';
import { ZProjectIdParam } from '../http/schemas';
import { ZContactIdParam } from '../contacts/schemas';
import {
  ZContactErasureResponse,
  ZDeletionIdParam,
  ZDeletionResponse,
  ZPutRetentionRequest,
  ZRetentionResponse,
  ZTenantIdParam,
} from './schemas';
import { getRetention, putRetention, type RetentionView } from '../../core/lifecycle/retention';
import { findDeletion, presentDeletion, requestDeletion } from '../../core/lifecycle/deletion';
import { eraseContact } from '../../core/contacts/erase';
import { RETENTION_KINDS, type RetentionKind } from '../../db/retention-policy';

const iso = (d: Date | string | null | undefined) => (d ? new Date(d).toISOString() : null);
const perKind = <T, U>(o: Record<RetentionKind, T>, f: (v: T) => U) => Object.fromEntries(RETENTION_KINDS.map((k) => [k, f(o[k])])) as Record<RetentionKind, U>;

function presentRetention(view: RetentionView) {
  return {
    days: view.days,
    updatedAt: iso(view.updatedAt),
    lastRun: view.lastRun
      ? { startedAt: iso(view.lastRun.startedAt)!, finishedAt: iso(view.lastRun.finishedAt)!, cutoffs: perKind(view.lastRun.cutoffs, iso), deleted: view.lastRun.deleted }
      : null,
  };
}

export const lifecycleRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/api/projects/:projectId/retention',
    operationId: 'getRetention',
    summary: "A project's retention and what its last enforcement deleted",
    tags: ['Data lifecycle'],
    auth: 'session:read',
    params: ZProjectIdParam,
    response: ZRetentionResponse,
    async handler({ ctx, project }) {
      return { success: true, retention: presentRetention(await getRetention(ctx.models, { tenantId: project!.tenantId, projectId: project!._id })) };
    },
  }),
  defineRoute({
    method: 'put',
    path: '/api/projects/:projectId/retention',
    operationId: 'putRetention',
    summary: "Replace a project's retention (days per kind; a kind left out or null is kept)",
    description:
      'Enforced by the data-retention sweep (daily by default): transcript messages, trace events and analytics events older than their days are deleted. ' +
      'The last run stays shown. 400 for a value that is not a whole number of days from 1 to 3650, or an unknown field.',
    tags: ['Data lifecycle'],
    auth: 'admin',
    params: ZProjectIdParam,
    body: ZPutRetentionRequest,
    bodyExample: { transcripts: 90, traces: 30, analytics: 365 },
    response: ZRetentionResponse,
    async handler({ ctx, project, body }) {
      const days = { transcripts: body.transcripts ?? null, traces: body.traces ?? null, analytics: body.analytics ?? null };
      return { success: true, retention: presentRetention(await putRetention(ctx.models, { tenantId: project!.tenantId, projectId: project!._id }, days)) };
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/api/projects/:projectId',
    operationId: 'deleteProject',
    summary: 'Delete a project and everything in it (asynchronous: poll the deletion)',
    description:
      'From the answer on the project is 404 to every caller. A durable workflow then terminates its running workflows (sessions, human tasks, conversations, calls, app runs, drains) ' +
      'and deletes its documents from every collection, the project record last; poll GET /api/deletions/{deletionId}. ' +
      "The project's API keys are deleted with it: poll with a key not bound to it. 503 when the runtime is unavailable (nothing changed).",
    tags: ['Data lifecycle'],
    auth: 'admin',
    params: ZProjectIdParam,
    successStatus: 202,
    errorStatuses: [503],
    links: linksTo(['getDeletion'], { deletionId: '$response.body#/deletion/id' }),
    response: ZDeletionResponse,
    async handler({ ctx, project }) {
      const job = await requestDeletion(ctx, { tenantId: project!.tenantId, projectId: project!._id });
      return { success: true, deletion: presentDeletion(job) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/deletions/:deletionId',
    operationId: 'getDeletion',
    summary: "A project deletion's progress and, once completed, what it deleted",
    tags: ['Data lifecycle'],
    auth: 'admin',
    params: ZDeletionIdParam,
    errorStatuses: [404],
    response: ZDeletionResponse,
    async handler({ ctx, principal, params }) {
      const job = await findDeletion(ctx, { tenantId: principal.tenantId, ...(principal.projectId ? { projectId: principal.projectId } : {}) }, params.deletionId);
      return { success: true, deletion: presentDeletion(job) };
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/api/admin/tenants/:tenantId',
    operationId: 'deleteTenant',
    summary: 'Delete a tenant and everything it holds (operator; asynchronous: poll the deletion)',
    description:
      'A durable workflow terminates every running workflow of the tenant and deletes its documents from every collection (keys and users first, the tenant record last); ' +
      'poll GET /api/admin/deletions/{deletionId}. Asked again while it runs: the same deletion. 404 for an unknown tenant; 503 when the runtime is unavailable (nothing changed).',
    tags: ['Data lifecycle'],
    auth: 'public',
    security: 'platformAdmin',
    authorize: ({ ctx, req }) => requirePlatformAdmin(ctx, req, 'Tenant management'),
    params: ZTenantIdParam,
    successStatus: 202,
    errorStatuses: [401, 404, 503],
    links: linksTo(['getTenantDeletion'], { deletionId: '$response.body#/deletion/id' }),
    response: ZDeletionResponse,
    async handler({ ctx, req, params }) {
      requirePlatformAdmin(ctx, req, 'Tenant management');
      const tenant = await ctx.models.Tenant.exists({ _id: params.tenantId });
      if (!tenant) throw ApiError.notFound('Tenant');
      const job = await requestDeletion(ctx, { tenantId: params.tenantId, projectId: null });
      return { success: true, deletion: presentDeletion(job) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/admin/deletions/:deletionId',
    operationId: 'getTenantDeletion',
    summary: "Any deletion's progress (operator)",
    tags: ['Data lifecycle'],
    auth: 'public',
    security: 'platformAdmin',
    authorize: ({ ctx, req }) => requirePlatformAdmin(ctx, req, 'Tenant management'),
    params: ZDeletionIdParam,
    errorStatuses: [401, 404, 503],
    response: ZDeletionResponse,
    async handler({ ctx, req, params }) {
      requirePlatformAdmin(ctx, req, 'Tenant management');
      return { success: true, deletion: presentDeletion(await findDeletion(ctx, {}, params.deletionId)) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/contacts/:id/erase',
    operationId: 'eraseContact',
    summary: "Erase a contact's personal data (unlike DELETE, which keeps it)",
    description:
      'Live or soft-deleted. The record keeps only its id, type and dates; transcripts of its linked sessions keep their messages with the text replaced by `[erased]`; ' +
      "their trace events, memory stores, attachments and call recordings are deleted, and the contact's user-scoped memory facts in every project. " +
      'Sessions still active are ended first. Asked again: finishes an erasure cut short, else changes nothing. ' +
      '403 for a key bound to a project (erasure reaches every project); 404 CONTACT_NOT_FOUND for a contact that is not the tenant\'s; 503 when the runtime is unavailable to end a session (retry).',
    tags: ['Contacts'],
    auth: 'contact:write',
    params: ZContactIdParam,
    errorStatuses: [404, 503],
    response: ZContactErasureResponse,
    async handler({ ctx, principal, params }) {
      const erased = await eraseContact(ctx, principal, params.id);
      return { success: true, data: { ...erased, erasedAt: erased.erasedAt.toISOString() } };
    },
  }),
];
