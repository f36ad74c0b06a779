// An app of the public API is a project: `appId` in a path is the project id. Resolving one is a
// visibility check like `:projectId`'s: another tenant's or another project's (for a key bound to
// one) is 404.
import { ApiError } from '../../lib/errors';
import { type Principal } from '../../lib/permissions';
import { type ProjectDoc } from '../../db/project';
import { type AppContext } from '../context';
import { findVisibleProject } from '../../core/projects/visible';

export async function loadApp(ctx: AppContext, principal: Principal, appId: string): Promise<ProjectDoc> {
  const project = await findVisibleProject(ctx, principal, appId);
  if (!project) throw ApiError.notFound('App');
  return project;
}
