// Request and response schemas of the agent, version and tool-file routes (docs/agents.md).
import { z } from 'zod';
import '../openapi/registry';
import { NOT_BLANK_PATTERN, ZLimitQuery, ZOffsetQuery } from '../http/schemas';
import { AGENT_NAME_PATTERN, TOOL_NAME_PATTERN, VERSION_PATTERN } from '../../core/agents/names';

/** Per-field cap on ABL source: half the 1 MB body limit, so a JSON-escaped file still fits. */
export const MAX_DSL_BYTES = 512 * 1024;

export { AGENT_NAME_PATTERN, TOOL_NAME_PATTERN, VERSION_PATTERN };

export const ZAgentName = z
  .string()
  .regex(AGENT_NAME_PATTERN, 'must start with a letter and hold only letters, digits and underscores (max 100)')
  .describe('ABL agent name, e.g. Billing_Agent');

export const ZDslContent = z
  .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
  .max(MAX_DSL_BYTES)
  .regex(NOT_BLANK_PATTERN, 'must not be empty')
  .refine((s) => Buffer.byteLength(s, 'utf8') <= MAX_DSL_BYTES, `must be at most ${MAX_DSL_BYTES} bytes (512 KB)`)
  .describe('ABL source: not blank, at most 512 KB of UTF-8 (so at most 524288 characters)');

const ZDomain = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[a-z0-9]+(?:-[a-z0-9]+)*$/, 'must be lowercase letters, digits and single dashes');

export const ZAgentParams = z.object({
  projectId: z.string().min(1).max(64),
  agentName: ZAgentName,
});

export const ZVersionParams = ZAgentParams.extend({
  version: z.string().regex(VERSION_PATTERN, 'must be a version label such as 1.0.0'),
});

export const ZToolParams = z.object({
  projectId: z.string().min(1).max(64),
  name: z.string().regex(TOOL_NAME_PATTERN, 'must be letters, digits, dashes and underscores (max 100), starting with a letter or digit'),
});

export const ZTenantAgentsQuery = z.object({
  projectId: z.string().min(1).max(64).optional().describe('Only this project'),
  limit: ZLimitQuery,
  offset: ZOffsetQuery,
});

export const ZTenantAgentQuery = z.object({
  projectId: z.string().min(1).max(64).optional().describe('The project to look in; without it a name that exists in several visible projects is a 409'),
});

export const ZCreateAgentRequestSchema = z.object({
  name: ZAgentName,
  domain: ZDomain.optional().describe("First part of agentPath; defaults to the project's slug"),
  description: z.string().max(2000).nullable().optional(),
  dslContent: ZDslContent.optional().describe('Initial draft; defaults to a minimal `AGENT: <name>` with a GOAL'),
});

export const ZSaveDraftRequestSchema = z.object({ dslContent: ZDslContent });

export const ZValidateRequestSchema = z.object({
  dslContent: ZDslContent.optional().describe('Source to check; defaults to the saved draft'),
});

export const ZCreateVersionRequestSchema = z.object({
  version: z
    .string()
    .max(64)
    .regex(VERSION_PATTERN, 'must be a version label such as 1.0.0')
    .optional()
    .describe('Label; defaults to the next patch of the latest version (first: 1.0.0)'),
  changelog: z.string().max(5000).nullable().optional(),
});

export const ZPutToolRequestSchema = z.object({ dslContent: ZDslContent });

export const ZDiagnosticSchema = z
  .object({
    severity: z.enum(['error', 'warning']),
    code: z.string().describe('Stable code (docs/abl.md), e.g. E203'),
    message: z.string(),
    path: z.string().describe('Project-relative file, e.g. agents/Billing_Agent.agent.abl'),
    line: z.number().describe('1-based'),
    column: z.number().describe('1-based'),
  })
  .openapi('Diagnostic');

export const ZTenantAgentSchema = z
  .object({ id: z.string(), name: z.string(), projectId: z.string() })
  .openapi('TenantAgent');

export const ZTenantAgentDetailSchema = ZTenantAgentSchema.extend({ dslContent: z.string() }).openapi('TenantAgentDetail');

export const ZProjectAgentSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    agentPath: z.string().describe('<domain>/<agent-name>'),
    description: z.string().nullable(),
    versionCount: z.number().describe('Number of saved versions'),
    latestVersion: z.string().nullable().describe('Label of the newest version, null when none'),
    activeVersions: z.record(z.string(), z.string()).describe('Environment → active version (set by deployments)'),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi('ProjectAgent');

export const ZProjectAgentDetailSchema = ZProjectAgentSchema.extend({ dslContent: z.string() }).openapi('ProjectAgentDetail');

export const ZAgentVersionSchema = z
  .object({
    id: z.string(),
    agentName: z.string(),
    version: z.string(),
    irVersion: z.number(),
    sourceHash: z.string().describe('SHA-256 of the agent file and the tool libraries it imports'),
    changelog: z.string().nullable(),
    createdBy: z.string().nullable(),
    createdAt: z.string(),
  })
  .openapi('AgentVersion');

export const ZAgentVersionDetailSchema = ZAgentVersionSchema.extend({
  dslContent: z.string().describe('The draft as compiled'),
  toolSources: z.array(z.object({ path: z.string(), content: z.string() })).describe('Imported tool libraries as compiled'),
  diagnostics: z.array(ZDiagnosticSchema).describe('Warnings reported at creation'),
  ir: z.record(z.string(), z.unknown()).describe('The compiled AgentIR (docs/abl.md)'),
}).openapi('AgentVersionDetail');

export const ZToolFileSchema = z
  .object({
    name: z.string(),
    path: z.string().describe('tools/<name>.tools.abl'),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi('ToolFile');

export const ZToolFileDetailSchema = ZToolFileSchema.extend({ dslContent: z.string() }).openapi('ToolFileDetail');
