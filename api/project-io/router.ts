// Project export and import routes (`/api/projects/:projectId/project-io`): the spec's table,
// with the import's own 60 MB body limit, read only once the caller holds an import slot (one
// import per project at a time, a few imports and previews per tenant).
import { type AdmitInput, defineRoute, linksTo, RESPONSE_SENT, type AnyRoute } from '../http/route';
import { ZProjectIdParam } from '../http/schemas';
import { assertResponseSize, buildExportPreview, buildProjectExport } from '../../core/project-io/export';
import { applyImport } from '../../core/project-io/import-apply';
import { acquireImportLock, acquirePreviewSlot } from '../../core/project-io/import-lock';
import { IMPORT_LIMITS } from '../../core/project-io/limits';
import { checkImportFiles, planImport } from '../../core/project-io/import-plan';
import {
  IMPORT_BODY_EXAMPLE,
  ZExportPreviewResponse,
  ZExportQuery,
  ZExportResponse,
  ZImportPreviewResponse,
  ZImportRequestSchema,
  ZImportResponse,
  ZZipDownload,
} from './schemas';
import { zipProjectExport } from '../../core/project-io/zip';

const TAGS = ['Project export and import'];
const BASE = '/api/projects/:projectId/project-io';
const sameProject = { projectId: '$request.path.projectId' };
const importBodyLimit = { bytes: IMPORT_LIMITS.requestBodyBytes, containers: IMPORT_LIMITS.requestBodyContainers };
const scopeOf = ({ project }: AdmitInput) => ({ tenantId: project!.tenantId, projectId: project!._id });

export const projectIoRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: `${BASE}/export/preview`,
    operationId: 'previewProjectExport',
    summary: 'Preview what an export holds: agents, tools, dependencies and validation',
    tags: TAGS,
    auth: 'project:export',
    params: ZProjectIdParam,
    errorStatuses: [422],
    links: linksTo(['exportProject'], sameProject),
    response: ZExportPreviewResponse,
    async handler({ ctx, project }) {
      return { success: true, ...(await buildExportPreview(ctx.models, project!)) };
    },
  }),
  defineRoute({
    method: 'get',
    path: `${BASE}/export`,
    operationId: 'exportProject',
    summary: "Export a project's agents and tool libraries with a manifest and lockfile",
    description:
      '`format=folder` (default) answers JSON with the file map; `format=zip` answers an `application/zip` download holding manifest.json, ' +
      'lockfile.json and the files. 422 `UNPROCESSABLE_ENTITY` beyond 1,000 agents, 500 tool files or 100 MB.',
    tags: TAGS,
    auth: 'project:export',
    params: ZProjectIdParam,
    query: ZExportQuery,
    errorStatuses: [422],
    links: linksTo(['previewProjectImport', 'importProject'], sameProject),
    response: ZExportResponse,
    alternateResponses: { 'application/zip': ZZipDownload },
    async handler({ ctx, principal, project, query, res }) {
      const exported = await buildProjectExport(ctx.models, project!, { exportedBy: principal.subjectId, includeDeployments: query.include_deployments });
      if (query.format === 'zip') {
        const zip = await zipProjectExport(exported);
        assertResponseSize(zip.length);
        res
          .status(200)
          .set({ 'Content-Type': 'application/zip', 'Content-Disposition': `attachment; filename="${project!.slug}-export.zip"` })
          .send(zip);
        return RESPONSE_SENT;
      }
      const json = JSON.stringify({ success: true, ...exported });
      assertResponseSize(Buffer.byteLength(json, 'utf8'));
      res.status(200).type('application/json').send(json);
      return RESPONSE_SENT;
    },
  }),
  defineRoute({
    method: 'post',
    path: `${BASE}/import/preview`,
    operationId: 'previewProjectImport',
    summary: 'Dry run of an import: the operations it would apply; changes nothing',
    description:
      'The same checks as the import: 400 for unsafe or unknown paths, 413 over the size limits, 422 for ABL errors (`error.details.diagnostics`) ' +
      'or a broken manifest, lockfile or deployments.json, 409 when it would delete an agent a deployment runs, or while the tenant already runs ' +
      `${IMPORT_LIMITS.importsPerTenant} imports and previews.`,
    tags: TAGS,
    auth: 'project:import',
    params: ZProjectIdParam,
    body: ZImportRequestSchema,
    bodyExample: IMPORT_BODY_EXAMPLE,
    bodyLimit: importBodyLimit,
    admit: (input) => acquirePreviewSlot(input.ctx.models, scopeOf(input)),
    errorStatuses: [409, 413, 422],
    links: linksTo(['importProject', 'previewProjectExport'], sameProject),
    response: ZImportPreviewResponse,
    async handler({ ctx, project, body }) {
      const plan = await planImport(ctx.models, project!, checkImportFiles(body.files));
      return { success: true, preview: { operations: plan.operations, summary: plan.summary } };
    },
  }),
  defineRoute({
    method: 'post',
    path: `${BASE}/import`,
    operationId: 'importProject',
    summary: "Import a file map: the project's agents and tool libraries become the files'",
    description:
      'Creates, updates and deletes agents and tool libraries so the project matches the files, then makes a version of each agent created ' +
      'or changed (with the label in lockfile.json when the draft compiles to its hash). All or nothing. 409 while another import into the ' +
      `project runs (lock with a 120 s TTL), or while the tenant already runs ${IMPORT_LIMITS.importsPerTenant} imports and previews. The body is ` +
      'read only once the lock is taken.',
    tags: TAGS,
    auth: 'project:import',
    params: ZProjectIdParam,
    body: ZImportRequestSchema,
    bodyExample: IMPORT_BODY_EXAMPLE,
    bodyLimit: importBodyLimit,
    // The project's import lock, held until the request ends (the pipeline releases it).
    admit: (input) => acquireImportLock(input.ctx.models, scopeOf(input)),
    errorStatuses: [409, 413, 422],
    links: linksTo(['exportProject', 'previewProjectExport', 'listAgents'], sameProject),
    response: ZImportResponse,
    async handler({ ctx, principal, project, body }) {
      const checked = checkImportFiles(body.files);
      const plan = await planImport(ctx.models, project!, checked);
      const applied = await applyImport(ctx.models, plan, { createdBy: principal.subjectId, logger: ctx.logger });
      return {
        success: true,
        applied: { created: applied.created, updated: applied.updated, deleted: applied.deleted },
        operations: plan.operations,
        versions: applied.versions,
      };
    },
  }),
];

