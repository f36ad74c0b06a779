// Request and response schemas of the project export and import routes (docs/deployments.md).
import { z } from 'zod';
import '../openapi/registry';
import { ZDiagnosticSchema } from '../agents/schemas';
import { IMPORT_PATH_PATTERN } from '../../core/project-io/layout';
import { IMPORT_LIMITS } from '../../core/project-io/limits';

export const ZExportQuery = z.object({
  format: z.enum(['folder', 'zip']).default('folder').describe('`folder`: JSON with the file map; `zip`: an application/zip download'),
  include_deployments: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true')
    .describe('`true` adds deployments.json with the deployment records'),
});

export const ZImportRequestSchema = z.object({
  // The path rules are checked by the import itself (checkImportFiles), which names the rule a
  // path breaks; the document states them so that a request it allows is taken.
  files: z
    .record(z.string(), z.string())
    // `propertyNames` is OpenAPI 3.1 (JSON Schema) that the library's metadata type does not list.
    .openapi({
      maxProperties: IMPORT_LIMITS.files,
      propertyNames: { pattern: IMPORT_PATH_PATTERN },
      additionalProperties: { type: 'string', maxLength: IMPORT_LIMITS.fileBytes },
    } as Record<string, unknown>)
    .describe(
      'Path → content: agents/<Name>.abl, tools/<name>.tools.abl, and optionally manifest.json, lockfile.json, deployments.json. ' +
        'At most 500 files, 1 MB (UTF-8 bytes) each, 50 MB in all (413 beyond).',
    ),
});

const ZManifestSchema = z
  .object({
    name: z.string().describe('Project name'),
    version: z.number().describe('Export format version (1)'),
    entryAgent: z.string().nullable().describe('The agent a session starts with: the supervisor, else the first agent by name'),
    agents: z.record(z.string(), z.object({ sourceHash: z.string().describe('SHA-256 (hex) of the file content'), path: z.string() })),
    exportedAt: z.string(),
    exportedBy: z.string().describe('API key or user id'),
  })
  .openapi('ExportManifest');

const ZLockfileSchema = z
  .object({
    agents: z.record(
      z.string(),
      z.object({ version: z.string().describe('Newest version label'), hash: z.string().describe("That version's sourceHash") }),
    ),
  })
  .openapi('ExportLockfile');

export const ZExportResponse = z.object({
  success: z.literal(true),
  manifest: ZManifestSchema,
  lockfile: ZLockfileSchema,
  files: z.record(z.string(), z.string()).describe('Path → content'),
  warnings: z.array(z.object({ code: z.string().describe('AGENT_WITHOUT_DSL'), name: z.string(), message: z.string() })),
});

export const ZZipDownload = z.string().openapi({ type: 'string', format: 'binary', example: 'PK…' }).describe('Zip archive: manifest.json, lockfile.json and the files');

export const ZExportPreviewResponse = z.object({
  success: z.literal(true),
  project: z.object({ name: z.string(), slug: z.string() }),
  agents: z.array(z.object({ name: z.string(), hasDslContent: z.boolean() })),
  tools: z.array(z.object({ name: z.string(), toolType: z.string().describe('http, async_webhook, sandbox, workflow, mcp, lambda or contract'), path: z.string() })),
  dependencies: z.object({
    edges: z.array(z.object({ from: z.string(), to: z.string(), type: z.enum(['handoff', 'tool']) })),
    validation: z.object({ valid: z.boolean(), errors: z.array(ZDiagnosticSchema) }),
  }),
});

const ZOperationSchema = z.object({
  type: z.enum(['create', 'update', 'delete']),
  entity: z.enum(['agent', 'tool']),
  name: z.string(),
  reason: z.string(),
});

export const ZImportPreviewResponse = z.object({
  success: z.literal(true),
  preview: z.object({
    operations: z.array(ZOperationSchema),
    summary: z.object({ create: z.number(), update: z.number(), delete: z.number() }),
  }),
});

export const ZImportResponse = z.object({
  success: z.literal(true),
  applied: z.object({ created: z.number(), updated: z.number(), deleted: z.number() }),
  operations: z.array(ZOperationSchema),
  versions: z.record(z.string(), z.string()).describe('Agent name → version label created by the import'),
});

export const IMPORT_BODY_EXAMPLE = {
  files: {
    'agents/Order_Helper.abl': 'AGENT: Order_Helper\nGOAL: "Answer questions about orders"\n',
    'tools/orders.tools.abl':
      'TOOLS:\n  base_url: "https://orders.example.com"\n\n  get_order(order_id: string) -> {id: string, status: string}\n    type: http\n    endpoint: "/orders/{order_id}"\n    method: GET\n    description: "Fetch one order"\n',
  },
};
