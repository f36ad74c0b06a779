// MCP servers of a project (/api/projects/:projectId/mcp-servers): the servers `type: mcp` tools
// name with `server:`. Create-or-replace by name, like tool library files. See docs/mcp-tools.md.
import { type McpServerDoc } from '../../db/mcp-server';
import { defineRoute, linksTo, type AnyRoute } from '../http/route';
import { ZProjectIdParam, ZSuccessOnly } from '../http/schemas';
import { ZListMcpServersQuery, ZListMcpServersResponse, ZMcpServerParams, ZMcpServerResponse, ZPutMcpServerRequest, ZPutMcpServerResponse } from './schemas';
import { deleteMcpServer, getMcpServer, listMcpServers, putMcpServer } from '../../core/mcp-servers/servers';

const TAGS = ['MCP servers'];
const scopeOf = (project: { _id: string; tenantId: string } | null) => ({ tenantId: project!.tenantId, projectId: project!._id });

function presentServer(doc: McpServerDoc) {
  return {
    name: doc.name,
    description: doc.description ?? null,
    transport: doc.transport,
    url: doc.url ?? null,
    stdioServer: doc.stdioServer ?? null,
    headers: Object.fromEntries((doc.headers ?? []).map((h) => [h.name, h.value])),
    toolsCacheSeconds: doc.toolsCacheSeconds,
    createdAt: doc.createdAt.toISOString(),
    updatedAt: doc.updatedAt.toISOString(),
  };
}

export const mcpServerRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/api/projects/:projectId/mcp-servers',
    operationId: 'listMcpServers',
    summary: "A project's MCP servers, by name",
    tags: TAGS,
    auth: 'agent:read',
    params: ZProjectIdParam,
    query: ZListMcpServersQuery,
    response: ZListMcpServersResponse,
    async handler({ ctx, project, query }) {
      const { servers, total } = await listMcpServers(ctx.models, scopeOf(project), query);
      return { success: true, servers: servers.map(presentServer), total, offset: query.offset, limit: query.limit };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/projects/:projectId/mcp-servers/:name',
    operationId: 'getMcpServer',
    summary: 'An MCP server of the project',
    tags: TAGS,
    auth: 'agent:read',
    params: ZMcpServerParams,
    errorStatuses: [404],
    response: ZMcpServerResponse,
    async handler({ ctx, project, params }) {
      return { success: true, server: presentServer(await getMcpServer(ctx.models, scopeOf(project), params.name)) };
    },
  }),
  defineRoute({
    method: 'put',
    path: '/api/projects/:projectId/mcp-servers/:name',
    operationId: 'putMcpServer',
    summary: 'Create or replace an MCP server of the project',
    description:
      '201 when created, 200 when replaced. The next call of a tool naming it uses the new settings. ' +
      'Credentials are tool secrets referenced from `headers` as {{secrets.NAME}}; a credential header written in clear is refused (422).',
    tags: TAGS,
    auth: 'agent:write',
    params: ZMcpServerParams,
    body: ZPutMcpServerRequest,
    bodyExample: { transport: 'http', url: 'https://crm.example.com/mcp', headers: { Authorization: 'Bearer {{secrets.CRM_TOKEN}}' }, description: 'CRM lookups' },
    alsoSuccess: [201],
    errorStatuses: [409, 422],
    links: linksTo(['getMcpServer', 'deleteMcpServer'], { projectId: '$request.path.projectId', name: '$request.path.name' }),
    response: ZPutMcpServerResponse,
    async handler({ ctx, project, params, body, res }) {
      const { server, created } = await putMcpServer(ctx.models, scopeOf(project), params.name, body);
      if (created) res.status(201);
      return { success: true, created, server: presentServer(server) };
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/api/projects/:projectId/mcp-servers/:name',
    operationId: 'deleteMcpServer',
    summary: 'Delete an MCP server of the project',
    description: 'A tool that still names it fails its calls with a tool_error saying the server is not declared.',
    tags: TAGS,
    auth: 'agent:write',
    params: ZMcpServerParams,
    errorStatuses: [404],
    response: ZSuccessOnly,
    async handler({ ctx, project, params }) {
      await deleteMcpServer(ctx.models, scopeOf(project), params.name);
      return { success: true };
    },
  }),
];
