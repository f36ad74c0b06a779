// Deployments: a manifest pinning agent versions for one environment of a project. Exactly one
// deployment per environment has status `active` (the newest activated one wins; see
// core/deployments/lifecycle.ts); the others are `retired`. Written by the deployment routes only.
import { Schema, type Connection, type Model } from 'mongoose';
import { newId } from '../lib/ids';

export const DEPLOYMENT_ENVIRONMENTS = ['dev', 'staging', 'production'] as const;
export type DeploymentEnvironment = (typeof DEPLOYMENT_ENVIRONMENTS)[number];
export const DEPLOYMENT_STATUSES = ['active', 'retired'] as const;
export type DeploymentStatus = (typeof DEPLOYMENT_STATUSES)[number];

/** Why a deployment stopped being active: an explicit retire drains its sessions, the others let them finish. */
export const RETIRE_REASONS = ['retired', 'superseded', 'rolled_back'] as const;
export type RetireReason = (typeof RETIRE_REASONS)[number];

export interface ModelOverride {
  model?: string;
  temperature?: number;
}

export interface DeploymentDoc {
  _id: string;
  tenantId: string;
  projectId: string;
  environment: DeploymentEnvironment;
  status: DeploymentStatus;
  label: string;
  description: string | null;
  endpointSlug: string;
  entryAgentName: string;
  /** Agent name → version label, resolved (`auto` never stored). */
  agentVersionManifest: Record<string, string>;
  modelOverrides: Record<string, ModelOverride> | null;
  settingsVersionId: string | null;
  workflowVersionManifest: Record<string, string> | null;
  /** The deployment promoted into this one, if any. */
  promotedFromId: string | null;
  /** The deployment that was active in the environment when this one last became active. */
  previousDeploymentId: string | null;
  /** When it last became active; among active ones of an environment the latest wins. */
  activatedAt: Date;
  retiredAt: Date | null;
  retireReason: RetireReason | null;
  createdBy: string | null;
  createdAt: Date;
  updatedAt: Date;
}

const DeploymentSchema = new Schema<DeploymentDoc>(
  {
    _id: { type: String, default: newId },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    environment: { type: String, enum: DEPLOYMENT_ENVIRONMENTS, required: true },
    status: { type: String, enum: DEPLOYMENT_STATUSES, required: true },
    label: { type: String, required: true, maxlength: 200 },
    description: { type: String, default: null, maxlength: 2000 },
    endpointSlug: { type: String, required: true },
    entryAgentName: { type: String, required: true },
    agentVersionManifest: { type: Schema.Types.Mixed, required: true },
    modelOverrides: { type: Schema.Types.Mixed, default: null },
    settingsVersionId: { type: String, default: null },
    workflowVersionManifest: { type: Schema.Types.Mixed, default: null },
    promotedFromId: { type: String, default: null },
    previousDeploymentId: { type: String, default: null },
    activatedAt: { type: Date, required: true },
    retiredAt: { type: Date, default: null },
    retireReason: { type: String, enum: [...RETIRE_REASONS, null], default: null },
    createdBy: { type: String, default: null },
  },
  { timestamps: true, versionKey: false, minimize: false },
);
DeploymentSchema.index({ tenantId: 1, projectId: 1, environment: 1, status: 1 });
DeploymentSchema.index({ tenantId: 1, projectId: 1, createdAt: -1 });
DeploymentSchema.index({ endpointSlug: 1 }, { unique: true });

export type DeploymentModel = Model<DeploymentDoc>;
export const deploymentModel = (c: Connection): DeploymentModel => c.model<DeploymentDoc>('Deployment', DeploymentSchema, 'deployments');
