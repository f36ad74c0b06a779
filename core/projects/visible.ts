// The project a caller names, if the caller may see it: its tenant's, and its own when the key is
// bound to a project. Anything else is missing to the caller (404), never forbidden.
import { type Models } from '../../db/models';
import { findOwned } from '../../db/owned';
import { type ProjectDoc } from '../../db/project';
import { DomainError } from '../../lib/errors';
import { canSeeProject, type Principal } from '../../lib/permissions';

/** The project if the principal may see it (its tenant's, its own when the key is project-bound, and not being deleted), else null. */
export async function findVisibleProject(ctx: { models: Models }, principal: Principal, projectId: string): Promise<ProjectDoc | null> {
  const project = await findOwned(ctx.models.Project, projectId, { tenantId: principal.tenantId });
  return project && !project.deletingAt && canSeeProject(principal, project) ? project : null;
}

/** The project if the caller may see it, else 404 (another tenant's, or outside a bound key's project). */
export async function requireVisibleProject(ctx: { models: Models }, principal: Principal, projectId: string): Promise<ProjectDoc> {
  const project = await findVisibleProject(ctx, principal, projectId);
  if (!project) throw DomainError.notFound('Project');
  return project;
}
