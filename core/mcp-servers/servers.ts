// A project's MCP servers (db/mcp-server.ts): list, read, create-or-replace by name, delete, each
// scoped to the project the route resolved (tenant + project in every query).
import { DomainError } from '../../lib/errors';
import { newId } from '../../lib/ids';
import { isDuplicateKey } from '../../db/duplicate-key';
import { type Models } from '../../db/models';
import { type McpServerDoc, type McpTransport } from '../../db/mcp-server';

export interface ProjectScope {
  tenantId: string;
  projectId: string;
}

export interface McpServerInput {
  description?: string | null;
  transport: McpTransport;
  url?: string | null;
  stdioServer?: string | null;
  headers?: Record<string, string>;
  toolsCacheSeconds?: number;
}

export const DEFAULT_TOOLS_CACHE_SECONDS = 300;

export const MCP_HEADERS_MAX = 20;
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/;

/** Header names that carry credentials: their value must come from a secret, never be stored in clear. */
const CREDENTIAL_HEADER = /^(authorization|proxy-authorization|cookie)$|key|token|secret|auth|password/i;

/** A {{secrets.NAME}} (or {{secrets["NAME"]}}) reference, as the tool activity resolves them. */
const SECRET_REFERENCE = /\{\{[^}]*\bsecrets\s*(?:\.\s*[A-Za-z_]|\[)/;

/** Refuses what the server could not be called with, or a credential written in clear. */
function checked(input: McpServerInput): Omit<McpServerDoc, '_id' | 'tenantId' | 'projectId' | 'name' | 'createdAt' | 'updatedAt'> {
  const headers = Object.entries(input.headers ?? {}).map(([name, value]) => ({ name, value }));
  if (input.transport === 'http') {
    if (!input.url) throw new DomainError('VALIDATION_ERROR', 'body.url: an http server needs its URL');
    if (input.stdioServer) throw new DomainError('VALIDATION_ERROR', 'body.stdioServer: only a stdio server names one');
  } else {
    if (!input.stdioServer) throw new DomainError('VALIDATION_ERROR', 'body.stdioServer: a stdio server names an entry of the worker\'s MCP_STDIO_SERVERS');
    if (input.url) throw new DomainError('VALIDATION_ERROR', 'body.url: a stdio server has no URL');
    if (headers.length > 0) throw new DomainError('VALIDATION_ERROR', 'body.headers: a stdio server sends no HTTP headers');
  }
  if (headers.length > MCP_HEADERS_MAX) throw new DomainError('UNPROCESSABLE_ENTITY', `body.headers: at most ${MCP_HEADERS_MAX} headers`);
  for (const h of headers) {
    if (!HEADER_NAME.test(h.name)) throw new DomainError('UNPROCESSABLE_ENTITY', `body.headers: "${h.name.slice(0, 100)}" is not an HTTP header name`);
    if (CREDENTIAL_HEADER.test(h.name) && !SECRET_REFERENCE.test(h.value)) {
      // Well formed, but refused for what it holds: 422, as the document cannot state the rule.
      throw new DomainError(
        'UNPROCESSABLE_ENTITY',
        `body.headers.${h.name}: a credential header takes its value from a tool secret, e.g. "Bearer {{secrets.CRM_TOKEN}}", never in clear`,
      );
    }
  }
  return {
    description: input.description ?? null,
    transport: input.transport,
    url: input.transport === 'http' ? (input.url ?? null) : null,
    stdioServer: input.transport === 'stdio' ? (input.stdioServer ?? null) : null,
    headers,
    toolsCacheSeconds: input.toolsCacheSeconds ?? DEFAULT_TOOLS_CACHE_SECONDS,
  };
}

export async function listMcpServers(models: Models, scope: ProjectScope, page: { limit: number; offset: number }): Promise<{ servers: McpServerDoc[]; total: number }> {
  const filter = { tenantId: scope.tenantId, projectId: scope.projectId };
  const [servers, total] = await Promise.all([
    models.McpServer.find(filter).sort({ name: 1, _id: 1 }).skip(page.offset).limit(page.limit).lean(),
    models.McpServer.countDocuments(filter),
  ]);
  return { servers, total };
}

export async function findMcpServer(models: Models, scope: ProjectScope, name: string): Promise<McpServerDoc | null> {
  return models.McpServer.findOne({ tenantId: scope.tenantId, projectId: scope.projectId, name }).lean();
}

export async function getMcpServer(models: Models, scope: ProjectScope, name: string): Promise<McpServerDoc> {
  const doc = await findMcpServer(models, scope, name);
  if (!doc) throw DomainError.notFound('MCP server');
  return doc;
}

/** Creates the server or replaces every field of the one with that name; `created` says which. */
export async function putMcpServer(models: Models, scope: ProjectScope, name: string, input: McpServerInput): Promise<{ server: McpServerDoc; created: boolean }> {
  const fields = checked(input);
  const now = new Date();
  const filter = { tenantId: scope.tenantId, projectId: scope.projectId, name };
  const replaced = await models.McpServer.findOneAndUpdate(filter, { $set: { ...fields, updatedAt: now } }, { new: true }).lean();
  if (replaced) return { server: replaced, created: false };
  const doc: McpServerDoc = { _id: newId(), ...filter, ...fields, createdAt: now, updatedAt: now };
  try {
    await models.McpServer.create(doc);
  } catch (err) {
    if (isDuplicateKey(err)) throw new DomainError('CONFLICT', `MCP server "${name}" was created at the same time; send the request again to replace it`);
    throw err;
  }
  return { server: doc, created: true };
}

export async function deleteMcpServer(models: Models, scope: ProjectScope, name: string): Promise<void> {
  const result = await models.McpServer.deleteOne({ tenantId: scope.tenantId, projectId: scope.projectId, name });
  if (result.deletedCount === 0) throw DomainError.notFound('MCP server');
}
