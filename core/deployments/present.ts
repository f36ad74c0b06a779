// Shapes deployment documents into API objects (ids as `id`, ISO dates): the deployment routes
// answer with them, and a project export carries them (core/project-io/deployment-records.ts).
import { type DeploymentDoc } from '../../db/deployment';

const iso = (d: Date): string => new Date(d).toISOString();

export const presentDeploymentListItem = (d: DeploymentDoc) => ({
  id: d._id,
  projectId: d.projectId,
  environment: d.environment,
  status: d.status,
  label: d.label,
  endpointSlug: d.endpointSlug,
  createdAt: iso(d.createdAt),
});

export const presentDeployment = (d: DeploymentDoc) => ({
  ...presentDeploymentListItem(d),
  description: d.description ?? null,
  entryAgentName: d.entryAgentName,
  agentVersionManifest: { ...d.agentVersionManifest },
  modelOverrides: d.modelOverrides ?? null,
  settingsVersionId: d.settingsVersionId ?? null,
  workflowVersionManifest: d.workflowVersionManifest ?? null,
  promotedFromId: d.promotedFromId ?? null,
  createdBy: d.createdBy ?? null,
  retiredAt: d.retiredAt ? iso(d.retiredAt) : null,
});

export const presentRetired = (d: DeploymentDoc) => ({ id: d._id, status: 'retired' as const, retiredAt: iso(d.retiredAt ?? d.updatedAt) });
