// Agent routes: the spec's Agents table (tenant discovery, project agents, draft saving) plus
// creating and deleting agents, validating drafts, versions and tool files (docs/agents.md).
import { z } from 'zod';
import { defineRoute, linksTo, RESPONSE_SENT, type AnyRoute } from '../http/route';
import { ZPaginationQuery, ZProjectIdParam, ZSuccessOnly } from '../http/schemas';
import {
  ZAgentParams,
  ZAgentVersionDetailSchema,
  ZAgentVersionSchema,
  ZCreateAgentRequestSchema,
  ZCreateVersionRequestSchema,
  ZDiagnosticSchema,
  ZProjectAgentDetailSchema,
  ZProjectAgentSchema,
  ZPutToolRequestSchema,
  ZSaveDraftRequestSchema,
  ZTenantAgentDetailSchema,
  ZTenantAgentQuery,
  ZTenantAgentSchema,
  ZTenantAgentsQuery,
  ZToolFileDetailSchema,
  ZToolFileSchema,
  ZToolParams,
  ZValidateRequestSchema,
  ZVersionParams,
  ZAgentName,
} from './schemas';
import {
  presentAgentVersion,
  presentAgentVersionDetail,
  presentProjectAgent,
  presentProjectAgentDetail,
  presentTenantAgent,
  presentToolFile,
  presentToolFileDetail,
} from './present';
import {
  agentWithStats,
  createAgent,
  createVersion,
  deleteAgent,
  deleteToolFile,
  findTenantAgentByName,
  getToolFile,
  getVersion,
  listProjectAgents,
  listTenantAgents,
  listToolFiles,
  listVersions,
  NO_VERSIONS,
  putToolFile,
  saveDraft,
  validateDraft,
} from '../../core/agents/agents';

const TAGS = ['Agents'];
const scopeOf = (project: { _id: string; tenantId: string } | null) => ({ tenantId: project!.tenantId, projectId: project!._id });

export const agentRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/api/agents',
    operationId: 'listTenantAgents',
    summary: "List the caller's agents across projects",
    description: 'A project-bound credential sees only its project. `projectId` narrows the list to one project.',
    tags: TAGS,
    auth: 'authenticated',
    query: ZTenantAgentsQuery,
    errorStatuses: [404],
    response: z.object({ success: z.literal(true), total: z.number(), agents: z.array(ZTenantAgentSchema) }),
    async handler({ ctx, principal, query }) {
      const { total, agents } = await listTenantAgents(ctx.models, principal, query);
      return { success: true, total, agents: agents.map(presentTenantAgent) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/agents/:name',
    operationId: 'getTenantAgent',
    summary: 'Get an agent with its draft, by name',
    description:
      'When the name exists in several visible projects and no `projectId` is given, the answer is 409 `CONFLICT` with `error.details.projectIds`.',
    tags: TAGS,
    auth: 'authenticated',
    params: z.object({ name: ZAgentName }),
    query: ZTenantAgentQuery,
    errorStatuses: [404, 409],
    responseHeaders: { 'Cache-Control': 'private, max-age=300' },
    response: z.object({ success: z.literal(true), agent: ZTenantAgentDetailSchema }),
    async handler({ ctx, principal, params, query }) {
      const agent = await findTenantAgentByName(ctx.models, principal, params.name, query.projectId);
      return { success: true, agent: { ...presentTenantAgent(agent), dslContent: agent.dslContent } };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/projects/:projectId/agents',
    operationId: 'listAgents',
    summary: "List a project's agents",
    tags: TAGS,
    auth: 'agent:read',
    params: ZProjectIdParam,
    response: z.object({ success: z.literal(true), agents: z.array(ZProjectAgentSchema) }),
    async handler({ ctx, project }) {
      const rows = await listProjectAgents(ctx.models, scopeOf(project));
      return { success: true, agents: rows.map(({ agent, stats }) => presentProjectAgent(agent, stats)) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/projects/:projectId/agents',
    operationId: 'createAgent',
    summary: 'Create an agent (draft only; no version)',
    tags: TAGS,
    auth: 'agent:write',
    params: ZProjectIdParam,
    body: ZCreateAgentRequestSchema,
    links: {
      ...linksTo(['getAgent', 'deleteAgent', 'saveAgentDraft', 'validateAgentDraft', 'createAgentVersion', 'listAgentVersions', 'runAgentScenarios'], {
        projectId: '$request.path.projectId',
        agentName: '$response.body#/agent/name',
      }),
      ...linksTo(['getTenantAgent'], { name: '$response.body#/agent/name', projectId: '$request.path.projectId' }),
    },
    bodyExample: { name: 'Order_Helper', description: 'Answers order questions', dslContent: 'AGENT: Order_Helper\nGOAL: "Answer questions about orders"\n' },
    successStatus: 201,
    errorStatuses: [409],
    response: z.object({ success: z.literal(true), agent: ZProjectAgentDetailSchema }),
    async handler({ ctx, principal, project, body }) {
      const agent = await createAgent(ctx.models, scopeOf(project), {
        name: body.name,
        domain: body.domain ?? project!.slug,
        description: body.description,
        dslContent: body.dslContent,
        createdBy: principal.subjectId,
      });
      return { success: true, agent: presentProjectAgentDetail(agent, NO_VERSIONS) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/projects/:projectId/agents/:agentName',
    operationId: 'getAgent',
    summary: 'Get a project agent with its draft',
    tags: TAGS,
    auth: 'agent:read',
    params: ZAgentParams,
    errorStatuses: [404],
    response: z.object({ success: z.literal(true), agent: ZProjectAgentDetailSchema }),
    async handler({ ctx, project, params }) {
      const { agent, stats } = await agentWithStats(ctx.models, scopeOf(project), params.agentName);
      return { success: true, agent: presentProjectAgentDetail(agent, stats) };
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/api/projects/:projectId/agents/:agentName',
    operationId: 'deleteAgent',
    summary: 'Delete an agent and its versions',
    description: 'Refused with 409 while a deployment has one of its versions active.',
    tags: TAGS,
    auth: 'agent:write',
    params: ZAgentParams,
    errorStatuses: [404, 409],
    response: ZSuccessOnly,
    async handler({ ctx, project, params }) {
      await deleteAgent(ctx.models, scopeOf(project), params.agentName);
      return { success: true };
    },
  }),
  defineRoute({
    method: 'put',
    path: '/api/projects/:projectId/agents/:agentName/dsl',
    operationId: 'saveAgentDraft',
    summary: "Save an agent's draft (no compilation, no version)",
    tags: TAGS,
    auth: 'agent:write',
    params: ZAgentParams,
    body: ZSaveDraftRequestSchema,
    bodyExample: { dslContent: 'AGENT: Order_Helper\nGOAL: "Answer questions about orders and refunds"\n' },
    errorStatuses: [404],
    response: z.object({ success: z.literal(true), updatedAt: z.string() }),
    async handler({ ctx, project, params, body }) {
      const updatedAt = await saveDraft(ctx.models, scopeOf(project), params.agentName, body.dslContent);
      return { success: true, updatedAt: updatedAt.toISOString() };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/projects/:projectId/agents/:agentName/validate',
    operationId: 'validateAgentDraft',
    summary: 'Compile a draft without saving it and return its diagnostics',
    description: 'Checks `dslContent` (or the saved draft) as this agent, against the project\'s tool files and other agents.',
    tags: TAGS,
    auth: 'agent:read',
    params: ZAgentParams,
    body: ZValidateRequestSchema,
    bodyOptional: true,
    bodyExample: { dslContent: 'AGENT: Helper\nGOAL: "Answer questions about orders"\n' },
    errorStatuses: [404],
    response: z.object({ success: z.literal(true), valid: z.boolean(), diagnostics: z.array(ZDiagnosticSchema) }),
    async handler({ ctx, project, params, body }) {
      const result = await validateDraft(ctx.models, scopeOf(project), params.agentName, body?.dslContent);
      return { success: true, valid: result.ok, diagnostics: result.diagnostics };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/projects/:projectId/agents/:agentName/versions',
    operationId: 'createAgentVersion',
    summary: "Compile the agent's draft into a new immutable version",
    description:
      '201 with the new version; 422 `UNPROCESSABLE_ENTITY` with `error.details.diagnostics` when the draft has errors; ' +
      '200 with `created: false` and the latest version when no label is given and the source is unchanged; ' +
      '409 when the label exists, or a label is given and the source is unchanged.',
    tags: TAGS,
    auth: 'agent:write',
    params: ZAgentParams,
    body: ZCreateVersionRequestSchema,
    links: linksTo(['getAgentVersion'], {
      projectId: '$request.path.projectId',
      agentName: '$request.path.agentName',
      version: '$response.body#/version/version',
    }),
    bodyOptional: true,
    bodyExample: { version: '1.1.0', changelog: 'Asks for the order number first' },
    successStatus: 201,
    alsoSuccess: [200],
    errorStatuses: [404, 409, 422],
    response: z.object({
      success: z.literal(true),
      created: z.boolean(),
      version: ZAgentVersionDetailSchema,
      diagnostics: z.array(ZDiagnosticSchema).describe('Warnings (errors never produce a version)'),
    }),
    async handler({ ctx, principal, project, params, body, res }) {
      const result = await createVersion(ctx.models, scopeOf(project), params.agentName, {
        version: body.version,
        changelog: body.changelog,
        createdBy: principal.subjectId,
      });
      const payload = { success: true, created: result.created, version: presentAgentVersionDetail(result.version), diagnostics: result.diagnostics };
      if (result.created) return payload;
      // Unchanged source: the existing latest version, answered 200 rather than the route's 201.
      res.status(200).json(payload);
      return RESPONSE_SENT;
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/projects/:projectId/agents/:agentName/versions',
    operationId: 'listAgentVersions',
    summary: "List an agent's versions, newest first (without IR)",
    tags: TAGS,
    auth: 'agent:read',
    params: ZAgentParams,
    query: ZPaginationQuery,
    errorStatuses: [404],
    response: z.object({
      success: z.literal(true),
      total: z.number(),
      offset: z.number(),
      limit: z.number(),
      versions: z.array(ZAgentVersionSchema),
    }),
    async handler({ ctx, project, params, query }) {
      const { total, versions } = await listVersions(ctx.models, scopeOf(project), params.agentName, query);
      return { success: true, total, offset: query.offset, limit: query.limit, versions: versions.map(presentAgentVersion) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/projects/:projectId/agents/:agentName/versions/:version',
    operationId: 'getAgentVersion',
    summary: 'Get one version with its IR and source snapshot',
    tags: TAGS,
    auth: 'agent:read',
    params: ZVersionParams,
    errorStatuses: [404],
    response: z.object({ success: z.literal(true), version: ZAgentVersionDetailSchema }),
    async handler({ ctx, project, params }) {
      const version = await getVersion(ctx.models, scopeOf(project), params.agentName, params.version);
      return { success: true, version: presentAgentVersionDetail(version) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/projects/:projectId/tools',
    operationId: 'listToolFiles',
    summary: "List a project's tool library files",
    tags: TAGS,
    auth: 'agent:read',
    params: ZProjectIdParam,
    response: z.object({ success: z.literal(true), tools: z.array(ZToolFileSchema) }),
    async handler({ ctx, project }) {
      const tools = await listToolFiles(ctx.models, scopeOf(project));
      return { success: true, tools: tools.map(presentToolFile) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/projects/:projectId/tools/:name',
    operationId: 'getToolFile',
    summary: 'Get a tool library file',
    tags: TAGS,
    auth: 'agent:read',
    params: ZToolParams,
    errorStatuses: [404],
    response: z.object({ success: z.literal(true), tool: ZToolFileDetailSchema }),
    async handler({ ctx, project, params }) {
      const tool = await getToolFile(ctx.models, scopeOf(project), params.name);
      return { success: true, tool: presentToolFileDetail(tool) };
    },
  }),
  defineRoute({
    method: 'put',
    path: '/api/projects/:projectId/tools/:name',
    operationId: 'putToolFile',
    summary: 'Create or replace a tool library file (tools/<name>.tools.abl)',
    description: '201 when created, 200 when replaced. Saved without compilation; versions compile it.',
    tags: TAGS,
    auth: 'agent:write',
    params: ZToolParams,
    body: ZPutToolRequestSchema,
    links: linksTo(['getToolFile', 'deleteToolFile'], { projectId: '$request.path.projectId', name: '$request.path.name' }),
    bodyExample: { dslContent: 'TOOLS:\n  base_url: "https://orders.example.com"\n\n  get_order(order_id: string) -> {id: string, status: string}\n    type: http\n    endpoint: "/orders/{order_id}"\n    method: GET\n    description: "Fetch one order"\n' },
    alsoSuccess: [201],
    errorStatuses: [409],
    response: z.object({ success: z.literal(true), created: z.boolean(), tool: ZToolFileSchema }),
    async handler({ ctx, principal, project, params, body, res }) {
      const { tool, created } = await putToolFile(ctx.models, scopeOf(project), params.name, body.dslContent, principal.subjectId);
      if (created) res.status(201);
      return { success: true, created, tool: presentToolFile(tool) };
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/api/projects/:projectId/tools/:name',
    operationId: 'deleteToolFile',
    summary: 'Delete a tool library file',
    description: 'Existing versions keep their snapshot; the next version of an agent importing it fails to compile.',
    tags: TAGS,
    auth: 'agent:write',
    params: ZToolParams,
    errorStatuses: [404],
    response: ZSuccessOnly,
    async handler({ ctx, project, params }) {
      await deleteToolFile(ctx.models, scopeOf(project), params.name);
      return { success: true };
    },
  }),
];
