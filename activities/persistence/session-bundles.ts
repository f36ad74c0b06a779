// Session bundles: the compiled agents a session runs, named by a content hash of the exact
// versions (plus entry agent and model overrides). A session's first load resolves which versions
// it runs (its deployment's manifest, or each agent's newest version) and records the bundle; every
// later load of the session (continue-as-new, delegation children) names the hash, so all of them
// run the same versions. A bounded per-worker LRU keeps recent bundles, so a worker reads a
// bundle's IR from MongoDB once; the history carries only the hash (workers/session-bundle-storage.ts).
// Bundles handed out are shared with the cache and never changed by their users.
import { createHash } from 'node:crypto';
import type { AgentIR, CompilationOutput } from '../../abl/ir';
import { type DeploymentDoc } from '../../db/deployment';
import { type Models } from '../../db/models';
import { findOwned } from '../../db/owned';
import { markSessionBundle, type SessionBundleOwner } from '../../lib/payload-converter';
import type { SessionStartInput } from '../../workflows/definitions';
import { isDuplicateKey } from '../../db/duplicate-key';

/**
 * What a load returns. Marked as a bundle of its project (lib/payload-converter.ts), so its payload
 * gets the bundle encoding the worker's codec keeps out of history; nothing else ever does.
 */
export type SessionBundle = { bundleHash: string } & CompilationOutput;

export interface BundleQuery {
  tenantId: string;
  projectId: string;
  bundleRef?: SessionStartInput['bundleRef'];
}

interface ChosenVersion {
  _id: string;
  agentName: string;
}

interface BundleIdentity {
  tenantId: string;
  projectId: string;
  /** Ordered by agent name. */
  versions: ChosenVersion[];
  entryAgent: string | null;
  modelOverrides: DeploymentDoc['modelOverrides'];
}

const byAgentName = (a: ChosenVersion, b: ChosenVersion) => (a.agentName < b.agentName ? -1 : a.agentName > b.agentName ? 1 : 0);

export function bundleHashOf(identity: BundleIdentity): string {
  const canonical = JSON.stringify([identity.tenantId, identity.projectId, identity.versions.map((v) => v._id), identity.entryAgent, identity.modelOverrides ?? null]);
  return `sha256:${createHash('sha256').update(canonical).digest('hex')}`;
}

/** A small LRU: a Map keeps insertion order, so the first key is the least recently used. */
export class BundleCache<V> {
  private readonly entries = new Map<string, V>();
  constructor(readonly capacity: number) {}
  get(key: string): V | undefined {
    const value = this.entries.get(key);
    if (value !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, value);
    }
    return value;
  }
  set(key: string, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    while (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
  }
  get size(): number {
    return this.entries.size;
  }
}

/** A deployment's per-agent model and temperature replace what the agent's EXECUTION says. */
function applyModelOverrides(agents: Record<string, AgentIR>, overrides: DeploymentDoc['modelOverrides']): void {
  for (const [name, override] of Object.entries(overrides ?? {})) {
    const agent = agents[name];
    if (!agent) continue;
    agent.execution = {
      ...agent.execution,
      ...(override.model !== undefined ? { model: override.model } : {}),
      ...(override.temperature !== undefined ? { temperature: override.temperature } : {}),
    };
  }
}

export interface SessionBundleStore {
  /** The session's bundle (null when there is nothing to run). */
  load(query: BundleQuery): Promise<SessionBundle | null>;
  /**
   * A recorded bundle by hash, for the worker's payload storage, which sees only the reference:
   * within its owner's project (null only for references written before they named their owner).
   */
  loadByHash(bundleHash: string, owner: SessionBundleOwner | null): Promise<SessionBundle | null>;
  /** Bundles this worker holds, as encoded payloads (filled by the payload storage). */
  readonly payloads: BundleCache<unknown>;
  /** How many bundles were built from MongoDB (for tests and benches). */
  readonly stats: { built: number };
}

export function createSessionBundleStore(deps: { models: Models; cacheSize: number }): SessionBundleStore {
  const { models } = deps;
  // With the bundle, whose it is: a cached bundle is handed out only within its own project.
  const bundles = new BundleCache<{ bundle: SessionBundle; tenantId: string; projectId: string }>(deps.cacheSize);
  const payloads = new BundleCache<unknown>(deps.cacheSize);
  const stats = { built: 0 };

  /** Each agent's newest version: ids only, the IR is read once the bundle is known. */
  async function latestVersions(scope: { tenantId: string; projectId: string }): Promise<ChosenVersion[]> {
    const rows = await models.AgentVersion.find(scope).select({ _id: 1, agentId: 1, agentName: 1, seq: 1 }).sort({ seq: -1 }).lean();
    const newest = new Map<string, ChosenVersion>();
    for (const row of rows) if (!newest.has(row.agentId)) newest.set(row.agentId, { _id: row._id, agentName: row.agentName });
    return [...newest.values()];
  }

  async function deploymentVersions(deployment: DeploymentDoc): Promise<ChosenVersion[]> {
    const manifest = deployment.agentVersionManifest;
    const names = Object.keys(manifest);
    if (names.length === 0) return [];
    const rows = await models.AgentVersion.find({ tenantId: deployment.tenantId, projectId: deployment.projectId, agentName: { $in: names } })
      .select({ _id: 1, agentName: 1, version: 1 })
      .lean();
    return rows.filter((v) => manifest[v.agentName] === v.version).map((v) => ({ _id: v._id, agentName: v.agentName }));
  }

  async function build(bundleHash: string, identity: BundleIdentity): Promise<SessionBundle | null> {
    const rows = await models.AgentVersion.find({ tenantId: identity.tenantId, projectId: identity.projectId, _id: { $in: identity.versions.map((v) => v._id) } })
      .select({ _id: 1, agentName: 1, irJson: 1, irVersion: 1, sourceHash: 1 })
      .lean();
    // A version deleted since (its agent was deleted): the bundle can no longer run.
    if (rows.length !== identity.versions.length || rows.length === 0) return null;
    rows.sort(byAgentName);
    const agents: Record<string, AgentIR> = {};
    for (const row of rows) agents[row.agentName] = JSON.parse(row.irJson) as AgentIR;
    applyModelOverrides(agents, identity.modelOverrides);
    stats.built++;
    const bundle: SessionBundle = markSessionBundle({
      bundleHash,
      irVersion: rows[0]!.irVersion,
      sourceHash: rows.map((v) => v.sourceHash).sort().join(':'),
      project: { name: null, entryAgent: identity.entryAgent, description: null },
      agents,
      tool_libraries: {},
      entry_agent: identity.entryAgent,
      diagnostics: [],
      ok: true,
    }, identity);
    bundles.set(bundleHash, { bundle, tenantId: identity.tenantId, projectId: identity.projectId });
    return bundle;
  }

  async function loadByHash(bundleHash: string, scope: SessionBundleOwner | null): Promise<SessionBundle | null> {
    const cached = bundles.get(bundleHash);
    if (cached) return !scope || (cached.tenantId === scope.tenantId && cached.projectId === scope.projectId) ? cached.bundle : null;
    const doc = scope ? await findOwned(models.SessionBundle, bundleHash, scope) : await models.SessionBundle.findById(bundleHash).lean();
    if (!doc) return null;
    const versions = doc.versionIds.map((_id) => ({ _id, agentName: '' }));
    const built = await build(bundleHash, {
      tenantId: doc.tenantId,
      projectId: doc.projectId,
      versions,
      entryAgent: doc.entryAgent,
      modelOverrides: doc.modelOverridesJson ? (JSON.parse(doc.modelOverridesJson) as DeploymentDoc['modelOverrides']) : null,
    });
    return built;
  }

  return {
    payloads,
    stats,
    loadByHash,
    async load(query) {
      const scope = { tenantId: query.tenantId, projectId: query.projectId };
      const ref = query.bundleRef;
      if (ref?.kind === 'bundle') return loadByHash(ref.bundleHash, scope);
      let deployment: DeploymentDoc | null = null;
      let versions: ChosenVersion[];
      if (ref?.kind === 'deployment') {
        // Retired or not: a session keeps the versions it started with until it ends.
        deployment = await findOwned(models.Deployment, ref.deploymentId, scope);
        if (!deployment) return null;
        versions = await deploymentVersions(deployment);
      } else {
        versions = await latestVersions(scope);
      }
      if (versions.length === 0) return null;
      versions.sort(byAgentName);
      const identity: BundleIdentity = { ...scope, versions, entryAgent: deployment?.entryAgentName ?? null, modelOverrides: deployment?.modelOverrides ?? null };
      const bundleHash = bundleHashOf(identity);
      const cached = bundles.get(bundleHash);
      if (cached) return cached.bundle;
      // Content-addressed: a concurrent first load of the same bundle writes the same document, so
      // losing the upsert race (a duplicate key: MongoDB retries that itself, FerretDB does not)
      // means the document is there.
      await models.SessionBundle.updateOne(
        { _id: bundleHash },
        {
          $setOnInsert: {
            ...scope,
            versionIds: versions.map((v) => v._id),
            entryAgent: identity.entryAgent,
            modelOverridesJson: identity.modelOverrides ? JSON.stringify(identity.modelOverrides) : null,
            createdAt: new Date(),
          },
        },
        { upsert: true },
      ).catch((err: unknown) => {
        if (!isDuplicateKey(err)) throw err;
      });
      return build(bundleHash, identity);
    },
  };
}
