// The pure parts of MCP tools: how a call's result becomes the tool's value, the tool-list cache,
// which secrets a server's headers reference, the compiler's binding (with `server_tool`), the
// stdio allow-list setting, the server rules a project must follow, and the SSRF refusal of a
// private server before anything is sent.
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { compileProject, type ToolIR } from '../../../abl';
import { createMcpToolActivities, mcpErrorMessage, mcpResultValue, mcpSecretReferences, McpToolListCache } from '../../../activities/tools/mcp-tool';
import { type McpServerDoc } from '../../../db/mcp-server';
import { ConfigError, loadConfig } from '../../../lib/config';
import { putMcpServer } from '../../../core/mcp-servers/servers';
import { type Models } from '../../../db/models';

function compileTool(binding: string): { tool: ToolIR; codes: string[] } {
  const source = `AGENT: A\nGOAL: "g"\nTOOLS:\n  find(q: string) -> object\n${binding}`;
  const out = compileProject([{ path: 'agents/A.agent.abl', content: source }]);
  return { tool: out.agents.A!.tools[0]!, codes: out.diagnostics.map((d) => d.code) };
}

const server = (over: Partial<McpServerDoc> = {}): McpServerDoc => ({
  _id: 's1',
  tenantId: 't1',
  projectId: 'p1',
  name: 'crm',
  description: null,
  transport: 'http',
  url: 'http://127.0.0.1:9/mcp',
  stdioServer: null,
  headers: [],
  toolsCacheSeconds: 300,
  createdAt: new Date(0),
  updatedAt: new Date(1000),
  ...over,
});

describe('the mcp binding', () => {
  it('reads server and tool (also spelled server_tool), defaults the tool to its ABL name, and warns no more', () => {
    expect(compileTool('    type: mcp\n    server: crm\n    server_tool: lookup\n')).toMatchObject({ tool: { binding: { type: 'mcp', server: 'crm', tool: 'lookup' } }, codes: [] });
    expect(compileTool('    type: mcp\n    server: crm\n').tool.binding).toEqual({ type: 'mcp', server: 'crm', tool: 'find' });
    expect(compileTool('    type: lambda\n    function: vat\n')).toMatchObject({ tool: { binding: { type: 'lambda', function: 'vat' } }, codes: [] });
    expect(compileTool('    description: "no binding"\n').codes).toEqual(['W415']);
  });
});

describe('a call result as the tool value', () => {
  it('is the structured content when there is one', () => {
    expect(mcpResultValue({ content: [{ type: 'text', text: 'ignored' }], structuredContent: { id: 1 } })).toEqual({ id: 1 });
  });
  it('is a single text block, parsed when it is JSON', () => {
    expect(mcpResultValue({ content: [{ type: 'text', text: '{"a":[1,2]}' }] })).toEqual({ a: [1, 2] });
    expect(mcpResultValue({ content: [{ type: 'text', text: 'plain words' }] })).toBe('plain words');
  });
  it('is the content blocks as data otherwise', () => {
    const blocks = [{ type: 'text', text: 'a' }, { type: 'image', data: 'AAAA', mimeType: 'image/png' }];
    expect(mcpResultValue({ content: blocks })).toEqual(blocks);
    expect(mcpResultValue({})).toEqual([]);
  });
  it('names the server and carries the text of an isError answer', () => {
    expect(mcpErrorMessage('cancel', 'crm', { isError: true, content: [{ type: 'text', text: 'too late' }] })).toBe('Tool cancel: MCP server "crm" answered an error: too late');
    expect(mcpErrorMessage('cancel', 'crm', { isError: true })).toBe('Tool cancel: MCP server "crm" answered an error');
  });
});

describe('the tool-list cache', () => {
  const tools = [{ name: 'a', inputSchema: { type: 'object' as const } }];
  it('keeps a list for the server\'s TTL, and a changed server is another key', () => {
    const cache = new McpToolListCache();
    const key = McpToolListCache.keyOf(server());
    cache.set(key, tools, 10, 0);
    expect([...cache.get(key, 9_999)!.keys()]).toEqual(['a']);
    expect(cache.get(key, 10_000)).toBeNull();
    expect(McpToolListCache.keyOf(server({ updatedAt: new Date(2000) }))).not.toBe(key);
  });
  it('forgets a list the server said changed, and keeps none with a TTL of 0', () => {
    const cache = new McpToolListCache();
    const key = McpToolListCache.keyOf(server());
    cache.set(key, tools, 10, 0);
    cache.forget(key);
    expect(cache.get(key, 1)).toBeNull();
    expect(cache.set(key, tools, 0, 0).has('a')).toBe(true);
    expect(cache.get(key, 0)).toBeNull();
  });
});

it('finds the secrets a server\'s header templates reference', () => {
  expect(mcpSecretReferences({ headers: [{ name: 'Authorization', value: 'Bearer {{secrets.CRM_TOKEN}}' }, { name: 'X-Org', value: '{{ secrets["ORG"] }}-{{secrets.CRM_TOKEN}}' }] })).toEqual(['CRM_TOKEN', 'ORG']);
});

describe('MCP_STDIO_SERVERS', () => {
  const minimal = { MONGODB_URI: 'mongodb://127.0.0.1:27017/sb', JWT_SECRET: 'x'.repeat(32) };
  it('is empty by default and reads the operator\'s entries', () => {
    expect(loadConfig(minimal).MCP_STDIO_SERVERS).toEqual({});
    expect(loadConfig({ ...minimal, MCP_STDIO_SERVERS: '{"files":{"command":"node","args":["/opt/mcp/files.js"]}}' }).MCP_STDIO_SERVERS).toEqual({
      files: { command: 'node', args: ['/opt/mcp/files.js'], env: {} },
    });
  });
  it('refuses what is not an object of entries with a command', () => {
    expect(() => loadConfig({ ...minimal, MCP_STDIO_SERVERS: 'node files.js' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...minimal, MCP_STDIO_SERVERS: '{"files":{"args":[]}}' })).toThrow(/MCP_STDIO_SERVERS/);
  });
});

describe('a project MCP server', () => {
  // Each refusal comes before the store is reached.
  const models = null as unknown as Models;
  const scope = { tenantId: 't1', projectId: 'p1' };
  it.each([
    [{ transport: 'http' as const }, /needs its URL/],
    [{ transport: 'stdio' as const }, /MCP_STDIO_SERVERS/],
    [{ transport: 'stdio' as const, stdioServer: 'files', headers: { 'X-A': 'b' } }, /sends no HTTP headers/],
    [{ transport: 'http' as const, url: 'https://crm.example.com/mcp', headers: { Authorization: 'Bearer abc123' } }, /never in clear/],
    [{ transport: 'http' as const, url: 'https://crm.example.com/mcp', headers: { 'X-Api-Key': 'abc123' } }, /never in clear/],
  ])('refuses %j', async (input, message) => {
    await expect(putMcpServer(models, scope, 'crm', input)).rejects.toThrow(message);
  });
});

describe('a server on a private address', () => {
  let http: Server;
  let hits = 0;
  let url: string;
  beforeAll(async () => {
    http = createServer((_req, res) => {
      hits++;
      res.writeHead(500).end();
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  });
  afterAll(() => new Promise<void>((resolve) => http.close(() => resolve())));

  it('is refused for good (TOOL_BLOCKED) before any request reaches it', async () => {
    const { runMcpTool } = createMcpToolActivities({
      findServer: async () => server({ url }),
      resolveToolSecrets: async () => ({}),
      stdioServers: {},
      allowPrivate: false,
      allowedPrivateDestinations: [],
    });
    const tool = compileTool('    type: mcp\n    server: crm\n').tool;
    await expect(runMcpTool({ tenantId: 't1', projectId: 'p1', tool, args: { q: 'x' }, timeoutMs: 2000 })).rejects.toMatchObject({ type: 'TOOL_BLOCKED', nonRetryable: true });
    expect(hits).toBe(0);
  });
});
