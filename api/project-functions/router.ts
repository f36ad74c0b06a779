// The project function registry (/api/projects/:projectId/functions): code that `type: lambda`
// tools name with `function:` and run in the code-tool sandbox. See docs/code-tools.md.
import { type ProjectFunctionDoc } from '../../db/project-function';
import { defineRoute, linksTo, type AnyRoute } from '../http/route';
import { ZProjectIdParam, ZSuccessOnly } from '../http/schemas';
import {
  ZListProjectFunctionsQuery,
  ZListProjectFunctionsResponse,
  ZProjectFunctionParams,
  ZProjectFunctionResponse,
  ZPutProjectFunctionRequest,
  ZPutProjectFunctionResponse,
} from './schemas';
import { deleteProjectFunction, getProjectFunction, listProjectFunctions, putProjectFunction } from '../../core/project-functions/functions';

const TAGS = ['Project functions'];
const scopeOf = (project: { _id: string; tenantId: string } | null) => ({ tenantId: project!.tenantId, projectId: project!._id });

function presentFunction(doc: ProjectFunctionDoc) {
  return {
    name: doc.name,
    description: doc.description ?? null,
    runtime: doc.runtime,
    code: doc.code,
    entrypoint: doc.entrypoint ?? null,
    memoryMb: doc.memoryMb,
    createdAt: doc.createdAt.toISOString(),
    updatedAt: doc.updatedAt.toISOString(),
  };
}

export const projectFunctionRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/api/projects/:projectId/functions',
    operationId: 'listProjectFunctions',
    summary: "A project's functions, by name",
    tags: TAGS,
    auth: 'agent:read',
    params: ZProjectIdParam,
    query: ZListProjectFunctionsQuery,
    response: ZListProjectFunctionsResponse,
    async handler({ ctx, project, query }) {
      const { functions, total } = await listProjectFunctions(ctx.models, scopeOf(project), query);
      return { success: true, functions: functions.map(presentFunction), total, offset: query.offset, limit: query.limit };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/projects/:projectId/functions/:name',
    operationId: 'getProjectFunction',
    summary: 'A function of the project',
    tags: TAGS,
    auth: 'agent:read',
    params: ZProjectFunctionParams,
    errorStatuses: [404],
    response: ZProjectFunctionResponse,
    async handler({ ctx, project, params }) {
      return { success: true, function: presentFunction(await getProjectFunction(ctx.models, scopeOf(project), params.name)) };
    },
  }),
  defineRoute({
    method: 'put',
    path: '/api/projects/:projectId/functions/:name',
    operationId: 'putProjectFunction',
    summary: 'Create or replace a function of the project',
    description: '201 when created, 200 when replaced. The next call of a lambda tool naming it runs the new code.',
    tags: TAGS,
    auth: 'agent:write',
    params: ZProjectFunctionParams,
    body: ZPutProjectFunctionRequest,
    bodyExample: { runtime: 'javascript', code: 'function main(params) { return { total: params.amount * 1.2 }; }', description: 'Adds VAT' },
    alsoSuccess: [201],
    errorStatuses: [409],
    links: linksTo(['getProjectFunction', 'deleteProjectFunction'], { projectId: '$request.path.projectId', name: '$request.path.name' }),
    response: ZPutProjectFunctionResponse,
    async handler({ ctx, project, params, body, res }) {
      const { fn, created } = await putProjectFunction(ctx.models, scopeOf(project), params.name, body);
      if (created) res.status(201);
      return { success: true, created, function: presentFunction(fn) };
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/api/projects/:projectId/functions/:name',
    operationId: 'deleteProjectFunction',
    summary: 'Delete a function of the project',
    description: 'A lambda tool that still names it fails its calls with a tool_error saying the function is not in the registry.',
    tags: TAGS,
    auth: 'agent:write',
    params: ZProjectFunctionParams,
    errorStatuses: [404],
    response: ZSuccessOnly,
    async handler({ ctx, project, params }) {
      await deleteProjectFunction(ctx.models, scopeOf(project), params.name);
      return { success: true };
    },
  }),
];
