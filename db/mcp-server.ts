// MCP servers of a project: where a `type: mcp` tool's `server:` name leads. An HTTP server is a
// URL (reached through the tools' SSRF rules) with header templates whose credentials come from the
// tool-secret store as {{secrets.NAME}}; a stdio server names an entry of the worker's operator
// allow-list (MCP_STDIO_SERVERS), never a command. One document per tenant + project + name.
import { Schema, type Connection, type Model } from 'mongoose';

export type McpTransport = 'http' | 'stdio';

export interface McpServerDoc {
  _id: string;
  tenantId: string;
  projectId: string;
  /** The name a tool writes as `server:`. */
  name: string;
  description: string | null;
  transport: McpTransport;
  /** Streamable HTTP endpoint (transport http), else null. */
  url: string | null;
  /** The allow-list entry of the worker (transport stdio), else null. */
  stdioServer: string | null;
  /** Header templates, in order; values may reference {{secrets.NAME}}. */
  headers: { name: string; value: string }[];
  /** How long a server's tool list is trusted before it is listed again. */
  toolsCacheSeconds: number;
  createdAt: Date;
  updatedAt: Date;
}

const McpServerSchema = new Schema<McpServerDoc>(
  {
    _id: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    name: { type: String, required: true },
    description: { type: String, default: null },
    transport: { type: String, required: true, enum: ['http', 'stdio'] },
    url: { type: String, default: null },
    stdioServer: { type: String, default: null },
    headers: { type: [{ _id: false, name: { type: String, required: true }, value: { type: String, required: true } }], default: [] },
    toolsCacheSeconds: { type: Number, required: true },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { versionKey: false },
);
// One server per name in a project; also the index the tool activity's lookup by name uses.
McpServerSchema.index({ tenantId: 1, projectId: 1, name: 1 }, { unique: true });

export type McpServerModel = Model<McpServerDoc>;
export const mcpServerModel = (c: Connection): McpServerModel => c.model<McpServerDoc>('McpServer', McpServerSchema, 'mcp_servers');
