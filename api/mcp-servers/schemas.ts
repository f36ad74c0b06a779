// Zod schemas of the MCP server routes (docs/mcp-tools.md): a project's servers by name.
import { z } from 'zod';
import '../openapi/registry';
import { ZLimitQuery, ZOffsetQuery } from '../http/schemas';

export const MCP_SERVER_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

export const ZMcpServerParams = z.object({
  projectId: z.string().min(1).max(64).describe('Project id (a CUID)'),
  name: z.string().regex(MCP_SERVER_NAME_PATTERN, 'must be letters, digits, dots, dashes and underscores (max 64), starting with a letter or digit').describe('The name a tool writes as `server:`'),
});

export const ZListMcpServersQuery = z.object({ limit: ZLimitQuery, offset: ZOffsetQuery });

const ZHeaders = z
  .record(z.string(), z.string().min(1).max(4096).regex(/^[^\r\n]*$/, 'must be one line'))
  .describe(
    'Headers sent with every request to an http server. Values are templates: a credential comes from a tool secret as {{secrets.NAME}} ' +
      '(resolved for the calling tool, or a `*` secret, in the session\'s environment, and sent only to the secret\'s allowed hosts); ' +
      'a header whose name reads as a credential (Authorization, Cookie, *key*, *token*, *secret*, *auth*, *password*) must reference one (422 otherwise). ' +
      'At most 20, each named as an HTTP header (422 otherwise)',
  );

const common = {
  description: z.string().max(1000).nullable().optional(),
  toolsCacheSeconds: z.number().int().min(0).max(86_400).optional().describe('How long the server\'s tool list is trusted before it is listed again (default 300; 0 lists it on every call)'),
};

export const ZPutMcpServerRequest = z
  .discriminatedUnion('transport', [
    z
      .object({
        transport: z.literal('http').describe('Streamable HTTP at `url`'),
        url: z
          .url({ protocol: /^https?$/ })
          .max(2048)
          .describe('The streamable HTTP endpoint; private and loopback hosts are refused at call time like every tool destination'),
        headers: ZHeaders.optional(),
        ...common,
      })
      .strict()
      .openapi('PutHttpMcpServerRequest'),
    z
      .object({
        transport: z.literal('stdio').describe('The worker\'s allow-listed process named by `stdioServer`'),
        stdioServer: z
          .string()
          .regex(MCP_SERVER_NAME_PATTERN, 'must be the name of an entry of the worker\'s MCP_STDIO_SERVERS')
          .describe('An entry of the worker\'s MCP_STDIO_SERVERS allow-list (the operator\'s command); a project never names a command'),
        ...common,
      })
      .strict()
      .openapi('PutStdioMcpServerRequest'),
  ])
  .openapi('PutMcpServerRequest');

export const ZMcpServer = z
  .object({
    name: z.string(),
    description: z.string().nullable(),
    transport: z.enum(['http', 'stdio']),
    url: z.string().nullable(),
    stdioServer: z.string().nullable(),
    headers: z.record(z.string(), z.string()).describe('The header templates as written; secret values are never part of them'),
    toolsCacheSeconds: z.number().int(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi('McpServer');

export const ZMcpServerResponse = z.object({ success: z.literal(true), server: ZMcpServer });
export const ZPutMcpServerResponse = z.object({ success: z.literal(true), created: z.boolean(), server: ZMcpServer });
export const ZListMcpServersResponse = z.object({
  success: z.literal(true),
  servers: z.array(ZMcpServer),
  total: z.number().int().min(0),
  offset: z.number().int().min(0),
  limit: z.number().int().min(1),
});
