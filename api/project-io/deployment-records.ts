// The deployment records an export carries with `include_deployments=true`. Deployments are
// stored by their own feature; until it is present a project has none, and an export that asks
// for them says so explicitly with `deployments.json` holding an empty list.
import { type Models } from '../../db/models';
import { type ProjectScope } from '../agents/compile';

export async function listDeploymentRecords(_models: Models, _scope: ProjectScope): Promise<Record<string, unknown>[]> {
  return [];
}
