// Request and response schemas of the deployment routes (docs/deployments.md).
import { z } from 'zod';
import '../openapi/registry';
import { DEPLOYMENT_ENVIRONMENTS, DEPLOYMENT_STATUSES } from '../../db/deployment';
import { NOT_BLANK_PATTERN, ZLimitQuery, ZOffsetQuery } from '../http/schemas';
import { AGENT_NAME_PATTERN, VERSION_PATTERN, ZDiagnosticSchema } from '../agents/schemas';

/** A deployment pins at most this many agents (a project holds at most 1,000). */
export const MAX_MANIFEST_AGENTS = 1000;

const ZEnvironment = z.enum(DEPLOYMENT_ENVIRONMENTS).describe('`dev`, `staging` or `production`');
const ZAgentKey = z.string().regex(AGENT_NAME_PATTERN, 'agent names start with a letter and hold only letters, digits and underscores');

export const ZDeploymentParams = z.object({
  projectId: z.string().min(1).max(64).describe('Project id (a CUID)'),
  deploymentId: z.string().min(1).max(64).describe('Deployment id'),
});

const ZManifest = z
  .record(ZAgentKey, z.union([z.literal('auto'), z.string().max(64).regex(VERSION_PATTERN, 'must be a version label such as 1.0.0')]))
  .refine((m) => Object.keys(m).length > 0, 'must name at least one agent')
  .refine((m) => Object.keys(m).length <= MAX_MANIFEST_AGENTS, `must name at most ${MAX_MANIFEST_AGENTS} agents`)
  .describe('Agent name → version label, or `auto` for the agent\'s latest version when the deployment is created')
  // The key rule too (`propertyNames`, JSON Schema that the metadata type does not list).
  .openapi({ minProperties: 1, maxProperties: MAX_MANIFEST_AGENTS, propertyNames: { pattern: AGENT_NAME_PATTERN.source } } as Record<string, unknown>);

const ZModelOverride = z
  .object({
    model: z.string().min(1).max(200).optional().describe('Model for this agent, e.g. `openai:gpt-4o-mini` or a tier'),
    temperature: z.number().min(0).max(2).optional(),
  })
  .strict();

export const ZCreateDeploymentRequestSchema = z.object({
  environment: ZEnvironment,
  agentVersionManifest: ZManifest,
  entryAgentName: ZAgentKey.describe('Agent that answers a new session; must be in the manifest'),
  label: z.string().min(1).max(200).regex(NOT_BLANK_PATTERN, 'must not be blank').optional().describe('Defaults to `<environment> <date time>`'),
  description: z.string().max(2000).optional(),
  modelOverrides: z
    .record(ZAgentKey, ZModelOverride)
    .openapi({ propertyNames: { pattern: AGENT_NAME_PATTERN.source } } as Record<string, unknown>)
    .optional()
    .describe('Per-agent model and temperature, applied to sessions on this deployment'),
  settingsVersionId: z.string().min(1).max(64).optional().describe('Settings version pinned with the deployment (stored)'),
  workflowVersionManifest: z
    .record(z.string().min(1).max(100), z.string().min(1).max(64))
    .openapi({ propertyNames: { minLength: 1, maxLength: 100 } } as Record<string, unknown>)
    .optional()
    .describe('Workflow name → version (stored)'),
});
export type TCreateDeploymentRequest = z.infer<typeof ZCreateDeploymentRequestSchema>;

export const ZPromoteDeploymentRequestSchema = z.object({
  targetEnvironment: ZEnvironment.describe('Environment to copy the manifest into; must differ from the deployment\'s own'),
  label: z.string().min(1).max(200).regex(NOT_BLANK_PATTERN, 'must not be blank').optional().describe('Defaults to the source deployment\'s label'),
  description: z.string().max(2000).optional().describe('Defaults to the source deployment\'s description'),
});
export type TPromoteDeploymentRequest = z.infer<typeof ZPromoteDeploymentRequestSchema>;

export const ZListDeploymentsQuery = z.object({
  environment: ZEnvironment.optional().describe('Only this environment'),
  status: z.enum(DEPLOYMENT_STATUSES).optional().describe('Only `active` or only `retired`'),
  limit: ZLimitQuery,
  offset: ZOffsetQuery,
});
export type TListDeploymentsQuery = z.infer<typeof ZListDeploymentsQuery>;

export const ZDeploymentListItemSchema = z
  .object({
    id: z.string(),
    projectId: z.string(),
    environment: ZEnvironment,
    status: z.enum(DEPLOYMENT_STATUSES),
    label: z.string(),
    endpointSlug: z.string().describe('`<projectId>-<environment>-<suffix>-<suffix>`'),
    createdAt: z.string(),
  })
  .openapi('DeploymentListItem');

export const ZDeploymentSchema = ZDeploymentListItemSchema.extend({
  description: z.string().nullable(),
  entryAgentName: z.string(),
  agentVersionManifest: z.record(z.string(), z.string()).describe('Agent name → version label (resolved)'),
  modelOverrides: z.record(z.string(), ZModelOverride).nullable(),
  settingsVersionId: z.string().nullable(),
  workflowVersionManifest: z.record(z.string(), z.string()).nullable(),
  promotedFromId: z.string().nullable().describe('The deployment this one was promoted from'),
  createdBy: z.string().nullable(),
  retiredAt: z.string().nullable().describe('When it stopped being active; null while active'),
}).openapi('Deployment');

export const ZDeploymentDetailSchema = ZDeploymentSchema.extend({
  channelCount: z.number().describe('Voice channel connections that pin this deployment by its endpointSlug'),
  activeSessionCount: z.number().describe('Sessions on this deployment that have not ended'),
}).openapi('DeploymentDetail');

export const ZRetiredDeploymentSchema = z
  .object({ id: z.string(), status: z.literal('retired'), retiredAt: z.string() })
  .openapi('RetiredDeployment');

export const ZDeploymentResponse = z.object({ success: z.literal(true), deployment: ZDeploymentSchema });

export const ZRollbackResponse = z.object({
  success: z.literal(true),
  deployment: ZDeploymentSchema.describe('The deployment active again'),
  retiredDeployment: ZRetiredDeploymentSchema.nullable().describe('The deployment it replaced as the active one (null when the environment had none)'),
});

export { ZDiagnosticSchema };
