// The `runMcpTool` activity: calls a `type: mcp` tool on the project's MCP server through the
// official MCP TypeScript SDK (streamable HTTP, or stdio for a process of the worker's operator
// allow-list), with the server's tool list cached per server and refreshed on its TTL or when the
// server says it changed. Header credentials come from the tool-secret store and are scrubbed from
// what the call returns or throws. One connection per call: no process or stream outlives it.
import { withToolSpan } from '../../lib/tracing';
import { ApplicationFailure } from '@temporalio/activity';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ErrorCode, McpError, ToolListChangedNotificationSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Json, ToolIR } from '../../abl/ir';
import { fixedContext, renderTemplate } from '../../abl';
import { capToolResult } from '../../lib/result-cap';
import { type McpServerDoc } from '../../db/mcp-server';
import { type McpStdioServerConfig } from '../../lib/config';
import { blockedDestinationOf, destinationGuard, type Resolve } from '../../lib/net/destination';
import { assertSecretsMayGoTo, scrubFailure, scrubSecrets, secretNamesIn, DEFAULT_TOOL_SECRET_ENVIRONMENT, type ResolveToolSecrets } from './tool-secrets';

export interface McpToolInput {
  tenantId: string;
  projectId: string;
  tool: ToolIR;
  args: Record<string, Json>;
  timeoutMs: number;
  toolSecretEnvironment?: string;
}

export interface McpToolDeps {
  /** The project's server of that name (tenant + project in the query), or null. */
  findServer: (scope: { tenantId: string; projectId: string }, name: string) => Promise<McpServerDoc | null>;
  resolveToolSecrets: ResolveToolSecrets;
  /** The operator's stdio allow-list (MCP_STDIO_SERVERS). */
  stdioServers: Record<string, McpStdioServerConfig>;
  allowPrivate: boolean;
  allowedPrivateDestinations: readonly string[];
  resolve?: Resolve;
  /** Largest result kept in history (TOOL_RESULT_HISTORY_MAX_BYTES); a larger one is cut. */
  maxResultBytes?: number;
  signal?: () => AbortSignal | undefined;
}

/** Tool lists kept at once (least recently listed dropped first). */
const TOOL_LIST_CACHE_MAX = 1000;
const CLIENT_INFO = { name: 'switchboard', version: '1.0.0' };

interface ListedTools {
  tools: Map<string, Tool>;
  expiresAt: number;
}

/** A server's tool list, cached for `toolsCacheSeconds`; a server change (its updatedAt) is a new key. */
export class McpToolListCache {
  private readonly entries = new Map<string, ListedTools>();

  static keyOf(server: McpServerDoc): string {
    return JSON.stringify([server.tenantId, server.projectId, server.name, new Date(server.updatedAt).getTime()]);
  }

  get(key: string, now: number): Map<string, Tool> | null {
    const hit = this.entries.get(key);
    if (!hit) return null;
    if (hit.expiresAt <= now) {
      this.entries.delete(key);
      return null;
    }
    return hit.tools;
  }

  set(key: string, tools: Tool[], ttlSeconds: number, now: number): Map<string, Tool> {
    const map = new Map(tools.map((t) => [t.name, t]));
    this.entries.delete(key);
    if (ttlSeconds > 0) {
      this.entries.set(key, { tools: map, expiresAt: now + ttlSeconds * 1000 });
      while (this.entries.size > TOOL_LIST_CACHE_MAX) this.entries.delete(this.entries.keys().next().value as string);
    }
    return map;
  }

  forget(key: string): void {
    this.entries.delete(key);
  }
}

type CallToolResult = { content?: unknown; structuredContent?: unknown; isError?: boolean; toolResult?: unknown };

function textOf(content: unknown): string {
  if (!Array.isArray(content)) return '';
  return content
    .map((block: { type?: string; text?: string }) => (block?.type === 'text' && typeof block.text === 'string' ? block.text : ''))
    .filter(Boolean)
    .join('\n');
}

/**
 * A call's result as the tool's value: its `structuredContent` when the server gives one; else a
 * single text block (parsed when it is JSON); else the content blocks as data.
 */
export function mcpResultValue(result: CallToolResult): Json {
  if (result.structuredContent !== undefined && result.structuredContent !== null) return result.structuredContent as Json;
  if (result.toolResult !== undefined) return result.toolResult as Json;
  const content = Array.isArray(result.content) ? (result.content as Json[]) : [];
  if (content.length === 1) {
    const only = content[0] as { type?: string; text?: string };
    if (only?.type === 'text' && typeof only.text === 'string') {
      try {
        return JSON.parse(only.text) as Json;
      } catch {
        return only.text;
      }
    }
  }
  return content;
}

/** The message of an `isError` result: its text blocks, else a generic line. */
export function mcpErrorMessage(toolName: string, server: string, result: CallToolResult): string {
  const text = textOf(result.content).slice(0, 1000);
  return `Tool ${toolName}: MCP server "${server}" answered an error${text ? `: ${text}` : ''}`;
}

/** Secret names a server's header templates reference, in order of first appearance. */
export function mcpSecretReferences(server: Pick<McpServerDoc, 'headers'>): string[] {
  const names = new Set<string>();
  for (const h of server.headers ?? []) secretNamesIn(h.value, names);
  return [...names];
}

async function resolveSecrets(deps: McpToolDeps, input: McpToolInput, server: McpServerDoc) {
  const names = mcpSecretReferences(server);
  if (names.length === 0) return { values: {} as Record<string, string>, destinations: {} };
  try {
    const resolved = await deps.resolveToolSecrets({
      tenantId: input.tenantId,
      projectId: input.projectId,
      toolName: input.tool.name,
      environment: input.toolSecretEnvironment ?? DEFAULT_TOOL_SECRET_ENVIRONMENT,
      names,
    });
    const entries = Object.entries(resolved);
    return {
      values: Object.fromEntries(entries.map(([n, s]) => [n, s.value])),
      destinations: Object.fromEntries(entries.map(([n, s]) => [n, { id: s.id, allowedHosts: s.allowedHosts }])),
    };
  } catch (err) {
    if (err instanceof Error && err.name === 'ToolSecretUnavailableError') {
      const { secretKey, problem } = err as Error & { secretKey: string; problem: string };
      throw ApplicationFailure.nonRetryable(`Tool ${input.tool.name}: ${err.message}`, 'TOOL_SECRET_UNAVAILABLE', { secretKey, problem });
    }
    throw err;
  }
}

export function createMcpToolActivities(deps: McpToolDeps, cache = new McpToolListCache()) {
  return {
    /** Calls the tool; its value is the call's structured result, an `isError` answer a tool_error. */
    runMcpTool: (input: McpToolInput): Promise<Json> => withToolSpan(input.tool, async () => {
      const binding = input.tool.binding;
      const toolName = input.tool.name;
      if (binding.type !== 'mcp') throw ApplicationFailure.nonRetryable(`Tool ${toolName} is not an MCP tool`, 'TOOL_UNSUPPORTED');
      const server = await deps.findServer({ tenantId: input.tenantId, projectId: input.projectId }, binding.server);
      if (!server) {
        throw ApplicationFailure.nonRetryable(
          `Tool ${toolName}: MCP server "${binding.server}" is not declared in the project (PUT /api/projects/${input.projectId}/mcp-servers/${binding.server})`,
          'TOOL_MCP_SERVER_NOT_FOUND',
        );
      }
      const secrets = await resolveSecrets(deps, input, server);
      try {
        const value = scrubSecrets(await call(deps, cache, input, server, secrets), secrets.values);
        // What this returns is written to workflow history: only a bounded cut of a large result.
        return deps.maxResultBytes ? capToolResult(value, deps.maxResultBytes).value : value;
      } catch (err) {
        throw scrubFailure(err, secrets.values);
      }
    }),
  };
}

function transportFor(deps: McpToolDeps, input: McpToolInput, server: McpServerDoc, secrets: { values: Record<string, string>; destinations: Parameters<typeof assertSecretsMayGoTo>[2] }) {
  const toolName = input.tool.name;
  if (server.transport === 'stdio') {
    const entry = server.stdioServer ? deps.stdioServers[server.stdioServer] : undefined;
    if (!entry) {
      throw ApplicationFailure.nonRetryable(
        `Tool ${toolName}: MCP server "${server.name}" names the stdio server "${server.stdioServer ?? ''}", which this worker's MCP_STDIO_SERVERS does not list`,
        'TOOL_MCP_STDIO_NOT_ALLOWED',
      );
    }
    return new StdioClientTransport({ command: entry.command, args: entry.args, env: entry.env, ...(entry.cwd ? { cwd: entry.cwd } : {}), stderr: 'ignore' });
  }
  const url = new URL(server.url ?? '');
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw ApplicationFailure.nonRetryable(`Tool ${toolName}: unsupported URL scheme ${url.protocol}`, 'TOOL_BAD_REQUEST');
  }
  const scope = { secrets: secrets.values as unknown as Json };
  const headers: Record<string, string> = {};
  for (const h of server.headers ?? []) headers[h.name] = renderTemplate(h.value, scope, fixedContext(0));
  assertSecretsMayGoTo(toolName, Object.keys(secrets.values), secrets.destinations, url);
  // SSRF protection: every connection goes only to an address the guard's own resolution checked,
  // and redirects are not followed (their target was never checked).
  const guard = destinationGuard({
    allowPrivateNetworks: deps.allowPrivate,
    allowedPrivateDestinations: deps.allowedPrivateDestinations,
    ...(deps.resolve ? { resolve: deps.resolve } : {}),
  });
  const guardedFetch: typeof fetch = (target, init) => guard.fetch(target, { ...init, redirect: 'manual' });
  return new StreamableHTTPClientTransport(url, { requestInit: { headers }, fetch: guardedFetch });
}

async function call(
  deps: McpToolDeps,
  cache: McpToolListCache,
  input: McpToolInput,
  server: McpServerDoc,
  secrets: { values: Record<string, string>; destinations: Parameters<typeof assertSecretsMayGoTo>[2] },
): Promise<Json> {
  const binding = input.tool.binding as Extract<ToolIR['binding'], { type: 'mcp' }>;
  const toolName = input.tool.name;
  const timeout = AbortSignal.timeout(Math.max(1, input.timeoutMs));
  const outer = deps.signal?.();
  const signal = outer ? AbortSignal.any([timeout, outer]) : timeout;
  const options = { signal, timeout: Math.max(1, input.timeoutMs) };
  const key = McpToolListCache.keyOf(server);
  const transport = transportFor(deps, input, server, secrets);
  const client = new Client(CLIENT_INFO, { capabilities: {} });
  client.setNotificationHandler(ToolListChangedNotificationSchema, async () => cache.forget(key));
  /** `beforeCall`: nothing reached the tool yet, so another attempt is safe. */
  const fail = (err: unknown, stage: string, beforeCall: boolean): never => {
    const blocked = blockedDestinationOf(err) ?? blockedDestinationOf((err as { cause?: unknown })?.cause);
    if (blocked) throw ApplicationFailure.nonRetryable(`Tool ${toolName}: ${blocked.message}`, 'TOOL_BLOCKED');
    if (timeout.aborted || (err instanceof McpError && err.code === ErrorCode.RequestTimeout)) {
      throw ApplicationFailure.create({ message: `Tool ${toolName} timed out after ${input.timeoutMs} ms`, type: 'TOOL_TIMEOUT', nonRetryable: !beforeCall });
    }
    if (err instanceof ApplicationFailure) throw err;
    const message = `Tool ${toolName}: MCP server "${server.name}" ${stage} failed: ${(err as Error)?.message ?? String(err)}`;
    throw ApplicationFailure.create({ message, type: 'TOOL_MCP_UNAVAILABLE', nonRetryable: !beforeCall });
  };

  try {
    try {
      await client.connect(transport, options);
    } catch (err) {
      fail(err, 'connection', true);
    }
    const listAll = async (): Promise<Map<string, Tool>> => {
      const tools: Tool[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor ? { cursor } : undefined, options);
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor && tools.length < 10_000);
      return cache.set(key, tools, server.toolsCacheSeconds, Date.now());
    };
    let tools = cache.get(key, Date.now());
    const fromCache = tools !== null;
    try {
      tools ??= await listAll();
      // A cached list may predate the tool: list once more before refusing the call.
      if (!tools.has(binding.tool) && fromCache) tools = await listAll();
    } catch (err) {
      fail(err, 'tools/list', true);
    }
    if (!tools!.has(binding.tool)) {
      const offered = [...tools!.keys()].slice(0, 20).join(', ');
      throw ApplicationFailure.nonRetryable(
        `Tool ${toolName}: MCP server "${server.name}" has no tool "${binding.tool}"${offered ? ` (it lists: ${offered})` : ' (it lists none)'}`,
        'TOOL_MCP_UNKNOWN_TOOL',
      );
    }
    let result: CallToolResult;
    try {
      result = (await client.callTool({ name: binding.tool, arguments: input.args }, undefined, options)) as CallToolResult;
    } catch (err) {
      // The request may have reached the server: nothing after it is retried.
      if (err instanceof McpError && err.code !== ErrorCode.RequestTimeout && err.code !== ErrorCode.ConnectionClosed) {
        throw ApplicationFailure.nonRetryable(`Tool ${toolName}: MCP server "${server.name}" refused the call: ${err.message}`, 'TOOL_MCP_ERROR', { code: err.code });
      }
      return fail(err, 'tools/call', false);
    }
    if (result.isError) throw ApplicationFailure.nonRetryable(mcpErrorMessage(toolName, server.name, result), 'TOOL_MCP_TOOL_ERROR');
    return mcpResultValue(result);
  } finally {
    await client.close().catch(() => undefined);
  }
}
