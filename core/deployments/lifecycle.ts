// The life of a project's deployments: create, list, retire, roll back and promote (reading one
// and what a new session runs: resolve.ts). One deployment per environment is active: after
// any change the newest activated one wins and the others are retired (a convergent rule, so two
// concurrent changes never leave two active ones without needing transactions).
import { randomBytes } from 'node:crypto';
import { compileProject, formatDiagnostic, type Diagnostic, type ProjectFile } from '../../abl';
import { type AgentVersionDoc } from '../../db/agent-version';
import { type DeploymentDoc, type DeploymentEnvironment, type RetireReason } from '../../db/deployment';
import { type Models } from '../../db/models';
import { findOwned } from '../../db/owned';
import { DomainError } from '../../lib/errors';
import { agentFilePath, type ProjectScope } from '../agents/compile';
import { recordActiveVersions } from '../agents/agents';
import { activeDeployment, getDeployment } from './resolve';
import { isDuplicateKey } from '../../db/duplicate-key';

/** A list's filters and page. */
export interface DeploymentListQuery {
  environment?: DeploymentDoc['environment'];
  status?: DeploymentDoc['status'];
  limit: number;
  offset: number;
}

/** A new deployment: agent name → version label or `auto` (the agent's latest version now). */
export interface NewDeploymentInput {
  environment: DeploymentDoc['environment'];
  agentVersionManifest: Record<string, string>;
  entryAgentName: string;
  /** @default `<environment> <date time>` */
  label?: string;
  description?: string;
  modelOverrides?: NonNullable<DeploymentDoc['modelOverrides']>;
  settingsVersionId?: string;
  workflowVersionManifest?: Record<string, string>;
}

/** Where a promotion copies the manifest, and what it changes of the label and description. */
export interface PromoteDeploymentInput {
  targetEnvironment: DeploymentDoc['environment'];
  label?: string;
  description?: string;
}

/** Environments where a promote must compile cleanly: the road to production. */
const GUARDED_ENVIRONMENTS: ReadonlySet<string> = new Set(['staging', 'production']);

/** `<projectId>-<environment>-<4 base-36 chars of the time>-<6 random base-36 chars>`. */
export function newEndpointSlug(projectId: string, environment: string, now = Date.now()): string {
  const time = now.toString(36).slice(-4);
  const random = [...randomBytes(6)].map((b) => (b % 36).toString(36)).join('');
  return `${projectId}-${environment}-${time}-${random}`;
}

function defaultLabel(environment: string, now: Date): string {
  return `${environment} ${now.toISOString().slice(0, 16).replace('T', ' ')}`;
}

export async function listDeployments(models: Models, scope: ProjectScope, query: DeploymentListQuery) {
  const filter = {
    ...scope,
    ...(query.environment ? { environment: query.environment } : {}),
    ...(query.status ? { status: query.status } : {}),
  };
  const [total, deployments] = await Promise.all([
    models.Deployment.countDocuments(filter),
    models.Deployment.find(filter).sort({ createdAt: -1, _id: -1 }).skip(query.offset).limit(query.limit).lean(),
  ]);
  return { total, deployments };
}

/** Sessions of the deployment that have not ended. */
export async function activeSessionCount(models: Models, scope: ProjectScope, deploymentId: string): Promise<number> {
  return models.Session.countDocuments({ ...scope, deploymentId, status: 'active' });
}

// ---------------------------------------------------------------- manifests

/**
 * Resolves each agent's requested version (`auto`: its latest) to a stored version. A missing
 * agent or version is the caller's mistake: 400 naming it.
 */
export async function resolveManifest(models: Models, scope: ProjectScope, requested: Record<string, string>): Promise<Record<string, string>> {
  const names = Object.keys(requested);
  const agents = await models.Agent.find({ ...scope, name: { $in: names } }).select({ _id: 1, name: 1 }).lean();
  const byName = new Map(agents.map((a) => [a.name, a._id]));
  const missing = names.filter((n) => !byName.has(n));
  // Well-formed, but naming agents the project does not have.
  if (missing.length > 0) throw new DomainError('UNPROCESSABLE_ENTITY', `Agent not found: ${missing.join(', ')} (names are case-sensitive)`);
  // Labels and order only: the IR is not needed to resolve a manifest.
  const rows = await models.AgentVersion.find({ ...scope, agentId: { $in: [...byName.values()] } })
    .select({ _id: 0, agentName: 1, version: 1, seq: 1 })
    .sort({ seq: -1 })
    .lean();
  const latest = new Map<string, string>();
  const labels = new Set<string>();
  for (const row of rows) {
    if (!latest.has(row.agentName)) latest.set(row.agentName, row.version);
    labels.add(`${row.agentName}@${row.version}`);
  }
  const resolved: Record<string, string> = {};
  for (const name of names.sort()) {
    const wanted = requested[name]!;
    if (wanted === 'auto') {
      const newest = latest.get(name);
      if (!newest) throw new DomainError('UNPROCESSABLE_ENTITY', `Agent "${name}" has no version yet; create one before deploying it`);
      resolved[name] = newest;
    } else if (labels.has(`${name}@${wanted}`)) {
      resolved[name] = wanted;
    } else {
      throw new DomainError('UNPROCESSABLE_ENTITY', `Version not found: ${name}@${wanted}`);
    }
  }
  return resolved;
}

/** The stored versions a manifest names (with their IR), in manifest order of names. */
export async function manifestVersions(models: Models, scope: ProjectScope, manifest: Record<string, string>): Promise<AgentVersionDoc[]> {
  const names = Object.keys(manifest);
  if (names.length === 0) return [];
  // Labels first (small rows, one indexed query), then only the pinned versions whole: an `$or`
  // of one clause per agent is filtered outside the index on FerretDB.
  const labels = await models.AgentVersion.find({ ...scope, agentName: { $in: names } }).select({ _id: 1, agentName: 1, version: 1 }).lean();
  const ids = labels.filter((v) => manifest[v.agentName] === v.version).map((v) => v._id);
  return ids.length === 0 ? [] : models.AgentVersion.find({ ...scope, _id: { $in: ids } }).lean();
}

/**
 * Compiles the versions a manifest pins as one project (each version's source and the tool
 * libraries it was compiled with), so a handoff to an agent left out of the manifest, or to
 * one whose pinned version lacks what is asked of it, shows as it would at run time.
 */
export function compileManifest(versions: AgentVersionDoc[]): Diagnostic[] {
  const files = new Map<string, ProjectFile>();
  for (const v of versions) {
    const path = agentFilePath(v.agentName);
    files.set(path, { path, content: v.dslContent });
    for (const tool of v.toolSources) if (!files.has(tool.path)) files.set(tool.path, { path: tool.path, content: tool.content });
  }
  return compileProject([...files.values()]).diagnostics;
}

// ---------------------------------------------------------------- activation

/**
 * Makes the newest activated deployment of the environment its only active one, retires the
 * others with `reason`, and writes the agents' `activeVersions` for the environment.
 */
async function settleEnvironment(models: Models, scope: ProjectScope, environment: string, reason: RetireReason): Promise<DeploymentDoc | null> {
  const active = await models.Deployment.find({ ...scope, environment, status: 'active' }).sort({ activatedAt: -1, _id: -1 }).lean();
  const [winner, ...losers] = active;
  if (losers.length > 0) {
    await models.Deployment.updateMany(
      { ...scope, _id: { $in: losers.map((d) => d._id) }, status: 'active' },
      { $set: { status: 'retired', retiredAt: new Date(), retireReason: reason } },
    );
  }
  await recordActiveVersions(models, scope, environment, winner?.agentVersionManifest ?? {});
  return winner ?? null;
}

interface NewDeployment {
  environment: DeploymentEnvironment;
  manifest: Record<string, string>;
  entryAgentName: string;
  label?: string;
  description?: string | null;
  modelOverrides?: DeploymentDoc['modelOverrides'];
  settingsVersionId?: string | null;
  workflowVersionManifest?: DeploymentDoc['workflowVersionManifest'];
  promotedFromId?: string | null;
  createdBy: string | null;
}

async function insertActive(models: Models, scope: ProjectScope, input: NewDeployment): Promise<DeploymentDoc> {
  const previous = await activeDeployment(models, scope, input.environment);
  const now = new Date();
  for (let attempt = 0; ; attempt++) {
    try {
      const doc = await models.Deployment.create({
        ...scope,
        environment: input.environment,
        status: 'active',
        label: input.label ?? defaultLabel(input.environment, now),
        description: input.description ?? null,
        endpointSlug: newEndpointSlug(scope.projectId, input.environment, now.getTime()),
        entryAgentName: input.entryAgentName,
        agentVersionManifest: input.manifest,
        modelOverrides: input.modelOverrides ?? null,
        settingsVersionId: input.settingsVersionId ?? null,
        workflowVersionManifest: input.workflowVersionManifest ?? null,
        promotedFromId: input.promotedFromId ?? null,
        previousDeploymentId: previous?._id ?? null,
        activatedAt: now,
        retiredAt: null,
        retireReason: null,
        createdBy: input.createdBy,
      });
      await settleEnvironment(models, scope, input.environment, 'superseded');
      return await getDeployment(models, scope, doc._id);
    } catch (err) {
      // 36^6 random slugs per project, environment and 4-character time: a clash is a retry.
      if (!isDuplicateKey(err) || attempt >= 3) throw err;
    }
  }
}

export async function createDeployment(models: Models, scope: ProjectScope, body: NewDeploymentInput, createdBy: string | null): Promise<DeploymentDoc> {
  if (!Object.prototype.hasOwnProperty.call(body.agentVersionManifest, body.entryAgentName)) {
    throw new DomainError('UNPROCESSABLE_ENTITY', `body.entryAgentName: "${body.entryAgentName}" is not in agentVersionManifest`);
  }
  const strays = Object.keys(body.modelOverrides ?? {}).filter((n) => !Object.prototype.hasOwnProperty.call(body.agentVersionManifest, n));
  if (strays.length > 0) throw new DomainError('UNPROCESSABLE_ENTITY', `body.modelOverrides: not in agentVersionManifest: ${strays.join(', ')}`);
  const manifest = await resolveManifest(models, scope, body.agentVersionManifest);
  return insertActive(models, scope, {
    environment: body.environment,
    manifest,
    entryAgentName: body.entryAgentName,
    label: body.label,
    description: body.description,
    modelOverrides: body.modelOverrides ?? null,
    settingsVersionId: body.settingsVersionId,
    workflowVersionManifest: body.workflowVersionManifest ?? null,
    createdBy,
  });
}

/** 409 when a version the deployment pins has been deleted since (its agent was deleted). */
async function assertVersionsExist(models: Models, scope: ProjectScope, deployment: DeploymentDoc): Promise<AgentVersionDoc[]> {
  const versions = await manifestVersions(models, scope, deployment.agentVersionManifest);
  const found = new Set(versions.map((v) => `${v.agentName}@${v.version}`));
  const gone = Object.entries(deployment.agentVersionManifest)
    .map(([name, version]) => `${name}@${version}`)
    .filter((key) => !found.has(key));
  if (gone.length > 0) throw new DomainError('CONFLICT', { message: `The deployment pins versions that no longer exist: ${gone.join(', ')}`, details: { missing: gone } });
  return versions;
}

/** active → retired (reason `retired`): the environment is left without an active deployment. */
export async function retireDeployment(models: Models, scope: ProjectScope, id: string): Promise<DeploymentDoc> {
  const current = await getDeployment(models, scope, id);
  if (current.status !== 'active') throw new DomainError('CONFLICT', 'Deployment is already retired');
  const retired = await models.Deployment.findOneAndUpdate(
    { ...scope, _id: id, status: 'active' },
    { $set: { status: 'retired', retiredAt: new Date(), retireReason: 'retired' } },
    { new: true },
  ).lean();
  if (!retired) throw new DomainError('CONFLICT', 'Deployment is already retired');
  await settleEnvironment(models, scope, retired.environment, 'superseded');
  return retired;
}

export interface RollbackResult {
  deployment: DeploymentDoc;
  retiredDeployment: DeploymentDoc | null;
}

/**
 * On a retired deployment: makes it its environment's active one again, retiring the one active
 * now (reason `rolled_back`). On the active one: the same for the deployment it replaced
 * (`previousDeploymentId`); 409 when it replaced none.
 */
export async function rollbackDeployment(models: Models, scope: ProjectScope, id: string): Promise<RollbackResult> {
  const named = await getDeployment(models, scope, id);
  let target = named;
  if (named.status === 'active') {
    const previous = named.previousDeploymentId ? await findOwned(models.Deployment, named.previousDeploymentId, scope) : null;
    if (!previous) throw new DomainError('CONFLICT', `Deployment is active and replaced no earlier deployment in ${named.environment}; nothing to roll back to`);
    target = previous;
  }
  await assertVersionsExist(models, scope, target);
  const current = await activeDeployment(models, scope, target.environment);
  const reactivated = await models.Deployment.findOneAndUpdate(
    { ...scope, _id: target._id, status: 'retired' },
    {
      $set: {
        status: 'active',
        activatedAt: new Date(),
        retiredAt: null,
        retireReason: null,
        previousDeploymentId: current && current._id !== target._id ? current._id : target.previousDeploymentId,
      },
    },
    { new: true },
  ).lean();
  if (!reactivated) throw new DomainError('CONFLICT', 'The deployment changed state meanwhile; read it and retry');
  await settleEnvironment(models, scope, reactivated.environment, 'rolled_back');
  const retiredDeployment = current && current._id !== reactivated._id ? await findOwned(models.Deployment, current._id, scope) : null;
  return { deployment: await getDeployment(models, scope, reactivated._id), retiredDeployment };
}

/**
 * Copies a deployment's manifest and settings into another environment as its new active
 * deployment. Into staging or production the pinned versions must compile together: 400 with
 * the diagnostics otherwise.
 */
export async function promoteDeployment(models: Models, scope: ProjectScope, id: string, body: PromoteDeploymentInput, createdBy: string | null): Promise<DeploymentDoc> {
  const source = await getDeployment(models, scope, id);
  if (body.targetEnvironment === source.environment) {
    throw new DomainError('CONFLICT', `body.targetEnvironment: the deployment is already in ${source.environment}; promote it to another environment`);
  }
  const versions = await assertVersionsExist(models, scope, source);
  if (GUARDED_ENVIRONMENTS.has(body.targetEnvironment)) {
    const diagnostics = compileManifest(versions);
    const errors = diagnostics.filter((d) => d.severity === 'error');
    if (errors.length > 0) {
      throw new DomainError('UNPROCESSABLE_ENTITY', {
        message: `The deployment's agents do not compile together: ${errors.length} error(s); first: ${formatDiagnostic(errors[0]!)}`,
        details: { diagnostics },
      });
    }
  }
  return insertActive(models, scope, {
    environment: body.targetEnvironment,
    manifest: source.agentVersionManifest,
    entryAgentName: source.entryAgentName,
    label: body.label ?? source.label,
    description: body.description ?? source.description,
    modelOverrides: source.modelOverrides,
    settingsVersionId: source.settingsVersionId,
    workflowVersionManifest: source.workflowVersionManifest,
    promotedFromId: source._id,
    createdBy,
  });
}
