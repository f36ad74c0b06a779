// The deployment records an export carries with `include_deployments=true`: every deployment of
// the project, newest first, as the deployment routes show them (docs/deployments.md). An import
// does not read them back: deployments name versions of the exporting project.
import { type Models } from '../../db/models';
import { type ProjectScope } from '../agents/compile';
import { presentDeployment } from '../deployments/present';

/** More than this many deployments are left out of an export (it says how many it holds). */
export const MAX_EXPORTED_DEPLOYMENTS = 1000;

export async function listDeploymentRecords(models: Models, scope: ProjectScope): Promise<Record<string, unknown>[]> {
  const docs = await models.Deployment.find({ tenantId: scope.tenantId, projectId: scope.projectId })
    .sort({ createdAt: -1, _id: -1 })
    .limit(MAX_EXPORTED_DEPLOYMENTS)
    .lean();
  return docs.map(presentDeployment);
}
