// A real MCP server written with the official SDK, for the MCP tool tests: `orders` tools over
// streamable HTTP (stateless, started in the test) or over stdio (this file run by node as a
// script). It counts the tool-list requests it answers, and checks the bearer token it is given.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';

/** The server's tools; `seenAuth` is the Authorization header the HTTP request carried. */
export function ordersServer(seenAuth: () => string | null): McpServer {
  const server = new McpServer({ name: 'orders', version: '1.0.0' });
  server.registerTool(
    'lookup_order',
    { description: 'One order by id', inputSchema: { id: z.string() }, outputSchema: { id: z.string(), status: z.string(), seenAuth: z.string().nullable() } },
    async ({ id }) => {
      const out = { id, status: id === 'A1' ? 'shipped' : 'pending', seenAuth: seenAuth() };
      return { content: [{ type: 'text', text: JSON.stringify(out) }], structuredContent: out };
    },
  );
  server.registerTool('order_note', { description: 'A note as text', inputSchema: { id: z.string() } }, async ({ id }) => ({
    content: [{ type: 'text', text: `Order ${id} left the warehouse` }],
  }));
  server.registerTool('cancel_order', { description: 'Always refuses', inputSchema: { id: z.string() } }, async ({ id }) => ({
    isError: true,
    content: [{ type: 'text', text: `order ${id} cannot be cancelled: already shipped` }],
  }));
  return server;
}

export interface HttpMcpServer {
  url: string;
  /** tools/list requests answered so far. */
  listCalls: () => number;
  close: () => Promise<void>;
}

async function bodyOf(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? JSON.parse(text) : undefined;
}

/** Streamable HTTP, stateless: a new server and transport per request. 401 without `Bearer <token>`. */
export async function startHttpMcpServer(token: string): Promise<HttpMcpServer> {
  let lists = 0;
  const http: Server = createServer((req, res) => {
    void (async () => {
      if (req.method !== 'POST') {
        res.writeHead(405).end();
        return;
      }
      if (req.headers.authorization !== `Bearer ${token}`) {
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
        return;
      }
      const body = await bodyOf(req);
      if ((body as { method?: string } | undefined)?.method === 'tools/list') lists++;
      const server = ordersServer(() => req.headers.authorization ?? null);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
    })().catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    listCalls: () => lists,
    close: () => new Promise((resolve) => http.close(() => resolve())),
  };
}

// Run as a script: the same tools over stdio.
if (require.main === module) {
  void ordersServer(() => null).connect(new StdioServerTransport());
}
