// A project's function registry (db/project-function.ts), which `type: lambda` tools name: list,
// read, create-or-replace by name, delete, each scoped to the project the route resolved.
import { DomainError } from '../../lib/errors';
import { newId } from '../../lib/ids';
import { isDuplicateKey } from '../../db/duplicate-key';
import { type Models } from '../../db/models';
import { type ProjectFunctionDoc } from '../../db/project-function';
import { type ProjectScope } from '../mcp-servers/servers';

export interface ProjectFunctionInput {
  description?: string | null;
  runtime: 'javascript' | 'python';
  code: string;
  entrypoint?: string | null;
  memoryMb?: number;
}

export const DEFAULT_FUNCTION_MEMORY_MB = 128;

export async function listProjectFunctions(models: Models, scope: ProjectScope, page: { limit: number; offset: number }): Promise<{ functions: ProjectFunctionDoc[]; total: number }> {
  const filter = { tenantId: scope.tenantId, projectId: scope.projectId };
  const [functions, total] = await Promise.all([
    models.ProjectFunction.find(filter).sort({ name: 1, _id: 1 }).skip(page.offset).limit(page.limit).lean(),
    models.ProjectFunction.countDocuments(filter),
  ]);
  return { functions, total };
}

export async function findProjectFunction(models: Models, scope: ProjectScope, name: string): Promise<ProjectFunctionDoc | null> {
  return models.ProjectFunction.findOne({ tenantId: scope.tenantId, projectId: scope.projectId, name }).lean();
}

export async function getProjectFunction(models: Models, scope: ProjectScope, name: string): Promise<ProjectFunctionDoc> {
  const doc = await findProjectFunction(models, scope, name);
  if (!doc) throw DomainError.notFound('Function');
  return doc;
}

export async function putProjectFunction(models: Models, scope: ProjectScope, name: string, input: ProjectFunctionInput): Promise<{ fn: ProjectFunctionDoc; created: boolean }> {
  const fields = {
    description: input.description ?? null,
    runtime: input.runtime,
    code: input.code,
    entrypoint: input.entrypoint ?? null,
    memoryMb: input.memoryMb ?? DEFAULT_FUNCTION_MEMORY_MB,
  };
  const now = new Date();
  const filter = { tenantId: scope.tenantId, projectId: scope.projectId, name };
  const replaced = await models.ProjectFunction.findOneAndUpdate(filter, { $set: { ...fields, updatedAt: now } }, { new: true }).lean();
  if (replaced) return { fn: replaced, created: false };
  const doc: ProjectFunctionDoc = { _id: newId(), ...filter, ...fields, createdAt: now, updatedAt: now };
  try {
    await models.ProjectFunction.create(doc);
  } catch (err) {
    if (isDuplicateKey(err)) throw new DomainError('CONFLICT', `Function "${name}" was created at the same time; send the request again to replace it`);
    throw err;
  }
  return { fn: doc, created: true };
}

export async function deleteProjectFunction(models: Models, scope: ProjectScope, name: string): Promise<void> {
  const result = await models.ProjectFunction.deleteOne({ tenantId: scope.tenantId, projectId: scope.projectId, name });
  if (result.deletedCount === 0) throw DomainError.notFound('Function');
}
